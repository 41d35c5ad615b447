#include "profile/profile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <thread>

#include "timing/clock.h"
#include "timing/lease.h"
#include "timing/speed_of_light.h"
#include "torch/compare.h"
#include "torch/compiled.h"
#include "torch/interpreter.h"
#include "torch/precision.h"
#include "torch/runner_calls.h"
#include "torch/runtime.h"
#include "torch/task_check.h"
#include "torch/tensors.h"
#include "util/progress.h"
#include "verify/candidates.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

// Outputs of one round's calls are all kept (the runner's in its output region, the baselines' copies) until they are
// compared; every call's outputs are checked, so this bounds both memory and checking time per round.
constexpr double k_round_output_bytes = double(size_t(512) << 20);

constexpr const char* k_method =
    "one method for all three: cache flushed (cuda: 2x L2; cpu: 2x what evicts a probe, measured, at most 2x LLC, "
    "written by ordinary stores) and "
    "device idle before each call; device clock (cuda "
    "events) and host clock (to a device-wide sync), the slower where they disagree; fresh inputs every call; "
    "outputs and intermediates in warm memory (the runner's poisoned buffers; the baselines' caching allocators); "
    "first call of each round untimed; rounds interleaved in rotating order, one runner for all; the first round "
    "sizes the rest and is checked, not counted; median (with --ci, rounds stop once each median's 95% interval is "
    "that close)";

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

// One call's outputs from which checking them is worth every core (a compare of this much takes milliseconds).
constexpr size_t k_parallel_check_bytes = size_t(16) << 20;

// Rounds that must be counted before a profile may stop on its confidence intervals: one round's calls all ran in
// one stretch of the machine's state, so drift between rounds would not show in its interval.
constexpr int k_min_counted_rounds = 2;

// A method of producing the task's outputs in this process, timed with `clock`.
using Method = std::function<std::expected<std::vector<at::Tensor>, std::string>(const std::vector<at::Tensor>&)>;

struct Timed {
  std::vector<double> times;                     // counted_us of each timed call
  std::vector<std::vector<at::Tensor>> outputs;  // per call of the round, on the method's device
};

std::expected<Timed, std::string> time_in_process(const Method& method, const Program& program,
                                                  const std::vector<uint64_t>& seeds, const at::Device& device,
                                                  CallClock& clock) {
  Timed timed;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::vector<at::Tensor> inputs = make_tensors(program, seeds[i], device);
    clock.prepare();
    clock.start();
    auto outputs = method(inputs);
    ClockSample sample = clock.stop();
    if (!outputs) return Error(outputs.error());
    if (i > 0) timed.times.push_back(counted_us(sample));  // the round's first call warms up
    // Copies, kept on the device where comparing them is cheap: the method's own outputs are freed as they would be
    // in a user's loop, so the next call gets that memory back (cuda's caching allocator; on cpu the caching
    // allocator ca-profile installs, aten/cpu_caching_allocator.h) rather than paying for fresh pages inside its
    // timed region.
    std::vector<at::Tensor> kept;
    for (const auto& output : *outputs) kept.push_back(output.clone());
    timed.outputs.push_back(std::move(kept));
  }
  return timed;
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

// Loaded packages, kept for the next candidates of the same program: a run profiles many candidates of each task,
// and loading one (unpacking it, loading its library, moving its constants to the device) costs about 0.2 s.
class LoadedBaselines {
 public:
  struct Found {
    std::shared_ptr<CompiledProgram> program;
    bool kept = false;  // loaded for an earlier candidate
  };
  std::expected<Found, std::string> get(const Program& program, const at::Device& device,
                                        const CompiledOptions& options) {
    auto key = compiled_key_text(program, device, options);
    if (!key) return Error(key.error());
    std::lock_guard lock(m_mutex);
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
  std::mutex m_mutex;
  std::list<std::pair<std::string, std::shared_ptr<CompiledProgram>>> m_kept;  // most recently used first
};

Json failed(Json profile, const std::string& stage, const std::string& message) {
  profile["ok"] = false;
  profile["stage"] = stage;
  profile["message"] = message;
  return profile;
}

}  // namespace

double median_ci(std::vector<double> times) {
  const size_t n = times.size();
  if (n < 6) return std::numeric_limits<double>::infinity();
  std::sort(times.begin(), times.end());
  const double half = 0.98 * std::sqrt(double(n));  // 1.96 standard deviations of Binomial(n, 1/2), halved
  const size_t low = size_t(std::max(0.0, std::floor(double(n) / 2 - half)));
  const size_t high = std::min(n - 1, size_t(std::ceil(double(n) / 2 + half)));
  const double median = quantile(times, 0.5);
  return median > 0 ? (times[high] - times[low]) / (2 * median) : std::numeric_limits<double>::infinity();
}

