// Tests that snapshots round-trip, are reproducible, and refuse entries that would escape.
#include "sandbox/snapshot.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

struct FakeEntry {
  std::string path;
  std::string contents;
  std::string symlink;   // makes it a symlink to this target
  std::string hardlink;  // makes it a hardlink to this path
};

FakeEntry file(std::string path, std::string contents) {
  return {std::move(path), std::move(contents), "", ""};
}
FakeEntry symlink(std::string path, std::string target) {
  return {std::move(path), "", std::move(target), ""};
}
FakeEntry hardlink(std::string path, std::string target) {
  return {std::move(path), "", "", std::move(target)};
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ca-snapshot-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    m_root = pattern;
  }
  void TearDown() override { fs::remove_all(m_root); }

  void write(const fs::path& path, const std::string& text) const {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string read(const fs::path& path) const { return read_file(path.string()).value_or("<missing>"); }

  // Writes a tar.gz with exactly these entries, bypassing pack_directory's care.
  std::string hostile_archive(const std::vector<FakeEntry>& entries) const {
    std::string path = (m_root / "hostile.tar.gz").string();
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    EXPECT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
    for (const auto& fake : entries) {
      archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, fake.path.c_str());
      archive_entry_set_perm(entry, 0644);
      if (!fake.symlink.empty()) {
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_symlink(entry, fake.symlink.c_str());
      } else if (!fake.hardlink.empty()) {
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_hardlink(entry, fake.hardlink.c_str());
      } else {
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, static_cast<la_int64_t>(fake.contents.size()));
      }
      archive_write_header(a, entry);
      if (fake.symlink.empty() && fake.hardlink.empty())
        archive_write_data(a, fake.contents.data(), fake.contents.size());
      archive_entry_free(entry);
    }
    archive_write_close(a);
    archive_write_free(a);
    return path;
  }

  // Unpacking `entries` fails with a message naming `entry`, and leaves nothing.
  void expect_refused(const std::vector<FakeEntry>& entries, const std::string& entry, const std::string& why) {
    auto unpacked = unpack_archive(hostile_archive(entries), (m_root / "out").string());
    ASSERT_FALSE(unpacked) << entry;
    EXPECT_NE(unpacked.error().message.find("entry '" + entry + "'"), std::string::npos) << unpacked.error().message;
    EXPECT_NE(unpacked.error().message.find(why), std::string::npos) << unpacked.error().message;
    EXPECT_FALSE(fs::exists(m_root / "out"));
    EXPECT_FALSE(fs::exists(m_root / "escaped"));
    EXPECT_EQ(std::distance(fs::directory_iterator(m_root), fs::directory_iterator()), 1) << "temporary files left";
  }

  fs::path m_root;
};

TEST_F(SnapshotTest, RoundTripsATree) {
  fs::path ws = m_root / "ws";
  write(ws / "SKILL.md", "skill\n");
  write(ws / "kernels" / "a.cu", "__global__ void k() {}\n");
  write(ws / "kernels" / "sub" / "run.sh", "#!/bin/sh\n");
  fs::permissions(ws / "kernels" / "sub" / "run.sh", fs::perms(0755));
  fs::create_directories(ws / "kernels" / "empty");
  fs::create_symlink("../SKILL.md", ws / "kernels" / "link");
  ASSERT_TRUE(pack_directory(ws.string(), (m_root / "ws.tar.gz").string()));
  auto unpacked = unpack_archive((m_root / "ws.tar.gz").string(), (m_root / "copy").string());
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  fs::path copy = m_root / "copy";
  EXPECT_EQ(read(copy / "SKILL.md"), "skill\n");
  EXPECT_EQ(read(copy / "kernels" / "a.cu"), "__global__ void k() {}\n");
  EXPECT_TRUE(fs::is_directory(copy / "kernels" / "empty"));
  EXPECT_EQ(fs::read_symlink(copy / "kernels" / "link"), "../SKILL.md");
  EXPECT_EQ(fs::status(copy / "kernels" / "sub" / "run.sh").permissions() & fs::perms::owner_exec,
            fs::perms::owner_exec);
}

