// Tests for the source checks, the symbol and library rules, and the ELF reader.
#include "kernel/static_check.h"

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/subprocess.h"

namespace ca {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::ranges::find(list, item) != list.end();
}

}  // namespace

TEST(StaticCheckTest, ForbidsLoadingProcessesSocketsAndThreads) {
  for (const char* symbol : {"dlopen", "dlsym", "fork", "execve", "system", "popen", "posix_spawnp", "socket",
                             "connect", "ptrace", "kill", "pthread_create", "syscall", "cudaLaunchHostFunc",
                             "cudaDeviceReset", "cuGetProcAddress_v2", "cudaIpcOpenMemHandle"}) {
    EXPECT_NE(forbidden_symbol_reason(symbol), "") << symbol;
  }
  EXPECT_NE(forbidden_symbol_reason("dlopen").find("load"), std::string::npos);
  // std::thread's out-of-line start, as a call to std::thread's constructor imports it.
  EXPECT_NE(
      forbidden_symbol_reason("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"),
      "");
}

TEST(StaticCheckTest, ForbidsStreamsAndContextsOfTheirOwn) {
  for (const char* symbol :
       {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cuStreamCreate",
        "cuStreamCreateWithPriority", "cuCtxCreate_v4", "cuGreenCtxCreate", "cuGreenCtxStreamCreate"}) {
    EXPECT_NE(forbidden_symbol_reason(symbol).find("ctx->stream"), std::string::npos) << symbol;
  }
  // Built with --default-stream per-thread: every call that takes a stream comes under another name.
  for (const char* symbol :
       {"cudaLaunchKernel_ptsz", "cudaMemcpyAsync_ptsz", "cudaMemcpy_ptds", "cuLaunchKernel_ptsz"}) {
    EXPECT_NE(forbidden_symbol_reason(symbol).find("per-thread default stream"), std::string::npos) << symbol;
  }
  // Using ctx->stream, and waiting on or syncing streams, stays allowed.
  for (const char* symbol : {"cudaStreamWaitEvent", "cudaStreamSynchronize", "cudaEventRecord", "cudaStreamGetFlags"}) {
    EXPECT_EQ(forbidden_symbol_reason(symbol), "") << symbol;
  }
}

TEST(StaticCheckTest, ForbidsPyTorchAndPythonSymbols) {
  for (const char* symbol : {"_ZN2at4_ops3add4callERKNS_6TensorES4_RKN3c106ScalarE", "_ZNK2at10TensorBase5sizesEv",
                             "_ZN3c1010TensorImplD2Ev", "_ZTVN5torch8autograd8FunctionE", "_ZN8pybind116detail5get_iEv",
                             "PyObject_Call", "_Py_Dealloc"}) {
    EXPECT_NE(forbidden_symbol_reason(symbol), "") << symbol;
  }
}

TEST(StaticCheckTest, AllowsRuntimeOpenMpAndCudaSymbols) {
  for (const char* symbol :
       {"malloc", "memcpy", "expf", "GOMP_parallel", "omp_get_thread_num", "__cxa_finalize",
        "_ZNSt6vectorIfSaIfEE17_M_realloc_insertIJRKfEEEvN9__gnu_cxx17__normal_iteratorIPfS1_EEDpOT_", "_ZdlPvm",
        "cudaLaunchKernel", "cuLaunchKernel", "cublasSgemm_v2", "cudnnConvolutionForward", "__cudaRegisterFatBinary",
        "Pyramid", "raise", "abort"}) {
    EXPECT_EQ(forbidden_symbol_reason(symbol), "") << symbol;
  }
}

