#include "aten/profile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "aten/baseline_worker.h"
#include "aten/candidates.h"
#include "aten/interpreter.h"
#include "aten/task_check.h"
#include "aten/runner_calls.h"
#include "aten/tensors.h"
#include "timing/clock.h"
#include "timing/lease.h"
#include "timing/speed_of_light.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

// Outputs of one round's calls are all kept (the runner's in its output region, the baselines' copies) until they are
// compared; every call's outputs are checked, so this bounds both memory and checking time per round.
constexpr double k_round_output_bytes = double(size_t(512) << 20);

constexpr const char* k_method =
    "one method for all three: cache flushed (2x L2 or LLC) and device idle before each call; device clock (cuda "
    "events) and host clock (to a device-wide sync), the slower where they disagree; fresh inputs every call; "
    "outputs and intermediates in warm memory (the runner's poisoned buffers; the baselines' caching allocators); "
    "first call of each round untimed; rounds interleaved in rotating order and dealt in turn among N processes "
    "per method (runners for the candidate, ca-baseline workers for the baselines; a process's CUDA context keeps "
    "one speed for its life); the median of each method's fastest process";

struct Stats {
  double median = 0, spread = 0;
  size_t count = 0;
};

double quantile(std::vector<double> sorted, double q) {
  double position = q * double(sorted.size() - 1);
  size_t low = size_t(position);
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - double(low));
}

// spread: the interquartile range over the median.
Stats stats_of(std::vector<double> times) {
  Stats stats;
  stats.count = times.size();
  if (times.empty()) return stats;
  std::sort(times.begin(), times.end());
  stats.median = quantile(times, 0.5);
  stats.spread = stats.median > 0 ? (quantile(times, 0.75) - quantile(times, 0.25)) / stats.median : 0;
  return stats;
}

// The eager outputs each seed's call must match: the reference, made in this process and never timed.
std::expected<std::vector<std::vector<at::Tensor>>, std::string> references(const Interpreter& interpreter,
                                                                          const std::vector<uint64_t>& seeds,
                                                                          const at::Device& device) {
  std::vector<std::vector<at::Tensor>> outputs;
  for (uint64_t seed : seeds) {
    auto made = interpreter.run(make_tensors(interpreter.program(), seed, device));
    if (!made) return Error(made.error());
    outputs.push_back(std::move(*made));
  }
  return outputs;
}

size_t output_bytes_of(const std::vector<TensorShape>& shapes) {
  size_t bytes = 0;
  for (const auto& shape : shapes) {
    int64_t numel = 1;
    for (int64_t size : shape.sizes) numel *= size;
    bytes += size_t(numel) * at::elementSize(shape.dtype);
  }
  return bytes;
}

// What every correct candidate moves at least: reads each input and param, writes each output.
size_t task_bytes(const Program& program, const std::vector<TensorShape>& shapes) {
  size_t bytes = output_bytes_of(shapes);
  for (const auto* list : {&program.inputs, &program.params}) {
    for (const auto& spec : *list) bytes += size_t(spec.numel()) * dtype_size(spec.dtype);
  }
  return bytes;
}

// Where a profile's wall time goes (the record's `wall_s`), so a slow one can be explained.
class Phases {
 public:
  // Adds the time since the last mark (or since construction) to `phase`.
  void mark(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    m_seconds[phase] = m_seconds.value(phase, 0.0) + std::chrono::duration<double>(now - m_last).count();
    m_last = now;
  }
  const Json& seconds() const { return m_seconds; }

 private:
  std::chrono::steady_clock::time_point m_last = std::chrono::steady_clock::now();
  Json m_seconds = Json::object();
};

