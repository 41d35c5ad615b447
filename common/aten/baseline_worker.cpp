#include "aten/baseline_worker.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <memory>
#include <unistd.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "aten/cpu_caching_allocator.h"
#include "aten/task_check.h"
#include "aten/tensors.h"
#include "timing/clock.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

std::string default_worker() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "ca-baseline").string();
}

Json request_of(const BaselineJob& job, const char* op) {
  return {{"op", op},
          {"task", *job.task},
          {"backend", backend_name(job.backend)},
          {"threads", job.num_threads},
          {"tf32", job.compiled.allow_tf32},
          {"cache_dir", job.compiled.cache_dir},
          {"python", job.compiled.python},
          {"bridge", job.compiled.bridge},
          {"atol", job.tolerance.atol},
          {"rtol", job.tolerance.rtol}};
}

// Loaded packages, kept for the next candidates of the same program: a run profiles many candidates of each task,
// and loading one (unpacking it, loading its library, moving its constants to the device) costs about 0.2 s.
class LoadedBaselines {
 public:
  struct Found {
    std::shared_ptr<CompiledProgram> program;
    bool kept = false;  // loaded for an earlier request
  };
  std::expected<Found, std::string> get(const Program& program, const at::Device& device, const CompiledOptions& options) {
    auto key = compiled_key_text(program, device, options);
    if (!key) return Error(key.error());
    for (auto it = m_kept.begin(); it != m_kept.end(); ++it) {
      if (it->first != *key) continue;
      m_kept.splice(m_kept.begin(), m_kept, it);
      return Found{it->second, true};
    }
    auto loaded = CompiledProgram::load_or_compile(program, device, options);
    if (!loaded) return Error(loaded.error());
    m_kept.emplace_front(*key, std::make_shared<CompiledProgram>(std::move(*loaded)));
    if (m_kept.size() > k_kept) m_kept.pop_back();
    return Found{m_kept.front().second, false};
  }

 private:
  static constexpr size_t k_kept = 4;  // each holds its constants on the device
  std::list<std::pair<std::string, std::shared_ptr<CompiledProgram>>> m_kept;  // most recently used first
};

// A worker's state across requests: the last task's program, the kept packages, one clock per backend.
class Worker {
 public:
  /// cuda: the context, the clock's buffers and cuBLAS before the first request, which then finds them ready.
  void warm_up() {
    if (!at::hasCUDA()) return;
    if (clock(Backend::cuda)) {
      auto a = at::ones({64, 64}, at::Device(at::kCUDA, 0));
      (void)at::mm(a, a);
    }
  }


  Json answer(const Json& request) {
    std::expected<Json, std::string> done;
    try {
      done = carry_out(request);
    } catch (const std::exception& e) {  // a field of the wrong type, or ATen refusing a tensor
      done = Error(std::string(e.what()));
    }
    if (!done) return {{"ok", false}, {"error", done.error()}};
    (*done)["ok"] = true;
    return *done;
  }

 private:
  struct Job {
    const TaskProgram* task;
    Backend backend;
    at::Device device;
    CompiledOptions compiled;
    Tolerance tolerance;
  };

  std::expected<Json, std::string> carry_out(const Json& request) {
    auto job = job_of(request);
    if (!job) return Error(job.error());
    const std::string op = request.value("op", "");
    if (op == "load") {
      auto loaded = m_loaded.get(job->task->interpreter.program(), job->device, job->compiled);
      if (!loaded) return Json{{"compile_error", loaded.error()}};
      const auto& compiled = *loaded->program;
      const bool cached = loaded->kept || compiled.cached();
      return Json{{"compile", {{"key", compiled.key()}, {"cached", cached}, {"seconds", cached ? 0.0 : compiled.compile_seconds()}, {"kept", loaded->kept}}}};
    }
    if (op == "time") return time(*job, request.value("method", ""), request.value("seeds", std::vector<uint64_t>()));
    return Error("unknown op '" + op + "'");
  }

