// The kernel writer behind the built-in policy: a task program (+ backend, variant) in, the source of a kernel in
// the project's ABI (kernels/include/ca_kernel.h) out, or one reason per node it does not cover. Pure: no files,
// no processes.
#pragma once

#include <expected>
#include <map>
#include <string>
#include <vector>

#include "ir/backend.h"
#include "ir/program.h"

namespace ca {

/// A node the writer cannot turn into kernel code, and why.
struct Uncovered {
  int node = -1;  // index in program.nodes; -1 for the program as a whole (an input dtype, an output)
  std::string op;
  std::string reason;
};

struct WrittenKernel {
  std::map<std::string, std::string> files;  // "kernels/kernel.cpp" (cpu) or "kernels/kernel.cu" (cuda) -> source
  std::vector<std::string> patterns;         // the patterns used, in order: "elementwise", "reduction", "matmul", ...
  std::string variant;                       // what this variant changes: "tile 64x64x256, float accumulators, ..."
};

/// How many variants the writer has for a backend (each differs in block/tile size, accumulation, ...).
int kernel_variant_count(Backend backend);

/// Writes variant `variant` (0-based, taken modulo kernel_variant_count) of the kernel for `program`. Returns every
/// uncovered node with its reason when any node is outside the writer's patterns.
std::expected<WrittenKernel, std::vector<Uncovered>> write_kernel(const Program& program, Backend backend, int variant);

}  // namespace ca
