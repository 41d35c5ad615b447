// End-to-end tests of ca-runner: tiny candidates compiled with g++, run as a subprocess on a request file.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ir/tensor_init.h"
#include "runner/device.h"
#include "runner/runner_fixture.h"
#include "runner/seccomp.h"
#include "util/atomic_file.h"

namespace ca {
namespace {

// Candidate sources. Each reads the ABI header only, as real candidates do.
const char* const k_relu = R"(#include "ca_kernel.h"
extern "C" int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
  return 0;
})";

// Fails (returns 7) if any buffer address repeats across calls, so a pointer-keyed cache could never hit.
const char* const k_pointer_recorder = R"(#include "ca_kernel.h"
static void* seen[64];
static int n_seen = 0;
static int remember(void* p) {
  for (int i = 0; i < n_seen; ++i) if (seen[i] == p) return 1;
  seen[n_seen++] = p;
  return 0;
}
extern "C" int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  if (remember(in[0].data) || remember(out[0].data)) return 7;
  ((float*)out[0].data)[0] = 1.0f;
  return 0;
})";

const char* const k_writes_second_input = R"(#include "ca_kernel.h"
extern "C" int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  ((float*)in[1].data)[3] = 42.0f;
  ((float*)out[0].data)[0] = 0.0f;
  return 0;
})";

const char* const k_returns_3 = R"(#include "ca_kernel.h"
extern "C" int ca_forward(ca_context*, const ca_tensor*, int, ca_tensor*, int) { return 3; })";

// Asks for more workspace than any machine has, and returns 3 when it gets NULL.
const char* const k_starved = R"(#include "ca_kernel.h"
extern "C" int ca_forward(ca_context* ctx, const ca_tensor*, int, ca_tensor*, int) {
  return ctx->workspace(ctx, (size_t)1 << 60) == 0 ? 3 : 0;
})";

const char* const k_writes_nothing = R"(#include "ca_kernel.h"
extern "C" int ca_forward(ca_context*, const ca_tensor*, int, ca_tensor*, int) { return 0; })";

// Crashes on its second call; the null pointer comes from ctx->stream (NULL on cpu) so the compiler cannot see it.
const char* const k_crashes_second_call = R"(#include "ca_kernel.h"
static int calls = 0;
extern "C" int ca_forward(ca_context* ctx, const ca_tensor*, int, ca_tensor* out, int) {
  if (++calls == 2) *(volatile int*)ctx->stream = 1;
  ((float*)out[0].data)[0] = 0.0f;
  return 0;
})";

const char* const k_no_entry_point = R"(extern "C" int not_ca_forward() { return 0; })";

// Checks the context and the workspace; each failed check has its own return code.
const char* const k_uses_workspace = R"(#include "ca_kernel.h"
#include <stdint.h>
extern "C" int ca_forward(ca_context* ctx, const ca_tensor*, int, ca_tensor* out, int) {
  if (ctx->abi_version != CA_ABI_VERSION || ctx->device != CA_DEVICE_CPU || ctx->stream) return 10;
  if (ctx->num_threads != 3) return 11;
  unsigned char* scratch = (unsigned char*)ctx->workspace(ctx, 1000);
  if (!scratch) return 12;
  if ((uintptr_t)scratch % 64 != 0) return 13;
  for (int i = 0; i < 1000; ++i) if (scratch[i] != 0xFF) return 14;
  if (out[0].ndim != 2 || out[0].shape[0] != 2 || out[0].shape[1] != 3 || out[0].strides[0] != 3 || out[0].strides[1] != 1) return 15;
  if (out[0].dtype != CA_FLOAT32) return 16;
  for (int i = 0; i < 6; ++i) ((float*)out[0].data)[i] = (float)i;
  return 0;
})";

class RunnerTest : public RunnerFixture {
 protected:
  // Builds a candidate the way the real builder does for cpu (g++ -O2 -shared -fPIC) and returns its path.
  std::string compile(const std::string& name, const char* source) {
    fs::path cpp = m_dir / (name + ".cpp"), so = m_dir / (name + ".so");
    EXPECT_TRUE(write_file_atomic(cpp.string(), source));
    std::string command =
        "g++ -O2 -shared -fPIC -I" CA_SOURCE_DIR "/kernels/include -o '" + so.string() + "' '" + cpp.string() + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return so.string();
  }
  // Writes `r` to m_dir/NAME.json and returns the path.
  std::string save(const std::string& name, const RunRequest& r) {
    std::string path = (m_dir / (name + ".json")).string();
    EXPECT_TRUE(write_file_atomic(path, to_json(r).dump()));
    return path;
  }
  std::string served_stderr() { return read_file((m_dir / "stderr.txt").string()).value_or(""); }
};

