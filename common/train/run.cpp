// ca-train's run (run.h).
#include "train/run.h"

#include <ATen/Parallel.h>

#include "train/precision.h"
#include "train/value.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/signals.h"

namespace ca::train {

namespace fs = std::filesystem;

namespace {

ExitCode report(const RunError& failure) {
  error(failure.second);
  return failure.first;
}

// A finished stage and what its closing note adds ("" but for value: the explained variance before and after).
struct Trained {
  TrainResult run;
  std::string detail;
};

std::expected<Trained, std::string> train_stage(const TrainRun& run, const std::vector<Sequence>& data,
                                                const std::function<void(const Json&)>& on_step) {
  switch (run.stage) {
    case Stage::rft: {
      auto done = train_rft(run.options, data, on_step);
      if (!done) return std::unexpected(done.error());
      return Trained{*done, ""};
    }
    case Stage::value: {
      auto fitted = train_value(run.options, data, on_step);
      if (!fitted) return std::unexpected(fitted.error());
      return Trained{fitted->run, "explained variance over the data " +
                                      std::to_string(fitted->explained_variance_before) + " -> " +
                                      std::to_string(fitted->explained_variance_after) + "; "};
    }
    case Stage::warmup:
    case Stage::ppo: {
      auto done = train_ppo(run.options, run.ppo, data, on_step);
      if (!done) return std::unexpected(done.error());
      return Trained{*done, ""};
    }
  }
  return std::unexpected("unknown stage");
}

}  // namespace

std::string_view stage_name(Stage stage) {
  switch (stage) {
    case Stage::rft:
      return "rft";
    case Stage::value:
      return "value";
    case Stage::warmup:
      return "warmup";
    case Stage::ppo:
      return "ppo";
  }
  return "";
}

std::string_view stage_key(Stage stage) {
  switch (stage) {
    case Stage::rft:
      return "loss";
    case Stage::value:
      return "explained_variance";
    case Stage::warmup:
    case Stage::ppo:
      return "reward_mean";
  }
  return "";
}

std::expected<DataParallel, RunError> join_launch(const DistEnv& env, std::string& device,
                                                  std::chrono::milliseconds rendezvous_timeout) {
  DistOptions dist;
  if (env.world_size > 1) {
    auto parsed = parse_device(device);
    if (!parsed) return std::unexpected(RunError{ExitCode::usage, parsed.error()});
    dist.device = *parsed;
    if (parsed->is_cuda()) {
      device = "cuda:" + std::to_string(env.local_rank);  // the rank's GPU on its node, as DataParallel uses
    }
  }
  dist.rendezvous_timeout = rendezvous_timeout;
  auto dp = DataParallel::init(env, dist);
  if (!dp) return std::unexpected(RunError{ExitCode::io_error, dp.error()});
  return std::move(*dp);
}

std::expected<model::Tokenizer, RunError> load_checkpoint_tokenizer(const fs::path& model) {
  auto tokenizer = model::Tokenizer::load(model / "tokenizer.json");
  if (!tokenizer) {
    return std::unexpected(
        RunError{fs::exists(model) ? ExitCode::data_error : ExitCode::no_input, std::move(tokenizer.error())});
  }
  return std::move(*tokenizer);
}

ExitCode read_trajectories(const TrainRun& run, const model::Tokenizer& tokenizer, RftData& data) {
  return visit_records(
      run.data, run.on_bad, [&](const Record& r) -> std::expected<std::optional<ExitCode>, std::string> {
        auto added = run.stage == Stage::rft ? add_rft_record(data, r.value, tokenizer, run.filter, run.max_context)
                                             : add_record(data, r.value, tokenizer, run.max_context);
        if (!added) return std::unexpected(added.error());
        return std::nullopt;
      });
}

std::string finished_note(Stage stage, const TrainResult& done, const Json& first_step, const Json& last_step,
                          const std::string& detail, const fs::path& out, const DataParallel* dp) {
  const std::string key(stage_key(stage));
  const bool per_update = stage == Stage::rft || stage == Stage::value;
  // No step ran (a resume of a finished run, an interrupt before the first update): no line, no field.
  auto field = [&](const Json& step) { return step.is_object() ? step.value(key, Json()).dump() : "null"; };
  return std::string(per_update ? "updates " : "steps ") + std::to_string(done.first_step + 1) + ".." +
         std::to_string(done.last_step) + ": " + key + " " + field(first_step) + " -> " + field(last_step) + "; " +
         detail + "checkpoints and log.jsonl in " + out.string() +
         (dp != nullptr ? " (" + std::to_string(dp->world_size()) + " ranks, " + dp->backend() + ")" : "");
}

ExitCode run_training(TrainRun run) {
  TrainOptions& o = run.options;
  run.ppo.config.micro_batch = o.micro_batch;
  run.ppo.config.group_advantages = run.stage == Stage::warmup;
  at::set_num_threads(run.threads);
  if (auto r = set_compute_dtype(o.device, run.dtype); !r) return usage_error("--dtype: " + r.error());
  install_interrupt_handlers();

  // Data parallel: torchrun's or Slurm's variables (docs/TRAINING.md); world size 1 is one plain process.
  auto env = read_dist_env();
  if (!env) return report({ExitCode::usage, env.error()});
  auto dp = join_launch(*env, o.device, std::chrono::seconds(run.dist_timeout_s));
  if (!dp) return report(dp.error());
  o.dp = dp->active() ? &*dp : nullptr;
  const bool main_rank = dp->is_main();  // the others train as quietly as they log

  auto tokenizer = load_checkpoint_tokenizer(o.model);
  if (!tokenizer) return report(tokenizer.error());
  RftData set;  // rft keeps what its filter passes; the other stages learn from every trajectory with a reward
  const ExitCode read = read_trajectories(run, *tokenizer, set);
  if (read != ExitCode::ok && read != ExitCode::some_failed) return read;
  if (main_rank) {
    note(set.summary());
  }
  const std::string key(stage_key(run.stage));
  Progress progress(std::string(stage_name(run.stage)), static_cast<size_t>(o.steps));
  Json first, last;
  auto on_step = [&](const Json& s) {
    first = first.is_null() ? s : first;
    last = s;
    if (main_rank) {
      progress.tick(key + " " + s.value(key, Json()).dump());
    }
  };
  auto done = train_stage(run, set.kept, on_step);
  if (!done) return report({ExitCode::data_error, done.error()});
  if (main_rank) {
    note(finished_note(run.stage, done->run, first, last, done->detail, o.out, o.dp));
  }
  if (done->run.interrupted) return ExitCode::interrupted;
  return read;
}

}  // namespace ca::train
