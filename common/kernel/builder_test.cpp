// Tests for build_candidate with real g++ (and nvcc, where installed) builds.
#include "kernel/builder.h"

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "kernel/static_check.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

const char* const k_relu = R"(#include "ca_kernel.h"
int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  int64_t n = 1;
  for (int d = 0; d < inputs[0].ndim; ++d) n *= inputs[0].shape[d];
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}
)";

// Wraps `body` in a candidate whose ca_forward returns it, after `includes`.
std::map<std::string, std::string> candidate_returning(const std::string& includes, const std::string& body) {
  return {{"kernels/k.cpp", includes +
                                "\n#include \"ca_kernel.h\"\nint ca_forward(ca_context*, const ca_tensor*, int, "
                                "ca_tensor*, int) {\n  return " +
                                body + ";\n}\n"}};
}

class BuildTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string name = testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ranges::replace(name, '/', '_');
    m_cache = testing::TempDir() + "ca_builder_test_" + std::to_string(getpid()) + "_" + name;
    m_options.cache_dir = m_cache;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(m_cache, ignored);
  }
  BuildResult build(const std::map<std::string, std::string>& files) {
    auto result = build_candidate(files, m_options);
    EXPECT_TRUE(result) << result.error();
    return result.value_or(BuildResult{});
  }

  std::string m_cache;
  BuildOptions m_options;
};

}  // namespace

TEST(BuildOptionsTest, ParsesBackendNames) {
  EXPECT_EQ(parse_backend("cpu"), Backend::cpu);
  EXPECT_EQ(parse_backend("cuda"), Backend::cuda);
  EXPECT_EQ(parse_backend("gpu"), std::nullopt);
  EXPECT_EQ(backend_name(Backend::cuda), "cuda");
}

TEST(BuildOptionsTest, FastMathOnlyWhenAsked) {
  BuildOptions options;
  auto has = [](const std::vector<std::string>& flags, const std::string& flag) {
    return std::ranges::find(flags, flag) != flags.end();
  };
  EXPECT_FALSE(has(compile_flags(options), "-ffast-math"));
  options.fast_math = true;
  EXPECT_TRUE(has(compile_flags(options), "-ffast-math"));
  options.backend = Backend::cuda;
  EXPECT_TRUE(has(compile_flags(options), "--use_fast_math"));
  options.fast_math = false;
  EXPECT_FALSE(has(compile_flags(options), "--use_fast_math"));
  EXPECT_TRUE(has(compile_flags(options), "-arch=native"));
}

TEST(BuildOptionsTest, DefaultCacheDirFollowsEnvironment) {
  const char* old = std::getenv("CA_CACHE_DIR");
  std::string saved = old == nullptr ? "" : old;
  setenv("CA_CACHE_DIR", "/somewhere/ca", 1);
  EXPECT_EQ(default_cache_dir(), "/somewhere/ca/builds");
  if (old == nullptr) unsetenv("CA_CACHE_DIR");
  if (old != nullptr) setenv("CA_CACHE_DIR", saved.c_str(), 1);
}

TEST_F(BuildTest, BuildsCpuCandidateThenHitsTheCache) {
  BuildResult first = build({{"kernels/relu.cpp", k_relu}, {"kernels/notes.h", "// not compiled\n"}});
  ASSERT_TRUE(first.ok) << first.stage << ": " << first.message;
  EXPECT_EQ(first.stage, "");
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.key.size(), 64u);
  EXPECT_EQ(first.library, m_cache + "/" + first.key + "/candidate.so");
  auto exported = defined_symbols(first.library);
  ASSERT_TRUE(exported) << exported.error();
  EXPECT_NE(std::ranges::find(*exported, "ca_forward"), exported->end());

  BuildResult second = build({{"kernels/relu.cpp", k_relu}, {"kernels/notes.h", "// not compiled\n"}});
  ASSERT_TRUE(second.ok) << second.message;
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.library, first.library);
  EXPECT_TRUE(fs::exists(second.library));
  EXPECT_TRUE(fs::exists(m_cache + "/" + first.key + "/build.json"));
}

TEST_F(BuildTest, OneChangedByteChangesTheKey) {
  std::string changed = k_relu;
  changed.replace(changed.find("x[i] : 0"), 8, "x[i] : 1");
  BuildResult first = build({{"kernels/relu.cpp", k_relu}});
  BuildResult second = build({{"kernels/relu.cpp", changed}});
  ASSERT_TRUE(first.ok && second.ok) << first.message << second.message;
  EXPECT_NE(first.key, second.key);
  EXPECT_FALSE(second.cached);
}

