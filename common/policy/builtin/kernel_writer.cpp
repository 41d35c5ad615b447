// write_kernel: lower the program into a plan, then emit the variant's source.
#include "policy/builtin/kernel_writer.h"

#include "policy/builtin/graph.h"

namespace ca {

int kernel_variant_count(Backend backend) {
  return builtin::variant_count(backend);
}

std::expected<WrittenKernel, std::vector<Uncovered>> write_kernel(const Program& program, Backend backend,
                                                                  int variant) {
  auto plan = builtin::lower_program(program);
  if (!plan) return std::unexpected(plan.error());
  builtin::Variant chosen = builtin::variant_of(backend, variant);
  WrittenKernel kernel;
  std::string path = backend == Backend::cuda ? "kernels/kernel.cu" : "kernels/kernel.cpp";
  kernel.files[path] = builtin::emit_kernel(*plan, backend, chosen);
  kernel.patterns = plan->patterns;
  kernel.variant = chosen.describe;
  return kernel;
}

}  // namespace ca
