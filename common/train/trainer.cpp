// The shared training loop: data order, batches, updates, checkpoints, resume, step log.
#include "train/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <random>

#include "util/atomic_file.h"
#include "util/signals.h"

namespace ca::train {

namespace fs = std::filesystem;

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

std::vector<std::vector<size_t>> micro_batches(const std::vector<size_t>& which, int64_t size) {
  std::vector<std::vector<size_t>> out;
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, size));
  for (size_t first = 0; first < which.size(); first += step) {
    out.emplace_back(which.begin() + static_cast<std::ptrdiff_t>(first),
                     which.begin() + static_cast<std::ptrdiff_t>(std::min(which.size(), first + step)));
  }
  return out;
}

Batch make_batch(const std::vector<Sequence>& data, const std::vector<size_t>& which, at::Device device) {
  int64_t length = 0;
  for (size_t i : which) {
    length = std::max<int64_t>(length, static_cast<int64_t>(data[i].ids.size()));
  }
  const int64_t b = static_cast<int64_t>(which.size());
  std::vector<int64_t> ids(static_cast<size_t>(b * length), 0);
  std::vector<uint8_t> key_mask(ids.size(), 0);
  std::vector<float> mask(ids.size(), 0.0F), rewards(ids.size(), 0.0F);
  Batch out;
  for (int64_t r = 0; r < b; ++r) {
    const Sequence& s = data[which[static_cast<size_t>(r)]];
    const size_t row = static_cast<size_t>(r * length);
    size_t last_action = 0;
    for (size_t t = 0; t < s.ids.size(); ++t) {
      ids[row + t] = s.ids[t];
      key_mask[row + t] = 1;
      mask[row + t] = s.mask[t] != 0 ? 1.0F : 0.0F;
      last_action = s.mask[t] != 0 ? t : last_action;
    }
    rewards[row + last_action] = static_cast<float>(s.reward);
    out.tokens += static_cast<int64_t>(s.ids.size());
    out.action_tokens += s.action_tokens();
  }
  out.ids = at::tensor(ids, at::kLong).view({b, length}).to(device);
  out.key_mask = at::tensor(key_mask, at::kByte).view({b, length}).to(at::kBool).to(device);
  out.mask = at::tensor(mask, at::kFloat).view({b, length}).to(device);
  out.rewards = at::tensor(rewards, at::kFloat).view({b, length}).to(device);
  out.positions = at::arange(length, at::TensorOptions().dtype(at::kLong).device(device))
                      .unsqueeze(0)
                      .expand({b, length})
                      .contiguous();
  return out;
}

std::expected<at::Device, std::string> parse_device(const std::string& device) {
  std::optional<at::Device> dev;
  try {  // LibTorch reports a bad device string by exception; it stops here
    dev = at::Device(device);
  } catch (const std::exception&) {
    return std::unexpected("device '" + device + "' is not a device (cpu, cuda, cuda:N)");
  }
  if (dev->is_cuda() && !at::hasCUDA()) {
    return std::unexpected("device '" + device + "': no CUDA device here");
  }
  return *dev;
}

int rank_of(const TrainOptions& o) {
  return o.dp != nullptr ? o.dp->rank() : 0;
}

int world_of(const TrainOptions& o) {
  return o.dp != nullptr ? o.dp->world_size() : 1;
}

std::vector<size_t> my_share(const TrainOptions& o, const std::vector<size_t>& which) {
  return world_of(o) > 1 ? shard_indices(which, rank_of(o), world_of(o)) : which;
}

std::expected<void, std::string> agree(const DataParallel* dp, const std::expected<void, std::string>& local) {
  if (dp == nullptr || !dp->active()) {
    return local;
  }
  auto failed = dp->sum({local ? 0.0 : 1.0});
  if (!failed) {
    return std::unexpected(local ? failed.error() : local.error() + " (and " + failed.error() + ")");
  }
  if (!local) {
    return local;
  }
  if ((*failed)[0] > 0) {
    return std::unexpected("rank " + std::to_string(dp->rank()) + ": " +
                           std::to_string(static_cast<int>((*failed)[0])) +
                           " other rank(s) failed (their errors are on their stderr)");
  }
  return {};
}