TEST_F(BuildTest, CompileErrorNamesTheCandidateLine) {
  BuildResult result = build(candidate_returning("", "undeclared_thing"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.stage, "compile");
  EXPECT_NE(result.message.find("kernels/k.cpp:4:"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("undeclared_thing"), std::string::npos) << result.message;
  EXPECT_EQ(result.message.find(m_cache), std::string::npos) << result.message;
  EXPECT_EQ(result.message.find("build-"), std::string::npos) << result.message;
  EXPECT_TRUE(result.library.empty());
}

TEST_F(BuildTest, TorchIncludeFailsBeforeCompiling) {
  BuildResult result = build(candidate_returning("// uses torch\n#include <torch/extension.h>", "0"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.stage, "static");
  EXPECT_NE(result.message.find("kernels/k.cpp:2:"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("torch/extension.h"), std::string::npos) << result.message;
  EXPECT_TRUE(result.key.empty());
}

TEST_F(BuildTest, PathTraversalFails) {
  for (const char* path : {"../x.cpp", "kernels/../../x.cpp", "/tmp/x.cpp"}) {
    BuildResult result = build({{path, k_relu}});
    EXPECT_FALSE(result.ok) << path;
    EXPECT_EQ(result.stage, "static") << path;
    EXPECT_NE(result.message.find(path), std::string::npos) << result.message;
  }
}

TEST_F(BuildTest, LibraryWithoutCaForwardFails) {
  BuildResult result = build({{"kernels/k.cpp", "extern \"C\" int not_the_entry_point() { return 0; }\n"}});
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.stage, "static");
  EXPECT_NE(result.message.find("does not export ca_forward"), std::string::npos) << result.message;
}

struct ForbiddenCall {
  const char* symbol;
  const char* includes;
  const char* body;
};

class ForbiddenCallTest : public BuildTest, public testing::WithParamInterface<ForbiddenCall> {};

TEST_P(ForbiddenCallTest, FailsStaticNamingTheSymbol) {
  const ForbiddenCall& call = GetParam();
  BuildResult result = build(candidate_returning(call.includes, call.body));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.stage, "static");
  EXPECT_NE(result.message.find(std::string("calls ") + call.symbol + ":"), std::string::npos) << result.message;
}

INSTANTIATE_TEST_SUITE_P(
    BuildTest, ForbiddenCallTest,
    testing::Values(ForbiddenCall{"dlopen", "#include <dlfcn.h>", "dlopen(\"libm.so.6\", RTLD_NOW) ? 0 : 1"},
                    ForbiddenCall{"fork", "#include <unistd.h>", "fork() == 0"},
                    ForbiddenCall{"socket", "#include <sys/socket.h>", "socket(AF_INET, SOCK_STREAM, 0)"},
                    ForbiddenCall{"pthread_create", "#include <pthread.h>\nstatic void* idle(void*) { return 0; }",
                                  "[] { pthread_t t; return pthread_create(&t, nullptr, idle, nullptr); }()"}),
    [](const testing::TestParamInfo<ForbiddenCall>& info) { return std::string(info.param.symbol); });

TEST_F(BuildTest, CudaCandidateBuildsWithNvcc) {
  if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) GTEST_SKIP() << "no nvcc in /usr/local/cuda/bin";
  m_options.backend = Backend::cuda;
  m_options.cuda_arch = "sm_90";  // no GPU needed to compile for one
  BuildResult result = build({{"kernels/relu.cu", R"(#include "ca_kernel.h"
__global__ void relu(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
int ca_forward(ca_context* ctx, const ca_tensor* in, int, ca_tensor* out, int) {
  int64_t n = in[0].shape[0];
  relu<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)"}});
  ASSERT_TRUE(result.ok) << result.stage << ": " << result.message;
  auto needed = needed_libraries(result.library);
  ASSERT_TRUE(needed) << needed.error();
  EXPECT_TRUE(std::ranges::any_of(*needed, [](const std::string& l) { return l.starts_with("libcudart.so"); }));
  // --as-needed: cuBLAS is allowed but unused, so not linked.
  EXPECT_FALSE(std::ranges::any_of(*needed, [](const std::string& l) { return l.starts_with("libcublas"); }));
}

// The side-stream relu of examples/candidates/cuda, as nvcc builds it: refused before it runs (EXPLOITS.md, C1).
TEST_F(BuildTest, CudaCandidateMakingAStreamFailsStatic) {
  if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) GTEST_SKIP() << "no nvcc in /usr/local/cuda/bin";
  m_options.backend = Backend::cuda;
  m_options.cuda_arch = "sm_90";
  BuildResult result = build({{"kernels/side.cu", R"(#include "ca_kernel.h"
__global__ void relu(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  int64_t n = in[0].shape[0];
  cudaStream_t side = nullptr;
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  relu<<<(n + 255) / 256, 256, 0, side>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), n);
  cudaStreamDestroy(side);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)"}});
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.stage, "static");
  EXPECT_NE(result.message.find("calls cudaStreamCreateWithFlags:"), std::string::npos) << result.message;
}

}  // namespace ca
