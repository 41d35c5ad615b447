// ca-rollout's run: episodes for every (task, sample) of a shard, -j at once,
// each written to the journal as it finishes; --resume skips what is done.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "policy/factory.h"
#include "rollout/episode.h"
#include "util/exit_codes.h"

namespace ca {

struct RolloutOptions {
  std::vector<std::string> task_files;
  std::string output = "-";
  std::string policy_spec;
  PolicyOptions policy;
  EpisodeOptions episode;  // work_dir "": a temporary directory, removed at the end
  int samples = 1;
  int shard_index = 0;
  int shard_count = 1;
  bool resume = false;
  unsigned jobs = 1;
  uint64_t seed = 0;
};

struct Shard {
  int index = 0;
  int count = 1;
};

/// "I/N" with 0 <= I < N. Errors name the expected form.
std::expected<Shard, std::string> parse_shard(const std::string& text);

/// Whether the task with `task_id` belongs to `shard`: by a hash of the id,
/// so every machine agrees whatever the order or split of the task files.
bool in_shard(const std::string& task_id, const Shard& shard);

/// The seed of one episode, from the run's seed, the task id and the sample.
uint64_t episode_seed(uint64_t seed, const std::string& task_id, int sample);

/// Runs the rollout and reports on stderr. Returns ok; some_failed when a
/// task line was bad or an episode's record carries an error; usage for a
/// bad policy spec or an output that exists without --resume; no_input;
/// io_error when the journal cannot be written; interrupted on SIGINT/SIGTERM
/// (episodes in flight are not written, so --resume runs them again).
ExitCode run_rollout(const RolloutOptions& options);

}  // namespace ca
