// Scheduler implementation.
#include "sched/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace ft {

const char* request_phase_name(RequestPhase phase) {
  switch (phase) {
    case RequestPhase::kQueued: return "queued";
    case RequestPhase::kPrefilling: return "prefilling";
    case RequestPhase::kDecoding: return "decoding";
    case RequestPhase::kFinished: return "finished";
  }
  return "?";
}

void Scheduler::enqueue(std::unique_ptr<Request> request) { queued_.push_back(std::move(request)); }

void Scheduler::abort(uint64_t id, int32_t choice) { aborts_.emplace_back(id, choice); }

void Scheduler::abort_all() {
  for (const auto& r : queued_) aborts_.emplace_back(r->id, -1);
  for (const auto& r : running_) aborts_.emplace_back(r->id, -1);
}

void Scheduler::release_pages(Request& r) {
  for (auto& c : r.choices) c.kv.release(kv_);
}

void Scheduler::finish_request(Request& r, FinishReason reason, const Status& error) {
  for (auto& c : r.choices) {
    if (c.done()) continue;
    c.finish = reason;
    TokenEvent e;
    e.choice = c.index;
    e.finish = reason;
    e.error = error;
    e.usage = r.usage;
    r.channel->push(std::move(e));
  }
  // Choices that were never forked finish too.
  for (int32_t i = static_cast<int32_t>(r.choices.size()); !r.forked && i < r.params.n; ++i) {
    TokenEvent e;
    e.choice = i;
    e.finish = reason;
    e.error = error;
    e.usage = r.usage;
    r.channel->push(std::move(e));
  }
  r.forked = true;
  release_pages(r);
  r.phase = RequestPhase::kFinished;
}

void Scheduler::stop_choice(Request& r, int32_t choice) {
  if (choice >= static_cast<int32_t>(r.choices.size())) return;
  Choice& c = r.choices[static_cast<size_t>(choice)];
  if (c.done()) return;
  c.finish = FinishReason::kStop;
  c.kv.release(kv_);
  TokenEvent e;
  e.choice = c.index;
  e.finish = FinishReason::kStop;
  e.usage = r.usage;
  r.channel->push(std::move(e));
  if (r.all_done()) {
    release_pages(r);
    r.phase = RequestPhase::kFinished;
  }
}

void Scheduler::apply_aborts() {
  for (const auto& [id, choice] : aborts_) {
    auto match = [&](const std::unique_ptr<Request>& r) { return r->id == id; };
    if (auto it = std::find_if(queued_.begin(), queued_.end(), match); it != queued_.end()) {
      if (choice < 0) finish_request(**it, FinishReason::kAborted, ok_status());
      else stop_choice(**it, choice);
      if ((*it)->phase == RequestPhase::kFinished) {
        finished_.push_back(std::move(*it));
        queued_.erase(it);
      }
    } else if (auto jt = std::find_if(running_.begin(), running_.end(), match); jt != running_.end()) {
      if (choice < 0) finish_request(**jt, FinishReason::kAborted, ok_status());
      else stop_choice(**jt, choice);
    }
  }
  aborts_.clear();
}

bool Scheduler::preempt_latest(const Request* needing) {
  Request* victim = nullptr;
  size_t live = 0;  // requests finished in this step (aborts) are still listed until reap()
  for (auto& r : running_) {
    if (r->phase == RequestPhase::kFinished) continue;
    ++live;
    if (!victim || r->admit_order > victim->admit_order) victim = r.get();
  }
  if (!victim || (victim == needing && live == 1)) return false;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == victim; });
  release_pages(*victim);
  victim->phase = RequestPhase::kQueued;
  ++victim->epoch;
  queued_.push_front(std::move(*it));
  running_.erase(it);
  ++preemptions_;
  return true;
}

bool Scheduler::add_tokens(StepPlan& plan, Request& r, Choice& c, int32_t n) {
  if (static_cast<int32_t>(plan.entries.size()) >= limits_.max_seqs) return false;
  if (!c.kv.reserve(pool_, limits_.page_size, n).ok() || !c.kv.acquire_state(kv_.states()).ok()) return false;
  StepEntry e{&r, c.index, n, -1, r.epoch};
  plan.batch.add_sequence(std::span<const int32_t>(c.tokens).subspan(static_cast<size_t>(c.kv.n_tokens()),
                                                                     static_cast<size_t>(n)),
                          c.kv, limits_.page_size);
  if (n == c.n_pending()) {
    e.logit_row = plan.batch.n_tokens() - 1;
    plan.batch.logit_rows.push_back(e.logit_row);
  }
  plan.entries.push_back(e);
  return true;
}

void Scheduler::schedule_decodes(StepPlan& plan, int32_t& budget) {
  // Oldest first, so preemption falls on the latest admitted.
  std::vector<Request*> order;
  for (auto& r : running_) order.push_back(r.get());
  std::sort(order.begin(), order.end(), [](Request* a, Request* b) { return a->admit_order < b->admit_order; });
  for (Request* r : order) {
    if (r->phase != RequestPhase::kDecoding) continue;
    for (auto& c : r->choices) {
      if (c.done() || c.n_pending() != 1 || budget <= 0) continue;
      bool added = false;
      for (;;) {
        if (static_cast<int32_t>(plan.entries.size()) >= limits_.max_seqs) return;
        if (add_tokens(plan, *r, c, 1)) {
          added = true;
          break;
        }
        // Out of pages: the latest admitted request gives its pages back and recomputes later.
        if (!preempt_latest(r)) {
          finish_request(*r, FinishReason::kError, out_of_kv_pages("the KV cache cannot hold this sequence"));
          break;
        }
        if (r->phase == RequestPhase::kQueued) break;  // r itself was the latest
      }
      if (!added) break;  // r finished or was preempted: its other choices do not run
      budget -= 1;
      ++plan.n_decode_tokens;
    }
  }
}

