#include "rollout/rollout.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "rollout/journal.h"
#include "rollout/judge_child.h"
#include "util/log.h"
#include "util/remove_tree.h"
#include "util/sha256.h"
#include "util/signals.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

struct Job {
  const Json* task;
  int sample;
};

// Every task record of the files, in order; bad lines are reported and counted.
std::expected<std::vector<Json>, ExitCode> load_tasks(const std::vector<std::string>& paths, bool& some_bad) {
  std::vector<Json> tasks;
  for (const auto& path : paths) {
    auto reader = JsonlReader::open(path);
    if (!reader) {
      error(reader.error());
      return std::unexpected(ExitCode::no_input);
    }
    Record record;
    std::string message;
    for (;;) {
      auto status = reader->next(record, message);
      if (status == JsonlReader::Status::end) break;
      if (status == JsonlReader::Status::interrupted) return std::unexpected(ExitCode::interrupted);
      if (status == JsonlReader::Status::io_error) {
        error(reader->name(), message);
        return std::unexpected(ExitCode::io_error);
      }
      auto id = record.value.is_object() ? record.value.find("id") : record.value.end();
      if (status == JsonlReader::Status::bad_record || id == record.value.end() || !id->is_string()) {
        error(record.where(), status == JsonlReader::Status::bad_record ? message : "task record without a string id");
        some_bad = true;
        continue;
      }
      tasks.push_back(std::move(record.value));
    }
  }
  return tasks;
}

}  // namespace

std::expected<Shard, std::string> parse_shard(const std::string& text) {
  Shard shard;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &shard.index, &shard.count, &tail) != 2 || shard.count < 1 ||
      shard.index < 0 || shard.index >= shard.count) {
    return std::unexpected("expected I/N with 0 <= I < N, e.g. 0/4, got '" + text + "'");
  }
  return shard;
}

bool in_shard(const std::string& task_id, const Shard& shard) {
  return std::strtoull(sha256_hex(task_id).substr(0, 15).c_str(), nullptr, 16) % uint64_t(shard.count) ==
         uint64_t(shard.index);
}

uint64_t episode_seed(uint64_t seed, const std::string& task_id, int sample) {
  std::string key = std::to_string(seed) + "\n" + task_id + "\n" + std::to_string(sample);
  return std::strtoull(sha256_hex(key).substr(0, 15).c_str(), nullptr, 16);
}

ExitCode run_rollout(const RolloutOptions& options) {
  // The spec is checked before any work, so a typo costs nothing.
  auto make = policy_maker(options.policy_spec, options.policy);
  if (!make) {
    error("--policy", make.error().message);
    return make.error().code;
  }
  bool some_bad = false;
  auto tasks = load_tasks(options.task_files, some_bad);
  if (!tasks) return tasks.error();
  auto journal = Journal::open(options.output, options.resume);
  if (!journal) {
    error(journal.error());
    return ExitCode::usage;
  }
  std::vector<Job> jobs;
  for (const auto& task : *tasks) {
    std::string id = task["id"].get<std::string>();
    if (!in_shard(id, {options.shard_index, options.shard_count})) continue;
    for (int sample = 0; sample < options.samples; ++sample) {
      if (!journal->done().contains({id, sample})) jobs.push_back({&task, sample});
    }
  }

  EpisodeOptions episode = options.episode;
  bool temporary = episode.work_dir.empty();
  if (temporary) {
    std::string pattern = (fs::temp_directory_path() / "ca-rollout-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      error(pattern, "cannot make a work directory");
      return ExitCode::io_error;
    }
    episode.work_dir = pattern;
  }
  // --judge auto: one warm judge for this process's episodes, stopped when they are done (declared before the
  // worker threads, so it outlives them).
  std::optional<JudgeChild> judge;
  if (episode.tools.judge_socket == "auto" && !jobs.empty()) {
    auto started = JudgeChild::start(episode.tools.bin_dir, options.jobs, 600);
    if (started) {
      judge.emplace(std::move(*started));
      episode.tools.judge_socket = judge->socket();
    } else {
      warning("--judge auto: " + started.error() + "; the cold tools judge the agent's calls");
      episode.tools.judge_socket.clear();
    }
  }
  verbose(std::to_string(jobs.size()) + " episodes to run, " + std::to_string(journal->done().size()) + " done before");
  if (journal->retried() > 0)
    note(std::to_string(journal->retried()) + " episodes with an error in " + options.output + " run again");

  std::atomic<size_t> next{0};
  std::atomic<size_t> written{0}, with_error{0};
  std::atomic<bool> write_failed{false}, pipe_gone{false};
  std::mutex report;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size() && !interrupted() && !write_failed; i = next++) {
      const Json& task = *jobs[i].task;
      std::string id = task["id"].get<std::string>();
      auto policy = (*make)();
      Json record = run_episode(task, jobs[i].sample, episode_seed(options.seed, id, jobs[i].sample), *policy, episode);
      if (record["end"].value("reason", "") == "interrupted") return;
      if (!record["error"].is_null()) {
        ++with_error;
        std::lock_guard lock(report);
        warning(id + "#" + std::to_string(jobs[i].sample), record["error"].get<std::string>());
      }
      if (auto appended = journal->append(record); !appended) {
        if (appended.error() == "broken pipe") pipe_gone = true;
        if (!write_failed.exchange(true) && !pipe_gone) error(appended.error());
        return;
      }
      ++written;
    }
  };
  std::vector<std::thread> threads;
  size_t count = std::min<size_t>(std::max(1u, options.jobs), std::max<size_t>(jobs.size(), 1));
  for (size_t t = 0; t < count; ++t) threads.emplace_back(worker);
  for (auto& thread : threads) thread.join();
  if (temporary && !episode.keep_workspace) (void)remove_tree(episode.work_dir);

  if (log_level() != LogLevel::quiet) {
    note(std::to_string(written.load()) + " of " + std::to_string(jobs.size()) + " episodes written" +
         (with_error ? " (" + std::to_string(with_error.load()) + " with errors)" : "") +
         (journal->done().empty() ? "" : ", " + std::to_string(journal->done().size()) + " done before"));
  }
  if (interrupted()) return ExitCode::interrupted;
  if (pipe_gone) return ExitCode::ok;  // the reader stopped reading (`| head`)
  if (write_failed) return ExitCode::io_error;
  return some_bad || with_error > 0 ? ExitCode::some_failed : ExitCode::ok;
}

}  // namespace ca
