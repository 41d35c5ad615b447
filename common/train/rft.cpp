// Rejection fine-tuning: the keep/drop rules and the training loop with checkpoints and resume.
#include "train/rft.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "model/transformer.h"
#include "train/losses.h"
#include "util/atomic_file.h"
#include "util/signals.h"

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
  ++data.records;
  if (auto reason = rft_rejection(trajectory, filter)) {
    // Repeated-call reasons carry a count; the summary groups by the reason's kind.
    ++data.dropped[reason->substr(0, reason->find(" ("))];
    return {};
  }
  auto seq = tokenize_trajectory(trajectory, tokenizer, max_context);
  if (!seq) {
    return std::unexpected(seq.error());
  }
  data.kept.push_back(std::move(*seq));
  return {};
}

Json StepLog::to_json() const {
  return Json{{"step", step},           {"loss", loss},
              {"grad_norm", grad_norm}, {"lr", lr},
              {"tokens", tokens},       {"action_tokens", action_tokens},
              {"seconds", seconds},     {"tokens_per_s", seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0}};
}

double warmup_lr(double lr, int64_t warmup, int64_t step) {
  return warmup <= 0 ? lr : lr * std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(warmup));
}

std::vector<size_t> step_indices(size_t n, int64_t batch, int64_t step, uint64_t seed) {
  std::vector<size_t> out;
  std::vector<size_t> perm;
  int64_t perm_epoch = -1;
  for (int64_t j = 0; j < batch; ++j) {
    const uint64_t global = static_cast<uint64_t>(step * batch + j);
    const int64_t epoch = static_cast<int64_t>(global / n);
    if (epoch != perm_epoch) {
      perm.resize(n);
      for (size_t i = 0; i < n; ++i) {
        perm[i] = i;
      }
      std::mt19937_64 rng(seed * 1000003ULL + static_cast<uint64_t>(epoch));
      std::shuffle(perm.begin(), perm.end(), rng);
      perm_epoch = epoch;
    }
    out.push_back(perm[global % n]);
  }
  return out;
}

namespace {

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "checkpoint-%06lld", static_cast<long long>(step));
  return buf;
}

// What must match for a resumed run to continue the same run.
Json run_identity(const TrainOptions& o, size_t sequences) {
  return Json{{"seed", o.seed},
              {"batch", o.batch},
              {"lr", o.lr},
              {"warmup", o.warmup},
              {"max_grad_norm", o.max_grad_norm},
              {"weight_decay", o.adamw.weight_decay},
              {"beta1", o.adamw.beta1},
              {"beta2", o.adamw.beta2},
              {"sequences", sequences}};
}

// The newest checkpoint directory with a trainer_state.json (written last, so the directory is complete).
std::optional<std::pair<fs::path, int64_t>> latest_checkpoint(const fs::path& out) {
  std::optional<std::pair<fs::path, int64_t>> best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("checkpoint-") || !fs::exists(entry.path() / "trainer_state.json")) {
      continue;
    }
    int64_t step = 0;
    const char* digits = name.data() + 11;
    if (std::from_chars(digits, name.data() + name.size(), step).ec != std::errc()) {
      continue;
    }
    if (!best || step > best->second) {
      best = {entry.path(), step};
    }
  }
  return best;
}

std::expected<void, std::string> save_checkpoint(const TrainOptions& o, const model::Transformer& model,
                                                 const AdamW& adam, int64_t step, const Json& identity) {
  const fs::path final_dir = o.out / checkpoint_name(step);
  const fs::path tmp = o.out / ("." + checkpoint_name(step) + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (auto r = model.save(tmp); !r) {
    return r;
  }
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                           "generation_config.json", "vocab.json", "merges.txt"}) {
    if (fs::exists(o.model / file)) {
      fs::copy_file(o.model / file, tmp / file, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        return std::unexpected((tmp / file).string() + ": " + ec.message());
      }
    }
  }
  if (auto r = adam.save(tmp / "optimizer.safetensors"); !r) {
    return r;
  }
  const Json state = {{"step", step}, {"run", identity}};
  if (auto r = write_file_atomic((tmp / "trainer_state.json").string(), state.dump(2) + "\n"); !r) {
    return r;
  }
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    return std::unexpected(final_dir.string() + ": " + ec.message());
  }
  return {};
}

// Keeps the lines of log.jsonl up to `step` (a resumed run rewrites what came after its checkpoint).
std::expected<void, std::string> truncate_log(const fs::path& log, int64_t step) {
  if (!fs::exists(log)) {
    return {};
  }
  auto text = read_file(log.string());
  if (!text) {
    return std::unexpected(text.error());
  }
  std::string kept;
  size_t start = 0;
  while (start < text->size()) {
    const size_t end = text->find('\n', start);
    const std::string line = text->substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text->size() : end + 1;
    auto j = parse_json(line);
    if (j && j->is_object() && j->value("step", int64_t{0}) <= step) {
      kept += line + "\n";
    }
  }
  return write_file_atomic(log.string(), kept);
}

struct Batch {
  at::Tensor ids, positions, key_mask, mask;
  int64_t tokens = 0;
};

