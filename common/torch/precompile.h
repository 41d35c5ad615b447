// Compiling the compiled baselines of many tasks ahead of timing them (ca-profile --precompile): a few bridge
// processes compile every package, so a cold Python start-up is paid once per process, not once per task.
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "torch/compiled.h"
#include "util/exit_codes.h"
#include "util/record_loop.h"

namespace ca {

struct PrecompileSummary {
  ExitCode code = ExitCode::ok;
  size_t tasks = 0;     // lines of the tasks file with a record: compiled + cached + failed
  size_t compiled = 0;  // packages this run compiled
  size_t cached = 0;    // packages already there
  size_t failed = 0;    // tasks reported: a bad record, a program that does not load, a failed compile
  double seconds = 0;
};

/// Makes sure every task of `tasks_path` (JSONL) has its compiled baseline in the cache for `device` and `options`,
/// compiling the missing ones in up to `jobs` bridge processes (compile_missing). A task that cannot be read, loaded
/// or compiled is reported as `file:line: task 'id': message` and the others go on; with OnBadRecord::stop a bad
/// record ends the run before anything compiles. `code` is ok, some_failed, data_error (stop), no_input or
/// interrupted.
PrecompileSummary precompile_tasks(const std::string& tasks_path, const at::Device& device,
                                   const CompiledOptions& options, unsigned jobs, OnBadRecord on_bad);

/// "precompiled 6 tasks for cpu: 4 compiled, 1 cached, 1 failed in 63.2 s".
std::string summary_line(const PrecompileSummary& summary, const at::Device& device);

}  // namespace ca