Optimized::Optimized(std::map<std::string, at::Tensor> params, double lr, const TrainOptions& options)
    : m_params(std::move(params)),
      m_dp(options.dp),
      m_adam(m_params, options.adamw),
      m_lr(lr),
      m_max_grad_norm(options.max_grad_norm),
      m_warmup(options.warmup) {
  for (auto& [name, p] : m_params) {
    p.set_requires_grad(true);
  }
}

std::expected<Optimized::Update, std::string> Optimized::update() {
  if (m_dp != nullptr) {
    // Sum, not mean: every rank's loss is its share of the whole update's token mean.
    if (auto r = m_dp->all_reduce_gradients(m_params, DataParallel::Reduce::sum); !r) {
      return std::unexpected(r.error());
    }
  }
  Update u;
  u.grad_norm = clip_grad_norm(m_params, m_max_grad_norm);
  u.lr = warmup_lr(m_lr, m_warmup, m_adam.steps());
  m_adam.step(u.lr);
  m_adam.zero_grad();
  return u;
}

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

namespace {

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "checkpoint-%06lld", static_cast<long long>(step));
  return buf;
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

double peak_rss_mib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

std::expected<Trainer, std::string> Trainer::open(const TrainOptions& options, Json identity) {
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (ec) {
    return std::unexpected(options.out.string() + ": " + ec.message());
  }
  Trainer t;
  t.m_options = options;
  t.m_identity = std::move(identity);
  if (!options.resume) {
    return t;
  }
  auto latest = latest_checkpoint(options.out);
  if (!latest) {
    return t;
  }
  const fs::path state_path = latest->first / "trainer_state.json";
  auto state_text = read_file(state_path.string());
  if (!state_text) {
    return std::unexpected(state_text.error());
  }
  auto state = parse_json(*state_text);
  if (!state || !state->contains("run") || (*state)["run"] != t.m_identity) {
    return std::unexpected(state_path.string() + ": --resume with other run options or data than the checkpoint's: " +
                           (state && state->contains("run") ? (*state)["run"].dump() : "unreadable") + " there, " +
                           t.m_identity.dump() + " here");
  }
  t.m_resumed = latest->first;
  t.m_resumed_state = *state;
  t.m_first_step = latest->second;
  return t;
}

std::expected<void, std::string> Trainer::add_part(CheckpointPart part) {
  if (m_resumed) {
    const Json updates = m_resumed_state.value("updates", Json::object());
    const int64_t count = updates.value(part.subdir, m_first_step);
    if (auto r = part.optimized->adam().load(*m_resumed / part.subdir / "optimizer.safetensors", count); !r) {
      return r;
    }
  }
  m_parts.push_back(std::move(part));
  return {};
}

std::expected<void, std::string> Trainer::save_checkpoint(int64_t step) const {
  const TrainOptions& o = m_options;
  const fs::path final_dir = o.out / checkpoint_name(step);
  const fs::path tmp = o.out / ("." + checkpoint_name(step) + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  Json updates = Json::object();
  for (const CheckpointPart& part : m_parts) {
    const fs::path dir = tmp / part.subdir;
    if (auto r = part.save(dir); !r) {
      return r;
    }
    for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                             "chat_template.jinja", "generation_config.json", "vocab.json", "merges.txt"}) {
      if (fs::exists(o.model / file)) {
        fs::copy_file(o.model / file, dir / file, fs::copy_options::overwrite_existing, ec);
        if (ec) {
          return std::unexpected((dir / file).string() + ": " + ec.message());
        }
      }
    }
    if (auto r = part.optimized->adam().save(dir / "optimizer.safetensors"); !r) {
      return r;
    }
    updates[part.subdir] = part.optimized->adam().steps();
  }
  const Json state = {{"step", step}, {"run", m_identity}, {"updates", updates}};
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

