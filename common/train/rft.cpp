// Rejection fine-tuning: the keep/drop rules and the training loop with checkpoints and resume.
#include "train/rft.h"

#include <map>
#include <set>

#include "model/transformer.h"
#include "train/losses.h"

namespace ca::train {

namespace fs = std::filesystem;

std::optional<std::string> rft_rejection(const Json& t, const RftFilter& filter) {
  if (!t.contains("reward") || !t["reward"].is_object() || !t["reward"].contains("value") ||
      !t["reward"]["value"].is_number()) {
    return "no reward";
  }
  if (t["reward"]["value"].get<double>() <= 0) {
    return "reward <= 0";
  }
  std::set<std::string> tool_names;
  for (const Json& tool : t.value("tools", Json::array())) {
    if (tool.is_object() && tool.contains("function") && tool["function"].contains("name")) {
      tool_names.insert(tool["function"]["name"].get<std::string>());
    }
  }
  const Json messages = t.value("messages", Json::array());
  const Json turns = t.value("turns", Json::array());
  int64_t assistant = 0;
  std::map<std::string, int64_t> failures;
  for (const Json& m : messages) {
    if (!m.is_object() || m.value("role", "") != "assistant") {
      continue;
    }
    const Json calls = m.value("tool_calls", Json::array());
    const Json outcomes =
        assistant < static_cast<int64_t>(turns.size()) ? turns[assistant].value("tools", Json::array()) : Json::array();
    ++assistant;
    for (size_t i = 0; i < calls.size(); ++i) {
      const Json fn = calls[i].value("function", Json::object());
      const std::string name = fn.value("name", "");
      const std::string args =
          fn.contains("arguments") && fn["arguments"].is_string() ? fn["arguments"].get<std::string>() : "";
      auto parsed = parse_json(args);
      if (!filter.keep_invalid_calls && (!tool_names.contains(name) || !parsed || !parsed->is_object())) {
        return "invalid tool call '" + name + "'";
      }
      const bool failed = i < outcomes.size() && outcomes[i].is_object() && !outcomes[i].value("ok", true);
      if (failed && ++failures[name + "\n" + args] > filter.max_repeated_failures) {
        return "repeated failing call '" + name + "' (" + std::to_string(failures[name + "\n" + args]) + " times)";
      }
    }
  }
  if (filter.max_turns > 0 && assistant > filter.max_turns) {
    return "turns " + std::to_string(assistant) + " > " + std::to_string(filter.max_turns);
  }
  return std::nullopt;
}

std::string RftData::summary() const {
  std::string out = "kept " + std::to_string(kept.size()) + " of " + std::to_string(records) + " trajectories";
  std::string reasons;
  for (const auto& [reason, count] : dropped) {
    reasons += (reasons.empty() ? "" : ", ") + reason + ": " + std::to_string(count);
  }
  return reasons.empty() ? out : out + " (" + reasons + ")";
}

std::expected<void, std::string> add_rft_record(RftData& data, const Json& trajectory,
                                                const model::Tokenizer& tokenizer, const RftFilter& filter,
                                                int64_t max_context) {
  if (auto reason = rft_rejection(trajectory, filter)) {
    ++data.records;
    // Repeated-call reasons carry a count; the summary groups by the reason's kind.
    ++data.dropped[reason->substr(0, reason->find(" ("))];
    return {};
  }
  return add_record(data, trajectory, tokenizer, max_context);
}

std::expected<void, std::string> add_record(RftData& data, const Json& trajectory, const model::Tokenizer& tokenizer,
                                            int64_t max_context) {
  ++data.records;
  auto seq = tokenize_trajectory(trajectory, tokenizer, max_context);
  if (!seq) {
    return std::unexpected(seq.error());
  }
  data.kept.push_back(std::move(*seq));
  return {};
}

std::expected<TrainResult, std::string> train_rft(const TrainOptions& o, const std::vector<Sequence>& data,
                                                  const std::function<void(const Json&)>& on_step) {
  if (data.empty()) {
    return std::unexpected("no training sequences");
  }
  auto device = parse_device(o.device);
  if (!device) {
    return std::unexpected(device.error());
  }
  std::optional<Trainer> trainer;
  std::optional<model::Transformer> model;
  std::optional<Optimized> optimized;
  auto setup = [&]() -> std::expected<void, std::string> {
    auto opened = Trainer::open(o, run_identity(o, data.size()));
    if (!opened) {
      return std::unexpected(opened.error());
    }
    trainer.emplace(std::move(*opened));
    auto loaded = model::Transformer::load(trainer->resumed_from().value_or(o.model), *device, at::kFloat);
    if (!loaded) {
      return std::unexpected(loaded.error());
    }
    model.emplace(std::move(*loaded));
    optimized.emplace(model->weights(), o.lr, o);
    return trainer->add_part({"", &*optimized, [&](const fs::path& dir) { return model->save(dir); }});
  };
  if (auto r = agree(o.dp, setup()); !r) {
    return std::unexpected(r.error());
  }
  return trainer->run(
      data.size(),
      [&](int64_t, const std::vector<size_t>& which) -> std::expected<Json, std::string> {
        // The whole update's action tokens (every rank knows them: the indices are global), so that the ranks'
        // shares of the token mean add up to it.
        int64_t action_tokens = 0;
        for (size_t i : which) {
          action_tokens += data[i].action_tokens();
        }
        double loss = 0;
        int64_t tokens = 0;
        // Each micro-batch adds its share of the update's token mean: the sum of its NLL over all action tokens.
        for (const auto& part : micro_batches(my_share(o, which), o.micro_batch)) {
          const Batch b = make_batch(data, part, *device);
          const at::Tensor logits = model->forward(b.ids, b.positions, b.key_mask);
          const at::Tensor l = -(token_logprobs(logits, b.ids) * b.mask).sum() / static_cast<double>(action_tokens);
          l.backward();
          loss += l.item<double>();
          tokens += b.tokens;
        }
        auto u = optimized->update();
        if (!u) {
          return std::unexpected(u.error());
        }
        if (o.dp != nullptr) {
          auto total = o.dp->sum({loss, static_cast<double>(tokens)});
          if (!total) {
            return std::unexpected(total.error());
          }
          loss = (*total)[0];
          tokens = static_cast<int64_t>((*total)[1]);
        }
        return Json{{"loss", loss},
                    {"grad_norm", u->grad_norm},
                    {"lr", u->lr},
                    {"tokens", tokens},
                    {"action_tokens", action_tokens}};
      },
      on_step);
}

}  // namespace ca::train
