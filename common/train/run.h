// ca-train's run, from its flags to an exit code: LibTorch's threads and precision, the data-parallel launch, the
// checkpoint's tokenizer, the trajectories read into sequences, the stage's training loop with a progress line, and
// the closing note on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/tokenizer.h"
#include "train/distributed.h"
#include "train/ppo.h"
#include "train/rft.h"
#include "train/trainer.h"
#include "util/exit_codes.h"
#include "util/jsonl.h"
#include "util/record_loop.h"

namespace ca::train {

/// ca-train's subcommands (docs/TRAINING.md).
enum class Stage { rft, value, warmup, ppo };

/// The subcommand's name: "rft", "value", "warmup" or "ppo".
std::string_view stage_name(Stage stage);

/// The step-log field that a stage's progress line and closing note follow: loss (rft), explained_variance
/// (value), reward_mean (warmup, ppo).
std::string_view stage_key(Stage stage);

/// Everything ca-train's flags say.
struct TrainRun {
  Stage stage = Stage::rft;
  TrainOptions options;                   // options.dp is run_training's to set
  RftFilter filter;                       // rft: which trajectories are kept
  PpoRunOptions ppo;                      // warmup, ppo; config.micro_batch and group_advantages come from above
  std::vector<std::string> data = {"-"};  // trajectory JSONL files, "-" for stdin
  std::string dtype = "float32";          // set_compute_dtype's
  int64_t max_context = 32768;            // tokens per trajectory at most; longer ones are bad records
  int64_t dist_timeout_s = 300;           // data parallel: the rendezvous timeout, seconds
  int threads = 1;                        // LibTorch's intra-op threads
  OnBadRecord on_bad = OnBadRecord::skip;
};

/// An error with the exit code it ends the run with.
using RunError = std::pair<ExitCode, std::string>;

/// This process's place in a data-parallel launch (docs/TRAINING.md, "Data parallel"): the group `env` describes,
/// or none (inactive) at world size 1, where `device` is left as it is. At world size > 1 a cuda `device` becomes
/// cuda:LOCAL_RANK, the rank's GPU on its node. Errors: 64 for a device parse_device refuses (world size > 1 only),
/// 74 for a group that cannot be joined within `rendezvous_timeout` (DataParallel::init's message).
std::expected<DataParallel, RunError> join_launch(const DistEnv& env, std::string& device,
                                                  std::chrono::milliseconds rendezvous_timeout);

/// The tokenizer of the checkpoint folder `model` (its tokenizer.json). Errors: 66 when `model` does not exist, 65
/// when its tokenizer.json is missing or bad; the message is Tokenizer::load's.
std::expected<model::Tokenizer, RunError> load_checkpoint_tokenizer(const std::filesystem::path& model);

/// Reads the trajectories of run.data into `data`: rft keeps what run.filter passes and counts the rest by reason;
/// the other stages tokenize every trajectory (one without reward.value is a bad record). A bad record (bad JSON,
/// over run.max_context) is reported as `file:line: message` and skipped (some_failed), or ends the reading with
/// run.on_bad stop (data_error). Returns visit_records' code: also no_input for a missing file, io_error,
/// interrupted.
ExitCode read_trajectories(const TrainRun& run, const model::Tokenizer& tokenizer, RftData& data);

/// The note that ends a finished run: "updates 1..12: loss 4.1 -> 1.2; checkpoints and log.jsonl in OUT" ("steps"
/// for warmup and ppo; the stage_key field of the first and last step's log lines, null when absent or when no
/// step ran and a line is null), `detail` (to
/// end in "; ") before "checkpoints", and " (N ranks, BACKEND)" after it with a data-parallel group (`dp`; null:
/// one process).
std::string finished_note(Stage stage, const TrainResult& done, const Json& first_step, const Json& last_step,
                          const std::string& detail, const std::filesystem::path& out, const DataParallel* dp);

/// ca-train: sets run.threads and run.dtype (a bad dtype: 64), installs the interrupt handlers, joins the launch
/// of this process's environment (read_dist_env: a bad variable is 64; join_launch), loads the tokenizer, reads
/// the trajectories (rank 0 notes RftData::summary) and trains the stage with a progress line on rank 0. Returns
/// the reading's code (ok, or some_failed when bad records were skipped) after the closing note (finished_note,
/// rank 0), 130 when interrupted between updates, 65 when the stage fails (a model, a checkpoint, the log, no
/// data), or the first failure's code, each reported.
ExitCode run_training(TrainRun run);

}  // namespace ca::train