TEST(StaticCheckTest, LibraryAllowListFollowsBackendAndOptions) {
  BuildOptions cpu;
  for (const char* library : {"libc.so.6", "libm.so.6", "libmvec.so.1", "libstdc++.so.6", "libgcc_s.so.1",
                              "libgomp.so.1", "ld-linux-x86-64.so.2", "libpthread.so.0"}) {
    EXPECT_EQ(forbidden_library_reason(library, cpu), "") << library;
  }
  for (const char* library :
       {"libdl.so.2", "libtorch_cpu.so", "libc10.so", "libpython3.11.so.1.0", "libcudart.so.13", "libfoo.so"}) {
    EXPECT_NE(forbidden_library_reason(library, cpu), "") << library;
  }
  BuildOptions cuda;
  cuda.backend = Backend::cuda;
  for (const char* library :
       {"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9", "libcudnn_ops.so.9"}) {
    EXPECT_EQ(forbidden_library_reason(library, cuda), "") << library;
  }
  cuda.allow_cublas = false;
  cuda.allow_cudnn = false;
  EXPECT_NE(forbidden_library_reason("libcublas.so.13", cuda).find("cuBLAS"), std::string::npos);
  EXPECT_NE(forbidden_library_reason("libcudnn_cnn.so.9", cuda).find("cuDNN"), std::string::npos);
  EXPECT_EQ(forbidden_library_reason("libcudart.so.13", cuda), "");
}

TEST(StaticCheckTest, SourcesMayNotIncludePyTorchOrOutsideFiles) {
  EXPECT_EQ(check_sources({{"kernels/a.cu", "#include <cuda_runtime.h>\n#include \"ca_kernel.h\"\n"},
                           {"kernels/sub/b.cu", "#include \"../common.cuh\"\n"},
                           {"README.md", "#include <torch/extension.h>\n"}}),
            "");
  EXPECT_EQ(
      check_sources({{"kernels/a.cu", "int x;\n  #  include \"ATen/ATen.h\"\n"}}),
      "kernels/a.cu:2: includes \"ATen/ATen.h\": candidates may not use PyTorch headers; build against ca_kernel.h");
  EXPECT_NE(check_sources({{"kernels/a.cpp", "#include <c10/cuda/CUDAStream.h>\n"}}).find("kernels/a.cpp:1:"),
            std::string::npos);
  EXPECT_NE(check_sources({{"kernels/a.cpp", "#include <Python.h>\n"}}), "");
  EXPECT_NE(check_sources({{"kernels/a.cpp", "#include \"/etc/passwd\"\n"}}).find("outside"), std::string::npos);
  EXPECT_NE(check_sources({{"kernels/a.cpp", "#include \"../../reference.h\"\n"}}).find("outside"), std::string::npos);
  EXPECT_NE(check_sources({{"kernels/a.cpp", "#include <kernels/../../x.h>\n"}}).find("outside"), std::string::npos);
}

TEST(StaticCheckTest, FilePathsMustStayInsideTheCandidate) {
  EXPECT_EQ(check_sources({{"kernels/x.cu", ""}, {"kernels/sub/y.cuh", ""}}), "");
  EXPECT_NE(check_sources({{"/abs/x.cu", ""}}), "");
  EXPECT_NE(check_sources({{"kernels/../../x.cu", ""}}), "");
  EXPECT_NE(check_sources({{"..", ""}}), "");
  EXPECT_NE(check_sources({{"", ""}}), "");
  // Names the filesystem refuses get a static verdict, not a lost record (issue 24 item 7).
  EXPECT_EQ(check_sources({{"kernels/" + std::string(251, 'a') + ".cpp", ""}}), "");
  EXPECT_NE(check_sources({{"kernels/" + std::string(300, 'a') + ".cpp", ""}}).find("name of 304 bytes"),
            std::string::npos);
  EXPECT_NE(check_sources({{std::string(600, 'a') + "/" + std::string(600, 'b') + ".cpp", ""}}).find("longer than"),
            std::string::npos);
}

