// Where candidates meet their tasks: a --tasks file indexed by id, a task
// embedded in the candidate record, or an agent's workspace directory.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ir/backend.h"
#include "util/exit_codes.h"
#include "util/journal.h"
#include "util/jsonl.h"
#include "util/side_file.h"

namespace ca {

/// Task records of a JSONL file by id, read as a side file (util/side_file.h: 66 missing, 65 a bad line or a record
/// without an id, 74 unreadable). Errors name file and line.
std::expected<std::map<std::string, Json>, SideFileError> load_tasks(const std::string& path);

/// The task for `candidate`: its embedded `task`, else tasks[candidate.task_id].
std::expected<Json, std::string> task_of(const Json& candidate, const std::map<std::string, Json>& tasks);

/// The candidate's `files` as path -> source. Errors name the field.
std::expected<std::map<std::string, std::string>, std::string> candidate_files(const Json& candidate);

/// A candidate record made from a workspace: task.json and every file under kernels/.
std::expected<Json, std::string> workspace_candidate(const std::string& dir, const std::string& backend);

/// What ca-verify and ca-profile do to one candidate: given its task and backend, the object the record gains.
using Judge = std::function<std::expected<Json, std::string>(const Json& task, const Json& candidate, Backend backend)>;

/// The record loop of both tools: each candidate record of `inputs` gets its task (embedded, else from `tasks_path`,
/// whose error ends the run with load_tasks's code)
/// and backend, and `judge`'s object under `field`; records go to `output` atomically. A record that cannot be
/// judged is reported and skipped (exit 1), or stops the run with `fail_fast` (exit 65). `jobs` records are judged at
/// once (record_loop.h); a timing job still holds the device's lease alone (timing/lease.h). Finished records are
/// journaled beside `output` (util/journal.h), and `journal.resume` carries on from a run cut short.
ExitCode judge_records(const std::vector<std::string>& inputs, const std::string& output, const std::string& tasks_path,
                       bool fail_fast, const std::string& field, const Judge& judge, unsigned jobs = 1,
                       const JournalOptions& journal = {});

/// What judging a workspace gives: the exit code, what the agent reads (stdout) and the error message (for stderr
/// through util/log.h's error(); "" when none).
struct WorkspaceJudgement {
  ExitCode code = ExitCode::ok;
  std::string report;
  std::string error;
};

/// Workspace mode without printing (ca-judge answers with it): judges the workspace `dir` with `backend` ("cpu" or
/// "cuda"); `report` of the result for the agent. Exit 0 when the result says ok, 1 when not, 64/66/65 for a bad
/// backend, a missing workspace, a harness failure, 130 when interrupted.
WorkspaceJudgement judge_workspace_text(const std::string& dir, const std::string& backend, const Judge& judge,
                                        const std::function<std::string(const Json&)>& report);

/// Workspace mode: judge_workspace_text, with its report printed on stdout and its error on stderr.
ExitCode judge_workspace(const std::string& dir, const std::string& backend, const Judge& judge,
                         const std::function<std::string(const Json&)>& report);

/// The workspace a tool run with no arguments should judge: "." when standard input is a terminal and the current
/// directory holds task.json; "" otherwise.
std::string implied_workspace(const std::vector<std::string>& inputs);

/// Settles what a judging tool reads, after its flags are parsed: `workspace` with FILE arguments is a usage error
/// (64; the files would be ignored); with no `workspace`, implied_workspace's; a workspace's `backend` is the one its
/// workspace.json records unless --backend was given (65 for a bad workspace.json); with neither, records from a
/// standard input that is a terminal get a note that says what the tool waits for. Returns the code to stop with.
std::optional<ExitCode> settle_workspace(const std::vector<std::string>& inputs, std::string& workspace,
                                         std::string& backend, bool backend_given);

}  // namespace ca
