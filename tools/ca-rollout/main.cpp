// ca-rollout: run a policy as an agent on task records, one episode per task
// and sample, and write a trajectory record for each (docs/TRAJECTORY.md).
#include "model/local_policy.h"
#include "rollout/rollout.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/executable_dir.h"
#include "util/log.h"
#include "util/signals.h"

using namespace ca;

int main(int argc, char** argv) try {
  model::register_local_policy();
  ToolCli cli("ca-rollout",
              "Run a policy as an agent on tasks and write one trajectory record per episode (docs/TRAJECTORY.md).");
  cli.default_jobs(1, "Episodes run at once (GPU work still queues on the device lease)");
  RolloutOptions options;
  std::vector<std::string> tasks_flag;
  std::string shard = "0/1";
  bool no_final_profile = false, no_compile = false;
  auto& app = cli.app();
  app.add_option("FILE", options.task_files, "Task JSONL files, - for stdin");
  app.add_option("--tasks", tasks_flag, "Task JSONL file (the same as FILE)");
  app.add_option("--policy", options.policy_spec, "openai:URL, replay:FILE, builtin or local:CKPT")->required();
  app.add_option("-o,--output", options.output, "Trajectory JSONL file (a journal: appended per episode), - for stdout")
      ->capture_default_str();
  app.add_option("--samples", options.samples, "Episodes per task")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--shard", shard, "Run only shard I of N (tasks split by a hash of their id)")->capture_default_str();
  app.add_flag("--resume", options.resume, "Continue the run in --output: skip the (task, sample) pairs it holds");
  app.add_option("--backend", options.episode.tools.backend, "Workspace backend: cpu or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--workdir", options.episode.work_dir, "Directory for the workspaces (default: a temporary one)");
  app.add_flag("--keep-workspaces", options.episode.keep_workspace,
               "Leave each episode's workspace and judge files in --workdir");
  app.add_option("--max-turns", options.episode.limits.max_turns, "Policy turns per episode")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-context-tokens", options.episode.limits.max_context_tokens,
                 "Tokens of conversation before the episode ends")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-wall", options.episode.limits.max_wall_s, "Seconds of an episode before the final judgement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--bash-timeout", options.episode.tools.bash_timeout_s, "Seconds of one bash call in the sandbox")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--output-budget", options.episode.tools.output_budget,
                 "Characters of one tool result (the middle is cut)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--judge", options.episode.tools.judge_socket,
                 "A warm judge's socket (ca-judge serve) for the agent's verify and profile calls, or auto: start "
                 "one for this run; the cold tools when none answers");
  app.add_flag("--no-compile", no_compile, "Profile without the torch.compile baseline (rewards at most 2)");
  app.add_flag("--no-final-profile", no_final_profile,
               "Final judgement without ca-profile (rewards at most 1; for plumbing tests)");
  add_policy_flags(app, options.policy);
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  options.task_files.insert(options.task_files.end(), tasks_flag.begin(), tasks_flag.end());
  if (options.task_files.empty()) options.task_files.push_back("-");
  auto parsed_shard = parse_shard(shard);
  if (!parsed_shard) return to_int(usage_error("--shard: " + parsed_shard.error()));
  options.shard_index = parsed_shard->index;
  options.shard_count = parsed_shard->count;
  options.jobs = cli.common().jobs;
  options.seed = cli.common().seed;
  options.policy.send_seed = app.count("--seed") > 0;
  options.episode.tools.bin_dir = executable_dir();
  options.episode.tools.profile_compile = !no_compile;
  options.episode.judge = {executable_dir(), options.episode.tools.backend, !no_final_profile, !no_compile};
  install_interrupt_handlers();
  return to_int(run_rollout(options));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