TEST(StaticCheckTest, HonestUsesOfTheStandardLibraryPass) {
  // A correct kernel may ask how many cores there are, use the standard containers and algorithms, and time itself
  // with std::chrono; none of that starts a thread (issue 23's false rejection).
  std::string dir = testing::TempDir() + "ca_static_honest_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/k.cpp")
      << "#include <algorithm>\n#include <chrono>\n#include <thread>\n#include <vector>\n"
         "extern \"C\" int ca_forward(int n) {\n"
         "  std::vector<int> v(n + std::thread::hardware_concurrency());\n"
         "  std::sort(v.begin(), v.end());\n"
         "  return int(std::chrono::steady_clock::now().time_since_epoch().count() & 1) + v.size() % 2\n"
         "    + int(std::this_thread::get_id() == std::thread::id());\n}\n";
  auto built = run_subprocess({"g++", "-O1", "-shared", "-fPIC", dir + "/k.cpp", "-o", dir + "/k.so"});
  ASSERT_TRUE(built && built->ok()) << (built ? built->err : built.error());
  auto undefined = undefined_symbols(dir + "/k.so");
  ASSERT_TRUE(undefined) << undefined.error();
  EXPECT_TRUE(contains(*undefined, "_ZNSt6thread20hardware_concurrencyEv")) << "the test must import what it checks";
  EXPECT_EQ(check_library(dir + "/k.so", BuildOptions{}), "");
  std::filesystem::remove_all(dir);
  // Starting one is still refused.
  EXPECT_NE(
      forbidden_symbol_reason("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"),
      "");
}

TEST(StaticCheckTest, ReadsElfAndReportsEveryFinding) {
  // A library with a C++-linkage ca_forward that calls dlopen and links libdl
  // (named in full: since glibc 2.34 libdl.a is empty, dlopen lives in libc).
  std::string dir = testing::TempDir() + "ca_static_check_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/k.cpp") << "#include <dlfcn.h>\nint ca_forward(int n) { return dlopen(\"x\", n) != 0; }\n";
  auto built = run_subprocess(
      {"g++", "-shared", "-fPIC", dir + "/k.cpp", "-o", dir + "/k.so", "-Wl,--no-as-needed", "-l:libdl.so.2"});
  ASSERT_TRUE(built && built->ok()) << (built ? built->err : built.error());

  auto needed = needed_libraries(dir + "/k.so");
  ASSERT_TRUE(needed) << needed.error();
  EXPECT_TRUE(contains(*needed, "libdl.so.2"));
  EXPECT_TRUE(contains(*needed, "libc.so.6"));
  auto undefined = undefined_symbols(dir + "/k.so");
  ASSERT_TRUE(undefined) << undefined.error();
  EXPECT_TRUE(contains(*undefined, "dlopen"));
  auto defined = defined_symbols(dir + "/k.so");
  ASSERT_TRUE(defined) << defined.error();
  EXPECT_TRUE(contains(*defined, "_Z10ca_forwardi"));
  EXPECT_FALSE(contains(*defined, "dlopen"));

  std::string findings = check_library(dir + "/k.so", BuildOptions{});
  EXPECT_NE(findings.find("ca_forward has C++ linkage (ca_forward(int))"), std::string::npos) << findings;
  EXPECT_NE(findings.find("links libdl.so.2: "), std::string::npos) << findings;
  EXPECT_NE(findings.find("calls dlopen: candidates may not load"), std::string::npos) << findings;
  std::filesystem::remove_all(dir);
}

TEST(StaticCheckTest, NonElfFilesAreErrors) {
  std::string path = testing::TempDir() + "ca_static_check_not_elf_" + std::to_string(getpid());
  std::ofstream(path) << "just text, long enough to hold an ELF header if it were one........................\n";
  auto symbols = undefined_symbols(path);
  ASSERT_FALSE(symbols);
  EXPECT_NE(symbols.error().find("not an ELF file"), std::string::npos);
  EXPECT_FALSE(needed_libraries(path + ".missing"));
  EXPECT_NE(check_library(path, BuildOptions{}), "");
  std::filesystem::remove(path);
}

}  // namespace ca
