// The test fixture that runs ca-runner as a subprocess on a request file and reads back what it wrote; shared by
// the cpu (runner_test.cpp) and cuda (device_cuda_test.cpp) runner tests.
#pragma once

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runner/protocol.h"
#include "util/atomic_file.h"

namespace ca {

namespace fs = std::filesystem;

struct Exit {
  bool signaled = false;
  int code = 0;  // the exit code, or the signal number
};

class RunnerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    m_dir = fs::path(::testing::TempDir()) / ("ca-runner-test-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(m_dir);
  }

  RunRequest request(const std::string& library, std::vector<TensorSpec> tensors, std::vector<OutputSpec> outputs,
                     const std::vector<uint64_t>& seeds) {
    RunRequest r;
    r.library = library;
    r.tensors = std::move(tensors);
    r.outputs = std::move(outputs);
    for (size_t i = 0; i < seeds.size(); ++i)
      r.calls.push_back({seeds[i], "out-" + std::to_string(i) + ".bin", std::nullopt});
    r.output_dir = (m_dir / "out").string();
    return r;
  }

  // Runs ca-runner on `r` with core dumps off, so the crash test stays fast and leaves nothing behind.
  Exit run(const RunRequest& r) {
    std::string path = (m_dir / "request.json").string();
    EXPECT_TRUE(write_file_atomic(path, to_json(r).dump()));
    return run_on(path);
  }
  Exit run_on(const std::string& request_path) {
    std::string stderr_path = (m_dir / "stderr.txt").string();
    pid_t pid = fork();
    if (pid == 0) {
      rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      FILE* err = std::freopen(stderr_path.c_str(), "w", stderr);
      (void)err;
      execl(CA_BIN_DIR "/ca-runner", "ca-runner", request_path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    m_stderr = read_file(stderr_path).value_or("");
    if (WIFSIGNALED(status)) return {true, WTERMSIG(status)};
    return {false, WEXITSTATUS(status)};
  }

  RunLog results() {
    auto text = read_file((m_dir / "out" / k_results_file).string());
    EXPECT_TRUE(text) << text.error();
    auto log = parse_results(text.value_or(""));
    EXPECT_TRUE(log) << log.error();
    return log.value_or(RunLog{});
  }

  std::vector<uint8_t> output_file(size_t call) {
    auto text = read_file((m_dir / "out" / ("out-" + std::to_string(call) + ".bin")).string());
    EXPECT_TRUE(text) << text.error();
    std::string bytes = text.value_or("");
    return {bytes.begin(), bytes.end()};
  }

  fs::path m_dir;
  std::string m_stderr;
};

inline TensorSpec float_tensor(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), DType::float32, std::move(shape), {Dist::randn, 0, 1}};
}

inline std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

}  // namespace ca