Batch make_batch(const std::vector<Sequence>& data, const std::vector<size_t>& which) {
  int64_t length = 0;
  for (size_t i : which) {
    length = std::max<int64_t>(length, static_cast<int64_t>(data[i].ids.size()));
  }
  const int64_t b = static_cast<int64_t>(which.size());
  Batch out;
  out.ids = at::zeros({b, length}, at::kLong);
  out.key_mask = at::zeros({b, length}, at::kBool);
  out.mask = at::zeros({b, length}, at::kFloat);
  out.positions = at::arange(length, at::kLong).unsqueeze(0).expand({b, length}).contiguous();
  for (int64_t r = 0; r < b; ++r) {
    const Sequence& s = data[which[r]];
    const int64_t n = static_cast<int64_t>(s.ids.size());
    out.ids[r].slice(0, 0, n).copy_(at::tensor(s.ids, at::kLong));
    out.key_mask[r].slice(0, 0, n).fill_(true);
    out.mask[r].slice(0, 0, n).copy_(at::tensor(std::vector<int64_t>(s.mask.begin(), s.mask.end()), at::kLong));
    out.tokens += n;
  }
  return out;
}

}  // namespace

std::expected<TrainResult, std::string> train_rft(const TrainOptions& o, const std::vector<Sequence>& data,
                                                  const std::function<void(const StepLog&)>& on_step) {
  if (data.empty()) {
    return std::unexpected("no training sequences");
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) {
    return std::unexpected(o.out.string() + ": " + ec.message());
  }
  const Json identity = run_identity(o, data.size());
  TrainResult result;
  fs::path start = o.model;
  if (o.resume) {
    if (auto latest = latest_checkpoint(o.out)) {
      auto state_text = read_file((latest->first / "trainer_state.json").string());
      if (!state_text) {
        return std::unexpected(state_text.error());
      }
      auto state = parse_json(*state_text);
      if (!state || !state->contains("run") || (*state)["run"] != identity) {
        return std::unexpected((latest->first / "trainer_state.json").string() +
                               ": --resume with other run options or data than the checkpoint's: " +
                               (state && state->contains("run") ? (*state)["run"].dump() : "unreadable") + " there, " +
                               identity.dump() + " here");
      }
      start = latest->first;
      result.first_step = latest->second;
    }
  }
  auto model = model::Transformer::load(start, at::kCPU, at::kFloat);
  if (!model) {
    return std::unexpected(model.error());
  }
  std::map<std::string, at::Tensor> params = model->weights();
  for (auto& [name, p] : params) {
    p.set_requires_grad(true);
  }
  AdamW adam(params, o.adamw);
  if (result.first_step > 0) {
    if (auto r = adam.load(start / "optimizer.safetensors", result.first_step); !r) {
      return std::unexpected(r.error());
    }
  }
  const fs::path log_path = o.out / "log.jsonl";
  if (auto r = truncate_log(log_path, result.first_step); !r) {
    return std::unexpected(r.error());
  }
  FILE* log = std::fopen(log_path.c_str(), "a");
  if (!log) {
    return std::unexpected(log_path.string() + ": cannot open for appending");
  }
  auto close_log = [&] { return std::fclose(log) == 0; };
  result.last_step = result.first_step;
  for (int64_t step = result.first_step; step < o.steps; ++step) {
    if (interrupted()) {
      result.interrupted = true;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<size_t> which = step_indices(data.size(), o.batch, step, o.seed);
    int64_t action_tokens = 0;
    for (size_t i : which) {
      action_tokens += data[i].action_tokens();
    }
    StepLog entry;
    entry.step = step + 1;
    entry.lr = warmup_lr(o.lr, o.warmup, step);
    entry.action_tokens = action_tokens;
    // Each micro-batch adds its share of the update's token mean: the sum of its NLL over all action tokens.
    for (size_t first = 0; first < which.size(); first += static_cast<size_t>(o.micro_batch)) {
      const std::vector<size_t> part(
          which.begin() + first, which.begin() + std::min(which.size(), first + static_cast<size_t>(o.micro_batch)));
      const Batch b = make_batch(data, part);
      const at::Tensor logits = model->forward(b.ids, b.positions, b.key_mask);
      const at::Tensor loss = -(token_logprobs(logits, b.ids) * b.mask).sum() / static_cast<double>(action_tokens);
      loss.backward();
      entry.loss += loss.item<double>();
      entry.tokens += b.tokens;
    }
    entry.grad_norm = clip_grad_norm(params, o.max_grad_norm);
    adam.step(entry.lr);
    adam.zero_grad();
    entry.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string line = entry.to_json().dump() + "\n";
    if (std::fputs(line.c_str(), log) < 0 || std::fflush(log) != 0) {
      close_log();
      return std::unexpected(log_path.string() + ": write failed");
    }
    on_step(entry);
    result.last_step = step + 1;
    if (result.last_step % o.checkpoint_every == 0 || result.last_step == o.steps) {
      if (auto r = save_checkpoint(o, *model, adam, result.last_step, identity); !r) {
        close_log();
        return std::unexpected(r.error());
      }
    }
  }
  if (!close_log()) {
    return std::unexpected(log_path.string() + ": close failed");
  }
  // An interrupted run keeps its last update, so that --resume loses nothing.
  if (result.interrupted && result.last_step > result.first_step && result.last_step % o.checkpoint_every != 0) {
    if (auto r = save_checkpoint(o, *model, adam, result.last_step, identity); !r) {
      return std::unexpected(r.error());
    }
  }
  return result;
}

}  // namespace ca::train