TEST_F(SnapshotTest, EqualTreesGiveEqualArchives) {
  fs::path ws = m_root / "ws";
  write(ws / "b.txt", "b");
  write(ws / "a" / "z.txt", "z");
  ASSERT_TRUE(pack_directory(ws.string(), (m_root / "one.tar.gz").string()));
  fs::last_write_time(ws / "b.txt", fs::file_time_type::clock::now() - std::chrono::hours(5));
  ASSERT_TRUE(pack_directory(ws.string(), (m_root / "two.tar.gz").string()));
  EXPECT_EQ(read(m_root / "one.tar.gz"), read(m_root / "two.tar.gz"));
  if (!pack_directory(ws.string(), (m_root / "ws.tar.zst").string())) GTEST_SKIP() << "libarchive without zstd";
  auto unpacked = unpack_archive((m_root / "ws.tar.zst").string(), (m_root / "z").string());
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  EXPECT_EQ(read(m_root / "z" / "a" / "z.txt"), "z");
}

TEST_F(SnapshotTest, RefusesAbsolutePaths) {
  expect_refused({file("/tmp/escaped", "x")}, "/tmp/escaped", "absolute path");
}

TEST_F(SnapshotTest, RefusesDotDot) {
  expect_refused({file("ok.txt", "fine"), file("kernels/../../escaped", "x")}, "kernels/../../escaped", "'..'");
}

TEST_F(SnapshotTest, RefusesSymlinksLeadingOutside) {
  expect_refused({symlink("kernels/up", "../../escaped")}, "kernels/up", "points outside");
  expect_refused({symlink("abs", "/etc/passwd")}, "abs", "absolute path");
  // "here -> ." is harmless alone, but "here/.." would leave the tree.
  expect_refused({symlink("here", "."), symlink("out", "here/../escaped")}, "out", "points outside");
}

TEST_F(SnapshotTest, RefusesWritingThroughASymlink) {
  auto unpacked =
      unpack_archive(hostile_archive({symlink("dir", "."), file("dir/file", "x")}), (m_root / "out").string());
  ASSERT_FALSE(unpacked);
  EXPECT_NE(unpacked.error().message.find("entry 'dir/file'"), std::string::npos) << unpacked.error().message;
}

TEST_F(SnapshotTest, RefusesHardlinksLeadingOutside) {
  expect_refused({hardlink("pw", "/etc/passwd")}, "pw", "hardlink: absolute path");
  expect_refused({hardlink("pw", "../escaped")}, "pw", "hardlink: path contains '..'");
}

TEST_F(SnapshotTest, RefusesANonEmptyDestination) {
  write(m_root / "ws" / "a.txt", "a");
  ASSERT_TRUE(pack_directory((m_root / "ws").string(), (m_root / "ws.tar.gz").string()));
  auto unpacked = unpack_archive((m_root / "ws.tar.gz").string(), (m_root / "ws").string());
  ASSERT_FALSE(unpacked);
  EXPECT_NE(unpacked.error().message.find("already exists"), std::string::npos);
}

TEST_F(SnapshotTest, ErrorsNameTheMissingPath) {
  auto packed = pack_directory((m_root / "nope").string(), (m_root / "x.tar.gz").string());
  ASSERT_FALSE(packed);
  EXPECT_NE(packed.error().find("nope"), std::string::npos);
  EXPECT_FALSE(fs::exists(m_root / "x.tar.gz"));
  auto unpacked = unpack_archive((m_root / "missing.tar.gz").string(), (m_root / "out").string());
  ASSERT_FALSE(unpacked);
  EXPECT_NE(unpacked.error().message.find("missing.tar.gz"), std::string::npos);
}

}  // namespace
}  // namespace ca