TEST_F(RunnerTest, ReluOutputsEqualReluOfTheSharedInputsForEachSeed) {
  TensorSpec x = {"x", DType::float32, {1000}, {Dist::rand, 0, 1}};
  TensorSpec x_signed = {"x", DType::float32, {1000}, {Dist::uniform, -1, 1}};
  auto r = request(compile("relu", k_relu), {x}, {{DType::float32, {1000}}}, {5, 6});
  r.calls[1].tensors = std::vector<TensorSpec>{x_signed};  // a signed trial, where relu is not the identity
  Exit exit = run(r);
  ASSERT_FALSE(exit.signaled);
  ASSERT_EQ(exit.code, 0) << m_stderr;
  RunLog log = results();
  EXPECT_TRUE(log.loaded);
  ASSERT_EQ(log.calls.size(), 2u);
  std::vector<float> previous;
  for (size_t call = 0; call < 2; ++call) {
    EXPECT_TRUE(log.calls[call].ok());
    EXPECT_EQ(log.calls[call].seed, r.calls[call].seed);
    EXPECT_GE(log.calls[call].wall_us, 0.0);
    std::vector<float> input = as_floats(make_tensor_bytes(call == 0 ? x : x_signed, r.calls[call].seed, 0).value());
    std::vector<float> output = as_floats(outputs_of(call));
    ASSERT_EQ(output.size(), input.size());
    for (size_t i = 0; i < input.size(); ++i)
      ASSERT_EQ(output[i], std::max(input[i], 0.0f)) << "call " << call << " element " << i;
    EXPECT_NE(output, previous) << "seeds must give different inputs";
    previous = output;
  }
  EXPECT_GT(std::count(previous.begin(), previous.end(), 0.0f), 100) << "the signed trial must clip negatives";
}

TEST_F(RunnerTest, BufferAddressesAreFreshEveryCall) {
  // 4 MB buffers come from mmap, which readily hands a just-unmapped range back.
  auto r = request(compile("recorder", k_pointer_recorder), {float_tensor("x", {1 << 20})},
                   {{DType::float32, {1 << 20}}}, {1, 2, 3, 4});
  ASSERT_EQ(run(r).code, 0) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 4u);
  for (const auto& call : log.calls) EXPECT_EQ(call.rc, 0) << "call " << call.call << " saw a pointer again";
}

TEST_F(RunnerTest, WritingAnInputFailsTheCall) {
  auto r = request(compile("writer", k_writes_second_input), {float_tensor("a", {8}), float_tensor("b", {8})},
                   {{DType::float32, {8}}}, {1});
  EXPECT_EQ(run(r).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].rc, 0);
  EXPECT_TRUE(log.calls[0].inputs_changed);
  EXPECT_EQ(log.calls[0].changed_inputs, std::vector<uint64_t>{1});
  EXPECT_FALSE(log.calls[0].ok());
}

TEST_F(RunnerTest, NonZeroReturnIsReported) {
  auto r = request(compile("returns3", k_returns_3), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1, 2});
  EXPECT_EQ(run(r).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 2u);
  for (const auto& call : log.calls) {
    EXPECT_EQ(call.rc, 3);
    EXPECT_FALSE(call.inputs_changed);
    EXPECT_FALSE(call.ok());
  }
}

// The harness says so when the workspace it was asked for could not be had: the call's failure may then be the
// memory other jobs hold (verify judges it again alone).
TEST_F(RunnerTest, AWorkspaceRequestThatFailsIsReported) {
  auto r = request(compile("starved", k_starved), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1});
  EXPECT_EQ(run(r).code, 1) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].rc, 3);
  EXPECT_EQ(log.calls[0].workspace_error, "ctx->workspace(1152921504606846976 bytes) returned NULL: out of memory");
}

