// The harness's own judgement of an episode (docs/TRAJECTORY.md): after the episode,
// the workspace's kernels/ become a candidate record that goes through
// ca-verify, ca-profile and ca-reward as subprocesses; nothing the agent said
// or measured enters the reward.
#pragma once

#include <expected>
#include <string>

#include "util/jsonl.h"

namespace ca {

struct JudgeOptions {
  std::string bin_dir;  // where ca-verify, ca-profile and ca-reward are
  std::string backend = "cpu";
  bool profile = true;      // false: no ca-profile (the reward is then at most 1, and says so)
  bool compile = true;      // false: ca-profile --no-compile (the reward is then at most 2)
  double timeout_s = 3600;  // each of the three tools
};

/// The candidate record of `workspace`'s kernels/ (every regular file, by its
/// path from the workspace root) for `task`, with the task embedded. Errors
/// name an unreadable file.
std::expected<Json, std::string> workspace_kernels_candidate(const Json& task, const std::string& workspace,
                                                             const std::string& id, const std::string& backend);

/// Runs `candidate` through ca-verify | ca-profile | ca-reward, with files in
/// `scratch` (an existing directory), and returns the judged record (verify,
/// profile, reward). Errors: a tool that cannot start, fails without a record
/// (its last stderr line), or is interrupted ("interrupted").
std::expected<Json, std::string> judge_candidate(const Json& candidate, const std::string& scratch,
                                                 const JudgeOptions& options);

/// `dir` packed as a .tar.gz (sandbox/snapshot.h) and base64-encoded, for the trajectory.
std::expected<std::string, std::string> pack_base64(const std::string& dir, const std::string& scratch);

/// Standard base64 (RFC 4648, with padding).
std::string base64_encode(const std::string& bytes);

}  // namespace ca
