#include "aten/candidates.h"

#include <filesystem>

#include "util/atomic_file.h"
#include "util/json_field.h"

namespace ca {

std::expected<std::map<std::string, Json>, std::string> load_tasks(const std::string& path) {
  auto reader = JsonlReader::open(path);
  if (!reader) return std::unexpected(reader.error());
  std::map<std::string, Json> tasks;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) return tasks;
    if (status != JsonlReader::Status::record) return std::unexpected(record.where() + ": " + message);
    auto id = string_field(record.value, "id", "");
    if (!id) return std::unexpected(record.where() + ": " + id.error());
    tasks[*id] = record.value;
  }
}

std::expected<Json, std::string> task_of(const Json& candidate, const std::map<std::string, Json>& tasks) {
  if (auto embedded = candidate.find("task"); embedded != candidate.end() && embedded->is_object()) return *embedded;
  auto id = string_field(candidate, "task_id", "");
  if (!id) return std::unexpected(id.error());
  auto it = tasks.find(*id);
  if (it == tasks.end()) return std::unexpected("task_id: no task '" + *id + "' (give the tasks with --tasks, or embed a task field)");
  return it->second;
}

std::expected<Json, std::string> workspace_candidate(const std::string& dir, const std::string& backend) {
  namespace fs = std::filesystem;
  auto task_text = read_file((fs::path(dir) / "task.json").string());
  if (!task_text) return std::unexpected(task_text.error() + " (not a workspace? make one with ca-sandbox create)");
  Json task = Json::parse(*task_text, nullptr, false);
  if (!task.is_object()) return std::unexpected(dir + "/task.json: invalid JSON");
  Json files = Json::object();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(fs::path(dir) / "kernels", ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
    // The agent writes kernels/; a symlink there could make this trusted
    // process read any file on the host.
    if (it->is_symlink()) return std::unexpected(it->path().string() + ": symbolic links are not allowed in kernels/");
    if (!it->is_regular_file()) continue;
    auto text = read_file(it->path().string());
    if (!text) return std::unexpected(text.error());
    files[fs::relative(it->path(), dir).string()] = *text;
  }
  if (files.empty()) return std::unexpected(dir + "/kernels: no kernel files yet");
  return Json{{"kind", "candidate"}, {"task_id", task.value("id", "")}, {"task", task}, {"backend", backend}, {"files", files}};
}

std::expected<std::map<std::string, std::string>, std::string> candidate_files(const Json& candidate) {
  auto files = require_field(candidate, "files", "");
  if (!files) return std::unexpected(files.error());
  if (!(*files)->is_object() || (*files)->empty()) return std::unexpected("files: expected an object of path -> source");
  std::map<std::string, std::string> out;
  for (auto it = (*files)->begin(); it != (*files)->end(); ++it) {
    if (!it->is_string()) return std::unexpected(field_path("files", it.key()) + ": expected the file's text");
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

}  // namespace ca
