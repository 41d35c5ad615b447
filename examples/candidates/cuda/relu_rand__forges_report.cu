// Correct relu (CUDA) that rewrites the runner's report of its previous call with a tenth of the time: it rewrites
// results.jsonl in the runner's io folder with that line's times cut, every other line as it was, so the lines stay
// one a call and in order (docs/EXPLOITS.md C4). Expected verdict: PASS with its real time: the reports no longer travel
// through that file (each call's comes over the runner's pipe), so there is nothing there to forge. GPU run needed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ca_kernel.h"

// The results file the runner is writing now: io/results.jsonl (one invocation) or the last io/round-K/results.jsonl.
static FILE* open_results(char* path, size_t size) {
  FILE* found = std::fopen("io/results.jsonl", "r+");
  std::snprintf(path, size, "io/results.jsonl");
  for (int round = 0; round < 64; ++round) {
    char name[64];
    std::snprintf(name, sizeof name, "io/round-%d/results.jsonl", round);
    FILE* stream = std::fopen(name, "r+");
    if (stream == nullptr) continue;
    if (found != nullptr) std::fclose(found);
    found = stream;
    std::snprintf(path, size, "%s", name);
  }
  return found;
}

// Rewrites the file with the last call line's wall_us and device_us divided by ten.
static void forge_last_report() {
  char path[64];
  FILE* stream = open_results(path, sizeof path);
  if (stream == nullptr) return;
  static char text[1 << 20];
  size_t size = std::fread(text, 1, sizeof text - 1, stream);
  std::fclose(stream);
  text[size] = '\0';
  char* last = nullptr;  // the start of the last call line
  for (char* line = text; line != nullptr && *line != '\0'; line = std::strchr(line, '\n') ? std::strchr(line, '\n') + 1 : nullptr) {
    if (std::strncmp(line, "{\"call\"", 7) == 0) last = line;
  }
  char* wall = last != nullptr ? std::strstr(last, "\"wall_us\":") : nullptr;
  char* device = last != nullptr ? std::strstr(last, "\"device_us\":") : nullptr;
  if (wall == nullptr || device == nullptr) return;
  double wall_us = std::strtod(wall + 10, nullptr), device_us = std::strtod(device + 12, nullptr);
  char* after_device = std::strpbrk(device + 12, ",}");
  stream = std::fopen(path, "w");
  if (stream == nullptr) return;
  std::fwrite(text, 1, size_t(wall - text), stream);
  std::fprintf(stream, "\"wall_us\":%.3f,\"device_us\":%.3f%s", wall_us / 10, device_us / 10, after_device);
  std::fclose(stream);
}

static bool is_f32(const ca_tensor& t, int ndim) {
  return t.data != nullptr && t.dtype == CA_FLOAT32 && t.ndim == ndim && t.shape != nullptr;
}

// Validates relu's arguments: one 2-D float32 input, one output of the same shape. Sets *n to the element count.
static bool check_args(const ca_tensor* inputs, int n_inputs, const ca_tensor* outputs, int n_outputs, int64_t* n) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return false;
  const ca_tensor& X = inputs[0];
  const ca_tensor& Y = outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 2)) return false;
  if (Y.shape[0] != X.shape[0] || Y.shape[1] != X.shape[1]) return false;
  *n = X.shape[0] * X.shape[1];
  return true;
}

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  int64_t n = 0;
  if (ctx == nullptr || !check_args(inputs, n_inputs, outputs, n_outputs, &n)) return 1;
  forge_last_report();
  if (n == 0) return 0;
  const int threads = 256;
  relu_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
