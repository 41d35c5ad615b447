// End-to-end tests of ca-runner's cuda backend: .cu candidates built with nvcc, run on the GPU; skipped without one.
#include <algorithm>

#include "ir/tensor_init.h"
#include "kernel/builder.h"
#include "runner/device.h"
#include "runner/runner_fixture.h"

namespace ca {
namespace {

// Checks the context, then computes relu. Each failed check has its own return code.
const char* const k_checks_context = R"(#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "ca_kernel.h"
__global__ void relu(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
__global__ void expect_ff(const unsigned char* s, int n, int* bad) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && s[i] != 0xFF) *bad = 1;
}
static void* seen[64];
static int n_seen = 0;
static int remember(void* p) {
  for (int i = 0; i < n_seen; ++i) if (seen[i] == p) return 1;
  seen[n_seen++] = p;
  return 0;
}
extern "C" int ca_forward(ca_context* ctx, const ca_tensor* in, int, ca_tensor* out, int) {
  if (ctx->device != CA_DEVICE_CUDA || ctx->stream == NULL || ctx->device_index != 0) return 10;
  if (ctx->cublas == NULL) return 11;
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, in[0].data) != cudaSuccess || attributes.type != cudaMemoryTypeDevice) return 12;
  if (remember(in[0].data) || remember(out[0].data)) return 13;
  size_t persisting = 1;
  if (cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) != cudaSuccess || persisting != 0) return 14;
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);
  cublasMath_t mode;
  if (cublasGetMathMode((cublasHandle_t)ctx->cublas, &mode) != CUBLAS_STATUS_SUCCESS || mode != CUBLAS_DEFAULT_MATH) return 15;
  cublasSetMathMode((cublasHandle_t)ctx->cublas, CUBLAS_TF32_TENSOR_OP_MATH);
  int* flag = (int*)ctx->workspace(ctx, 4);
  unsigned char* scratch = (unsigned char*)ctx->workspace(ctx, 1000);
  if (flag == NULL || scratch == NULL) return 16;
  cudaMemsetAsync(flag, 0, 4, stream);
  expect_ff<<<4, 256, 0, stream>>>(scratch, 1000, flag);
  int bad = 1;
  cudaMemcpyAsync(&bad, flag, 4, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  if (bad) return 17;
  int64_t n = in[0].shape[0];
  relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>((const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
})";

// Writes a terabyte past its output: an illegal address, a sticky error.
const char* const k_illegal_address = R"(#include <cuda_runtime.h>
#include "ca_kernel.h"
__global__ void far(float* y) { y[(1ll << 38) + threadIdx.x] = 1.0f; }
extern "C" int ca_forward(ca_context* ctx, const ca_tensor*, int, ca_tensor* out, int) {
  far<<<1, 32, 0, (cudaStream_t)ctx->stream>>>((float*)out[0].data);
  return 0;
})";

// Launches with too many threads per block and swallows the error (docs/EXPLOITS.md, A3).
const char* const k_bad_launch = R"(#include <cuda_runtime.h>
#include "ca_kernel.h"
__global__ void fill(float* y) { y[threadIdx.x] = 0.0f; }
extern "C" int ca_forward(ca_context* ctx, const ca_tensor*, int, ca_tensor* out, int) {
  fill<<<1, 4096, 0, (cudaStream_t)ctx->stream>>>((float*)out[0].data);
  return 0;
})";

// Does relu after ~50 ms of spinning, on the per-thread default stream (a stream of its own is refused statically),
// and returns without waiting (docs/EXPLOITS.md, C1).
const char* const k_per_thread_stream = R"(#include <cuda_runtime.h>
#include "ca_kernel.h"
__global__ void slow_relu(const float* x, float* y, int64_t n) {
  long long start = clock64();
  while (clock64() - start < 100000000ll) {}
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
extern "C" int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  slow_relu<<<1, 256, 0, cudaStreamPerThread>>>((const float*)in[0].data, (float*)out[0].data, in[0].shape[0]);
  return 0;
})";