// This process's ca-baseline workers, started as profiles first need them and kept for the next: starting one loads
// LibTorch and makes a CUDA context, about a second. Never destroyed: at exit their stdin closes and they end.
class BaselineWorkers {
 public:
  std::expected<BaselineWorker*, std::string> get(size_t index) {
    if (m_workers.size() <= index) m_workers.resize(index + 1);
    if (!m_workers[index]) {
      auto started = BaselineWorker::start();
      if (!started) return Error(started.error());
      m_workers[index] = std::make_unique<BaselineWorker>(std::move(*started));
    }
    return m_workers[index].get();
  }
  /// A worker that failed is ended; the next get() starts another.
  void drop(size_t index) {
    if (index < m_workers.size()) m_workers[index].reset();
  }

 private:
  std::vector<std::unique_ptr<BaselineWorker>> m_workers;  // stable addresses while the vector grows
};

BaselineWorkers* baseline_workers() {
  static auto* const workers = new BaselineWorkers;
  return workers;
}

int contexts_for(Backend backend, int requested) { return requested > 0 ? requested : backend == Backend::cuda ? 3 : 1; }

// How long a worker may take: a load may compile (minutes, cold); a round of our own baselines should never hang.
constexpr auto k_load_timeout = std::chrono::hours(2);
constexpr auto k_round_timeout = std::chrono::minutes(10);

Json failed(Json profile, const std::string& stage, const std::string& message) {
  profile["ok"] = false;
  profile["stage"] = stage;
  profile["message"] = message;
  return profile;
}

}  // namespace

CompiledOptions baseline_options(const ProfileOptions& options) {
  CompiledOptions compiled = options.compiled;
  compiled.num_threads = options.num_threads;
  return compiled;
}

void start_baseline_workers(int contexts) {
  // A worker that cannot start fails the first profile that needs it, with the reason.
  const int count = contexts_for(at::hasCUDA() ? Backend::cuda : Backend::cpu, contexts);
  for (int c = 0; c < count; ++c) (void)baseline_workers()->get(size_t(c));
}

