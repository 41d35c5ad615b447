// The two backends candidates are built and run for (docs/ARCHITECTURE.md#contracts).
#pragma once

#include <optional>
#include <string_view>

namespace ca {

enum class Backend { cpu, cuda };

inline std::string_view backend_name(Backend backend) {
  return backend == Backend::cuda ? "cuda" : "cpu";
}

/// The backend named "cpu" or "cuda", or nullopt.
inline std::optional<Backend> parse_backend(std::string_view name) {
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda") return Backend::cuda;
  return std::nullopt;
}

}  // namespace ca