// Zeroes its second input on the device.
const char* const k_writes_input = R"(#include <cuda_runtime.h>
#include "ca_kernel.h"
extern "C" int ca_forward(ca_context* ctx, const ca_tensor* in, int, ca_tensor* out, int) {
  cudaMemsetAsync(in[1].data, 0, 16, (cudaStream_t)ctx->stream);
  cudaMemsetAsync(out[0].data, 0, 16, (cudaStream_t)ctx->stream);
  return 0;
})";

// Computes relu on the host between two copies; its relu kernel is never launched (docs/EXPLOITS.md, A2).
const char* const k_decoy = R"(#include <cuda_runtime.h>
#include <vector>
#include "ca_kernel.h"
__global__ void relu(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
extern "C" int ca_forward(ca_context* ctx, const ca_tensor* in, int, ca_tensor* out, int) {
  int64_t n = in[0].shape[0];
  std::vector<float> host(n);
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  cudaMemcpyAsync(host.data(), in[0].data, n * 4, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  for (float& v : host) v = v > 0 ? v : 0.0f;
  cudaMemcpyAsync(out[0].data, host.data(), n * 4, cudaMemcpyHostToDevice, stream);
  cudaStreamSynchronize(stream);
  if (n < 0) relu<<<1, 1, 0, stream>>>((const float*)in[0].data, (float*)out[0].data, n);
  return 0;
})";

// Captures its relu into a CUDA graph on the first call and replays the graph on every call.
const char* const k_graph = R"(#include <cuda_runtime.h>
#include "ca_kernel.h"
__global__ void relu(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
extern "C" int ca_forward(ca_context* ctx, const ca_tensor* in, int, ca_tensor* out, int) {
  int64_t n = in[0].shape[0];
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 2;
  relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>((const float*)in[0].data, (float*)out[0].data, n);
  if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) return 3;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return 4;
  if (cudaGraphLaunch(exec, stream) != cudaSuccess) return 5;
  cudaStreamSynchronize(stream);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 0;
})";

class CudaRunnerTest : public RunnerFixture {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    RunnerFixture::SetUp();
  }

  // Builds a candidate with the real builder (nvcc for the GPU present) and returns its path; "" when it cannot.
  std::string compile(const std::string& name, const char* source) {
    BuildOptions options;
    options.backend = Backend::cuda;
    options.allow_cudnn = false;  // none of these uses it
    options.cache_dir = (m_dir / "cache").string();
    auto built = build_candidate({{"kernels/" + name + ".cu", source}}, options);
    if (!built) {
      ADD_FAILURE() << built.error();
      return "";
    }
    EXPECT_TRUE(built->ok) << built->stage << ": " << built->message;
    return built->library;
  }
};

TEST_F(CudaRunnerTest, ReluOnTheDeviceMatchesTheHostDrawAndTheContextFollowsTheAbi) {
  TensorSpec x = {"x", DType::float32, {100000}, {Dist::uniform, -1, 1}};
  auto r = request(compile("context", k_checks_context), {x}, {{DType::float32, {100000}}}, {5, 6, 7});
  r.backend = Backend::cuda;
  ASSERT_EQ(run(r).code, 0) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 3u);
  for (size_t call = 0; call < 3; ++call) {
    EXPECT_EQ(log.calls[call].rc, 0) << "call " << call << ": see the return codes in k_checks_context";
    EXPECT_TRUE(log.calls[call].cuda_error.empty()) << log.calls[call].cuda_error;
    EXPECT_EQ(log.calls[call].own_launches, 2) << "expect_ff and relu; cuBLAS's and the runner's launches do not count";
    std::vector<float> input = as_floats(make_tensor_bytes(x, r.calls[call].seed, 0).value());
    std::vector<float> output = as_floats(outputs_of(call));
    ASSERT_EQ(output.size(), input.size());
    for (size_t i = 0; i < input.size(); ++i)
      ASSERT_EQ(output[i], std::max(input[i], 0.0f)) << "call " << call << " element " << i;
  }
}