TEST_F(RunnerTest, UnwrittenOutputsStillHoldPoison) {
  auto r = request(compile("lazy", k_writes_nothing), {float_tensor("x", {4})},
                   {{DType::float32, {10}}, {DType::int32, {5}}}, {1});
  ASSERT_EQ(run(r).code, 0) << m_stderr;
  EXPECT_EQ(results().calls.at(0).output_bytes, 10 * 4 + 5 * 4);
  std::vector<uint8_t> bytes = outputs_of(0);
  ASSERT_EQ(bytes.size(), 10u * 4 + 5u * 4);
  std::span<const uint8_t> floats(bytes.data(), 40), ints(bytes.data() + 40, 20);
  EXPECT_EQ(count_poison(DType::float32, floats), 10u);
  EXPECT_EQ(count_poison(DType::int32, ints), 5u);
  for (float value : as_floats({bytes.begin(), bytes.begin() + 40})) EXPECT_TRUE(std::isnan(value));
}

TEST_F(RunnerTest, CrashKillsOnlyTheRunnerAndKeepsEarlierResults) {
  auto r =
      request(compile("crash", k_crashes_second_call), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1, 2, 3});
  Exit exit = run(r);
  ASSERT_TRUE(exit.signaled) << "exit code " << exit.code << ": " << m_stderr;
  EXPECT_EQ(exit.code, SIGSEGV);
  RunLog log = results();
  EXPECT_TRUE(log.loaded);
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].call, 0u);
  EXPECT_EQ(log.calls[0].output_bytes, 16) << "the finished call's outputs are in the region";
  std::vector<uint8_t> bytes = outputs_of(0);
  EXPECT_EQ(as_floats(bytes)[0], 0.0f);
  EXPECT_EQ(count_poison(DType::float32, bytes), 3u) << "and are its own, poison included";
}

TEST_F(RunnerTest, LibraryWithoutCaForwardFailsToLoad) {
  auto r = request(compile("noentry", k_no_entry_point), {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1});
  EXPECT_EQ(run(r).code, 65) << m_stderr;
  RunLog log = results();
  EXPECT_FALSE(log.loaded);
  EXPECT_NE(log.load_error.find("no symbol ca_forward"), std::string::npos) << log.load_error;
  EXPECT_TRUE(log.calls.empty());

  fs::remove_all(m_dir / "out");
  r.library = (m_dir / "missing.so").string();
  EXPECT_EQ(run(r).code, 65) << m_stderr;
  EXPECT_NE(results().load_error.find("missing.so"), std::string::npos);
}

// Makes a file (an input of four elements) or takes memory outside the address space (eight; the storage filter's
// two classes); returns 0 only when the grab worked.
const char* const k_grabs_storage = R"(#include "ca_kernel.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
extern "C" int ca_forward(ca_context*, const ca_tensor* in, int, ca_tensor* out, int) {
  int fd = in[0].shape[0] == 4 ? open("MADE", O_WRONLY | O_CREAT, 0644) : memfd_create("held", 0);
  ((float*)out[0].data)[0] = 0.0f;
  return fd >= 0 && write(fd, "x", 1) == 1 ? 0 : 1;
})";

TEST_F(RunnerTest, CpuCandidatesMakeNoFileAndNoMemoryOutsideTheAddressSpace) {
  const fs::path made = m_dir / "made-by-candidate";
  std::string source = k_grabs_storage;
  source.replace(source.find("MADE"), 4, made.string());
  std::string library = compile("grabs", source.c_str());
  // Four elements: a file; eight: a memfd.
  for (auto [elements, share] : {std::pair{int64_t{4}, "disk share"}, std::pair{int64_t{8}, "memory share"}}) {
    auto r = request(library, {float_tensor("x", {elements})}, {{DType::float32, {elements}}}, {1});
    Exit exit = run(r);
    EXPECT_FALSE(exit.signaled);
    EXPECT_EQ(exit.code, to_int(k_exit_forbidden)) << m_stderr;
    EXPECT_NE(m_stderr.find(share), std::string::npos) << m_stderr;
  }
  EXPECT_FALSE(fs::exists(made));
}

