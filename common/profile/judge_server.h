// ca-judge: a warm judge. One long-lived process per device that answers verify and profile requests over a Unix
// socket with exactly the judgement ca-verify and ca-profile give (the same judges, verify_judge and profile_judge,
// the same options), keeping between requests what a fresh tool pays for every time: the process and LibTorch, the
// device's context, the loaded torch.compile packages, the clock's measured cpu flush, the --tasks file. Each
// candidate still runs in a fresh sandboxed runner of its own, as with the cold tools (docs/EXPLOITS.md).
//
// The protocol (one request a connection, one JSON line each way; docs/ARCHITECTURE.md, "Contracts"; ca-judge(1)):
//   {"tool": "verify"|"profile", "workspace": DIR, "backend"?: "cpu"|"cuda", "compile"?: bool}
//     -> {"exit": N, "stdout": TEXT, "stderr": TEXT}: what `ca-TOOL --workspace DIR [--backend B] [--no-compile]`
//        exits with and prints;
//   {"tool": "verify"|"profile", "record": CANDIDATE, "compile"?: bool}
//     -> {"exit": 0, "record": JUDGED} (the record ca-TOOL writes for it) or {"exit": 1, "stderr": TEXT};
//   anything else -> {"exit": 64 or 65, "stderr": "ca-judge: error: request: ..."}.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "util/exit_codes.h"
#include "util/jsonl.h"
#include "verify/verify.h"

namespace ca {

struct JudgeServerOptions {
  std::string socket_path;
  std::string tasks_path;  // --tasks: task records for candidates that name a task_id, read once
  VerifyOptions verify;
  ProfileOptions profile;            // record requests: ca-profile's
  ProfileOptions workspace_profile;  // workspace requests: ca-profile --workspace's (apply_workspace_timing)
  size_t max_request_bytes = size_t(256) << 20;
  unsigned jobs = 1;  // verify requests judged at once
};

/// A judge that answers requests (the protocol above). Profiles are judged one at a time, in arrival order: they
/// time under the device's exclusive lease anyway, and one at a time keeps the caching allocator's warm blocks to the
/// profile that timed with them. Verifies run up to options.jobs at once, beside a profile as ca-verify -j beside
/// ca-profile (their builds overlap its timing; their trials and references wait for its lease). Thread-safe.
class WarmJudge {
 public:
  /// Fails when --tasks cannot be read (its message names file and line).
  static std::expected<std::unique_ptr<WarmJudge>, std::string> make(const JudgeServerOptions& options);
  ~WarmJudge();
  /// The answer to one request line, as a JSON object (never fails: a bad request gets an answer that says so).
  Json answer(const std::string& line);

 private:
  struct State;
  explicit WarmJudge(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

/// ca-judge serve: listens on options.socket_path (private to this user; a stale socket is replaced, a live one
/// refused), prints "listening on PATH" on stdout once clients may connect, and answers every connection on a thread
/// of its own (WarmJudge orders the work) until SIGINT or SIGTERM; then stops accepting, lets the requests in flight
/// end (they stop at their next interrupt check) and removes the socket. Returns 130 after a signal, 74 when the socket
/// cannot be made, 66/65 for --tasks.
ExitCode serve_judge(const JudgeServerOptions& options);

/// ca-judge ask: sends one request to the judge at `socket_path` and prints its answer as the cold tool would: the
/// workspace's report on stdout, the error on stderr, and returns its exit code; a record request's judged record on
/// stdout. 69 (EX_UNAVAILABLE) when no judge answers.
ExitCode ask_judge(const std::string& socket_path, const Json& request, double timeout_s);

/// ca-judge ask FILE...: sends each candidate record of `inputs` (JSONL; "-" or none: stdin) to the judge as a
/// record request for `tool` and writes the judged records to stdout in order, as `ca-TOOL` would. A record the
/// judge cannot judge is reported and skipped (exit 1), a line that is not a JSON object too (65 at the end); 69
/// when no judge answers.
ExitCode ask_judge_records(const std::string& socket_path, const std::string& tool,
                           const std::vector<std::string>& inputs, bool compile, double timeout_s);

/// ca-judge's exit code when no judge answers at the socket (EX_UNAVAILABLE).
inline constexpr ExitCode k_exit_no_judge = ExitCode{69};

}  // namespace ca
