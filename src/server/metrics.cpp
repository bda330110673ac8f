// Metrics: Prometheus exposition (text format 0.0.4).
#include "server/metrics.h"

#include <sstream>

namespace ft::server {

void Metrics::count_response(const std::string& path, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[{path, status}];
}

void Metrics::count_generation(int32_t prompt, int32_t completion, double seconds, double ttft) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generations_;
  prompt_tokens_ += prompt;
  completion_tokens_ += completion;
  latency_sum_ += seconds;
  if (ttft >= 0) {
    ttft_sum_ += ttft;
    ++ttft_count_;
  }
}

namespace {
void metric(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}
// A metric of one unlabelled sample.
template <class T>
void sample(std::ostringstream& o, const char* name, const char* type, const char* help, const T& value) {
  metric(o, name, type, help);
  o << name << ' ' << value << '\n';
}
std::string label_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string Metrics::prometheus(const EngineStats* e, bool ready, int active_streams) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream o;
  sample(o, "freetoken_ready", "gauge", "1 when the model is loaded and requests are served", ready ? 1 : 0);
  metric(o, "freetoken_http_responses_total", "counter", "HTTP responses by path and status");
  for (const auto& [k, v] : responses_)
    o << "freetoken_http_responses_total{path=\"" << label_escape(k.first) << "\",status=\"" << k.second << "\"} " << v
      << '\n';
  sample(o, "freetoken_generations_total", "counter", "finished generation requests", generations_);
  sample(o, "freetoken_prompt_tokens_total", "counter", "prompt tokens of finished generations", prompt_tokens_);
  sample(o, "freetoken_completion_tokens_total", "counter", "generated tokens of finished generations",
         completion_tokens_);
  metric(o, "freetoken_request_duration_seconds", "summary", "time from submission to the last token");
  o << "freetoken_request_duration_seconds_sum " << latency_sum_ << "\nfreetoken_request_duration_seconds_count "
    << generations_ << '\n';
  metric(o, "freetoken_time_to_first_token_seconds", "summary", "time from submission to the first token");
  o << "freetoken_time_to_first_token_seconds_sum " << ttft_sum_ << "\nfreetoken_time_to_first_token_seconds_count "
    << ttft_count_ << '\n';
  sample(o, "freetoken_active_streams", "gauge", "generations being read by HTTP threads now", active_streams);
  if (e) {
    sample(o, "freetoken_running_requests", "gauge", "requests the scheduler is running", e->running);
    sample(o, "freetoken_queued_requests", "gauge", "requests waiting for admission", e->queued);
    sample(o, "freetoken_kv_pages_used", "gauge", "KV pages in use", e->kv_pages_used);
    sample(o, "freetoken_kv_pages_total", "gauge", "KV pages in the pool", e->kv_pages_total);
    sample(o, "freetoken_engine_prompt_tokens_total", "counter", "prompt tokens the engine processed",
           e->prompt_tokens);
    sample(o, "freetoken_engine_generated_tokens_total", "counter", "tokens the engine generated", e->generated_tokens);
    sample(o, "freetoken_preemptions_total", "counter", "requests preempted for KV pages", e->preemptions);
    sample(o, "freetoken_decode_tokens_per_second", "gauge", "recent decode throughput", e->decode_tokens_per_s);
    sample(o, "freetoken_prefill_tokens_per_second", "gauge", "recent prefill throughput", e->prefill_tokens_per_s);
    if (!e->expert_layers.empty()) {
      const EngineStats::ExpertLayer t = e->expert_totals();
      metric(o, "freetoken_expert_lookups_total", "counter", "distinct experts per step and MoE layer, by outcome");
      o << "freetoken_expert_lookups_total{outcome=\"hit\"} " << t.hits << '\n';
      o << "freetoken_expert_lookups_total{outcome=\"fetched\"} " << t.fetched << '\n';
      o << "freetoken_expert_lookups_total{outcome=\"cpu\"} " << t.cpu << '\n';
      sample(o, "freetoken_expert_bytes_fetched_total", "counter", "expert bytes copied host to device",
             e->expert_bytes_fetched);
      sample(o, "freetoken_expert_copy_seconds_total", "counter", "time in host to device expert copies",
             1e-3 * t.copy_ms);
      sample(o, "freetoken_expert_cpu_seconds_total", "counter", "time in the CPU's expert jobs", 1e-3 * t.cpu_ms);
      sample(o, "freetoken_step_seconds_total", "counter", "wall time of engine steps", e->step_seconds);
    }
  }
  return o.str();
}

}  // namespace ft::server
