// KernelBench-format solutions: the judge's request, the sandbox it runs solutions in, one judge per task.
#include "eval/modelnew.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "harness/options.h"
#include "sandbox/sandbox.h"
#include "sandbox/workspace.h"
#include "util/atomic_file.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;

namespace ca {

namespace {

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

// The first existing path of `candidates`, "" when none exists.
std::string first_existing(const std::vector<fs::path>& candidates) {
  for (const fs::path& path : candidates) {
    std::error_code ec;
    // Not canonical: a venv's python is a symlink whose target would leave the venv.
    if (fs::exists(path, ec)) return fs::absolute(path).lexically_normal().string();
  }
  return "";
}

struct Scripts {
  std::string python, judge, server, bridge;
};

// $CA_PYTHON, else the venv beside the build; the scripts in the checkout (tools/ca-eval, bridge/) or the install.
std::expected<Scripts, std::string> find_scripts(const std::string& bin_dir) {
  fs::path bin(bin_dir);
  Scripts scripts;
  const char* python = std::getenv("CA_PYTHON");
  scripts.python = python ? std::string(python) : first_existing({bin / "../../.venv/bin/python"});
  if (scripts.python.empty()) scripts.python = "python3";
  std::string dir = first_existing(
      {bin / "../../tools/ca-eval/modelnew_judge.py", bin / "../share/cuda-agent/eval/modelnew_judge.py"});
  if (dir.empty()) return std::unexpected("modelnew_judge.py not found beside " + bin_dir);
  scripts.judge = dir;
  scripts.server = (fs::path(dir).parent_path() / "modelnew_server.py").string();
  const char* bridge = std::getenv("CA_BRIDGE_DIR");
  scripts.bridge =
      bridge ? std::string(bridge) : first_existing({bin / "../../bridge", bin / "../share/cuda-agent/bridge"});
  if (scripts.bridge.empty())
    return std::unexpected("the bridge folder (import_kernelbench.py) not found beside " + bin_dir);
  return scripts;
}

// The Python installation the sandbox must see: the venv and the interpreter it was made from (which may live
// under a home directory the sandbox does not bind).
std::vector<std::string> python_dirs(const std::string& python) {
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  auto result = run_subprocess(
      {python, "-c", "import os, sys; print(os.path.realpath(sys.prefix)); print(os.path.realpath(sys.base_prefix))"},
      options);
  std::vector<std::string> dirs;
  if (!result || !result->ok()) return dirs;
  size_t start = 0;
  for (size_t end; (end = result->out.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string dir = result->out.substr(start, end - start);
    // The system's own directories are bound already.
    if (!dir.empty() && !dir.starts_with("/usr") && std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      dirs.push_back(dir);
  }
  return dirs;
}

}  // namespace

std::string modelnew_file(const std::string& dir, const Json& task) {
  std::vector<std::string> names;
  if (task.contains("name") && task["name"].is_string()) names.push_back(task["name"].get<std::string>());
  if (task.contains("file") && task["file"].is_string())
    names.push_back(fs::path(task["file"].get<std::string>()).stem().string());
  names.push_back(sanitize_id(task.value("id", std::string())));
  for (const std::string& name : names) {
    fs::path path = fs::path(dir) / (name + ".py");
    std::error_code ec;
    if (!name.empty() && fs::is_regular_file(path, ec)) return path.string();
  }
  return "";
}

std::expected<Json, std::string> modelnew_request(const EvalOptions& options, const Json& task,
                                                  const std::string& solution,
                                                  const std::vector<std::string>& readable) {
  auto scripts = find_scripts(options.bin_dir);
  if (!scripts) return std::unexpected(scripts.error());
  std::string bwrap = on_path("bwrap");
  if (bwrap.empty()) return std::unexpected("bwrap not found on PATH (install bubblewrap)");
  HostUser host_user = ::geteuid() == 0 ? HostUser::root : HostUser::regular;
  std::string setpriv = host_user == HostUser::root ? on_path("setpriv") : "";
  if (host_user == HostUser::root && setpriv.empty())
    return std::unexpected("setpriv not found on PATH (install util-linux); root needs it to drop privileges");
  SandboxSpec spec;
  spec.argv = {scripts->python, scripts->server};
  spec.workdir = fs::absolute(solution).parent_path().string();
  spec.readable = readable;
  spec.readable.push_back(fs::path(scripts->server).parent_path().string());
  spec.readable.push_back(scripts->bridge);
  // The problem file, named as the import saw it (often relative to where it ran), for processes elsewhere.
  Json absolute_task = task;
  if (task.contains("file") && task["file"].is_string()) {
    fs::path file = fs::absolute(task["file"].get<std::string>());
    absolute_task["file"] = file.string();
    spec.readable.push_back(file.parent_path().string());
  }
  spec.gpu = options.backend == "cuda";
  // One server answers many calls: the CPU limit is the session's, the per-call timeouts are the judge's.
  spec.limits.cpu_s = 3600;
  spec.limits.memory_bytes = int64_t{16} << 30;
  std::vector<std::string> argv = {bwrap};
  for (std::string& arg : bwrap_arguments(spec, host_user, setpriv)) argv.push_back(std::move(arg));
  Tolerance tolerance;
  bool compile = std::find(options.profile_flags.begin(), options.profile_flags.end(), "--no-compile") ==
                 options.profile_flags.end();
  // ca-profile's --tf32 MODE, as ca-eval run passes it on.
  auto tf32_flag = std::find(options.profile_flags.begin(), options.profile_flags.end(), "--tf32");
  std::string tf32 = tf32_flag != options.profile_flags.end() && tf32_flag + 1 != options.profile_flags.end()
                         ? *(tf32_flag + 1)
                         : tf32_mode_name(Tf32Mode::pytorch);
  return Json{{"task", absolute_task},
              {"solution", fs::absolute(solution).string()},
              {"backend", options.backend},
              {"sandbox", argv},
              {"limits",
               {{"cpu_s", spec.limits.cpu_s},
                {"memory_bytes", spec.limits.memory_bytes},
                {"processes", spec.limits.processes},
                {"file_bytes", spec.limits.file_bytes},
                {"gpu", spec.gpu}}},
              {"bridge", scripts->bridge},
              {"tolerance", {{"atol", tolerance.atol}, {"rtol", tolerance.rtol}}},
              {"trials", options.trials},
              {"timed", options.timed_calls},
              {"warmup", 2},
              {"compile", compile},
              {"tf32", tf32},
              {"seed", options.seed},
              {"load_timeout_s", 900},
              {"call_timeout_s", 120}};
}

std::expected<std::vector<Json>, std::string> judge_modelnew(const EvalOptions& options,
                                                             const std::vector<Json>& tasks) {
  if (!fs::is_directory(options.modelnew)) return std::unexpected(options.modelnew + ": not a directory");
  auto scripts = find_scripts(options.bin_dir);
  if (!scripts) return std::unexpected(scripts.error());
  std::vector<std::string> readable = python_dirs(scripts->python);
  fs::path work = fs::path(options.work_dir) / "modelnew";
  fs::create_directories(work);
  std::string judged_path = (work / "judged.jsonl").string(), rewarded = (work / "rewarded.jsonl").string();
  std::string text;
  for (const Json& task : tasks) {
    std::string solution = modelnew_file(options.modelnew, task);
    if (solution.empty()) continue;
    std::string id = task.value("id", std::string());
    // A problem a run cut short judged is taken from its journal: the key is the task, the digest the task and the
    // solution's text, which a resume must find unchanged.
    auto source = read_file(solution);
    if (!source) return std::unexpected(source.error());
    const std::string key = "modelnew:" + id, digest = journal_digest(Json{{"task", task}, {"solution", *source}});
    if (options.journal != nullptr) {
      auto found = options.journal->find(key, digest);
      if (!found) return std::unexpected(found.error());
      if (*found != nullptr && !(*found)->out.empty()) {
        text += (*found)->out.front().second.dump() + "\n";
        continue;
      }
    }
    auto request = modelnew_request(options, task, solution, readable);
    if (!request) return std::unexpected(request.error());
    std::string request_path = (work / (sanitize_id(id) + ".request.json")).string();
    if (auto written = write_file_atomic(request_path, request->dump(2) + "\n"); !written)
      return std::unexpected(written.error());
    auto result = run_subprocess({scripts->python, scripts->judge, request_path});
    if (!result) return std::unexpected("modelnew_judge.py: " + result.error());
    if (!result->ok())
      return std::unexpected(id + ": modelnew_judge.py " + result->describe() + ": " + result->err.substr(0, 2000));
    const std::string line = result->out.substr(0, result->out.find('\n'));
    if (options.journal != nullptr) {
      auto judged = parse_json(line);
      if (!judged) return std::unexpected(id + ": modelnew_judge.py wrote a line that is not JSON");
      if (auto appended = options.journal->append(key, digest, JournalEntry{{{0, *judged}}, std::nullopt}); !appended)
        return std::unexpected(appended.error());
    }
    text += line + "\n";
  }
  if (auto written = write_file_atomic(judged_path, text); !written) return std::unexpected(written.error());
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "ca-reward").string(), "-q", "-o", rewarded,
                                   judged_path};
  auto reward = run_subprocess(argv);
  if (!reward) return std::unexpected("ca-reward: " + reward.error());
  if (reward->exit_code != 0 && reward->exit_code != 1)
    return std::unexpected("ca-reward " + reward->describe() + ": " + reward->err.substr(0, 2000));
  return read_all_records(rewarded);
}

}  // namespace ca