std::expected<TrainResult, std::string> Trainer::run(size_t n, const Body& body,
                                                     const std::function<void(const Json&)>& on_step) {
  const TrainOptions& o = m_options;
  const DataParallel* dp = o.dp != nullptr && o.dp->active() ? o.dp : nullptr;
  const bool writer = dp == nullptr || dp->is_main();
  if (n == 0) {
    return std::unexpected("no training sequences");
  }
  if (dp != nullptr) {
    // Ranks that found different checkpoints (an --out that is not shared) would train different runs.
    // Ranks that read other data would shard different batches. Equal values on all ranks exactly when
    // (sum x)^2 = N sum x^2.
    const double f = static_cast<double>(m_first_step), d = static_cast<double>(n);
    auto sums = dp->sum({f, f * f, d, d * d});
    if (!sums) {
      return std::unexpected(sums.error());
    }
    const double w = dp->world_size();
    const std::string who = "rank " + std::to_string(dp->rank()) + " of " + std::to_string(dp->world_size());
    if ((*sums)[0] * (*sums)[0] != (*sums)[1] * w) {
      return std::unexpected(who + " resumes from step " + std::to_string(m_first_step) +
                             ", another rank from another: is " + o.out.string() + " shared by all ranks?");
    }
    if ((*sums)[2] * (*sums)[2] != (*sums)[3] * w) {
      return std::unexpected(who + " has " + std::to_string(n) +
                             " training items, another rank other: every rank must read the same data");
    }
    for (const CheckpointPart& part : m_parts) {
      if (auto r = dp->broadcast_parameters(part.optimized->params()); !r) {
        return std::unexpected(r.error());
      }
    }
  }
  TrainResult result;
  result.first_step = result.last_step = m_first_step;
  const fs::path log_path = o.out / "log.jsonl";
  FILE* log = nullptr;
  auto open_log = [&]() -> std::expected<void, std::string> {
    if (!writer) {
      return {};
    }
    if (auto r = truncate_log(log_path, m_first_step); !r) {
      return r;
    }
    log = std::fopen(log_path.c_str(), "a");
    if (!log) {
      return std::unexpected(log_path.string() + ": cannot open for appending");
    }
    return {};
  };
  auto close_log = [&]() {
    const bool ok = log == nullptr || std::fclose(log) == 0;
    log = nullptr;
    return ok;
  };
  auto fail = [&](std::string message) -> std::expected<TrainResult, std::string> {
    close_log();
    return std::unexpected(std::move(message));
  };
  if (auto r = agree(dp, open_log()); !r) {
    return fail(r.error());
  }
  // Whether any rank was interrupted: all stop after the same step.
  auto stop_now = [&]() -> std::expected<bool, std::string> {
    if (dp == nullptr) {
      return interrupted();
    }
    auto any = dp->sum({interrupted() ? 1.0 : 0.0});
    if (!any) {
      return std::unexpected(any.error());
    }
    return (*any)[0] > 0;
  };
  for (int64_t step = m_first_step; step < o.steps; ++step) {
    auto stop = stop_now();
    if (!stop) {
      return fail(stop.error());
    }
    if (*stop) {
      result.interrupted = true;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto entry = body(step, step_indices(n, o.batch, step, o.seed));
    if (!entry) {
      return fail(entry.error());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (*entry)["step"] = step + 1;
    (*entry)["seconds"] = seconds;
    (*entry)["tokens_per_s"] = seconds > 0 ? entry->value("tokens", 0.0) / seconds : 0.0;
    (*entry)["peak_rss_mib"] = peak_rss_mib();
    std::expected<void, std::string> written;
    if (writer) {
      const std::string line = entry->dump() + "\n";
      if (std::fputs(line.c_str(), log) < 0 || std::fflush(log) != 0) {
        written = std::unexpected(log_path.string() + ": write failed");
      }
    }
    result.last_step = step + 1;
    if (written && writer && (result.last_step % o.checkpoint_every == 0 || result.last_step == o.steps)) {
      written = save_checkpoint(result.last_step);
    }
    // The other ranks wait here for rank 0's log line and checkpoint.
    if (auto r = agree(dp, written); !r) {
      return fail(r.error());
    }
    on_step(*entry);
  }
  if (!close_log()) {
    return std::unexpected(log_path.string() + ": close failed");
  }
  // An interrupted run keeps its last update, so that --resume loses nothing.
  if (result.interrupted && result.last_step > result.first_step && result.last_step % o.checkpoint_every != 0) {
    if (auto r = agree(dp, writer ? save_checkpoint(result.last_step) : std::expected<void, std::string>()); !r) {
      return std::unexpected(r.error());
    }
  }
  return result;
}

}  // namespace ca::train