void Scheduler::schedule_prefills(StepPlan& plan, int32_t& budget) {
  for (auto& r : running_) {
    if (r->phase == RequestPhase::kFinished) continue;
    for (auto& c : r->choices) {
      if (c.done() || budget <= 0) continue;
      const int32_t pending = c.n_pending();
      if (pending <= 1 && r->phase == RequestPhase::kDecoding) continue;
      const int32_t n = std::min(pending, budget);
      if (n <= 0 || !add_tokens(plan, *r, c, n)) continue;
      budget -= n;
      plan.n_prefill_tokens += n;
    }
  }
}

void Scheduler::admit(StepPlan& plan, int32_t& budget) {
  while (!queued_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < limits_.max_running) {
    Request& r = *queued_.front();
    auto first = std::find_if(r.choices.begin(), r.choices.end(), [](const Choice& c) { return !c.done(); });
    FT_CHECK(first != r.choices.end());
    Choice& c = *first;
    const int32_t n = std::min(c.n_pending(), budget);
    if (!add_tokens(plan, r, c, n)) break;
    budget -= n;
    plan.n_prefill_tokens += n;
    r.phase = RequestPhase::kPrefilling;
    r.admit_order = next_admit_++;
    running_.push_back(std::move(queued_.front()));
    queued_.pop_front();
  }
}

void Scheduler::drop_unrunnable(StepPlan& plan) {
  auto unrunnable = [](const StepEntry& e) {
    return e.request->phase == RequestPhase::kFinished || e.request->phase == RequestPhase::kQueued ||
           e.epoch != e.request->epoch;
  };
  if (std::none_of(plan.entries.begin(), plan.entries.end(), unrunnable)) return;
  StepPlan kept;
  for (const auto& e : plan.entries) {
    if (unrunnable(e)) continue;
    Choice& c = e.request->choices[static_cast<size_t>(e.choice)];
    FT_CHECK(add_tokens(kept, *e.request, c, e.n_tokens));  // its pages are reserved already
    (c.n_pending() == 1 ? kept.n_decode_tokens : kept.n_prefill_tokens) += e.n_tokens;
  }
  plan = std::move(kept);
}

void Scheduler::schedule(StepPlan& plan) {
  plan = StepPlan{};
  apply_aborts();
  int32_t budget = limits_.max_step_tokens;
  schedule_decodes(plan, budget);
  schedule_prefills(plan, budget);
  admit(plan, budget);
  // A request preempted or finished while this step was planned may hold entries planned before.
  drop_unrunnable(plan);
  if (plan.empty()) break_stall();
}

void Scheduler::break_stall() {
  // Nothing could be planned, yet requests run: each waits for pages the others hold (the choices of a
  // preempted n > 1 request recompute without sharing their prompt). Without a step nothing would change.
  int32_t live = 0;
  Request* last = nullptr;
  for (auto& r : running_)
    if (r->phase != RequestPhase::kFinished) {
      ++live;
      last = r.get();
    }
  if (live == 1) finish_request(*last, FinishReason::kError, out_of_kv_pages("the KV cache cannot hold this request"));
  else if (live > 1) preempt_latest(nullptr);
}

void Scheduler::commit(const StepPlan& plan) {
  for (const auto& e : plan.entries) e.request->choices[static_cast<size_t>(e.choice)].kv.advance(e.n_tokens);
}

Status Scheduler::fork(Request& r, Backend& backend) {
  r.choices.reserve(static_cast<size_t>(r.params.n));  // `parent` must stay valid while choices are added
  const Choice& parent = r.choices.front();
  Status status;
  for (int32_t i = 1; i < r.params.n && status.ok(); ++i) {
    Result<SequenceKv> kv = parent.kv.fork(kv_, backend);
    while (!kv.ok() && kv.status().code() == StatusCode::kOutOfKvPages && r.phase != RequestPhase::kQueued &&
           preempt_latest(&r)) {
      if (r.phase != RequestPhase::kQueued) kv = parent.kv.fork(kv_, backend);
    }
    if (r.phase == RequestPhase::kQueued) status = out_of_kv_pages("preempted while forking");
    else if (!kv.ok()) status = kv.status();
    if (!status.ok()) break;
    Choice c;
    c.index = i;
    c.tokens = parent.tokens;
    c.kv = std::move(kv).value();
    r.choices.push_back(std::move(c));
  }
  if (!status.ok()) {
    // All or nothing: the request forks again once its prompt is back in the cache.
    for (size_t i = 1; i < r.choices.size(); ++i) r.choices[i].kv.release(kv_);
    r.choices.resize(1);
    return status;
  }
  r.forked = true;
  return ok_status();
}

std::vector<std::unique_ptr<Request>> Scheduler::reap() {
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->phase == RequestPhase::kFinished || (*it)->all_done()) {
      release_pages(**it);
      (*it)->phase = RequestPhase::kFinished;
      finished_.push_back(std::move(*it));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return std::move(finished_);
}

}  // namespace ft
