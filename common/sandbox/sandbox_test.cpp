// Tests that sandboxed commands run, see only what they are given, and end at their limits.
#include "sandbox/sandbox.h"

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/signals.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ca-sandbox-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    m_root = pattern;
    fs::permissions(m_root, fs::perms(0755));  // as create_workspace makes it: the sandbox user reads it
    fs::create_directories(m_root / "kernels");
    std::ofstream(m_root / "model.py") << "reference\n";
  }
  void TearDown() override { fs::remove_all(m_root); }

  SandboxSpec spec(std::string script) const {
    SandboxSpec spec;
    spec.argv = {"bash", "-c", std::move(script)};
    spec.workdir = m_root.string();
    spec.writable = {(m_root / "kernels").string()};
    spec.limits.wall_s = 20;
    return spec;
  }
  SandboxResult run(const SandboxSpec& spec) const {
    auto result = run_sandboxed(spec);
    EXPECT_TRUE(result) << (result ? "" : result.error());
    return result.value_or(SandboxResult{});
  }

  fs::path m_root;
};

bool has_python() {
  return ::access("/usr/bin/python3", X_OK) == 0;
}

TEST_F(SandboxTest, CapturesOutputAndExitCode) {
  SandboxResult result = run(spec("echo hello; echo oops >&2; exit 3"));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.out, "hello\n");
  EXPECT_EQ(result.err, "oops\n");
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.limit_hit, "");
}

TEST_F(SandboxTest, RunsOnItsShareOfTheCoresOnly) {
  cpu_set_t own;
  ASSERT_EQ(::sched_getaffinity(0, sizeof own, &own), 0);
  if (CPU_COUNT(&own) < 2) GTEST_SKIP() << "one core: nothing to narrow";
  SandboxSpec s = spec("nproc");
  s.cpus = 1;
  EXPECT_EQ(run(s).out, "1\n");
  s.cpus = 0;
  EXPECT_EQ(run(s).out, std::to_string(CPU_COUNT(&own)) + "\n");
}

TEST_F(SandboxTest, FeedsStdinAndRunsInWorkdir) {
  SandboxSpec s = spec("cat; pwd; cat model.py");
  s.stdin_data = "from stdin\n";
  SandboxResult result = run(s);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "from stdin\n" + fs::canonical(m_root).string() + "\nreference\n");
}

TEST_F(SandboxTest, OnlyWritablePathsCanBeWritten) {
  SandboxResult result = run(spec(
      "echo k > kernels/x.cu && echo ok; echo bad > model.py; touch new.txt; touch /x; echo t > /tmp/t && cat /tmp/t"));
  EXPECT_EQ(result.out, "ok\nt\n");
  EXPECT_TRUE(fs::exists(m_root / "kernels" / "x.cu"));
  EXPECT_FALSE(fs::exists(m_root / "new.txt"));
  std::ifstream model(m_root / "model.py");
  std::string line;
  std::getline(model, line);
  EXPECT_EQ(line, "reference");
}

