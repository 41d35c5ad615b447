// Driving the judging tools and assembling the run's records.
#include "eval/run.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "eval/metrics.h"
#include "eval/modelnew.h"
#include "sandbox/workspace.h"
#include "timing/speed_of_light.h"
#include "util/atomic_file.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;

namespace ca {

namespace {

// Runs one of the tools beside ca-eval; an exit of 1 (some records reported and skipped) is not fatal, since the
// records it could judge are in its output and the rest count as failed tasks.
std::expected<void, std::string> run_tool(const EvalOptions& options, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / args[0]).string()};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  auto result = run_subprocess(argv);
  if (!result) return std::unexpected(args[0] + ": " + result.error());
  if (result->exit_code == 0 || result->exit_code == 1) return {};
  std::string err = result->err.substr(0, 2000);
  return std::unexpected(args[0] + " " + result->describe() + (err.empty() ? "" : ": " + err));
}

std::expected<void, std::string> write_records_file(const std::string& path, const std::vector<Json>& records) {
  std::string text;
  for (const Json& record : records) text += record.dump() + "\n";
  return write_file_atomic(path, text);
}

// One stage of the pipeline, `args` writing `output`: from the journal when a run cut short finished it, else run
// (resuming from the tool's own journal when `resumable` and the run resumes) and journaled with the records it
// wrote. The key is the tool, the digest its arguments: a stage run otherwise is not the one journaled.
std::expected<void, std::string> run_stage(const EvalOptions& options, std::vector<std::string> args,
                                           const std::string& output, bool resumable) {
  // -j changes how a stage runs, not what it gives: a resume may pass another.
  Json shaping = Json::array();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-j") {
      ++i;
      continue;
    }
    shaping.push_back(args[i]);
  }
  const std::string key = "stage:" + args[0], digest = journal_digest(shaping);
  if (options.journal != nullptr) {
    auto found = options.journal->find(key, digest);
    if (!found) return std::unexpected(found.error());
    if (*found != nullptr) {
      std::vector<Json> records;
      for (const auto& [stream, record] : (*found)->out) records.push_back(record);
      return write_records_file(output, records);
    }
  }
  if (resumable && options.resume) args.push_back("--resume");
  // A run that does not resume starts over: the journal a tool cut short left in a kept --workdir is not its own.
  std::error_code ignored;
  if (resumable && !options.resume) fs::remove(RecordJournal::path_for(output), ignored);
  if (auto ran = run_tool(options, args); !ran) return ran;
  if (options.journal == nullptr) return {};
  auto records = read_all_records(output);
  if (!records) return std::unexpected(records.error());
  JournalEntry entry;
  for (Json& record : *records) entry.out.emplace_back(0, std::move(record));
  return options.journal->append(key, digest, entry);
}

// The first line of a command's output, "" when it cannot run.
std::string probe(const std::vector<std::string>& argv) {
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  auto result = run_subprocess(argv, options);
  if (!result || !result->ok()) return "";
  return result->out.substr(0, result->out.find('\n'));
}

}  // namespace

std::expected<std::vector<Json>, std::string> read_all_records(const std::string& path) {
  auto reader = JsonlReader::open(path);
  if (!reader) return std::unexpected(reader.error());
  std::vector<Json> records;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) return records;
    if (status == JsonlReader::Status::io_error || status == JsonlReader::Status::interrupted)
      return std::unexpected(path + ": " + message);
    if (status == JsonlReader::Status::bad_record) return std::unexpected(record.where() + ": " + message);
    records.push_back(std::move(record.value));
  }
}

std::expected<std::vector<Json>, std::string> candidates_from_folder(const std::string& dir,
                                                                     const std::vector<Json>& tasks,
                                                                     const std::string& backend) {
  if (!fs::is_directory(dir)) return std::unexpected(dir + ": not a directory");
  std::vector<Json> candidates;
  for (const Json& task : tasks) {
    std::string id = task.value("id", std::string());
    fs::path root = fs::path(dir) / sanitize_id(id);
    if (!fs::is_directory(root)) continue;
    Json files = Json::object();
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      auto text = read_file(it->path().string());
      if (!text) return std::unexpected(text.error());
      files[fs::relative(it->path(), root).string()] = *text;
    }
    if (ec) return std::unexpected(root.string() + ": " + ec.message());
    candidates.push_back({{"kind", "candidate"}, {"id", id}, {"task_id", id}, {"backend", backend}, {"files", files}});
  }
  return candidates;
}

