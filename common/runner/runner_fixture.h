// The test fixture that runs ca-runner as a subprocess on a request file and reads back what it wrote; shared by
// the cpu (runner_test.cpp) and cuda (device_cuda_test.cpp) runner tests.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runner/output_region.h"
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

  // A request whose outputs go to a new output region, made here as the trusted side makes one.
  RunRequest request(const std::string& library, std::vector<TensorSpec> tensors, std::vector<OutputSpec> outputs,
                     const std::vector<uint64_t>& seeds) {
    RunRequest r;
    r.library = library;
    r.tensors = std::move(tensors);
    r.outputs = std::move(outputs);
    m_sizes.clear();
    for (const auto& output : r.outputs) m_sizes.push_back(output.bytes());
    m_layout = layout_outputs(m_sizes, seeds.size());
    auto region = OutputRegion::create(m_dir.string(), m_layout.bytes);
    EXPECT_TRUE(region) << region.error();
    m_region = std::make_unique<OutputRegion>(std::move(region.value()));
    for (size_t i = 0; i < seeds.size(); ++i) r.calls.push_back({seeds[i], m_layout.offsets[i], std::nullopt});
    r.output_region = {m_region->path(), m_region->size()};
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

  // The outputs of `call` of the last request(), concatenated, as the region holds them now.
  std::vector<uint8_t> outputs_of(size_t call) {
    std::vector<uint8_t> bytes;
    for (size_t k = 0; k < m_sizes.size(); ++k) {
      const uint8_t* data = m_region->data() + m_layout.offsets[call][k];
      bytes.insert(bytes.end(), data, data + m_sizes[k]);
    }
    return bytes;
  }

  fs::path m_dir;
  std::string m_stderr;
  std::vector<uint64_t> m_sizes;  // of each output of the last request()
  OutputLayout m_layout;
  std::unique_ptr<OutputRegion> m_region;
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
