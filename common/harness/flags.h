// The harness flags of the judging tools (ca-verify, ca-profile, ca-filter), each declared once here with one
// meaning and one help text: the tolerance, TF32, how candidates are built, and where candidates meet their tasks.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "harness/options.h"
#include "kernel/builder.h"
#include "sandbox/sandbox.h"

namespace ca {

/// Where a judging tool's candidates come from besides its record inputs.
struct CandidateSources {
  std::string tasks;            // --tasks: task records for candidates that name a task_id (a side file)
  std::string workspace;        // --workspace: an agent's workspace to judge instead of records
  std::string backend = "cpu";  // --backend: the backend of --workspace (and of ca-profile --precompile)
};

/// --atol and --rtol: the verification tolerance (compare_output's); `applies_to` says what it judges in this tool
/// ("timed outputs", "the negative controls").
void add_tolerance_flags(CLI::App& app, Tolerance& tolerance, const std::string& applies_to);

/// --tf32 MODE: which float32 ops of the timed baselines (eager and compiled) may use TF32 (Tf32Mode; default
/// pytorch, PyTorch's own defaults). A name outside none|pytorch|all is a usage error that names the set.
void add_tf32_flag(CLI::App& app, Tf32Mode& mode);

/// --cuda-arch and --fast-math: how candidates are built (kernel/builder.h).
void add_build_flags(CLI::App& app, BuildOptions& build);

/// --timeout: the wall-clock limit of one runner invocation (ca-verify runs every trial in one, ca-profile one round),
/// which is also its CPU-time limit.
void add_runner_timeout_flag(CLI::App& app, SandboxLimits& limits);

/// --tasks, --workspace and --backend; `judging` names what the tool does to a workspace ("verify", "profile").
void add_candidate_source_flags(CLI::App& app, CandidateSources& sources, const std::string& judging);

}  // namespace ca