std::expected<Json, std::string> profile_candidate(const Json& task, const Json& candidate, const ProfileOptions& options) {
  auto task_program = load_task_program(task);
  if (!task_program) return Error(task_program.error());
  const Interpreter& interpreter = task_program->interpreter;
  const Program& program = interpreter.program();
  const std::vector<TensorShape>& shapes = task_program->shapes;
  const Backend backend = options.build.backend;
  const at::Device device = backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  // Each of the three is timed in this many processes, the rounds dealt among them in turn (more than rounds would
  // leave some without one).
  const int contexts = std::min(options.rounds, contexts_for(backend, options.contexts));

  Json profile = {{"ok", true}, {"message", ""}, {"device", device_description(backend, 0)}, {"backend", backend_name(backend)},
                  {"method", k_method}, {"precision", options.compiled.allow_tf32 ? "tf32" : "fp32"}, {"contexts", contexts}};
  Phases phases;
  auto files = candidate_files(candidate);
  if (!files) return failed(profile, "static", files.error());
  auto built = build_candidate(*files, options.build);
  phases.mark("build");
  if (!built) return Error(built.error());
  if (!built->ok) return failed(profile, built->stage, built->message);

  BaselineWorkers* const workers = baseline_workers();
  std::vector<BaselineWorker*> baseline(size_t(contexts), nullptr);
  for (size_t c = 0; c < baseline.size(); ++c) {
    auto worker = workers->get(c);
    if (!worker) return Error(worker.error());
    baseline[c] = *worker;
  }
  // Any worker failing is the harness's failure; it is replaced for the next profile.
  auto worker_failed = [&](size_t c, const std::string& what, const std::string& message) {
    workers->drop(c);
    return Error("ca-baseline " + std::to_string(c + 1) + " of " + std::to_string(contexts) + ", " + what + ": " + message);
  };
  const BaselineJob job{&task, backend, options.num_threads, baseline_options(options), options.tolerance};
  // Compiling takes minutes cold; it happens before the lease, so other jobs time meanwhile. The first worker loads
  // alone, compiling if it must; the others then load at once, finding the package in the cache.
  bool compiled = options.compile;
  auto load = [&](size_t first, size_t end) -> std::expected<void, std::string> {
    for (size_t k = first; k < end; ++k) {
      if (auto sent = baseline[k]->send_load(job); !sent) return worker_failed(k, "loading the compiled baseline", sent.error());
    }
    for (size_t k = first; k < end; ++k) {
      auto loaded = baseline[k]->receive(k_load_timeout);
      if (!loaded) return worker_failed(k, "loading the compiled baseline", loaded.error());
      if (loaded->contains("compile_error")) {
        profile["compile_error"] = (*loaded)["compile_error"];
        compiled = false;
      } else if (k == 0) {
        profile["compile"] = (*loaded)["compile"];
      }
    }
    return {};
  };
  for (auto [first, end] : {std::pair<size_t, size_t>{0, 1}, {1, baseline.size()}}) {
    if (!compiled) break;
    if (auto loaded = load(first, end); !loaded) return Error(loaded.error());
  }
  if (!compiled) profile.erase("compile");
  if (!options.compile) profile["compile_error"] = "not asked for (--no-compile)";
  phases.mark("compiled_load");

  auto bandwidth = options.peak_bytes_per_s > 0 ? std::expected<double, std::string>(options.peak_bytes_per_s)
                                                : peak_bandwidth(backend, 0);
  if (!bandwidth) return Error(bandwidth.error());
  const double floor = floor_us(task_bytes(program, shapes), *bandwidth);
  const size_t output_bytes = output_bytes_of(shapes);
  profile["floor_us"] = floor;

  RunnerOptions runner{backend, options.limits, options.runner, options.num_threads};
  // Calls a round may have by the memory its outputs take.
  const double by_memory = k_round_output_bytes / std::max(1.0, double(output_bytes));
  // The largest round: timed calls as sized below (at least 2, at most max_calls and by_memory), plus the untimed
  // first call. The runner's output region holds that many calls' outputs.
  const size_t largest_round = size_t(std::max(2, std::min(options.max_calls, int(by_memory)))) + 1;
  // One sandboxed runner a context for every round of it: the sandbox, the device and the library start once each
  // (runner_calls.h).
  const int rounds_each = (options.rounds + contexts - 1) / contexts;
  std::vector<RunnerSession> sessions;
  for (int c = 0; c < contexts; ++c) {
    auto session = RunnerSession::open(program, shapes, built->library, runner, rounds_each, largest_round);
    if (!session) return Error(session.error());
    sessions.push_back(std::move(*session));
  }
  phases.mark("setup");
  auto lease = DeviceLease::acquire(backend == Backend::cuda ? "cuda0" : "cpu", options.lock_dir, LeaseMode::exclusive);
  if (!lease) return Error(lease.error());
  phases.mark("lease_wait");
  int calls = 2;  // timed calls per method in the first round; later rounds are sized from its times
  // The runners start at once (each a sandbox, a CUDA context and the library), and all are ready before any round
  // is timed, so that none starts beside another's timed calls.
  for (auto& session : sessions) {
    if (auto started = session.start(size_t(calls) + 1); !started) return Error(started.error());
  }
  for (auto& session : sessions) {
    auto ready = session.run({});
    if (!ready) return Error(ready.error());
    if (!ready->load_error.empty()) return failed(profile, "load", ready->load_error);
  }
  phases.mark("runner_start");

  SeedSource source(options.seed);
  const char* const names[3] = {"candidate", "eager", "compile"};
  std::vector<double> times[3];  // every timed call, in order
  std::vector<std::vector<double>> by_context[3];
  for (auto& method : by_context) method.resize(size_t(contexts));
  size_t checked = 0;
  // Each round's slice of the three, as its boundaries in times[]: rounds[k][method] is where round k began.
  std::vector<std::array<size_t, 3>> rounds;
  std::vector<std::array<double, 3>> began;  // when each method's part of each round began, in Unix seconds (--samples)
  for (int round = 0; round < options.rounds; ++round) {
    const size_t context = size_t(round % contexts);
    rounds.push_back({times[0].size(), times[1].size(), times[2].size()});
    std::vector<uint64_t> seeds;
    for (int i = 0; i <= calls; ++i) seeds.push_back(source.next());
    std::string label = "round " + std::to_string(round + 1) + "/" + std::to_string(options.rounds);
    std::optional<RunnerOutcome> candidate_run;
    std::vector<double> round_times[3];
    // Rotating the order cancels drift (clocks, temperature) between the three.
    began.emplace_back();
    for (int k = 0; k < 3; ++k) {
      int which = (round + k) % 3;
      began.back()[size_t(which)] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      if (which == 0) {
        std::vector<RunnerCall> runner_calls;
        for (uint64_t seed : seeds) runner_calls.push_back({seed, false});
        auto ran = sessions[context].run(runner_calls);
        if (!ran) return Error(ran.error());
        if (!ran->load_error.empty()) return failed(profile, "load", ran->load_error);
        // The last round's account of the region (it grows after the first), and every round's invocation on this
        // side's clock.
        if (backend == Backend::cuda) {
          Json rounds_s = profile.contains("runner") ? profile["runner"]["rounds_s"] : Json::array();
          rounds_s.push_back(ran->elapsed_us / 1e6);
          profile["runner"] = ran->runner_facts;
          profile["runner"]["harness_region"] = ran->pin_error.empty() ? "page-locked" : "pageable: " + ran->pin_error;
          profile["runner"]["rounds_s"] = std::move(rounds_s);
        }
        candidate_run = std::move(*ran);
        phases.mark("runner");
      } else if (which == 1 || compiled) {
        BaselineWorker& worker = *baseline[context];
        std::string what = std::string(names[which]) + " in " + label;
        if (auto sent = worker.send_time(job, which == 1 ? "eager" : "compile", seeds); !sent) return worker_failed(context, what, sent.error());
        auto timed = worker.receive(k_round_timeout);
        if (timed && timed->contains("disagrees")) {
          profile["compile_error"] = "the package's output differs from eager's: " + (*timed)["disagrees"].get<std::string>();
        } else if (timed) {
          round_times[which] = (*timed)["times"].get<std::vector<double>>();
        } else if (which == 1) {
          return worker_failed(context, what, timed.error());
        } else {
          // Our package failing to run is the baseline's loss, not the profile's.
          profile["compile_error"] = "the package failed in " + label + ": " + timed.error();
        }
        if (which == 2 && profile.contains("compile_error")) {
          profile.erase("compile");
          compiled = false;
        }
        phases.mark(which == 1 ? "eager" : "compile");
      }
    }
    // Checking is not timed: it may use every core (cpu), then the baselines get their threads back.
    at::set_num_threads(int(std::max(1u, std::thread::hardware_concurrency())));
    auto reference = references(interpreter, seeds, device);
    if (!reference) return Error("eager failed in " + label + ": " + reference.error());
    phases.mark("reference");
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::string call = label + ", call " + std::to_string(i + 1);
      if (auto failure = call_failure(*candidate_run, i, call, sessions[context].options())) {
        return failed(profile, failure->stage, failure->message);
      }
      for (size_t k = 0; k < (*reference)[i].size(); ++k) {
        Comparison c = compare_output(candidate_run->calls[i].outputs[k], (*reference)[i][k], options.tolerance);
        if (!c.ok) return failed(profile, "compare", call + ", output " + std::to_string(k) + ": " + c.message);
      }
      ++checked;
      if (i > 0) round_times[0].push_back(counted_us({candidate_run->calls[i].report->device_us, candidate_run->calls[i].report->wall_us}));
    }
    phases.mark("check");
    for (size_t method = 0; method < 3; ++method) {
      times[method].insert(times[method].end(), round_times[method].begin(), round_times[method].end());
      auto& mine = by_context[method][context];
      mine.insert(mine.end(), round_times[method].begin(), round_times[method].end());
    }
    if (round == 0 && options.rounds > 1) {
      // Enough calls that each method's measured time reaches min_ms over the rounds.
      double slowest = std::max({stats_of(times[0]).median, stats_of(times[1]).median, 1.0});
      double per_round = options.min_ms * 1000.0 / double(options.rounds - 1);
      calls = std::clamp(int(std::min(std::ceil(per_round / slowest), by_memory)), 2, options.max_calls);
    }
  }

  for (auto& session : sessions) session.close_input();
  for (auto& session : sessions) session.finish();
  phases.mark("runner_exit");  // its own phase: a CUDA process's teardown is not small

  if (!compiled) times[2].clear();
  // Each method's time is the median of its fastest context: a context keeps one speed for its life, and some run
  // slow (bench/RESULTS.md, session 8). The spread is over every call, so a slow context shows in it.
  Json context_us = Json::object(), times_us = Json::object(), spread = Json::object(), count = Json::object();
  double best[3] = {0, 0, 0};
  for (size_t method = 0; method < 3; ++method) {
    Json medians = Json::array();
    for (const auto& mine : by_context[method]) {
      if (mine.empty()) continue;
      double median = stats_of(mine).median;
      medians.push_back(median);
      best[method] = best[method] > 0 ? std::min(best[method], median) : median;
    }
    Stats all = stats_of(times[method]);
    bool timed = all.count > 0;
    context_us[names[method]] = timed ? medians : Json(nullptr);
    times_us[names[method]] = timed ? Json(best[method]) : Json(nullptr);
    spread[names[method]] = timed ? Json(all.spread) : Json(nullptr);
    count[names[method]] = all.count;
  }
  profile["rounds"] = options.rounds;
  profile["times_us"] = times_us;
  profile["context_us"] = context_us;
  profile["spread"] = spread;
  profile["count"] = count;
  profile["checked_calls"] = checked;
  if (options.samples) {
    // Every timed call's counted time, round by round, to tell a shifted profile from a bimodal one.
    Json samples = Json::object(), began_at = Json::object();
    for (size_t method = 0; method < 3; ++method) {
      Json per_round = Json::array();
      for (size_t k = 0; k < rounds.size(); ++k) {
        size_t end = k + 1 < rounds.size() ? rounds[k + 1][method] : times[method].size();
        per_round.push_back(std::vector<double>(times[method].begin() + long(rounds[k][method]), times[method].begin() + long(end)));
      }
      samples[names[method]] = std::move(per_round);
      Json starts = Json::array();
      for (const auto& round : began) starts.push_back(round[method]);
      began_at[names[method]] = std::move(starts);
    }
    profile["samples_us"] = std::move(samples);
    // To line the rounds up with what else the device did then (its clocks, another job).
    profile["samples_began"] = std::move(began_at);
  }
  profile["wall_s"] = phases.seconds();
  Json speedup = {{"vs_eager", best[1] / best[0]}};
  speedup["vs_compile"] = times[2].empty() ? Json(nullptr) : Json(best[2] / best[0]);
  profile["speedup"] = speedup;
  if (best[0] < floor) {
    return failed(profile, "floor", "the candidate's time " + std::to_string(best[0]) +
                                        " us is below the task's speed-of-light floor of " + std::to_string(floor) +
                                        " us (its bytes over the device's peak bandwidth): the time is not real");
  }
  return profile;
}

std::string agent_profile_line(const Json& profile) {
  if (!profile.value("ok", false)) return "[FAIL] profile: " + profile.value("message", "") + "\n";
  auto us = [](const Json& value) {
    if (!value.is_number()) return std::string("n/a");
    char text[32];
    std::snprintf(text, sizeof text, "%.1f us", value.get<double>());
    return std::string(text);
  };
  const Json& times = profile["times_us"];
  return "Torch Baseline: " + us(times["eager"]) + ", Torch Compile: " + us(times["compile"]) +
         ", CUDA Extension: " + us(times["candidate"]) + "\n";
}

}  // namespace ca