TEST_F(SandboxTest, HostFilesOutsideTheMountsAreInvisible) {
  std::string source = CA_SOURCE_DIR;
  SandboxResult result = run(spec("cat " + source +
                                  "/CMakeLists.txt >/dev/null && echo source; ls /root >/dev/null 2>&1 && echo root;"
                                  "ls /etc/shadow >/dev/null 2>&1 && echo shadow; ls / | tr '\\n' ' '"));
  EXPECT_EQ(result.out.find("source"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("root"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("shadow"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("usr"), std::string::npos) << result.out;
}

TEST_F(SandboxTest, HasNoNetworkButLoopback) {
  SandboxResult result =
      run(spec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; exec 3<>/dev/tcp/1.1.1.1/80 && echo connected"));
  EXPECT_EQ(result.out, "lo\n");
}

TEST_F(SandboxTest, EnvironmentIsScrubbed) {
  ::setenv("CA_SANDBOX_TEST_SECRET", "leak", 1);
  SandboxResult result = run(spec("env | sort"));
  ::unsetenv("CA_SANDBOX_TEST_SECRET");
  EXPECT_EQ(result.out.find("leak"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("HOME=/tmp\n"), std::string::npos) << result.out;
}

TEST_F(SandboxTest, NoGpuDevicesUnlessAsked) {
  SandboxResult result = run(spec("ls /dev"));
  EXPECT_EQ(result.out.find("nvidia"), std::string::npos);
  SandboxSpec s = spec("true");
  auto args = bwrap_arguments(s, HostUser::regular);
  EXPECT_EQ(std::count(args.begin(), args.end(), "--dev-bind"), 0);
  EXPECT_EQ(std::count(args.begin(), args.end(), "/sys"), 0);
  s.gpu = true;
  args = bwrap_arguments(s, HostUser::regular);
  EXPECT_EQ(std::count(args.begin(), args.end(), "/sys"), 2);
}

TEST_F(SandboxTest, DeviceMemoryShareGoesToMpsWithTheGpuOnly) {
  SandboxSpec s = spec("true");
  s.limits.device_memory_bytes = int64_t{3} << 30;
  auto args = bwrap_arguments(s, HostUser::regular);
  EXPECT_EQ(std::count(args.begin(), args.end(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0) << "no GPU, no share";
  s.gpu = true;
  args = bwrap_arguments(s, HostUser::regular);
  auto limit = std::find(args.begin(), args.end(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  ASSERT_NE(limit, args.end());
  ASSERT_NE(limit + 1, args.end());
  EXPECT_TRUE((limit + 1)->starts_with("0=3072M,1=3072M,")) << *(limit + 1);
  EXPECT_EQ(*(limit - 1), "--setenv");
  EXPECT_EQ(std::count(args.begin(), args.end(), "CUDA_MPS_PIPE_DIRECTORY"), mps_pipe_directory().empty() ? 0 : 1);
}

TEST_F(SandboxTest, DiskQuotaKillsAWriterOfManyFilesWhileItWrites) {
  // Files of 256 KiB, each far under the file limit, without end: only the total can stop them.
  SandboxSpec s = spec("i=0; while :; do i=$((i+1)); head -c 262144 /dev/zero > kernels/f$i || exit 3; done");
  s.limits.disk_bytes = int64_t{4} << 20;
  SandboxResult result = run(s);
  EXPECT_EQ(result.limit_hit, "disk");
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.exit_code, 0);
  int64_t used = disk_usage({(m_root / "kernels").string()});
  EXPECT_GT(used, s.limits.disk_bytes);
  // What one check's interval of writing holds passes the quota; loose, so that a slow machine cannot fail it.
  EXPECT_LT(used, s.limits.disk_bytes * 16) << used;
}

TEST_F(SandboxTest, DiskQuotaLetsACommandCleanATreeAlreadyOverIt) {
  std::ofstream(m_root / "kernels" / "big") << std::string(size_t{1} << 20, 'x');
  SandboxSpec s = spec("rm kernels/big && echo cleaned");
  s.limits.disk_bytes = int64_t{64} << 10;
  SandboxResult result = run(s);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "cleaned\n");
  EXPECT_EQ(result.limit_hit, "");
}

TEST(HostMemoryShare, SplitsThreeQuartersOfTheHostBetweenTheJobs) {
  const int64_t host = int64_t(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  const int64_t eight = int64_t{8} << 30;
  EXPECT_EQ(host_memory_share(eight, 1), std::min(eight, std::max(k_min_memory_share, host / 4 * 3)));
  for (int jobs : {2, 4, 8, 64}) {
    int64_t share = host_memory_share(eight, jobs);
    EXPECT_LE(share, eight);
    EXPECT_GE(share, k_min_memory_share);
    if (share > k_min_memory_share) {
      EXPECT_LE(share * jobs, host / 4 * 3 + jobs) << jobs << " jobs";
    }
  }
  EXPECT_EQ(host_memory_share(int64_t{1} << 20, 1), int64_t{1} << 20) << "a smaller limit stays";
}

TEST_F(SandboxTest, DiskUsageCountsBytesAndEntriesOnce) {
  fs::path k = m_root / "kernels";
  int64_t empty = disk_usage({k.string()});
  struct stat dir {};
  ASSERT_EQ(::lstat(k.c_str(), &dir), 0);
  EXPECT_EQ(empty, int64_t(dir.st_blocks) * 512 + k_disk_entry_bytes);  // the directory itself (a block on ext4)
  for (int i = 0; i < 10; ++i) std::ofstream(k / ("e" + std::to_string(i)));
  fs::create_hard_link(k / "e0", k / "again");
  fs::create_symlink("/usr", k / "link");  // never followed
  EXPECT_EQ(disk_usage({k.string()}), empty + 11 * k_disk_entry_bytes);
  EXPECT_EQ(disk_usage({k.string(), k.string()}), empty + 11 * k_disk_entry_bytes) << "each inode once";
}

TEST_F(SandboxTest, RootDropsToTheSandboxUser) {
  auto args = bwrap_arguments(spec("id -u"), HostUser::root, "/usr/bin/setpriv");
  auto command = std::find(args.begin(), args.end(), "--");
  ASSERT_NE(command, args.end());
  EXPECT_EQ(*(command + 1), "/usr/bin/setpriv");
  EXPECT_EQ(std::count(args.begin(), args.end(), "--unshare-net"), 1);
  if (::geteuid() != 0) GTEST_SKIP() << "not root";
  SandboxResult result = run(spec("id -u"));
  EXPECT_EQ(result.out, std::to_string(k_sandbox_uid) + "\n");
}

TEST_F(SandboxTest, WallLimitKillsTheCommand) {
  SandboxSpec s = spec("sleep 60 & sleep 60");
  s.limits.wall_s = 1;
  auto start = std::chrono::steady_clock::now();
  SandboxResult result = run(s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.limit_hit, "wall");
  EXPECT_NE(result.exit_code, 0);
}

TEST_F(SandboxTest, AFloodOfOutputIsCappedAndTheClockStillRuns) {
  SandboxSpec s = spec("yes");
  s.limits.wall_s = 2;
  auto start = std::chrono::steady_clock::now();
  SandboxResult result = run(s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(12));
  EXPECT_TRUE(result.timed_out);
  EXPECT_LE(result.out.size(), size_t{32} << 20);
  EXPECT_TRUE(result.out.starts_with("y\ny\n"));
}

TEST_F(SandboxTest, CpuLimitEndsABusyLoop) {
  SandboxSpec s = spec("while :; do :; done");
  s.limits.cpu_s = 1;
  SandboxResult result = run(s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, SIGXCPU);
  EXPECT_EQ(result.limit_hit, "cpu");
}

TEST_F(SandboxTest, FileSizeLimitStopsABigFile) {
  SandboxSpec s = spec("head -c 3000000 /dev/zero > kernels/big");
  s.limits.file_bytes = 1 << 20;
  SandboxResult result = run(s);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.limit_hit, "file size");
  EXPECT_LE(fs::file_size(m_root / "kernels" / "big"), uintmax_t{1} << 20);
}

TEST_F(SandboxTest, MemoryLimitStopsAnAllocation) {
  if (!has_python()) GTEST_SKIP() << "no python3";
  SandboxSpec s = spec("python3 -c 'x = bytearray(1 << 30)'");
  s.limits.memory_bytes = 256 << 20;
  SandboxResult result = run(s);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.limit_hit, "memory") << result.err;
}

TEST_F(SandboxTest, ProcessLimitBoundsForks) {
  if (!has_python()) GTEST_SKIP() << "no python3";
  SandboxSpec s = spec(R"(python3 -c '
import os, time
n = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
finally:
    print(n)
')");
  s.limits.processes = 16;
  SandboxResult result = run(s);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.limit_hit, "processes") << result.err;
  EXPECT_LT(std::stoi(result.out.empty() ? "999" : result.out), 16) << result.out;
}

TEST_F(SandboxTest, AMissingCommandExits127) {
  SandboxSpec s = spec("");
  s.argv = {"no-such-command-here"};
  SandboxResult result = run(s);
  EXPECT_EQ(result.exit_code, 127);
}

TEST_F(SandboxTest, SignalsAreReported) {
  SandboxResult result = run(spec("kill -TERM $$"));
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_EQ(result.exit_code, 128 + SIGTERM);
}

TEST_F(SandboxTest, RootNeedsAWorkdirTheSandboxUserCanRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root";
  fs::permissions(m_root, fs::perms(0700));
  auto result = run_sandboxed(spec("true"));
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("cannot read it"), std::string::npos) << result.error();
}

TEST_F(SandboxTest, MissingPathsAreHarnessErrors) {
  SandboxSpec s = spec("true");
  s.workdir = (m_root / "missing").string();
  auto result = run_sandboxed(s);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("workdir"), std::string::npos) << result.error();
  s = spec("true");
  s.readable = {"/no/such/path"};
  result = run_sandboxed(s);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().find("/no/such/path"), std::string::npos) << result.error();
}

SandboxSession start_session(const SandboxSpec& spec) {
  auto session = SandboxSession::start(spec);
  EXPECT_TRUE(session) << (session ? "" : session.error());
  if (!session) std::abort();
  return std::move(*session);
}

TEST_F(SandboxTest, SessionAnswersLineByLineThenFinishes) {
  SandboxSession session = start_session(spec("while read -r line; do echo \"got $line\"; done; echo bye >&2; exit 3"));
  session.send_line("a");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("got a"));
  session.send_line("b");
  session.send_line("c");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("got b"));
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("got c"));
  EXPECT_TRUE(session.running());
  auto result = session.finish(10);  // closes stdin: the loop ends
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->out, "");
  EXPECT_EQ(result->err, "bye\n");
  EXPECT_FALSE(result->timed_out);
  EXPECT_FALSE(session.running());
  EXPECT_FALSE(session.finish(1));
}

