// Builds a candidate's sources into a shared library exporting ca_forward,
// with source and symbol checks and a content-addressed cache (docs/ARCHITECTURE.md#contracts-6).
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/backend.h"

namespace ca {

struct BuildOptions {
  Backend backend = Backend::cpu;
  std::string cuda_arch;     // e.g. "sm_90"; "" = the GPU's own architecture
  bool fast_math = false;    // --use_fast_math / -ffast-math only when asked
  bool allow_cublas = true;  // link cuBLAS (the paper allows it for GEMMs)
  bool allow_cudnn = true;   // link cuDNN (the paper allows it for convolutions)
  std::string cache_dir;     // "" = default_cache_dir()
  int timeout_s = 300;       // for the compiler
};

struct BuildResult {
  bool ok = false;
  std::string stage;    // "static" (source or symbol check), "compile", or "" when ok
  std::string message;  // what an agent should fix: trimmed compiler errors or the check's finding
  std::string library;  // path of the built .so when ok
  std::string key;      // the content hash; "" when the sources were rejected before it was taken
  bool cached = false;  // the library came from the cache without compiling
};

/// $CA_CACHE_DIR, else $XDG_CACHE_HOME/cuda-agent, else ~/.cache/cuda-agent,
/// each with "/builds" appended; "" when none of these variables is set.
std::string default_cache_dir();

/// The compiler and linker flags for `options`, without file names or include
/// paths: what goes into the cache key besides sources and toolchain.
std::vector<std::string> compile_flags(const BuildOptions& options);

/// Builds `files` (relative path such as "kernels/x.cu" -> contents, as in
/// candidate records) into `<cache>/<key>/candidate.so`, or finds it there.
/// A candidate's faults (bad paths, forbidden includes or symbols, compile
/// errors) are a BuildResult with ok == false. Returns an error message only
/// for problems of this machine: no compiler, a cache that cannot be written.
std::expected<BuildResult, std::string> build_candidate(const std::map<std::string, std::string>& files,
                                                        const BuildOptions& options);

}  // namespace ca
