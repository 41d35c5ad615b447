// ca-profile --precompile's library part, with a stand-in "python" that writes
// a dummy package for every line of its batch list (nothing loads them here;
// compiled_test.cpp compiles for real).
#include "torch/precompile.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <torch/version.h>

#include "util/atomic_file.h"
#include "util/subprocess.h"

namespace ca {
namespace {

constexpr const char* k_good =
    R"({"kind": "task", "id": "t/neg", "program": {"inputs": [{"name": "x", "dtype": "float32", "shape": [3, 5]}], "nodes": [{"op": "aten::neg", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]}})";
constexpr const char* k_other =
    R"({"kind": "task", "id": "t/relu", "program": {"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}], "nodes": [{"op": "aten::relu", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]}})";
constexpr const char* k_bad_op =
    R"({"kind": "task", "id": "t/bad", "program": {"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}], "nodes": [{"op": "aten::no_such_op", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]}})";

class PrecompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = "/tmp/ca-precompile-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    m_root = pattern;
    m_options.cache_dir = m_root + "/cache";
    m_options.python = m_root + "/python";
    std::ofstream(m_options.python)
        << "#!/bin/sh\necho start >> '" << m_root << "/log'\n"
        << R"sh(for p in $(sed -n 's/.*"package":"\([^"]*\)".*/\1/p' "$3"); do)sh"
        << "\n"
        << "  echo package > \"$p\"\n"
        << R"(  echo "{\"package\": \"$p\", \"torch\": \")" TORCH_VERSION
           R"(\", \"tf32\": \"pytorch\", \"tf32_flags\": {\"matmul\": false, \"cudnn\": true}}")"
        << "\ndone\n";
    ::chmod(m_options.python.c_str(), 0700);
  }
  void TearDown() override { (void)run_subprocess({"rm", "-rf", m_root}); }

  // A tasks file of these lines.
  std::string tasks(const std::vector<std::string>& lines) {
    std::string path = m_root + "/tasks.jsonl";
    std::string text;
    for (const auto& line : lines) text.append(line).append("\n");
    EXPECT_TRUE(write_file_atomic(path, text));
    return path;
  }
  size_t bridge_starts() {
    auto log = read_file(m_root + "/log");
    return log ? size_t(std::count(log->begin(), log->end(), '\n')) : 0;
  }

  std::string m_root;
  CompiledOptions m_options;
};

TEST_F(PrecompileTest, CompilesTheMissingInOneBatchThenFindsThemCached) {
  std::string path = tasks({k_good, k_other});
  auto summary = precompile_tasks(path, at::kCPU, m_options, 1, OnBadRecord::skip);
  EXPECT_EQ(summary.code, ExitCode::ok);
  EXPECT_EQ(summary.tasks, 2u);
  EXPECT_EQ(summary.compiled, 2u);
  EXPECT_EQ(bridge_starts(), 1u);
  auto again = precompile_tasks(path, at::kCPU, m_options, 1, OnBadRecord::skip);
  EXPECT_EQ(again.code, ExitCode::ok);
  EXPECT_EQ(again.cached, 2u);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(bridge_starts(), 1u);
  std::string line = summary_line(again, at::kCPU);
  EXPECT_TRUE(line.starts_with("precompiled 2 tasks for cpu: 0 compiled, 2 cached, 0 failed in ")) << line;
}

TEST_F(PrecompileTest, BadTasksAreCountedAndTheOthersCompile) {
  std::string path = tasks({k_good, "not json", k_bad_op});
  auto summary = precompile_tasks(path, at::kCPU, m_options, 2, OnBadRecord::skip);
  EXPECT_EQ(summary.code, ExitCode::some_failed);
  EXPECT_EQ(summary.tasks, 3u);
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.compiled, 1u);
}

TEST_F(PrecompileTest, StopEndsAtTheFirstBadTaskBeforeCompiling) {
  std::string path = tasks({k_good, k_bad_op});
  auto summary = precompile_tasks(path, at::kCPU, m_options, 1, OnBadRecord::stop);
  EXPECT_EQ(summary.code, ExitCode::data_error);
  EXPECT_EQ(bridge_starts(), 0u);
}

TEST_F(PrecompileTest, MissingTasksFileIsNoInput) {
  auto summary = precompile_tasks(m_root + "/missing.jsonl", at::kCPU, m_options, 1, OnBadRecord::skip);
  EXPECT_EQ(summary.code, ExitCode::no_input);
}

}  // namespace
}  // namespace ca
