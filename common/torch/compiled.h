// The compiled baseline (docs/TIMING.md): Inductor's output for a task program,
// made by the Python bridge (bridge/compile_task.py) as an AOTInductor package
// and loaded here through LibTorch, cached per program, device, torch version,
// TF32 mode and (cpu) thread count. docs/ARCHITECTURE.md, "The compiled baseline", has the cache
// layout, the lock and the failure modes.
#pragma once

#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "harness/options.h"
#include "ir/program.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace ca {

class CompiledProgram {
 public:
  /// The cached package for (program, device, torch version, tf32 mode, cpu
  /// threads), compiling it with the bridge when missing. A package whose checksum does
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
  /// Seconds the bridge reports for this program's export and compile (its
  /// Python start-up not included; the record's bridge_seconds has that); 0
  /// when cached.
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

/// What compile_missing found or did for one program.
enum class PackageState { cached, compiled };

/// Makes sure the cache holds a package for each of `programs` (for `device`
/// and `options`), so that load_or_compile then finds them cached: skips the
/// cached ones and compiles the missing ones in up to `jobs` bridge processes
/// at once, each compiling its share in one batch (one Python start-up per
/// process, not per program). Each missing package's lock is held while it is
/// compiled, as load_or_compile holds it; one held by another process is
/// waited for after this call's own compiles. Returns one result per program,
/// in order: whether it was cached or compiled, or why it has no package (a
/// program that fails to compile does not stop the others).
std::vector<std::expected<PackageState, std::string>> compile_missing(std::span<const Program* const> programs,
                                                                      const at::Device& device,
                                                                      const CompiledOptions& options, unsigned jobs);

/// The text the cache key hashes: the program's canonical text, the device
/// (kind, and the GPU's name and compute capability or the CPU's model name),
/// LibTorch's version, the TF32 mode and, for cpu, options.num_threads.
/// Exposed for tests and diagnostics.
std::expected<std::string, std::string> compiled_key_text(const Program& program, const at::Device& device,
                                                          const CompiledOptions& options);

}  // namespace ca
