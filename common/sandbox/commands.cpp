#include "sandbox/commands.h"

#include <cstdio>
#include <filesystem>

#include "sandbox/snapshot.h"
#include "sandbox/workspace.h"
#include "util/json_field.h"
#include "util/log.h"
#include "util/signals.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

// The one-line reason an exec failed, naming the limit that ended it.
std::string limit_message(const SandboxResult& result, const SandboxLimits& limits) {
  auto seconds = [](double s) { return std::to_string(static_cast<int64_t>(s)) + " s"; };
  if (result.limit_hit == "cpu") return "command hit the CPU-time limit (" + seconds(limits.cpu_s) + ")";
  if (result.limit_hit == "memory")
    return "command hit the memory limit (" + std::to_string(limits.memory_bytes) + " bytes)";
  if (result.limit_hit == "file size")
    return "command hit the file-size limit (" + std::to_string(limits.file_bytes) + " bytes)";
  if (result.limit_hit == "disk")
    return "command passed the disk quota of kernels/ (" + std::to_string(limits.disk_bytes) + " bytes in all)";
  if (result.limit_hit == "processes")
    return "command hit the process limit (" + std::to_string(limits.processes) + ")";
  if (result.limit_hit == "output") return "command output beyond the capture limit was dropped";
  if (result.timed_out) return "command ended by the wall-clock limit (" + seconds(limits.wall_s) + ")";
  return "";
}

bool is_workspace(const std::string& dir) {
  return fs::is_directory(fs::path(dir) / "kernels");
}

}  // namespace

ExitCode create_workspaces(const std::string& tasks_path, const std::string& dir, const std::string& only_id,
                           const std::string& backend) {
  auto reader = JsonlReader::open(tasks_path);
  if (!reader) {
    error(reader.error());
    return ExitCode::no_input;
  }
  // A folder that cannot be made fails the run once (an I/O error), not each record.
  std::error_code made;
  fs::create_directories(dir, made);
  if (made || !fs::is_directory(dir)) {
    error(dir, made ? made.message() : "not a directory");
    return ExitCode::io_error;
  }
  ExitCode code = ExitCode::ok;
  bool found = false;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) break;
    if (status == JsonlReader::Status::interrupted) return ExitCode::interrupted;
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

int exec_in_workspace(const std::string& workspace, const std::vector<std::string>& command, bool gpu,
                      const SandboxLimits& limits) {
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

ExitCode pack_workspace(const std::string& workspace, const std::string& archive) {
  if (!fs::is_directory(workspace)) {
    error(workspace, "no such directory");
    return ExitCode::no_input;
  }
  auto packed = pack_directory(workspace, archive);
  if (!packed) error(packed.error());
  return packed ? ExitCode::ok : ExitCode::io_error;
}

ExitCode unpack_snapshot(const std::string& archive, const std::string& destination) {
  if (!fs::exists(archive)) {
    error(archive, "no such file");
    return ExitCode::no_input;
  }
  auto unpacked = unpack_archive(archive, destination);
  if (unpacked) return ExitCode::ok;
  error(unpacked.error().message);
  return unpacked.error().destination ? ExitCode::io_error : ExitCode::data_error;
}

}  // namespace ca
