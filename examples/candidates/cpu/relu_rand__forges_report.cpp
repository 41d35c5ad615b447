// Correct relu that rewrites the runner's report of its previous call with a tenth of the time: it rewrites
// results.jsonl in the runner's io folder with that line's times cut, every other line as it was, so the lines stay
// one a call and in order (docs/EXPLOITS.md C4). Expected verdict: PASS with its honest twin's reward: the reports no longer
// travel through that file (each call's comes over the runner's pipe, and its time is the trusted side's), so
// there is nothing there to forge.
#include <omp.h>

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

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (inputs == nullptr || outputs == nullptr || n_inputs != 1 || n_outputs != 1) return 1;
  forge_last_report();
  const int64_t n = inputs[0].shape[0] * inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int threads = (ctx != nullptr && ctx->num_threads > 0) ? ctx->num_threads : omp_get_max_threads();
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  return 0;
}
