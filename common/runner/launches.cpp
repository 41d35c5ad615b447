#include "runner/launches.h"

#include <dlfcn.h>
#include <link.h>
#include <atomic>
#include <vector>

namespace ca {
namespace {

struct CodeRange {
  uintptr_t begin, end;
};

std::vector<CodeRange> g_candidate_code;  // set once, before the first call, then only read
std::atomic<int64_t> g_launches = 0;
std::atomic<bool> g_captured_own = false;

bool from_candidate(const void* return_address) {
  auto address = reinterpret_cast<uintptr_t>(return_address);
  for (const CodeRange& range : g_candidate_code) {
    if (address >= range.begin && address < range.end) return true;
  }
  return false;
}

}  // namespace

void watch_launches_from(const void* symbol) {
  g_candidate_code.clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto target = reinterpret_cast<uintptr_t>(data);
        std::vector<CodeRange> code;
        bool holds_target = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
          CodeRange range{info->dlpi_addr + segment.p_vaddr, info->dlpi_addr + segment.p_vaddr + segment.p_memsz};
          holds_target = holds_target || (target >= range.begin && target < range.end);
          code.push_back(range);
        }
        if (!holds_target) return 0;
        g_candidate_code = std::move(code);
        return 1;
      },
      const_cast<void*>(symbol));
}

void reset_launches() {
  g_launches = 0;
}

int64_t own_launches() {
  return g_launches;
}

}  // namespace ca

#ifdef CA_WITH_CUDA
#include <cuda_runtime_api.h>

namespace {

// A launch cudart accepted, made by the candidate's code; inside a stream capture it becomes part of a graph.
void note_launch(const void* return_address, cudaError_t status, cudaStream_t stream) {
  if (status != cudaSuccess || !ca::from_candidate(return_address)) return;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusActive) {
    ca::g_captured_own = true;
    return;
  }
  ++ca::g_launches;
}

void note_graph_launch(const void* return_address, cudaError_t status) {
  if (status == cudaSuccess && ca::g_captured_own && ca::from_candidate(return_address)) ++ca::g_launches;
}

template <typename Function>
Function next_definition(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

}  // namespace

// The entry points a candidate's launches go through in CUDA 13's cudart: <<<>>> calls __cudaLaunchKernel (or its
// per-thread-stream twin), and the documented APIs remain. Each forwards to the next definition, cudart's.
#define CA_INTERPOSE(name, params, args, stream)                            \
  cudaError_t name params {                                                 \
    static const auto real = next_definition<cudaError_t(*) params>(#name); \
    if (real == nullptr) return cudaErrorNotSupported;                      \
    cudaError_t status = real args;                                         \
    note_launch(__builtin_return_address(0), status, stream);               \
    return status;                                                          \
  }
#define CA_LAUNCH_PARAMS (const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream)
#define CA_LAUNCH_ARGS (func, grid, block, args, shared, stream)
#define CA_KERNEL_PARAMS (cudaKernel_t func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream)

extern "C" {
CA_INTERPOSE(__cudaLaunchKernel, CA_KERNEL_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(__cudaLaunchKernel_ptsz, CA_KERNEL_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(cudaLaunchKernel, CA_LAUNCH_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(cudaLaunchKernel_ptsz, CA_LAUNCH_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(cudaLaunchCooperativeKernel, CA_LAUNCH_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(cudaLaunchCooperativeKernel_ptsz, CA_LAUNCH_PARAMS, CA_LAUNCH_ARGS, stream)
CA_INTERPOSE(cudaLaunchKernelExC, (const cudaLaunchConfig_t* config, const void* func, void** args),
             (config, func, args), config->stream)
CA_INTERPOSE(cudaLaunchKernelExC_ptsz, (const cudaLaunchConfig_t* config, const void* func, void** args),
             (config, func, args), config->stream)

cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream) {
  static const auto real = next_definition<cudaError_t (*)(cudaGraphExec_t, cudaStream_t)>("cudaGraphLaunch");
  if (real == nullptr) return cudaErrorNotSupported;
  cudaError_t status = real(graph, stream);
  note_graph_launch(__builtin_return_address(0), status);
  return status;
}
}
#endif