TEST_F(SandboxTest, SessionDeadlineKillsEverything) {
  SandboxSession session = start_session(spec("read -r line; echo started; sleep 60 & sleep 60"));
  session.send_line("go");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("started"));
  auto start = std::chrono::steady_clock::now();
  auto line = session.wait_line(1);
  ASSERT_TRUE(line) << line.error();
  EXPECT_EQ(*line, std::nullopt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(session.running());
  auto result = session.finish(10);
  ASSERT_TRUE(result) << result.error();
  EXPECT_TRUE(result->timed_out);
  EXPECT_EQ(result->limit_hit, "wall");
  EXPECT_NE(result->exit_code, 0);
}

TEST_F(SandboxTest, SessionReportsACrashMidSession) {
  SandboxSession session = start_session(spec("read -r line; echo one; read -r line; echo dying >&2; kill -SEGV $$"));
  session.send_line("1");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("one"));
  session.send_line("2");
  auto line = session.wait_line(10);
  ASSERT_TRUE(line) << line.error();
  EXPECT_EQ(*line, std::nullopt);
  session.send_line("3");  // dropped: nobody reads it
  auto result = session.finish(10);
  ASSERT_TRUE(result) << result.error();
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->signal, SIGSEGV);
  EXPECT_EQ(result->exit_code, 128 + SIGSEGV);
  EXPECT_EQ(result->err, "dying\n");
}

