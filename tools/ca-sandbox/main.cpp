// ca-sandbox: make agent workspaces, run commands in them isolated, and pack or unpack snapshots.

#include "sandbox/commands.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-sandbox",
              "Make agent workspaces, run commands in them isolated (bubblewrap), and pack or unpack snapshots.");
  auto& app = cli.app();
  app.require_subcommand(1);

  auto* create_cmd = app.add_subcommand("create", "Make one workspace per task record under DIR/<id>/");
  std::string tasks_path, dir, only_id, backend = "cuda";
  create_cmd->add_option("TASKS", tasks_path, "Task JSONL file, - for stdin")->required();
  create_cmd->add_option("--dir", dir, "Directory to make the workspaces in")->required();
  create_cmd->add_option("--id", only_id, "Only the task with this id");
  create_cmd->add_option("--backend", backend, "Backend the workspace is written for")
      ->capture_default_str()
      ->check(CLI::IsMember({"cuda", "cpu"}));

  auto* exec_cmd = app.add_subcommand(
      "exec", "Run CMD in the sandbox with WORKSPACE as its directory; only WORKSPACE/kernels and /tmp are writable");
  std::string workspace;
  std::vector<std::string> command;
  bool gpu = false;
  SandboxLimits limits;
  exec_cmd->add_option("WORKSPACE", workspace, "Workspace directory")->required();
  exec_cmd->add_option("CMD", command, "Command and arguments, after --")->required();
  exec_cmd->add_flag("--gpu", gpu, "Give the command the GPU devices (/dev/nvidia*)");
  exec_cmd->add_option("--wall", limits.wall_s, "Wall-clock limit, seconds")->capture_default_str()->check(seconds());
  exec_cmd->add_option("--cpu", limits.cpu_s, "CPU-time limit per process, seconds")
      ->capture_default_str()
      ->check(seconds());
  exec_cmd->add_option("--memory", limits.memory_bytes, "Address-space limit per process, bytes (K, M, G suffixes)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(positive(1e15));
  exec_cmd->add_option("--processes", limits.processes, "Process limit of the sandbox user")
      ->capture_default_str()
      ->check(count(1e6));
  exec_cmd->add_option("--file-size", limits.file_bytes, "Largest file the command may write, bytes (K, M, G suffixes)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(positive(1e15));

  limits.disk_bytes = int64_t{1} << 30;
  exec_cmd
      ->add_option("--disk", limits.disk_bytes,
                   "Quota of kernels/ in all, bytes (K, M, G suffixes): checked while the command writes, which is "
                   "killed once kernels/ passes it")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(positive(1e15));

  exec_cmd
      ->add_option("--device-memory", limits.device_memory_bytes,
                   "With --gpu: device memory the command may pin on each device, bytes (K, M, G suffixes), held by "
                   "the MPS server when an MPS control daemon runs; 0: no share")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(non_negative(1e15));

  auto* pack_cmd = app.add_subcommand("pack", "Pack a workspace into a .tar.gz (or .tar.zst) snapshot");
  std::string archive, destination;
  pack_cmd->add_option("WORKSPACE", workspace, "Workspace directory")->required();
  pack_cmd->add_option("-o,--output", archive, "Archive to write")->required();

  auto* unpack_cmd =
      app.add_subcommand("unpack", "Unpack a snapshot into a new directory, refusing entries that escape it");
  unpack_cmd->add_option("FILE", archive, "Archive to read")->required();
  unpack_cmd->add_option("-o,--output", destination, "Directory to create (must not exist or be empty)")->required();

  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (create_cmd->parsed()) return to_int(create_workspaces(tasks_path, dir, only_id, backend));
  if (exec_cmd->parsed()) return exec_in_workspace(workspace, command, gpu, limits);
  if (pack_cmd->parsed()) return to_int(pack_workspace(workspace, archive));
  return to_int(unpack_snapshot(archive, destination));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
