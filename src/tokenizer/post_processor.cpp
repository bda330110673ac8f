// TemplateProcessing's "single" template (and Bert/Roberta's [CLS] A [SEP]) applied to one sequence.
#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

namespace ft::tok {
namespace {

// The single-sequence template as a list of items: a run of fixed ids, or the sequence itself.
class Template final : public PostProcessor {
 public:
  struct Item {
    bool is_sequence;
    std::vector<int32_t> ids;
  };
  explicit Template(std::vector<Item> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Item& it : items_) {
      if (it.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), it.ids.begin(), it.ids.end());
      }
    }
    ids = std::move(out);
  }

 private:
  std::vector<Item> items_;
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& s : steps_) s->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

Result<std::unique_ptr<PostProcessor>> make_template(const nlohmann::json& spec) {
  std::vector<Template::Item> items;
  const auto& specials = spec.at("special_tokens");
  for (const auto& piece : spec.at("single")) {
    if (piece.contains("Sequence")) {
      items.push_back({true, {}});
      continue;
    }
    if (!piece.contains("SpecialToken")) return unsupported("TemplateProcessing: unknown template piece " + piece.dump());
    const std::string name = piece["SpecialToken"].at("id").get<std::string>();
    if (!specials.contains(name))
      return corrupt_file("TemplateProcessing: special token '" + name + "' is not in special_tokens");
    items.push_back({false, specials[name].at("ids").get<std::vector<int32_t>>()});
  }
  return std::unique_ptr<PostProcessor>(new Template(std::move(items)));
}

// Bert and Roberta post-processors: "cls": [token, id], "sep": [token, id].
std::unique_ptr<PostProcessor> make_cls_sep(const nlohmann::json& spec) {
  std::vector<Template::Item> items;
  items.push_back({false, {spec.at("cls").at(1).get<int32_t>()}});
  items.push_back({true, {}});
  items.push_back({false, {spec.at("sep").at(1).get<int32_t>()}});
  return std::unique_ptr<PostProcessor>(new Template(std::move(items)));
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& spec) {
  if (spec.is_null()) return std::unique_ptr<PostProcessor>();
  const std::string type = spec.value("type", "");
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>();  // only trims offsets
  if (type == "TemplateProcessing") return make_template(spec);
  if (type == "BertProcessing" || type == "RobertaProcessing") return make_cls_sep(spec);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const auto& s : spec.at("processors")) {
      FT_ASSIGN_OR_RETURN(auto step, make_post_processor(s));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<PostProcessor>(new Sequence(std::move(steps)));
  }
  return unsupported("unsupported post-processor type '" + type + "'");
}

}  // namespace ft::tok
