// Run directories: made with their lock held, removed when they go, and swept once their owner is gone.
#include "runner/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

namespace fs = std::filesystem;

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_parent = fs::path(::testing::TempDir()) / ("ca-run-dir-test-" + std::to_string(getpid()));
    fs::create_directories(m_parent);
  }
  void TearDown() override { fs::remove_all(m_parent); }
  // A directory as a harness killed with SIGKILL leaves it: its lock file, which nobody holds.
  fs::path abandoned(const std::string& name) {
    fs::path dir = m_parent / name;
    fs::create_directories(dir / "io");
    std::ofstream(dir / "owner.lock").put('\n');
    std::ofstream(dir / "io" / "outputs-1.bin") << "outputs";
    return dir;
  }
  fs::path m_parent;
};

TEST_F(RunDirTest, IsMadeWithItsIoFolderAndGoesWithEverythingInIt) {
  std::string path;
  {
    auto run_dir = RunDir::create(m_parent.string());
    ASSERT_TRUE(run_dir) << run_dir.error();
    path = run_dir->path();
    EXPECT_EQ(fs::path(path).parent_path(), m_parent);
    EXPECT_TRUE(fs::path(path).filename().string().starts_with("ca-run-")) << path;
    EXPECT_TRUE(fs::is_directory(run_dir->io()));
    EXPECT_EQ(run_dir->io(), path + "/io");
    EXPECT_TRUE(fs::exists(path + "/owner.lock"));
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms(0755)) << "the sandbox's user reads it";
    std::ofstream(run_dir->io() + "/outputs-1.bin") << "outputs";
    RunDir moved = std::move(*run_dir);
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(RunDirTest, ALiveOwnersDirectoryIsNeverSwept) {
  auto run_dir = RunDir::create(m_parent.string());
  ASSERT_TRUE(run_dir) << run_dir.error();
  // flock conflicts between open files, within one process too, so this process's sweep sees an owner.
  EXPECT_EQ(sweep_run_dirs(m_parent.string()), 0u);
  EXPECT_TRUE(fs::exists(run_dir->io()));
}

TEST_F(RunDirTest, ADirectoryWhoseOwnerDiedIsSweptByTheNextOne) {
  fs::path left = abandoned("ca-run-left01");
  fs::path other = m_parent / "not-a-run-dir";
  fs::create_directories(other);
  auto run_dir = RunDir::create(m_parent.string());
  ASSERT_TRUE(run_dir) << run_dir.error();
  EXPECT_FALSE(fs::exists(left)) << "the region it held is RAM in /dev/shm";
  EXPECT_TRUE(fs::exists(other)) << "only ca-run-* directories are the harness's";
}

TEST_F(RunDirTest, AnOwnerKilledWithSigkillLeavesADirectoryTheNextSweepRemoves) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto run_dir = RunDir::create(m_parent.string());
    if (!run_dir) _exit(1);
    ::kill(getpid(), SIGKILL);  // no destructor runs
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child failed to make its run directory";
  ASSERT_EQ(std::distance(fs::directory_iterator(m_parent), fs::directory_iterator()), 1) << "left behind";
  EXPECT_EQ(sweep_run_dirs(m_parent.string()), 1u);
  EXPECT_TRUE(fs::is_empty(m_parent));
}

TEST_F(RunDirTest, ADirectoryWithoutALockIsLeftAloneUntilItIsOld) {
  fs::path young = m_parent / "ca-run-young1";
  fs::path old = m_parent / "ca-run-oldone";
  fs::create_directories(young);
  fs::create_directories(old);
  const time_t long_ago = std::time(nullptr) - time_t(k_unowned_run_dir_grace_s) - 60;
  struct utimbuf times {
    long_ago, long_ago
  };
  ASSERT_EQ(::utime(old.c_str(), &times), 0);
  EXPECT_EQ(sweep_run_dirs(m_parent.string()), 1u);
  EXPECT_TRUE(fs::exists(young)) << "may be one being made right now";
  EXPECT_FALSE(fs::exists(old));
}

TEST_F(RunDirTest, AParentThatCannotBeWrittenIsAClearError) {
  auto run_dir = RunDir::create((m_parent / "missing").string());
  ASSERT_FALSE(run_dir);
  EXPECT_NE(run_dir.error().find("cannot create a run directory under " + (m_parent / "missing").string()),
            std::string::npos)
      << run_dir.error();
  EXPECT_EQ(sweep_run_dirs((m_parent / "missing").string()), 0u);
}

}  // namespace
}  // namespace ca
