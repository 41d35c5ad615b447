// The settings of the judging harness that every judging tool shares (the verification tolerance and what a
// comparison found, the compiled baseline's options), as plain values: the stages' headers and the tools hold them
// without including LibTorch (the LibTorch layer's compare_output and compiled baseline act on them).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ca {

/// Which float32 ops of the timed baselines (eager and compiled) may use TF32 on cuda (docs/TIMING.md, "Precision"):
/// none (cuBLAS and cuDNN in full fp32), pytorch (PyTorch's own defaults: matmuls fp32, convolutions TF32, as every
/// user and KernelBench's baselines get) or all (both TF32). Correctness references are fp32 whatever the mode. The
/// cpu ignores it (ATen's CPU kernels have no TF32).
enum class Tf32Mode { none, pytorch, all };

inline constexpr std::array<std::string_view, 3> k_tf32_mode_names = {"none", "pytorch", "all"};

inline std::string tf32_mode_name(Tf32Mode mode) {
  return std::string(k_tf32_mode_names[size_t(mode)]);
}

/// The mode named `name`, or nullopt.
inline std::optional<Tf32Mode> parse_tf32_mode(std::string_view name) {
  for (size_t i = 0; i < k_tf32_mode_names.size(); ++i) {
    if (k_tf32_mode_names[i] == name) return Tf32Mode(i);
  }
  return std::nullopt;
}

struct Tolerance {
  double atol = 1e-2;
  double rtol = 1e-2;
};

struct Comparison {
  bool ok = false;
  double max_abs = 0;   // max |out - ref|
  double max_rel = 0;   // max |out - ref| / |ref| over elements with |ref| > atol
  double rel_l2 = 0;    // ||out - ref|| / ||ref|| (0 when ref is all zeros and out matches)
  std::string message;  // why it failed, for an agent: which check, where, the values
};

/// Empty strings mean "search", in the order given for each field.
struct CompiledOptions {
  /// $CA_CACHE_DIR/compiled, else $XDG_CACHE_HOME/cuda-agent/compiled, else
  /// $HOME/.cache/cuda-agent/compiled.
  std::string cache_dir;
  /// $CA_PYTHON, else <dir of /proc/self/exe>/../../.venv/bin/python (a tool
  /// in build/bin of a checkout), else the build's source tree .venv/bin/python;
  /// the first that exists. Its torch must be the version LibTorch is.
  std::string python;
  /// The compile_task.py script: $CA_BRIDGE_DIR/compile_task.py, else
  /// <dir of /proc/self/exe>/../../bridge/compile_task.py, else the build's
  /// source tree bridge/, else <install prefix>/share/cuda-agent/bridge/; the
  /// first that exists.
  std::string bridge;
  /// The TF32 mode the package is compiled under (the bridge's torch.backends flags: Inductor's own matmul kernels
  /// bake it in); part of the cache key. Calls the package makes into LibTorch (extern kernels: cuDNN convolutions,
  /// cuBLAS) follow this process's at::globalContext() at run time, which the caller sets (torch/precision.h).
  Tf32Mode tf32 = Tf32Mode::pytorch;
  /// cpu: the OpenMP threads of the generated code (Inductor's cpp.threads),
  /// which it fixes at compile time; part of a cpu package's cache key. Use
  /// the thread count eager runs with, so that the baselines compare fairly.
  int num_threads = 1;
  /// Limit for one compile (a bridge process compiling n programs gets n
  /// times it), and for waiting on another process's compile of the same
  /// package.
  double timeout_s = 900;
};

}  // namespace ca