TEST_F(SandboxTest, SessionCpuLimitCountsTheWholeSession) {
  SandboxSpec s = spec("while read -r line; do echo ok; done; while :; do :; done");
  s.limits.cpu_s = 1;
  SandboxSession session = start_session(s);
  session.send_line("x");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("ok"));
  auto result = session.finish(20);  // the loop after the last line spins into RLIMIT_CPU
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->signal, SIGXCPU);
  EXPECT_EQ(result->limit_hit, "cpu");
}

// The interrupt flag cannot be cleared, so the interrupted session runs in a child process of the test.
TEST_F(SandboxTest, SessionInterruptKillsTheSandbox) {
  SandboxSpec s = spec("read -r line; echo waiting; sleep 60 & sleep 60");
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_interrupt_handlers();
    auto session = SandboxSession::start(s);
    if (!session) ::_exit(2);
    session->send_line("go");
    auto first = session->wait_line(10);
    if (!first || *first != std::optional<std::string>("waiting")) ::_exit(3);
    ::raise(SIGINT);
    auto line = session->wait_line(30);
    if (line || line.error() != "interrupted") ::_exit(4);
    if (session->running()) ::_exit(5);
    auto result = session->finish(10);
    if (result || result.error() != "interrupted") ::_exit(6);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the exit codes of the child above";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(SandboxTest, PausedSessionRunsNothingUntilResumed) {
  // A grandchild left running in the background, detached into its own session, is stopped too.
  SandboxSession session =
      start_session(spec("read -r line; setsid bash -c 'while :; do echo t >> kernels/ticks; sleep 0.05; done' & echo "
                         "up; read -r line; echo back"));
  fs::path ticks = m_root / "kernels" / "ticks";
  session.send_line("go");
  EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("up"));
  ::usleep(300000);
  session.pause();
  ::usleep(100000);
  auto paused_size = fs::exists(ticks) ? fs::file_size(ticks) : 0;
  ::usleep(500000);
  EXPECT_EQ(fs::exists(ticks) ? fs::file_size(ticks) : 0, paused_size) << "something ran while paused";
  session.resume();
  // Resumed, the loop ticks again as soon as it is scheduled: wait for that state (the limit only bounds a hang).
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((fs::exists(ticks) ? fs::file_size(ticks) : 0) == paused_size && std::chrono::steady_clock::now() < give_up) {
    ::usleep(10000);
  }
  EXPECT_GT(fs::exists(ticks) ? fs::file_size(ticks) : 0, paused_size) << "nothing ran once resumed";
  session.pause();
  auto result = session.finish(10);  // resumes: the command sees stdin close
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->out, "back\n");
}

TEST_F(SandboxTest, DestroyingASessionKillsIt) {
  fs::path marker = m_root / "kernels" / "alive";
  {
    SandboxSession session = start_session(spec("read -r line; echo up; sleep 1; echo late > kernels/alive"));
    session.send_line("go");
    EXPECT_EQ(session.wait_line(10).value(), std::optional<std::string>("up"));
  }
  ::sleep(2);
  EXPECT_FALSE(fs::exists(marker));
}

}  // namespace
}  // namespace ca
