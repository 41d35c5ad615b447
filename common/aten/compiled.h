// The compiled baseline (DESIGN §7): Inductor's output for a task program,
// made by the Python bridge (bridge/compile_task.py) as an AOTInductor package
// and loaded here through LibTorch, cached per program, device, torch version
// and TF32 mode. docs/ARCHITECTURE.md, "The compiled baseline", has the cache
// layout, the lock and the failure modes.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "ir/program.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace ca {

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
  /// Lets float32 matmuls and convolutions use TF32 in the compiled kernels;
  /// part of the cache key. Calls the package makes into ATen (extern kernels)
  /// follow this process's at::globalContext() TF32 settings, as eager does.
  bool allow_tf32 = false;
  /// Limit for one compile, and for waiting on another process's compile of
  /// the same package.
  double timeout_s = 900;
};

class CompiledProgram {
 public:
  /// The cached package for (program, device, torch version, tf32 mode),
  /// compiling it with the bridge when missing. A package whose checksum does
  /// not match its record (truncated, overwritten) is compiled again; errors
  /// carry the bridge's trimmed stderr, and a failed compile leaves nothing in
  /// the cache.
  static std::expected<CompiledProgram, std::string> load_or_compile(const Program& program, const at::Device& device,
                                                                     const CompiledOptions& options);

  CompiledProgram(CompiledProgram&&) noexcept;
  CompiledProgram& operator=(CompiledProgram&&) noexcept;
  ~CompiledProgram();

  /// Runs the package on the program's inputs then params (as make_tensors
  /// returns them: contiguous, the program's shapes and dtypes, on the
  /// package's device); returns the outputs.
  std::expected<std::vector<at::Tensor>, std::string> run(const std::vector<at::Tensor>& inputs_then_params);

  /// The cache key (hex SHA-256); the package is <cache_dir>/<key>.pt2.
  const std::string& key() const { return m_key; }
  /// The package file.
  const std::string& path() const { return m_path; }
  /// True when no compile was needed (this process's, or one another process
  /// finished while this one waited for the lock).
  bool cached() const { return m_cached; }
  /// Wall-clock seconds of the bridge; 0 when cached.
  double compile_seconds() const { return m_compile_seconds; }

 private:
  CompiledProgram() = default;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> m_loader;
  std::vector<TensorSpec> m_tensors;  // inputs then params, checked before each run
  size_t m_num_outputs = 0;
  at::Device m_device = at::kCPU;
  std::string m_key;
  std::string m_path;
  bool m_cached = false;
  double m_compile_seconds = 0;
};

/// The text the cache key hashes: the program's canonical text, the device
/// (kind, and the GPU's name and compute capability or the CPU's model name),
/// LibTorch's version and the TF32 mode. Exposed for tests and diagnostics.
std::expected<std::string, std::string> compiled_key_text(const Program& program, const at::Device& device,
                                                          bool allow_tf32);

}  // namespace ca