std::expected<std::vector<Json>, std::string> judge(const EvalOptions& options, const std::vector<Json>& tasks) {
  if (!options.judged.empty()) return read_all_records(options.judged);
  if (!options.modelnew.empty()) return judge_modelnew(options, tasks);
  fs::path work(options.work_dir);
  std::string jobs = std::to_string(options.jobs), seed = std::to_string(options.seed);
  if (!options.policy.empty()) {
    std::string trajectories = (work / "trajectories.jsonl").string();
    std::vector<std::string> args = {
        "ca-rollout", "--tasks", options.suite, "--policy", options.policy, "--backend", options.backend,
        "-j",         jobs,      "--seed",      seed,       "-q",           "-o",        trajectories};
    for (const std::string& flag : options.profile_flags) {
      if (flag == "--no-compile") args.push_back(flag);
    }
    if (auto ran = run_stage(options, args, trajectories, true); !ran) return std::unexpected(ran.error());
    return read_all_records(trajectories);
  }
  std::vector<Json> candidates;
  if (fs::is_directory(options.solutions)) {
    auto found = candidates_from_folder(options.solutions, tasks, options.backend);
    if (!found) return std::unexpected(found.error());
    candidates = std::move(*found);
  } else {
    auto read = read_all_records(options.solutions);
    if (!read) return std::unexpected(read.error());
    candidates = std::move(*read);
  }
  std::string input = (work / "candidates.jsonl").string(), verified = (work / "verified.jsonl").string();
  std::string profiled = (work / "profiled.jsonl").string(), rewarded = (work / "rewarded.jsonl").string();
  if (auto written = write_records_file(input, candidates); !written) return std::unexpected(written.error());
  if (auto ran = run_stage(
          options, {"ca-verify", "--tasks", options.suite, "-j", jobs, "--seed", seed, "-q", "-o", verified, input},
          verified, true);
      !ran) {
    return std::unexpected(ran.error());
  }
  std::vector<std::string> profile = {"ca-profile", "--tasks", options.suite, "--seed", seed, "-q", "-o", profiled};
  profile.insert(profile.end(), options.profile_flags.begin(), options.profile_flags.end());
  profile.push_back(verified);
  if (auto ran = run_stage(options, profile, profiled, true); !ran) return std::unexpected(ran.error());
  if (auto ran = run_stage(options, {"ca-reward", "-q", "-o", rewarded, profiled}, rewarded, false); !ran)
    return std::unexpected(ran.error());
  return read_all_records(rewarded);
}

Json describe_environment(const std::vector<Json>& judged, const std::string& backend, const std::string& bin_dir) {
  Json environment = {{"hardware", nullptr},
                      {"backend", backend},
                      {"timing_method", nullptr},
                      {"precision", nullptr},
                      {"tolerance", nullptr}};
  for (const Json& record : judged) {
    const Json& profile =
        record.contains("profile") && record["profile"].is_object() ? record["profile"] : Json::object();
    if (environment["hardware"].is_null() && profile.contains("device")) environment["hardware"] = profile["device"];
    if (environment["timing_method"].is_null() && profile.contains("method"))
      environment["timing_method"] = profile["method"];
    if (environment["precision"].is_null() && profile.contains("precision"))
      environment["precision"] = profile["precision"];
    if (profile.contains("backend")) environment["backend"] = profile["backend"];
    if (environment["tolerance"].is_null() && record.contains("verify") && record["verify"].is_object() &&
        record["verify"].contains("tolerance")) {
      environment["tolerance"] = record["verify"]["tolerance"];
    }
  }
  if (environment["hardware"].is_null())
    environment["hardware"] = device_description(Backend::cpu, 0) + " (this machine; no profile named one)";
  // The torch the baselines ran on: the project's venv beside the build (build/bin/../../.venv), else CA_PYTHON or
  // python3.
  std::string python = std::getenv("CA_PYTHON") ? std::getenv("CA_PYTHON") : "python3";
  if (fs::path venv = fs::path(bin_dir) / "../../.venv/bin/python"; !std::getenv("CA_PYTHON") && fs::exists(venv))
    python = venv.string();
  std::string torch = probe({python, "-c", "import torch; print(torch.__version__)"});
  environment["torch"] = torch.empty() ? Json(nullptr) : Json(torch);
  std::string driver = probe({"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"});
  environment["driver"] = driver.empty() ? Json("none (no NVIDIA driver answered)") : Json("cuda driver " + driver);
  return environment;
}

std::expected<std::vector<Json>, std::pair<ExitCode, std::string>> run_eval(const EvalOptions& options) {
  auto tasks = read_all_records(options.suite);
  if (!tasks) return std::unexpected(std::pair{ExitCode::no_input, tasks.error()});
  std::map<std::string, std::string> rejects;
  if (!options.rejects.empty()) {
    auto rejected = read_all_records(options.rejects);
    if (!rejected) return std::unexpected(std::pair{ExitCode::no_input, rejected.error()});
    for (const Json& task : *rejected) {
      const Json& reject = task.contains("reject") ? task["reject"] : Json::object();
      rejects[task.value("id", std::string())] =
          reject.is_object() ? reject.value("reason", std::string("rejected")) : "rejected";
    }
  }
  auto judged = judge(options, *tasks);
  // A stage or problem that differs from the one the journal holds (RecordJournal::find's "--resume: ...") is a
  // resume of another run: a usage error, like a header that differs.
  if (!judged)
    return std::unexpected(
        std::pair{judged.error().starts_with("--resume: ") ? ExitCode::usage : ExitCode::io_error, judged.error()});
  std::multimap<std::string, TaskResult> by_task;
  for (size_t i = 0; i < judged->size(); ++i) {
    auto result = judge_result((*judged)[i]);
    if (!result)
      return std::unexpected(
          std::pair{ExitCode::data_error, "judged record " + std::to_string(i + 1) + ": " + result.error()});
    by_task.emplace(result->task_id, *result);
  }
  std::vector<TaskResult> results = collect_results(*tasks, by_task, rejects);
  std::vector<Json> records;
  for (const TaskResult& result : results) records.push_back(to_json(result));
  Json summary = {{"kind", "eval_summary"}, {"suite", options.suite}};
  summary["source"] = !options.policy.empty()     ? "policy " + options.policy
                      : !options.judged.empty()   ? "judged " + options.judged
                      : !options.modelnew.empty() ? "modelnew " + options.modelnew
                                                  : "solutions " + options.solutions;
  summary["environment"] = describe_environment(*judged, options.backend, options.bin_dir);
  summary.update(summarize(results));
  records.push_back(std::move(summary));
  return records;
}

}  // namespace ca
