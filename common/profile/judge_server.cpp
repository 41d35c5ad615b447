#include "profile/judge_server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "profile/records.h"
#include "sandbox/workspace.h"
#include "torch/cpu_caching_allocator.h"
#include "torch/runtime.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/signals.h"
#include "util/unix_socket.h"
#include "verify/records.h"

namespace ca {
namespace {

Json error_answer(ExitCode code, const std::string& tool, const std::string& message) {
  return {{"exit", to_int(code)}, {"stderr", tool + ": error: " + message + "\n"}};
}

}  // namespace

struct WarmJudge::State {
  std::map<std::string, Json> tasks;
  Judge verify, profile, profile_no_compile;
  Judge workspace_profile, workspace_profile_no_compile;  // an agent's: ca-profile --workspace's timing
  std::mutex profiles;                                    // one profile at a time
  std::mutex slots_mutex;                                 // verifies at once, at most `slots`
  std::condition_variable slot_freed;
  unsigned slots = 1;
};

WarmJudge::WarmJudge(std::unique_ptr<State> state) : m_state(std::move(state)) {}
WarmJudge::~WarmJudge() = default;

std::expected<std::unique_ptr<WarmJudge>, std::string> WarmJudge::make(const JudgeServerOptions& options) {
  auto state = std::make_unique<State>();
  if (!options.tasks_path.empty()) {
    auto loaded = load_tasks(options.tasks_path);
    if (!loaded) return std::unexpected(loaded.error().message);
    state->tasks = std::move(*loaded);
  }
  state->slots = std::max(1u, options.jobs);
  // The caching CPU allocator that profile_judge installs, installed before any request: swapping c10's allocator
  // while another request's thread allocates would race. Verifies allocate through it too (released below).
  if (install_caching_cpu_allocator() == nullptr) return std::unexpected("c10 kept another CPU allocator");
  state->verify = verify_judge(options.verify);  // sets the process's TF32 mode to none, as ca-verify does
  state->profile = profile_judge(options.profile);
  ProfileOptions no_compile = options.profile;
  no_compile.compile = false;
  state->profile_no_compile = profile_judge(no_compile);
  state->workspace_profile = profile_judge(options.workspace_profile);
  ProfileOptions workspace_no_compile = options.workspace_profile;
  workspace_no_compile.compile = false;
  state->workspace_profile_no_compile = profile_judge(workspace_no_compile);
  return std::unique_ptr<WarmJudge>(new WarmJudge(std::move(state)));
}

Json WarmJudge::answer(const std::string& line) {
  auto request = parse_json(line);
  if (!request) return error_answer(ExitCode::data_error, "ca-judge", "request: " + request.error());
  if (!request->is_object()) return error_answer(ExitCode::data_error, "ca-judge", "request: expected a JSON object");
  std::string tool = request->value("tool", Json()).is_string() ? (*request)["tool"].get<std::string>() : "";
  if (tool != "verify" && tool != "profile")
    return error_answer(ExitCode::usage, "ca-judge", "request: tool: expected \"verify\" or \"profile\"");
  const bool has_workspace = request->contains("workspace"), has_record = request->contains("record");
  if (has_workspace == has_record)
    return error_answer(ExitCode::usage, "ca-judge", "request: give one of workspace (a directory) or record");
  auto compile = request->value("compile", Json(true));
  if (!compile.is_boolean()) return error_answer(ExitCode::usage, "ca-judge", "request: compile: expected a boolean");
  auto backend = request->value("backend", Json());
  if (!backend.is_null() && !backend.is_string())
    return error_answer(ExitCode::usage, "ca-judge", "request: backend: expected \"cpu\" or \"cuda\"");
  const std::string name = "ca-" + tool;

  // Holds one verify slot while it lives.
  struct VerifySlot {
    State* state;
    explicit VerifySlot(State* s) : state(s) {
      std::unique_lock lock(state->slots_mutex);
      state->slot_freed.wait(lock, [&] { return state->slots > 0; });
      --state->slots;
    }
    ~VerifySlot() {
      {
        std::lock_guard lock(state->slots_mutex);
        ++state->slots;
      }
      state->slot_freed.notify_one();
    }
  };
  std::unique_lock<std::mutex> profile_turn(m_state->profiles, std::defer_lock);
  std::optional<VerifySlot> verify_slot;
  if (tool == "profile") {
    profile_turn.lock();
  } else {
    verify_slot.emplace(m_state.get());
  }
  const bool timed_as_workspace = has_workspace, with_compile = compile.get<bool>();
  const Judge& judge = tool == "verify" ? m_state->verify
                       : timed_as_workspace
                           ? (with_compile ? m_state->workspace_profile : m_state->workspace_profile_no_compile)
                       : with_compile ? m_state->profile
                                      : m_state->profile_no_compile;
  // LibTorch's threads are not reset here: at::set_num_threads may not run beside another thread's ops. Each
  // request runs on a new thread, whose OpenMP team size starts at the process default, as in a fresh tool.
  bool on_cuda = false;
  auto answered = exception_as_error<Json>([&]() -> std::expected<Json, std::string> {
    if (has_workspace) {
      const Json& dir = (*request)["workspace"];
      if (!dir.is_string() || dir.get<std::string>().empty())
        return error_answer(ExitCode::usage, "ca-judge", "request: workspace: expected a directory");
      // As settle_workspace: the workspace's own backend unless the request names one, else cpu.
      std::string backend_name = backend.is_string() ? backend.get<std::string>() : "cpu";
      if (!backend.is_string()) {
        auto recorded = workspace_backend(dir.get<std::string>());
        if (!recorded) return error_answer(ExitCode::data_error, name, recorded.error());
        if (!recorded->empty()) backend_name = *recorded;
      }
      on_cuda = backend_name == "cuda";
      auto judged = judge_workspace_text(dir.get<std::string>(), backend_name, judge,
                                         tool == "verify" ? agent_report : agent_profile_line);
      Json answer = {{"exit", to_int(judged.code)}, {"stdout", judged.report}, {"stderr", ""}};
      if (!judged.error.empty()) answer["stderr"] = name + ": error: " + judged.error + "\n";
      return answer;
    }
    const Json& record = (*request)["record"];
    if (!record.is_object()) return error_answer(ExitCode::data_error, name, "request: record: expected an object");
    auto task = task_of(record, m_state->tasks);
    if (!task) return error_answer(ExitCode::some_failed, name, "request: " + task.error());
    auto record_backend = parse_backend(record.value("backend", "cpu"));
    if (!record_backend)
      return error_answer(ExitCode::some_failed, name, "request: backend: expected \"cpu\" or \"cuda\"");
    on_cuda = *record_backend == Backend::cuda;
    auto judged = judge(*task, record, *record_backend);
    if (!judged) {
      return error_answer(interrupted() ? ExitCode::interrupted : ExitCode::some_failed, name,
                          "request: " + judged.error());
    }
    Json out = record;
    out[tool] = std::move(*judged);
    return Json{{"exit", 0}, {"record", std::move(out)}};
  });
  // A cold tool's exit gives the device the memory its tensors left cached; the judge gives it back after each cuda
  // request, so that a candidate's runner has the device memory it would have beside the cold tools. Never while a
  // profile runs: its eager outputs time on warm cached blocks.
  // A verify's freed tensors stay in the caching CPU allocator (a profile empties it itself): given back likewise.
  std::unique_lock no_profile(m_state->profiles, std::defer_lock);
  if (profile_turn.owns_lock() || no_profile.try_lock()) {
    if (on_cuda) release_cached_device_memory();
    if (auto* cache = installed_caching_cpu_allocator(); cache != nullptr && tool == "verify") cache->empty_cache();
  }
  if (!answered) return error_answer(ExitCode::some_failed, name, "request: " + answered.error());
  return *answered;
}

ExitCode serve_judge(const JudgeServerOptions& options) {
  auto judge = WarmJudge::make(options);
  if (!judge) {
    error(judge.error());
    return ExitCode::no_input;
  }
  auto listener = UnixListener::bind(options.socket_path);
  if (!listener) {
    error(listener.error());
    return ExitCode::io_error;
  }
  std::printf("listening on %s\n", options.socket_path.c_str());
  std::fflush(stdout);
  // Each connection on its own thread: a client waiting its turn is never refused, and a slow or silent client
  // (it must send its line within the request's time) holds only its own thread.
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Connection> connections;
  auto reap = [&](bool all) {
    for (auto it = connections.begin(); it != connections.end();) {
      if (all || it->done->load()) {
        it->thread.join();
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  };
  while (!interrupted()) {
    auto accepted = listener->accept(std::chrono::milliseconds(200));
    if (!accepted) {
      error(accepted.error());
      reap(true);
      return ExitCode::io_error;
    }
    reap(false);
    if (!*accepted) continue;
    int fd = **accepted;
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections.push_back({std::thread([fd, done, &judge, &options] {
                             auto line = read_line(fd, options.max_request_bytes, std::chrono::minutes(1));
                             Json answer =
                                 line ? (*judge)->answer(*line)
                                      : error_answer(ExitCode::data_error, "ca-judge", "request: " + line.error());
                             (void)write_all(fd, answer.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
                             ::close(fd);
                             done->store(true);
                           }),
                           done});
  }
  reap(true);
  return ExitCode::interrupted;
}

namespace {

// One request's answer, or the exit code to stop with (no judge, an interrupt, an answer that is not one).
std::expected<Json, ExitCode> ask_once(const std::string& socket_path, const Json& request, double timeout_s) {
  auto line = unix_request(socket_path, request.dump(-1, ' ', false, Json::error_handler_t::replace),
                           std::chrono::milliseconds(int64_t(timeout_s * 1000)));
  if (!line) {
    error(line.error());
    return std::unexpected(interrupted() ? ExitCode::interrupted : k_exit_no_judge);
  }
  auto answer = parse_json(*line);
  if (!answer || !answer->is_object() || !(*answer)["exit"].is_number_integer()) {
    error(socket_path + ": the judge's answer is not an object with an exit code");
    return std::unexpected(ExitCode::data_error);
  }
  return *answer;
}

}  // namespace

ExitCode ask_judge_records(const std::string& socket_path, const std::string& tool,
                           const std::vector<std::string>& inputs, bool compile, double timeout_s) {
  ExitCode worst = ExitCode::ok;
  for (const auto& path : inputs.empty() ? std::vector<std::string>{"-"} : inputs) {
    auto reader = JsonlReader::open(path);
    if (!reader) {
      error(reader.error());
      return ExitCode::no_input;
    }
    Record record;
    std::string message;
    while (true) {
      auto status = reader->next(record, message);
      if (status == JsonlReader::Status::end) break;
      if (status == JsonlReader::Status::interrupted) return ExitCode::interrupted;
      if (status == JsonlReader::Status::io_error) {
        error(message);
        return ExitCode::io_error;
      }
      if (status == JsonlReader::Status::bad_record) {
        error(message);
        worst = ExitCode::data_error;
        continue;
      }
      Json request = {{"tool", tool}, {"record", record.value}};
      if (!compile) request["compile"] = false;
      auto answer = ask_once(socket_path, request, timeout_s);
      if (!answer) return answer.error();
      if (auto judged = answer->find("record"); judged != answer->end()) {
        std::string text = judged->dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
        continue;
      }
      std::fputs(answer->value("stderr", "").c_str(), stderr);
      if ((*answer)["exit"].get<int>() == to_int(ExitCode::interrupted)) return ExitCode::interrupted;
      if (worst == ExitCode::ok) worst = ExitCode::some_failed;
    }
  }
  return worst;
}

ExitCode ask_judge(const std::string& socket_path, const Json& request, double timeout_s) {
  auto answer = ask_once(socket_path, request, timeout_s);
  if (!answer) return answer.error();
  if (auto record = answer->find("record"); record != answer->end()) {
    std::string text = record->dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    std::fputs(text.c_str(), stdout);
  }
  std::fputs(answer->value("stdout", "").c_str(), stdout);
  std::fputs(answer->value("stderr", "").c_str(), stderr);
  return ExitCode{(*answer)["exit"].get<int>()};
}

}  // namespace ca
