// ca-sandbox: make agent workspaces, run commands in them isolated, and pack or unpack snapshots.

#include <cstdio>
#include <filesystem>

#include "sandbox/sandbox.h"
#include "sandbox/snapshot.h"
#include "sandbox/workspace.h"
#include "util/cli.h"
#include "util/json_field.h"
#include "util/log.h"
#include "util/signals.h"

using namespace ca;
namespace fs = std::filesystem;

namespace {

// The one-line reason an exec failed, naming the limit that ended it.
std::string limit_message(const SandboxResult& result, const SandboxLimits& limits) {
  auto seconds = [](double s) { return std::to_string(static_cast<int64_t>(s)) + " s"; };
  if (result.limit_hit == "cpu") return "command hit the CPU-time limit (" + seconds(limits.cpu_s) + ")";
  if (result.limit_hit == "memory") return "command hit the memory limit (" + std::to_string(limits.memory_bytes) + " bytes)";
  if (result.limit_hit == "file size") return "command hit the file-size limit (" + std::to_string(limits.file_bytes) + " bytes)";
  if (result.limit_hit == "processes") return "command hit the process limit (" + std::to_string(limits.processes) + ")";
  if (result.limit_hit == "output") return "command output beyond the capture limit was dropped";
  if (result.timed_out) return "command ended by the wall-clock limit (" + seconds(limits.wall_s) + ")";
  return "";
}

bool is_workspace(const std::string& dir) { return fs::is_directory(fs::path(dir) / "kernels"); }

ExitCode create(const std::string& tasks_path, const std::string& dir, const std::string& only_id, const std::string& backend) {
  auto reader = JsonlReader::open(tasks_path);
  if (!reader) {
    error(reader.error());
    return ExitCode::no_input;
  }
  ExitCode code = ExitCode::ok;
  bool found = false;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) break;
    if (status == JsonlReader::Status::io_error) {
      error(reader->name(), message);
      return ExitCode::io_error;
    }
    if (interrupted()) return ExitCode::interrupted;
    if (status == JsonlReader::Status::bad_record) {
      if (!only_id.empty()) continue;  // looking for one task; a broken line elsewhere is not its business
      error(record.where(), message);
      code = ExitCode::some_failed;
      continue;
    }
    auto id = string_field(record.value, "id", "");
    if (!only_id.empty() && (!id || *id != only_id)) continue;
    found = true;
    std::string workspace = id ? (fs::path(dir) / sanitize_id(*id)).string() : "";
    auto created = id ? create_workspace(record.value, workspace, backend) : std::unexpected(id.error());
    if (!created) {
      error(record.where(), created.error());
      code = ExitCode::some_failed;
      continue;
    }
    std::printf("%s\n", workspace.c_str());
    std::fflush(stdout);
  }
  if (!only_id.empty() && !found) {
    error(reader->name(), "no task with id '" + only_id + "'");
    return ExitCode::data_error;
  }
  return code;
}

