// Where candidates meet their tasks: a --tasks file indexed by id, a task
// embedded in the candidate record, or an agent's workspace directory.
#pragma once

#include <expected>
#include <map>
#include <string>

#include "util/jsonl.h"

namespace ca {

/// Task records of a JSONL file by id. Errors name file and line.
std::expected<std::map<std::string, Json>, std::string> load_tasks(const std::string& path);

/// The task for `candidate`: its embedded `task`, else tasks[candidate.task_id].
std::expected<Json, std::string> task_of(const Json& candidate, const std::map<std::string, Json>& tasks);

/// The candidate's `files` as path -> source. Errors name the field.
std::expected<std::map<std::string, std::string>, std::string> candidate_files(const Json& candidate);

/// A candidate record made from a workspace: task.json and every file under kernels/.
std::expected<Json, std::string> workspace_candidate(const std::string& dir, const std::string& backend);

}  // namespace ca
