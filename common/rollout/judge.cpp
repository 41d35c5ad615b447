#include "rollout/judge.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "sandbox/snapshot.h"
#include "util/atomic_file.h"
#include "util/subprocess.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

// What a failed stage said: its last `<tool>: error:` line, else its last line (a crash's, a signal's).
std::string error_line(std::string text, const std::string& tool) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string marker = tool + ": error: ";
  auto error = text.rfind(marker);
  if (error != std::string::npos && (error == 0 || text[error - 1] == '\n'))
    return text.substr(error, text.find('\n', error) - error);
  auto newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

// Runs one stage; its output file must then hold one record.
std::expected<void, std::string> run_stage(std::vector<std::string> argv, const std::string& output, double timeout_s) {
  SubprocessOptions options;
  options.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000));
  std::string name = fs::path(argv[0]).filename().string();
  auto ran = run_subprocess(argv, options);
  if (!ran) return std::unexpected("cannot run " + name + ": " + ran.error());
  if (ran->interrupted) return std::unexpected("interrupted");
  auto written = read_file(output);
  if (!ran->ok() || !written || written->empty()) {
    return std::unexpected(name + " " + ran->describe() + ": " + error_line(ran->err, name));
  }
  return {};
}

}  // namespace

std::expected<Json, std::string> workspace_kernels_candidate(const Json& task, const std::string& workspace,
                                                             const std::string& id, const std::string& backend) {
  Json files = Json::object();
  std::error_code ec;
  fs::path root(workspace);
  std::vector<std::string> paths;
  for (auto it = fs::recursive_directory_iterator(root / "kernels", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) paths.push_back(fs::relative(it->path(), root, ec).string());
  }
  if (ec) return std::unexpected(workspace + "/kernels: " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    auto contents = read_file((root / path).string());
    if (!contents) return std::unexpected(contents.error());
    files[path] = std::move(*contents);
  }
  return Json{{"kind", "candidate"}, {"id", id},     {"task_id", task.value("id", Json())},
              {"backend", backend},  {"task", task}, {"files", std::move(files)}};
}

std::expected<Json, std::string> judge_candidate(const Json& candidate, const std::string& scratch,
                                                 const JudgeOptions& options) {
  std::string input = scratch + "/candidate.jsonl", verified = scratch + "/verified.jsonl",
              profiled = scratch + "/profiled.jsonl", rewarded = scratch + "/rewarded.jsonl";
  auto written = write_file_atomic(input, candidate.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
  if (!written) return std::unexpected(written.error());
  if (auto ran = run_stage({options.bin_dir + "/ca-verify", input, "-o", verified}, verified, options.timeout_s);
      !ran) {
    return std::unexpected(ran.error());
  }
  std::string judged = verified;
  if (options.profile) {
    std::vector<std::string> argv = {options.bin_dir + "/ca-profile", verified, "-o", profiled};
    if (!options.compile) argv.push_back("--no-compile");
    if (auto ran = run_stage(argv, profiled, options.timeout_s); !ran) return std::unexpected(ran.error());
    judged = profiled;
  }
  if (auto ran = run_stage({options.bin_dir + "/ca-reward", judged, "-o", rewarded}, rewarded, options.timeout_s);
      !ran) {
    return std::unexpected(ran.error());
  }
  auto text = read_file(rewarded);
  Json record = text ? Json::parse(*text, nullptr, false) : Json();
  if (!record.is_object()) return std::unexpected("ca-reward wrote no record");
  return record;
}

std::string base64_encode(const std::string& bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) chunk |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) chunk |= uint32_t(uint8_t(bytes[i + 2]));
    out += alphabet[(chunk >> 18) & 63];
    out += alphabet[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[chunk & 63] : '=';
  }
  return out;
}

std::expected<std::string, std::string> pack_base64(const std::string& dir, const std::string& scratch) {
  std::string archive = scratch + "/kernels.tar.gz";
  if (auto packed = pack_directory(dir, archive); !packed) return std::unexpected(packed.error());
  auto bytes = read_file(archive);
  if (!bytes) return std::unexpected(bytes.error());
  return base64_encode(*bytes);
}

}  // namespace ca