CompiledOptions baseline_options(const ProfileOptions& options) {
  CompiledOptions compiled = options.compiled;
  compiled.num_threads = options.num_threads;
  return compiled;
}

std::expected<Json, std::string> profile_candidate(const Json& task, const Json& candidate,
                                                   const ProfileOptions& options) {
  auto task_program = load_task_program(task);
  if (!task_program) return Error(task_program.error());
  Interpreter* interpreter = &task_program->interpreter;
  const Program* program = &interpreter->program();
  const std::vector<TensorShape>* shapes = &task_program->shapes;
  const Backend backend = options.build.backend;
  const at::Device device = backend == Backend::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);

  Json profile = {{"ok", true},
                  {"message", ""},
                  {"device", device_description(backend, 0)},
                  {"backend", backend_name(backend)},
                  {"method", k_method},
                  {"precision", tf32_mode_name(options.compiled.tf32)}};
  Phases phases;
  ProgressSteps progress("profile");  // a terminal sees where a minute goes (issue 24 item 6)
  auto files = candidate_files(candidate);
  if (!files) return failed(profile, "static", files.error());
  progress.step("building the candidate");
  auto built = build_candidate(*files, options.build);
  phases.mark("build");
  if (!built) return Error(built.error());
  if (!built->ok) return failed(profile, built->stage, built->message);

  // Compiling takes minutes cold; it happens before the lease, so other jobs time meanwhile.
  // Never destroyed: at exit the CUDA runtime may be gone before a static's destructor would free device memory.
  static auto* const loaded_baselines = new LoadedBaselines;
  std::shared_ptr<CompiledProgram> compiled;
  if (options.compile) {
    progress.step("loading the torch.compile baseline (about a minute when it is not cached)");
    auto loaded = loaded_baselines->get(*program, device, baseline_options(options));
    if (loaded) {
      compiled = loaded->program;
      const bool cached = loaded->kept || compiled->cached();
      profile["compile"] = {{"key", compiled->key()},
                            {"cached", cached},
                            {"seconds", cached ? 0.0 : compiled->compile_seconds()},
                            {"kept", loaded->kept}};
    } else {
      profile["compile_error"] = loaded.error();
    }
  } else {
    profile["compile_error"] = "not asked for (--no-compile)";
  }
  phases.mark("compiled_load");

  auto bandwidth = options.peak_bytes_per_s > 0 ? std::expected<double, std::string>(options.peak_bytes_per_s)
                                                : peak_bandwidth(backend, 0);
  if (!bandwidth) return Error(bandwidth.error());
  const double floor = floor_us(task_bytes(*program, *shapes), *bandwidth);
  const size_t output_bytes = output_bytes_of(*shapes);
  profile["floor_us"] = floor;

  phases.mark("setup");
  progress.step("waiting for the device");
  auto lease = DeviceLease::acquire(backend == Backend::cuda ? "cuda0" : "cpu", options.lock_dir, LeaseMode::exclusive);
  if (!lease) return Error(lease.error());
  DeviceMemoryReturn give_back(backend == Backend::cuda);
  phases.mark("lease_wait");
  std::unique_ptr<CallClock> clock;
  if (backend == Backend::cuda) {
    auto made = make_cuda_clock(0, nullptr);
    if (!made) return Error(made.error());
    clock = std::move(*made);
  } else {
    clock = make_cpu_clock();
  }
  profile["flush_bytes"] = clock->flush_bytes();
  // Baselines get the candidate's threads (cpu) and, while they are timed, the TF32 mode the record states.
  set_torch_threads(options.num_threads);
  // Where the TF32 mode changes eager's outputs (cuda, a mode other than none), the candidate is compared with an
  // fp32 run of its own; elsewhere eager's timed outputs are that run already (docs/TIMING.md, "Precision").
  const bool eager_is_fp32 = backend != Backend::cuda || options.compiled.tf32 == Tf32Mode::none;

  Method eager = [&](const std::vector<at::Tensor>& inputs) { return interpreter->run(inputs); };
  Method compiled_run = [&](const std::vector<at::Tensor>& inputs) { return compiled->run(inputs); };
  RunnerOptions runner{backend, options.limits, options.runner, options.num_threads, /*timed=*/true};
  // Calls a round may have by the memory its outputs take.
  const double by_memory = k_round_output_bytes / std::max(1.0, double(output_bytes));
  // The largest round: timed calls as sized below (at least 2, at most max_calls and by_memory), plus the untimed
  // first call. The runner's output region holds that many calls' outputs.
  const size_t largest_round = size_t(std::max(2, std::min(options.max_calls, int(by_memory)))) + 1;
  // One sandboxed runner for every round: the sandbox, the device and the library start once (runner_calls.h).
  auto session = RunnerSession::open(*program, *shapes, built->library, runner, options.rounds, largest_round);
  if (!session) return Error(session.error());
  SeedSource source(options.seed);
  std::vector<double> times[3];  // candidate, eager, compile
  size_t checked = 0;
  int calls = 2;  // timed calls per method in the first round; later rounds are sized from its times
  // Each round's slice of the three, as its boundaries in times[]: rounds[k][method] is where round k began.
  std::vector<std::array<size_t, 3>> rounds;
  std::vector<std::array<double, 3>> began;  // when each method's part of each round began, in Unix seconds (--samples)
  // The first round only sizes the others: its calls are checked but not counted. They are each method's first on
  // this profile, and eager's ran 10-30% slow on the H200 (bench/RESULTS.md, session 7). A lone round counts.
  auto counted = [&](size_t method) {
    size_t first = options.rounds > 1 && rounds.size() > 1 ? rounds[1][method] : 0;
    return std::vector<double>(times[method].begin() + long(first), times[method].end());
  };
  for (int round = 0; round < options.rounds; ++round) {
    rounds.push_back({times[0].size(), times[1].size(), times[2].size()});
    std::vector<uint64_t> seeds;
    for (int i = 0; i <= calls; ++i) seeds.push_back(source.next());
    std::string label = "round " + std::to_string(round + 1) + "/" + std::to_string(options.rounds);
    progress.step("timing, " + label);
    std::optional<RunnerOutcome> candidate_run;
    std::optional<Timed> eager_run, compiled_run_times;
    // Rotating the order cancels drift (clocks, temperature) between the three.
    began.emplace_back();
    for (int k = 0; k < 3; ++k) {
      int which = (round + k) % 3;
      began.back()[size_t(which)] =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      if (which == 0) {
        std::vector<RunnerCall> runner_calls;
        for (uint64_t seed : seeds) runner_calls.push_back({seed, false});
        auto ran = session->run(runner_calls);
        if (!ran) return Error(ran.error());
        if (!ran->load_error.empty()) return failed(profile, "load", ran->load_error);
        // The last round's account of the region (it grows after the first), and every round's invocation on this
        // side's clock (the first includes the runner's start).
        if (backend == Backend::cuda) {
          Json rounds_s = profile.contains("runner") ? profile["runner"]["rounds_s"] : Json::array();
          rounds_s.push_back(ran->elapsed_us / 1e6);
          profile["runner"] = ran->runner_facts;
          profile["runner"]["harness_region"] = ran->pin_error.empty() ? "page-locked" : "pageable: " + ran->pin_error;
          profile["runner"]["rounds_s"] = std::move(rounds_s);
        }
        candidate_run = std::move(*ran);
        phases.mark("runner");
      } else if (which == 1) {
        Tf32Scope precision(options.compiled.tf32);
        profile["precision"] = current_tf32_mode();  // read back from LibTorch where eager runs
        auto timed = time_in_process(eager, *program, seeds, device, *clock);
        if (!timed) return Error("eager failed in " + label + ": " + timed.error());
        eager_run = std::move(*timed);
        phases.mark("eager");
      } else if (compiled) {
        Tf32Scope precision(options.compiled.tf32);  // the package's extern kernels (cuDNN) read it as they run
        auto timed = time_in_process(compiled_run, *program, seeds, device, *clock);
        if (timed) {
          compiled_run_times = std::move(*timed);
        } else {
          profile["compile_error"] = "the package failed in " + label + ": " + timed.error();
          profile.erase("compile");
          compiled.reset();
        }
        phases.mark("compile");
      }
    }
    // Checking is not timed: it may use every core (cpu), then the baselines get their threads back. Not for small
    // outputs: there a parallel compare waits on whichever core another process holds, and a relu's 226 checks took
    // 2.9 s on the 2-core machine under load against 0.7 s for 803 quiet (bench/RESULTS.md, issue 24 item 6).
    if (output_bytes >= k_parallel_check_bytes)
      set_torch_threads(int(std::max(1u, std::thread::hardware_concurrency())));
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::string call = label + ", call " + std::to_string(i + 1);
      if (auto failure = call_failure(*candidate_run, i, call, session->options())) {
        return failed(profile, failure->stage, failure->message);
      }
      std::vector<at::Tensor> fp32_reference;
      if (!eager_is_fp32) {
        Tf32Scope fp32(Tf32Mode::none);
        auto ran = interpreter->run(make_tensors(*program, seeds[i], device));
        if (!ran) return Error("the fp32 reference failed in " + call + ": " + ran.error());
        fp32_reference = std::move(*ran);
      }
      const auto& reference = eager_is_fp32 ? eager_run->outputs[i] : fp32_reference;
      for (size_t k = 0; k < reference.size(); ++k) {
        Comparison c = compare_output(candidate_run->calls[i].outputs[k], reference[k], options.tolerance);
        if (!c.ok) return failed(profile, "compare", call + ", output " + std::to_string(k) + ": " + c.message);
        // Our own package, not the candidate: one call a round, on fresh inputs each time, shows it agrees.
        if (compiled_run_times && i == 0) {
          Comparison baseline = compare_output(compiled_run_times->outputs[i][k], reference[k], options.tolerance);
          if (!baseline.ok) {
            profile["compile_error"] = "the package's output differs from eager's: " + baseline.message;
            profile.erase("compile");
            compiled.reset();
            compiled_run_times.reset();
          }
        }
      }
      ++checked;
      if (i > 0)
        times[0].push_back(
            counted_us({candidate_run->calls[i].report->device_us, candidate_run->calls[i].report->wall_us}));
    }
    set_torch_threads(options.num_threads);
    phases.mark("check");
    times[1].insert(times[1].end(), eager_run->times.begin(), eager_run->times.end());
    if (compiled_run_times)
      times[2].insert(times[2].end(), compiled_run_times->times.begin(), compiled_run_times->times.end());
    if (round == 0 && options.rounds > 1) {
      // Enough calls that each method's measured time reaches min_ms over the rounds.
      double slowest = std::max({stats_of(times[0]).median, stats_of(times[1]).median, 1.0});
      double per_round = options.min_ms * 1000.0 / double(options.rounds - 1);
      calls = std::clamp(int(std::min(std::ceil(per_round / slowest), by_memory)), 2, options.max_calls);
    }
    // Known well enough: every timed method's median within +-ci (a stopping rule, so the interval is checked after
    // each counted round from the second on; the record states the intervals it ended with).
    if (options.ci > 0 && round >= k_min_counted_rounds && round + 1 < options.rounds) {
      bool known = median_ci(counted(0)) <= options.ci && median_ci(counted(1)) <= options.ci;
      if (compiled && compiled_run_times) known = known && median_ci(counted(2)) <= options.ci;
      if (known) break;
    }
  }

  session->finish();
  phases.mark("runner_exit");  // its own phase: a CUDA process's teardown is not small

  Stats candidate_stats = stats_of(counted(0)), eager_stats = stats_of(counted(1)),
        compile_stats = stats_of(counted(2));
  bool has_compile = compiled != nullptr && compile_stats.count > 0;
  profile["rounds"] = rounds.size();  // fewer than options.rounds when the intervals stopped the profile
  profile["ci"] = {{"candidate", median_ci(counted(0))},
                   {"eager", median_ci(counted(1))},
                   {"compile", has_compile ? Json(median_ci(counted(2))) : Json(nullptr)}};
  profile["times_us"] = {{"candidate", candidate_stats.median},
                         {"eager", eager_stats.median},
                         {"compile", has_compile ? Json(compile_stats.median) : Json(nullptr)}};
  profile["spread"] = {{"candidate", candidate_stats.spread},
                       {"eager", eager_stats.spread},
                       {"compile", has_compile ? Json(compile_stats.spread) : Json(nullptr)}};
  profile["count"] = {
      {"candidate", candidate_stats.count}, {"eager", eager_stats.count}, {"compile", compile_stats.count}};
  profile["checked_calls"] = checked;
  if (options.samples) {
    // Every timed call's counted time, round by round, to tell a shifted profile from a bimodal one.
    Json samples = Json::object(), began_at = Json::object();
    const char* names[3] = {"candidate", "eager", "compile"};
    for (size_t method = 0; method < 3; ++method) {
      Json per_round = Json::array();
      for (size_t k = 0; k < rounds.size(); ++k) {
        size_t end = k + 1 < rounds.size() ? rounds[k + 1][method] : times[method].size();
        per_round.push_back(
            std::vector<double>(times[method].begin() + long(rounds[k][method]), times[method].begin() + long(end)));
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
  Json speedup = {{"vs_eager", eager_stats.median / candidate_stats.median}};
  speedup["vs_compile"] = has_compile ? Json(compile_stats.median / candidate_stats.median) : Json(nullptr);
  profile["speedup"] = speedup;
  if (candidate_stats.median < floor) {
    return failed(profile, "floor",
                  "the candidate's median " + std::to_string(candidate_stats.median) +
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