  std::expected<Job, std::string> job_of(const Json& request) {
    if (!request.is_object() || !request.contains("task")) return Error("a request needs a task");
    auto backend = parse_backend(request.value("backend", ""));
    if (!backend) return Error("backend: expected cpu or cuda");
    std::string text = request["task"].dump();
    if (text != m_task_text) {
      auto loaded = load_task_program(request["task"]);
      if (!loaded) return Error(loaded.error());
      m_task.emplace(std::move(*loaded));
      m_task_text = std::move(text);
    }
    Job job{&*m_task, *backend, *backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU), {}, {}};
    job.compiled.cache_dir = request.value("cache_dir", "");
    job.compiled.python = request.value("python", "");
    job.compiled.bridge = request.value("bridge", "");
    job.compiled.allow_tf32 = request.value("tf32", false);
    job.compiled.num_threads = request.value("threads", 1);
    job.tolerance = {request.value("atol", 1e-2), request.value("rtol", 1e-2)};
    // The precision mode the record states (DESIGN §8), and the candidate's threads (cpu).
    at::set_num_threads(job.compiled.num_threads);
    at::globalContext().setAllowTF32CuBLAS(job.compiled.allow_tf32);
    at::globalContext().setAllowTF32CuDNN(job.compiled.allow_tf32);
    return job;
  }

  std::expected<CallClock*, std::string> clock(Backend backend) {
    auto& clock = m_clocks[backend == Backend::cuda ? 1 : 0];
    if (clock) return clock.get();
    if (backend == Backend::cpu) {
      // After each round's untimed first call the baselines' outputs land on warm memory, as the runner's pre-touched
      // buffers do for the candidate (cuda's caching allocator does this on the device).
      if (install_caching_cpu_allocator() == nullptr) return Error("c10 kept another CPU allocator; the cpu baselines would fault fresh pages while timed");
      clock = make_cpu_clock();
    } else {
      auto made = make_cuda_clock(0, nullptr);
      if (!made) return Error(made.error());
      clock = std::move(*made);
    }
    return clock.get();
  }

  std::expected<Json, std::string> time(const Job& job, const std::string& method, const std::vector<uint64_t>& seeds) {
    const Interpreter& interpreter = job.task->interpreter;
    std::shared_ptr<CompiledProgram> compiled;
    if (method == "compile") {
      auto loaded = m_loaded.get(interpreter.program(), job.device, job.compiled);
      if (!loaded) return Error(loaded.error());
      compiled = loaded->program;
    } else if (method != "eager") {
      return Error("method: expected eager or compile, got '" + method + "'");
    }
    auto timer = clock(job.backend);
    if (!timer) return Error(timer.error());
    Json times = Json::array();
    std::vector<at::Tensor> first;  // the first call's outputs, for the check
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::vector<at::Tensor> inputs = make_tensors(interpreter.program(), seeds[i], job.device);
      (*timer)->prepare();
      (*timer)->start();
      auto outputs = compiled ? compiled->run(inputs) : interpreter.run(inputs);
      ClockSample sample = (*timer)->stop();
      if (!outputs) return Error(outputs.error());
      if (i == 0) {
        first = std::move(*outputs);  // the round's first call warms up
      } else {
        times.push_back(counted_us(sample));
      }
    }
    if (auto* cache = installed_caching_cpu_allocator()) cache->empty_cache();
    Json answer = {{"times", std::move(times)}};
    // Our own package, not the candidate: one call a round, on fresh inputs each time, shows it agrees with eager.
    if (compiled && !seeds.empty()) {
      auto reference = interpreter.run(make_tensors(interpreter.program(), seeds[0], job.device));
      if (!reference) return Error("eager, for the package's check: " + reference.error());
      for (size_t k = 0; k < reference->size() && k < first.size(); ++k) {
        Comparison c = compare_output(first[k], (*reference)[k], job.tolerance);
        if (!c.ok) {
          answer["disagrees"] = "output " + std::to_string(k) + ": " + c.message;
          break;
        }
      }
    }
    return answer;
  }

  LoadedBaselines m_loaded;
  std::optional<TaskProgram> m_task;
  std::string m_task_text;
  std::unique_ptr<CallClock> m_clocks[2];  // cpu, cuda
};

bool write_line(int fd, const std::string& text) {
  std::string line = text + "\n";
  for (size_t sent = 0; sent < line.size();) {
    ssize_t n = ::write(fd, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

}  // namespace

std::expected<BaselineWorker, std::string> BaselineWorker::start(const std::string& path) {
  auto process = Coprocess::start({path.empty() ? default_worker() : path});
  if (!process) return Error(process.error());
  return BaselineWorker(std::move(*process));
}

std::expected<void, std::string> BaselineWorker::send_load(const BaselineJob& job) {
  return m_process.send_line(request_of(job, "load").dump());
}

std::expected<void, std::string> BaselineWorker::send_time(const BaselineJob& job, const std::string& method,
                                                           const std::vector<uint64_t>& seeds) {
  Json request = request_of(job, "time");
  request["method"] = method;
  request["seeds"] = seeds;
  return m_process.send_line(request.dump());
}

std::expected<Json, std::string> BaselineWorker::receive(std::chrono::milliseconds timeout) {
  auto line = m_process.read_line(timeout);
  if (!line) return Error(line.error());
  Json answer = Json::parse(*line, nullptr, false);
  if (!answer.is_object()) return Error("ca-baseline answered something other than a JSON object: " + line->substr(0, 200));
  if (!answer.value("ok", false)) return Error(answer.value("error", std::string("ca-baseline failed and did not say why")));
  return answer;
}

std::expected<void, std::string> serve_baselines(int in_fd, int out_fd) {
  std::unique_ptr<FILE, int (*)(FILE*)> in(::fdopen(in_fd, "r"), &std::fclose);
  if (!in) return Error(std::string("stdin: ") + std::strerror(errno));
  Worker worker;
  worker.warm_up();
  struct LineBuffer {
    char* data = nullptr;
    size_t capacity = 0;
    ~LineBuffer() { std::free(data); }
  } line;
  for (;;) {
    errno = 0;
    ssize_t n = ::getline(&line.data, &line.capacity, in.get());
    if (n < 0) {
      if (errno == EINTR) {
        std::clearerr(in.get());
        continue;
      }
      if (std::ferror(in.get())) return Error(std::string("stdin: ") + std::strerror(errno));
      return {};
    }
    std::string_view text(line.data, size_t(n));
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
    Json request = Json::parse(text, nullptr, false);
    Json answer = request.is_discarded() ? Json{{"ok", false}, {"error", "a request is one JSON object a line"}} : worker.answer(request);
    if (!write_line(out_fd, answer.dump())) return Error(std::string("stdout: ") + std::strerror(errno));
  }
}

}  // namespace ca