// Returns the command's own exit status, as a shell passes it on.
int exec(const std::string& workspace, const std::vector<std::string>& command, bool gpu, const SandboxLimits& limits) {
  if (!is_workspace(workspace)) {
    error(workspace, "not a workspace (no kernels/ directory); make one with 'ca-sandbox create'");
    return to_int(ExitCode::no_input);
  }
  SandboxSpec spec;
  spec.argv = command;
  spec.workdir = workspace;
  spec.writable = {(fs::path(workspace) / "kernels").string()};
  spec.gpu = gpu;
  spec.limits = limits;
  auto result = run_sandboxed(spec);
  if (!result) {
    error(workspace, result.error());
    return to_int(result.error() == "interrupted" ? ExitCode::interrupted : ExitCode::io_error);
  }
  std::fwrite(result->out.data(), 1, result->out.size(), stdout);
  std::fflush(stdout);
  std::fwrite(result->err.data(), 1, result->err.size(), stderr);
  std::string why = limit_message(*result, limits);
  if (!why.empty() && result->exit_code != 0) error(workspace, why);
  if (!why.empty() && result->exit_code == 0) warning(workspace, why);
  return result->exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  ToolCli cli("ca-sandbox", "Make agent workspaces, run commands in them isolated (bubblewrap), and pack or unpack snapshots.");
  auto& app = cli.app();
  app.require_subcommand(1);

  auto* create_cmd = app.add_subcommand("create", "Make one workspace per task record under DIR/<id>/");
  std::string tasks_path, dir, only_id, backend = "cuda";
  create_cmd->add_option("TASKS", tasks_path, "Task JSONL file, - for stdin")->required();
  create_cmd->add_option("--dir", dir, "Directory to make the workspaces in")->required();
  create_cmd->add_option("--id", only_id, "Only the task with this id");
  create_cmd->add_option("--backend", backend, "Backend the workspace is written for")->capture_default_str()->check(CLI::IsMember({"cuda", "cpu"}));

  auto* exec_cmd = app.add_subcommand("exec", "Run CMD in the sandbox with WORKSPACE as its directory; only WORKSPACE/kernels and /tmp are writable");
  std::string workspace;
  std::vector<std::string> command;
  bool gpu = false;
  SandboxLimits limits;
  exec_cmd->add_option("WORKSPACE", workspace, "Workspace directory")->required();
  exec_cmd->add_option("CMD", command, "Command and arguments, after --")->required();
  exec_cmd->add_flag("--gpu", gpu, "Give the command the GPU devices (/dev/nvidia*)");
  exec_cmd->add_option("--wall", limits.wall_s, "Wall-clock limit, seconds")->capture_default_str()->check(CLI::PositiveNumber);
  exec_cmd->add_option("--cpu", limits.cpu_s, "CPU-time limit per process, seconds")->capture_default_str()->check(CLI::PositiveNumber);
  exec_cmd->add_option("--memory", limits.memory_bytes, "Address-space limit per process, bytes (K, M, G suffixes)")
      ->capture_default_str()->transform(CLI::AsSizeValue(false))->check(CLI::PositiveNumber);
  exec_cmd->add_option("--processes", limits.processes, "Process limit of the sandbox user")->capture_default_str()->check(CLI::PositiveNumber);
  exec_cmd->add_option("--file-size", limits.file_bytes, "Largest file the command may write, bytes (K, M, G suffixes)")
      ->capture_default_str()->transform(CLI::AsSizeValue(false))->check(CLI::PositiveNumber);

  auto* pack_cmd = app.add_subcommand("pack", "Pack a workspace into a .tar.gz (or .tar.zst) snapshot");
  std::string archive, destination;
  pack_cmd->add_option("WORKSPACE", workspace, "Workspace directory")->required();
  pack_cmd->add_option("-o,--output", archive, "Archive to write")->required();

  auto* unpack_cmd = app.add_subcommand("unpack", "Unpack a snapshot into a new directory, refusing entries that escape it");
  unpack_cmd->add_option("FILE", archive, "Archive to read")->required();
  unpack_cmd->add_option("-o,--output", destination, "Directory to create (must not exist or be empty)")->required();

  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (create_cmd->parsed()) return to_int(create(tasks_path, dir, only_id, backend));
  if (exec_cmd->parsed()) return exec(workspace, command, gpu, limits);
  if (pack_cmd->parsed()) {
    if (!fs::is_directory(workspace)) {
      error(workspace, "no such directory");
      return to_int(ExitCode::no_input);
    }
    auto packed = pack_directory(workspace, archive);
    if (!packed) error(packed.error());
    return to_int(packed ? ExitCode::ok : ExitCode::io_error);
  }
  if (!fs::exists(archive)) {
    error(archive, "no such file");
    return to_int(ExitCode::no_input);
  }
  auto unpacked = unpack_archive(archive, destination);
  if (!unpacked) error(unpacked.error());
  return to_int(unpacked ? ExitCode::ok : ExitCode::data_error);
}
