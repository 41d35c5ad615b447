// ca-judge: a warm judge. `serve` keeps one judging process per device and answers verify and profile requests on a
// Unix socket with the judgement ca-verify and ca-profile would give; `ask` sends it one request (docs/ARCHITECTURE.md,
// "Contracts"; common/profile/judge_server.h).
#include <filesystem>

#include "harness/flags.h"
#include "profile/judge_server.h"
#include "profile/records.h"
#include "sandbox/sandbox.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/jsonl.h"
#include "util/log.h"
#include "util/signals.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-judge",
              "A warm judge: one process per device that answers ca-verify and ca-profile requests on a Unix socket.");
  cli.secret_seed_default();
  cli.default_jobs(1, "serve: verify requests judged at once (builds and trials overlap); profiles one at a time");
  auto& app = cli.app();
  app.require_subcommand(1);

  auto* serve_cmd = app.add_subcommand("serve", "Answer verify and profile requests on SOCKET until SIGINT or SIGTERM");
  JudgeServerOptions options;
  serve_cmd->add_option("--socket", options.socket_path, "Unix socket path to listen on (made private to this user)")
      ->required();
  serve_cmd->add_option("--tasks", options.tasks_path, "Task JSONL file for record requests that name a task_id");
  add_tolerance_flags(*serve_cmd, options.verify.tolerance, "the outputs, verified and timed");
  add_runner_timeout_flag(*serve_cmd, options.verify.limits);
  add_build_flags(*serve_cmd, options.verify.build);
  add_tf32_flag(*serve_cmd, options.profile.compiled.tf32);
  add_timing_flags(*serve_cmd, options.profile);

  auto* ask_cmd = app.add_subcommand(
      "ask", "Send one request to the judge at SOCKET and print its answer as ca-verify or ca-profile would");
  std::string ask_socket, tool, workspace, backend;
  std::vector<std::string> inputs;
  bool no_compile = false;
  double timeout_s = 3600;
  ask_cmd->add_option("--socket", ask_socket, "The judge's socket")->required();
  ask_cmd->add_option("TOOL", tool, "verify or profile")->required()->check(CLI::IsMember({"verify", "profile"}));
  ask_cmd->add_option("FILE", inputs, "Candidate JSONL files, - for stdin (default); judged records go to stdout");
  ask_cmd->add_option("--workspace", workspace,
                      "Instead of records, judge this agent workspace and print for the agent");
  ask_cmd->add_option("--backend", backend, "Backend of --workspace (default: the one the workspace records)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  ask_cmd->add_flag("--no-compile", no_compile, "profile: do not time the torch.compile baseline");
  ask_cmd->add_option("--wait", timeout_s, "Seconds to wait for each answer")->capture_default_str()->check(seconds());

  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  install_interrupt_handlers();
  if (serve_cmd->parsed()) {
    if (app.count("--seed") > 0) options.verify.seed = options.profile.seed = cli.common().seed;
    options.profile.tolerance = options.verify.tolerance;
    options.profile.limits = options.verify.limits;
    options.profile.build = options.verify.build;
    // Workspace requests are an agent's: timed as ca-profile --workspace times them.
    options.workspace_profile = options.profile;
    apply_workspace_timing(*serve_cmd, options.workspace_profile);
    // As ca-verify -j N: each of N runners at once gets its share of the host's memory (a profile's, as
    // ca-profile's, the default).
    options.jobs = cli.common().jobs;
    options.verify.limits.memory_bytes = host_memory_share(options.verify.limits.memory_bytes, int(options.jobs));
    return to_int(serve_judge(options));
  }
  if (!workspace.empty() && !inputs.empty()) return to_int(usage_error("ask: give FILE... or --workspace, not both"));
  if (workspace.empty()) return to_int(ask_judge_records(ask_socket, tool, inputs, !no_compile, timeout_s));
  Json request = {{"tool", tool}, {"workspace", std::filesystem::absolute(workspace).string()}};
  if (!backend.empty()) request["backend"] = backend;
  if (no_compile) request["compile"] = false;
  return to_int(ask_judge(ask_socket, request, timeout_s));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
