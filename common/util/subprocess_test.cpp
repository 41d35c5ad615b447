// Tests for run_subprocess: output capture, exit status, signals, timeouts.
#include "util/subprocess.h"

#include <unistd.h>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace ca {
namespace {

std::vector<std::string> shell(const std::string& script) {
  return {"/bin/sh", "-c", script};
}

// False for a process that is gone or a zombie waiting for a parent that may never reap it.
bool is_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

// Whether `pid` ends within `limit`. A killed process ends once it is scheduled, which a loaded machine may delay;
// the limit only keeps a survivor from hanging the test.
bool ends_within(pid_t pid, std::chrono::seconds limit) {
  for (auto give_up = std::chrono::steady_clock::now() + limit; is_running(pid); usleep(1000)) {
    if (std::chrono::steady_clock::now() > give_up) return false;
  }
  return true;
}

}  // namespace

TEST(SubprocessTest, CapturesStdoutAndStderrSeparately) {
  auto result = run_subprocess(shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->signal, 0);
  EXPECT_FALSE(result->ok());
  EXPECT_EQ(result->describe(), "exited with status 3");
}

TEST(SubprocessTest, HandsOnEachLineOfStdoutAsItComes) {
  SubprocessOptions options;
  std::vector<std::string> lines;
  options.on_output_line = [&](std::string line) { lines.push_back(std::move(line)); };
  // The second line comes in two writes; the last has no newline.
  auto result = run_subprocess(shell("echo one; printf 'tw'; sleep 0.1; printf 'o\\nthree'; echo err >&2"), options);
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(result->out, "");
  EXPECT_EQ(result->err, "err\n");
}

TEST(SubprocessTest, RunsWithoutAShell) {
  // The argument reaches the program verbatim: no globbing, no word splitting.
  auto result = run_subprocess({"echo", "a  *  $HOME"});
  ASSERT_TRUE(result) << result.error();
  EXPECT_TRUE(result->ok());
  EXPECT_EQ(result->out, "a  *  $HOME\n");
}

TEST(SubprocessTest, ReportsTheSignalThatEndedTheProgram) {
  auto result = run_subprocess(shell("kill -SEGV $$"));
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->signal, SIGSEGV);
  EXPECT_EQ(result->exit_code, -1);
  EXPECT_NE(result->describe().find("signal 11"), std::string::npos);
}

TEST(SubprocessTest, TimeoutKillsTheWholeGroup) {
  SubprocessOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  // The grandchild prints its pid, then both it and the shell sleep.
  auto result = run_subprocess(shell("sleep 30 & echo $!; wait"), options);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result) << result.error();
  EXPECT_TRUE(result->timed_out);
  EXPECT_EQ(result->signal, SIGKILL);
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  pid_t grandchild = std::stoi(result->out);
  EXPECT_TRUE(ends_within(grandchild, std::chrono::seconds(30))) << "the background sleep survived";
}

TEST(SubprocessTest, UsesWorkingDirectoryAndEnvironment) {
  SubprocessOptions options;
  options.cwd = "/";
  options.env = {"CA_SUBPROCESS_TEST=hello", "LC_ALL=C"};
  auto result = run_subprocess(shell("pwd; echo $CA_SUBPROCESS_TEST"), options);
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->out, "/\nhello\n");
}

TEST(SubprocessTest, KeepsOnlyMaxOutputBytes) {
  SubprocessOptions options;
  options.max_output = 10;
  auto result = run_subprocess(shell("head -c 100000 /dev/zero | tr '\\0' x"), options);
  ASSERT_TRUE(result) << result.error();
  EXPECT_TRUE(result->ok());
  EXPECT_EQ(result->out, std::string(10, 'x'));
}

TEST(SubprocessTest, MissingProgramIsAnError) {
  auto result = run_subprocess({"/nonexistent/ca-no-such-program"});
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("cannot run"), std::string::npos);
}

}  // namespace ca