TEST_F(CudaRunnerTest, IllegalAddressFailsTheCallAndEndsTheRun) {
  auto r = request(compile("illegal", k_illegal_address), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1, 2, 3});
  r.backend = Backend::cuda;
  EXPECT_EQ(run(r).code, 70) << m_stderr;
  EXPECT_NE(m_stderr.find("the CUDA context is lost"), std::string::npos) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].rc, 0);
  EXPECT_NE(log.calls[0].cuda_error.find("cudaErrorIllegalAddress"), std::string::npos) << log.calls[0].cuda_error;
  EXPECT_FALSE(log.calls[0].ok());
  EXPECT_EQ(log.calls[0].output_bytes, -1) << "a call with a CUDA error has no outputs";
}

TEST_F(CudaRunnerTest, SwallowedLaunchErrorFailsEveryCallButTheRunGoesOn) {
  auto r = request(compile("badlaunch", k_bad_launch), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1, 2});
  r.backend = Backend::cuda;
  EXPECT_EQ(run(r).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 2u);
  for (const auto& call : log.calls) {
    // CUDA 12 names the oversized block cudaErrorInvalidConfiguration; CUDA 13 on the H200 says cudaErrorInvalidValue.
    EXPECT_TRUE(call.cuda_error.find("cudaErrorInvalidConfiguration") != std::string::npos ||
                call.cuda_error.find("cudaErrorInvalidValue") != std::string::npos)
        << call.cuda_error;
    EXPECT_FALSE(call.ok());
    EXPECT_EQ(call.output_bytes, -1);
  }
}

TEST_F(CudaRunnerTest, ACallWithoutItsOwnKernelsFailsAndAGraphOfThemCounts) {
  TensorSpec x = {"x", DType::float32, {5000}, {Dist::uniform, -1, 1}};
  auto decoy = request(compile("decoy", k_decoy), {x}, {{DType::float32, {5000}}}, {1, 2});
  decoy.backend = Backend::cuda;
  EXPECT_EQ(run(decoy).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 2u);
  for (const auto& call : log.calls) {
    EXPECT_EQ(call.own_launches, 0);
    EXPECT_EQ(call.rc, 0);
    EXPECT_FALSE(call.ok()) << "right outputs, but not from its kernels";
  }

  auto graph = request(compile("graph", k_graph), {x}, {{DType::float32, {5000}}}, {3, 4});
  graph.backend = Backend::cuda;
  graph.output_dir = (m_dir / "graph-out").string();
  ASSERT_EQ(run(graph).code, 0) << m_stderr;
  RunLog graph_log = parse_results(read_file(graph.output_dir + "/results.jsonl").value()).value();
  ASSERT_EQ(graph_log.calls.size(), 2u);
  for (const auto& call : graph_log.calls) {
    EXPECT_EQ(call.own_launches, 1) << "the captured relu launches with its graph";
    EXPECT_TRUE(call.ok()) << call.rc << " " << call.cuda_error;
  }
}

TEST_F(CudaRunnerTest, WorkOnThePerThreadStreamIsWaitedForAndTimed) {
  TensorSpec x = {"x", DType::float32, {1000}, {Dist::uniform, -1, 1}};
  auto r = request(compile("per_thread", k_per_thread_stream), {x}, {{DType::float32, {1000}}}, {9});
  r.backend = Backend::cuda;
  ASSERT_EQ(run(r).code, 0) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_GT(log.calls[0].wall_us, 10000.0) << "the spin of ~50 ms must fall inside the timed region";
  EXPECT_GT(log.calls[0].device_us, 10000.0) << "and between the events: the clock joins the per-thread stream";
  std::vector<float> input = as_floats(make_tensor_bytes(x, 9, 0).value());
  std::vector<float> output = as_floats(outputs_of(0));
  ASSERT_EQ(output.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) ASSERT_EQ(output[i], std::max(input[i], 0.0f)) << i;
}

TEST_F(CudaRunnerTest, WritingAnInputOnTheDeviceFailsTheCall) {
  auto r = request(compile("writer", k_writes_input), {float_tensor("a", {8}), float_tensor("b", {8})},
                   {{DType::float32, {8}}}, {1});
  r.backend = Backend::cuda;
  EXPECT_EQ(run(r).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].changed_inputs, std::vector<uint64_t>{1});
  EXPECT_FALSE(log.calls[0].ok());
  EXPECT_EQ(log.calls[0].output_bytes, 32);
}

}  // namespace
}  // namespace ca