TEST_F(RunnerTest, ContextAndWorkspaceFollowTheAbi) {
  auto r = request(compile("workspace", k_uses_workspace), {float_tensor("x", {4})}, {{DType::float32, {2, 3}}}, {1});
  r.num_threads = 3;
  ASSERT_EQ(run(r).code, 0) << m_stderr;
  RunLog log = results();
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0].rc, 0) << "see the return codes in k_uses_workspace";
  EXPECT_EQ(as_floats(outputs_of(0)), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST_F(RunnerTest, RequestProblemsAreReportedWithTheirExitCodes) {
  auto r = request("unused.so", {float_tensor("x", {4})}, {{DType::float32, {4}}}, {1});
  r.backend = Backend::cuda;
  Exit cuda = run(r);
#ifndef CA_WITH_CUDA
  EXPECT_EQ(cuda.code, 64);
  EXPECT_NE(m_stderr.find("built without the CUDA toolkit"), std::string::npos) << m_stderr;
#else
  // With a GPU the device comes up and the missing library fails to load instead.
  EXPECT_EQ(cuda.code, cuda_device_count() == 0 ? 69 : 65) << m_stderr;
  if (cuda_device_count() == 0) {
    EXPECT_NE(m_stderr.find("no usable CUDA device"), std::string::npos) << m_stderr;
  }
#endif

  EXPECT_EQ(run_on((m_dir / "absent.json").string()).code, 66);
  EXPECT_NE(m_stderr.find("ca-runner: error:"), std::string::npos) << m_stderr;

  std::string bad = (m_dir / "bad.json").string();
  ASSERT_TRUE(write_file_atomic(
      bad,
      R"({"library":"a.so","backend":"cpu","tensors":[],"outputs":[],"calls":[],"output_region":{"path":"r","bytes":0},"output_dir":"o"})"));
  EXPECT_EQ(run_on(bad).code, 64);
  EXPECT_NE(m_stderr.find("request.outputs: expected at least one output"), std::string::npos) << m_stderr;
}

// ca-runner --serve as a subprocess: request paths go in on a pipe, its answers come back on another.
class ServedRunner {
 public:
  explicit ServedRunner(const std::string& stderr_path) {
    int in[2], out[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      FILE* err = std::freopen(stderr_path.c_str(), "w", stderr);
      (void)err;
      ::close(in[0]);
      ::close(in[1]);
      ::close(out[0]);
      ::close(out[1]);
      execl(CA_BIN_DIR "/ca-runner", "ca-runner", "--serve", static_cast<char*>(nullptr));
      _exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    m_in = in[1];
    m_out = ::fdopen(out[0], "r");
  }
  ~ServedRunner() {
    if (m_in >= 0) ::close(m_in);
    if (m_out != nullptr) std::fclose(m_out);
    if (m_pid > 0 && !m_reaped) ::waitpid(m_pid, nullptr, 0);
  }
  // Sends one request path and returns the runner's answer ("" when it closed its stdout instead).
  std::string ask(const std::string& request_path) {
    std::string line = request_path + "\n";
    EXPECT_EQ(::write(m_in, line.data(), line.size()), ssize_t(line.size()));
    return next_line();
  }
  std::string next_line() {
    char buffer[4096];
    if (std::fgets(buffer, sizeof buffer, m_out) == nullptr) return "";
    return buffer;
  }
  // Sends `line` ("call <i> <seed>" or "ping <i>") as the trusted side does and lets the runner through its holds
  // ("at i" and "end i": it stops itself at each, and this continues it once it is stopped); returns the report line.
  std::string held(const std::string& line, size_t i) {
    std::string at = ask(line);
    for (std::string mark : {"at", "end"}) {
      std::string line = mark == "at" ? at : next_line();
      if (line != mark + " " + std::to_string(i) + "\n") return line;
      int status = 0;
      if (::waitpid(m_pid, &status, WUNTRACED) != m_pid || !WIFSTOPPED(status)) return "";
      ::kill(m_pid, SIGCONT);
    }
    return next_line();
  }
  // Runs request `r`, saved at `path`, as the trusted side does: the path, "ready", then "call <i> <seed>" for each
  // call and its report. "done\n" once every call was reported, "" when the runner stopped answering.
  std::string serve(const std::string& path, const RunRequest& r, std::vector<CallReport>* reports = nullptr) {
    // As the trusted side does: once the candidate is loaded the runner may make no file (forbid_new_storage).
    std::error_code ec;
    fs::create_directories(r.output_dir, ec);
    EXPECT_TRUE(write_file_atomic(r.output_dir + "/" + std::string(k_results_file), ""));
    if (ask(path) != "ready\n") return "";
    for (size_t i = 0; i < r.calls.size(); ++i) {
      auto report = parse_call_report(ask("call " + std::to_string(i) + " " + std::to_string(r.calls[i].seed)));
      if (!report || report->call != i) return "";
      if (reports != nullptr) reports->push_back(*report);
    }
    return "done\n";
  }
  // Closes the runner's stdin and waits for it.
  Exit finish() {
    ::close(m_in);
    m_in = -1;
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_reaped = true;
    if (WIFSIGNALED(status)) return {true, WTERMSIG(status)};
    return {false, WEXITSTATUS(status)};
  }

 private:
  pid_t m_pid = -1;
  int m_in = -1;
  FILE* m_out = nullptr;
  bool m_reaped = false;
};

TEST_F(RunnerTest, ServeRunsEachRequestInOneProcessAtFreshAddresses) {
  // The recorder's memory of pointers lives in the library, which one process loads once: a buffer of the second
  // request at an address of the first would return 7.
  std::string library = compile("recorder", k_pointer_recorder);
  ServedRunner runner((m_dir / "stderr.txt").string());
  for (int round = 0; round < 2; ++round) {
    auto r = request(library, {float_tensor("x", {1 << 20})}, {{DType::float32, {1 << 20}}}, {1, 2, 3});
    r.output_dir = (m_dir / ("round-" + std::to_string(round))).string();
    std::vector<CallReport> calls;
    ASSERT_EQ(runner.serve(save("request-" + std::to_string(round), r), r, &calls), "done\n") << served_stderr();
    auto text = read_file(r.output_dir + "/" + std::string(k_results_file));
    ASSERT_TRUE(text) << text.error();
    RunLog log = parse_results(*text).value();
    EXPECT_TRUE(log.loaded);
    // The start-up happened once, and every request's results say what it cost.
    EXPECT_GE(log.facts.value("device_s", -1.0), 0.0) << log.facts.dump();
    EXPECT_GE(log.facts.value("load_s", -1.0), 0.0) << log.facts.dump();
    EXPECT_TRUE(log.calls.empty()) << "served reports go over the pipe only";
    ASSERT_EQ(calls.size(), 3u) << "round " << round;
    for (const auto& call : calls)
      EXPECT_EQ(call.rc, 0) << "round " << round << " call " << call.call << " saw a pointer again";
    EXPECT_EQ(calls[2].output_bytes, 4 << 20);
    EXPECT_EQ(as_floats(outputs_of(2))[0], 1.0f) << "round " << round;
  }
  Exit exit = runner.finish();
  EXPECT_FALSE(exit.signaled);
  EXPECT_EQ(exit.code, 0) << served_stderr();
}

TEST_F(RunnerTest, ServeWritesEachRequestIntoTheRegionItNames) {
  TensorSpec x = {"x", DType::float32, {1000}, {Dist::uniform, -1, 1}};
  std::string library = compile("relu", k_relu);
  ServedRunner runner((m_dir / "stderr.txt").string());
  auto expect_relu = [&](const RunRequest& r, const std::string& what) {
    for (size_t call = 0; call < r.calls.size(); ++call) {
      std::vector<float> input = as_floats(make_tensor_bytes(x, r.calls[call].seed, 0).value());
      std::vector<float> output = as_floats(outputs_of(call));
      ASSERT_EQ(output.size(), input.size());
      for (size_t i = 0; i < input.size(); ++i)
        ASSERT_EQ(output[i], std::max(input[i], 0.0f)) << what << " call " << call << " element " << i;
    }
  };
  auto r = request(library, {x}, {{DType::float32, {1000}}}, {1, 2});
  ASSERT_EQ(runner.serve(save("first", r), r), "done\n") << served_stderr();
  expect_relu(r, "first");
  // The same region again (as ca-profile's rounds reuse it), with other seeds: the runner keeps its mapping.
  r.calls[0].seed = 3;
  r.calls[1].seed = 4;
  r.output_dir = (m_dir / "second").string();
  ASSERT_EQ(runner.serve(save("second", r), r), "done\n") << served_stderr();
  expect_relu(r, "second");
  // Another region, bigger: mapped anew.
  auto third = request(library, {x}, {{DType::float32, {1000}}}, {5, 6, 7});
  third.output_dir = (m_dir / "third").string();
  ASSERT_EQ(runner.serve(save("third", third), third), "done\n") << served_stderr();
  expect_relu(third, "third");
  EXPECT_EQ(runner.finish().code, 0) << served_stderr();
}

TEST_F(RunnerTest, ARegionShorterThanTheRequestSaysIsRefused) {
  auto r = request(compile("relu", k_relu), {float_tensor("x", {8})}, {{DType::float32, {8}}}, {1});
  ASSERT_EQ(::truncate(r.output_region.path.c_str(), 16), 0);
  EXPECT_EQ(run(r).code, 74);
  EXPECT_NE(m_stderr.find("the output region holds 16 bytes, the request says 4096"), std::string::npos) << m_stderr;
}

TEST_F(RunnerTest, ServeStopsAtARequestForAnotherLibrary) {
  ServedRunner runner((m_dir / "stderr.txt").string());
  auto r = request(compile("relu", k_relu), {float_tensor("x", {8})}, {{DType::float32, {8}}}, {1});
  ASSERT_EQ(runner.serve(save("first", r), r), "done\n");
  r.library = compile("other", k_returns_3);
  r.output_dir = (m_dir / "second").string();
  EXPECT_EQ(runner.serve(save("second", r), r), "");  // no answer: it exits
  Exit exit = runner.finish();
  EXPECT_EQ(exit.code, 64);
  std::string err = served_stderr();
  EXPECT_NE(err.find("another library"), std::string::npos) << err;
  EXPECT_NE(err.find("second.json"), std::string::npos) << err;
}

TEST_F(RunnerTest, ServeExitsWithTheCodeOfAFailureThatEndsIt) {
  ServedRunner runner((m_dir / "stderr.txt").string());
  auto r = request(compile("crasher", k_crashes_second_call), {float_tensor("x", {8})}, {{DType::float32, {8}}}, {1});
  ASSERT_EQ(runner.serve(save("first", r), r), "done\n");
  r.output_dir = (m_dir / "second").string();
  EXPECT_EQ(runner.serve(save("second", r), r), "");  // the library's second call crashes the process
  Exit exit = runner.finish();
  EXPECT_TRUE(exit.signaled);
  EXPECT_EQ(exit.code, SIGSEGV);
  EXPECT_EQ(run_on((m_dir / "absent.json").string()).code, 66);  // and a one-shot runner still works as before
}

TEST_F(RunnerTest, ServedCpuCallsTakeTheTrustedSidesInputsAndNoSeedFromTheRequest) {
  TensorSpec x = {"x", DType::float32, {1000}, {Dist::uniform, -1, 1}};
  ServedRunner runner((m_dir / "stderr.txt").string());
  auto r = request(compile("relu", k_relu), {x}, {{DType::float32, {1000}}}, {0, 0});
  // The request names no seed; the inputs are in the trusted side's slot, and only there.
  auto slot = OutputRegion::create(m_dir.string(), 4096);
  ASSERT_TRUE(slot) << slot.error();
  r.input_region = OutputRegionSpec{slot->path(), slot->size()};
  r.input_offsets = {0};
  Json json = to_json(r);
  for (auto& call : json["calls"]) call.erase("seed");
  std::string path = (m_dir / "served.json").string();
  ASSERT_TRUE(write_file_atomic(path, json.dump()));
  ASSERT_EQ(runner.ask(path), "ready\n") << served_stderr();
  for (size_t call = 0; call < 2; ++call) {
    auto* input = reinterpret_cast<float*>(slot->data());
    for (int i = 0; i < 1000; ++i) input[i] = float(i % 7) - 3.0f - float(call);
    auto report = parse_call_report(runner.held("call " + std::to_string(call) + " 99", call));
    ASSERT_TRUE(report) << report.error() << served_stderr();
    EXPECT_EQ(report->output_bytes, 4000);
    std::vector<float> output = as_floats(outputs_of(call));
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(output[i], std::max(input[i], 0.0f)) << "call " << call << " element " << i;
  }
  // A call out of turn ends the runner.
  std::string answer = runner.ask(path);
  EXPECT_EQ(answer, "ready\n");
  EXPECT_EQ(runner.ask("call 1 5"), "");
  EXPECT_EQ(runner.finish().code, 64);
  EXPECT_NE(served_stderr().find("expected \"call 0 <seed>\""), std::string::npos) << served_stderr();
}

TEST_F(RunnerTest, PingsAreAnsweredAsEmptyCalls) {
  ServedRunner runner((m_dir / "stderr.txt").string());
  auto report = parse_call_report(runner.held("ping 3", 3));
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->call, 3u);
  EXPECT_EQ(runner.finish().code, 0);
}

}  // namespace
}  // namespace ca
