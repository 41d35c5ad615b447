#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ca {
namespace {

namespace fs = std::filesystem;

struct SameOutputFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("ca_atomic_file_test_" + std::to_string(getpid()));
  void SetUp() override { fs::create_directories(dir / "real"); }
  void TearDown() override { fs::remove_all(dir); }
  std::string at(const std::string& name) const { return (dir / name).string(); }
};

TEST_F(SameOutputFixture, OnePathHoweverSpelledIsOneFile) {
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/out.jsonl")));
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/./out.jsonl")));
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("real/../real/out.jsonl")));
  // Neither exists yet: the folder decides.
  fs::create_directory_symlink(dir / "real", dir / "link");
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("link/out.jsonl")));
  EXPECT_FALSE(same_output_file(at("real/out.jsonl"), at("real/rejects.jsonl")));
}

TEST_F(SameOutputFixture, RelativeAndAbsoluteNamesOfOneFileAgree) {
  fs::path before = fs::current_path();
  fs::current_path(dir / "real");
  EXPECT_TRUE(same_output_file("out.jsonl", "./out.jsonl"));
  EXPECT_TRUE(same_output_file("out.jsonl", at("real/out.jsonl")));
  EXPECT_FALSE(same_output_file("out.jsonl", "rejects.jsonl"));
  fs::current_path(before);
}

TEST_F(SameOutputFixture, TwoNamesOfAnExistingFileAreOneFile) {
  std::ofstream(at("real/out.jsonl")) << "{}\n";
  fs::create_symlink(dir / "real/out.jsonl", dir / "alias.jsonl");
  fs::create_hard_link(dir / "real/out.jsonl", dir / "hard.jsonl");
  EXPECT_TRUE(same_output_file(at("real/out.jsonl"), at("alias.jsonl")));
  EXPECT_TRUE(same_output_file(at("hard.jsonl"), at("real/out.jsonl")));
}

TEST_F(SameOutputFixture, StdoutAndDevicesAreWrittenInPlace) {
  EXPECT_TRUE(same_output_file("-", "-"));
  EXPECT_FALSE(same_output_file("-", at("real/out.jsonl")));
  EXPECT_FALSE(same_output_file("/dev/null", "/dev/null"));
}

// A process that has ended (reaped), whose pid is no one's now.
pid_t dead_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST_F(SameOutputFixture, StaleTemporariesOfDeadWritersAreRemoved) {
  const std::string out = at("real/out.jsonl");
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(getpid());
  auto touch = [](const std::string& path) { std::ofstream(path) << "partial"; };
  touch(out + ".tmp-" + dead + "-abc123");                // stale: removed
  touch(out + ".tmp-" + alive + "-abc123");               // a live writer's: kept
  touch(out + ".tmp-abc123");                             // no pid in its name: no owner to ask, kept
  touch(out + ".tmp-" + dead + "-abc123x");               // not a temporary's name: kept
  touch(at("real/other.jsonl.tmp-") + dead + "-abc123");  // another output's: kept
  // A dead pid whose lock is held: a writer in another pid namespace (a sandbox), kept.
  const std::string held = out + ".tmp-" + dead + "-held00";
  touch(held);
  int fd = ::open(held.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  // flock locks belong to the open file description: the cleaner's own open must not take it over.
  EXPECT_EQ(remove_stale_temporaries(out), 1u);
  EXPECT_FALSE(fs::exists(out + ".tmp-" + dead + "-abc123"));
  for (const auto& kept : {out + ".tmp-" + alive + "-abc123", out + ".tmp-abc123", out + ".tmp-" + dead + "-abc123x",
                           at("real/other.jsonl.tmp-") + dead + "-abc123", held})
    EXPECT_TRUE(fs::exists(kept)) << kept;
  ::close(fd);  // its writer ends: now it is stale
  EXPECT_EQ(remove_stale_temporaries(out), 1u);
  EXPECT_FALSE(fs::exists(held));

  // A writer's own temporary carries its pid and lock, so a cleaner running beside it keeps it.
  auto file = AtomicFile::create(out);
  ASSERT_TRUE(file);
  EXPECT_EQ(remove_stale_temporaries(out), 0u);
  std::fputs("done\n", file->stream());
  ASSERT_TRUE(file->commit());
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
}  // namespace ca
