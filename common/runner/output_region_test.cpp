// The output region: its layout, both sides' mappings of one file, and the checks that keep a runner from making
// the trusted side read what the file no longer backs.
#include "runner/output_region.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "ir/tensor_init.h"
#include "runner/device.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

class OutputRegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::path(::testing::TempDir()) / ("ca-region-test-" + std::to_string(getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(OutputRegionTest, LayoutAlignsEveryOutputAndPacksCallsInOrder) {
  const std::vector<uint64_t> sizes = {10, 0, 8192, 4096};
  OutputLayout layout = layout_outputs(sizes, 3);
  ASSERT_EQ(layout.offsets.size(), 3u);
  // 10 bytes take a page; the empty output takes none; 8192 and 4096 take their own pages.
  EXPECT_EQ(layout.offsets[0], (std::vector<uint64_t>{0, 4096, 4096, 12288}));
  EXPECT_EQ(layout.offsets[1], (std::vector<uint64_t>{16384, 20480, 20480, 28672}));
  EXPECT_EQ(layout.offsets[2][0], 32768u);
  EXPECT_EQ(layout.bytes, 49152u);
  for (const auto& call : layout.offsets) {
    for (uint64_t offset : call) EXPECT_EQ(offset % k_output_alignment, 0u);
  }
  EXPECT_EQ(layout_outputs(sizes, 0).bytes, 0u);
  EXPECT_EQ(layout_outputs(std::vector<uint64_t>{0}, 5).bytes, 0u);
}

TEST_F(OutputRegionTest, BothSidesSeeOneFile) {
  auto trusted = OutputRegion::create(m_dir.string(), 3 * 4096);
  ASSERT_TRUE(trusted) << trusted.error();
  EXPECT_EQ(trusted->size(), 3u * 4096);
  EXPECT_TRUE(trusted->path().starts_with(m_dir.string() + "/outputs-")) << trusted->path();
  EXPECT_EQ(fs::file_size(trusted->path()), 3u * 4096) << "reserved in full";

  auto runner = OutputRegion::open(trusted->path(), 2 * 4096);
  ASSERT_TRUE(runner) << runner.error();
  EXPECT_EQ(runner->size(), 2u * 4096);
  std::memset(runner->data() + 4096, 0x5A, 4096);
  EXPECT_EQ(trusted->data()[4096], 0x5A);
  EXPECT_EQ(trusted->data()[8191], 0x5A);
  EXPECT_EQ(trusted->data()[0], 0) << "a fresh region reads as zeros";

  OutputRegion moved = std::move(*runner);
  EXPECT_EQ(moved.data()[4096], 0x5A);
  EXPECT_EQ(runner->data(), nullptr);

  auto longer = OutputRegion::open(trusted->path(), 4 * 4096);
  ASSERT_FALSE(longer);
  EXPECT_NE(longer.error().find("the output region holds 12288 bytes, the request says 16384"), std::string::npos)
      << longer.error();
  auto missing = OutputRegion::open((m_dir / "absent.bin").string(), 1);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("absent.bin: cannot open the output region"), std::string::npos) << missing.error();
}

TEST_F(OutputRegionTest, AnEmptyRegionMapsNothing) {
  auto region = OutputRegion::create(m_dir.string(), 0);
  ASSERT_TRUE(region) << region.error();
  EXPECT_EQ(region->data(), nullptr);
  EXPECT_TRUE(region->holds(0, 0));
  EXPECT_FALSE(region->holds(0, 1));
  auto opened = OutputRegion::open(region->path(), 0);
  ASSERT_TRUE(opened) << opened.error();
  EXPECT_FALSE(opened->pin()) << "nothing to pin";
}

TEST_F(OutputRegionTest, ARegionThatCannotBeHadIsAClearError) {
  auto region = OutputRegion::create((m_dir / "no-such-dir").string(), 4096);
  ASSERT_FALSE(region);
  EXPECT_NE(region.error().find("no-such-dir: cannot create the output region"), std::string::npos) << region.error();
  // More than any machine has: posix_fallocate refuses, naming the file and the size.
  auto huge = OutputRegion::create(m_dir.string(), uint64_t(1) << 60);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().find("cannot reserve 1152921504606846976 bytes for the runner's outputs"), std::string::npos)
      << huge.error();
}

TEST_F(OutputRegionTest, HoldsOnlyWhatTheFileStillBacks) {
  auto region = OutputRegion::create(m_dir.string(), 4 * 4096);
  ASSERT_TRUE(region) << region.error();
  std::memset(region->data(), 1, 4 * 4096);  // as the runner writes every output it reports
  EXPECT_TRUE(region->holds(0, 4 * 4096));
  EXPECT_TRUE(region->holds(4096, 100));
  EXPECT_TRUE(region->holds(4 * 4096, 0));
  EXPECT_FALSE(region->holds(3 * 4096, 4097)) << "past the region";
  EXPECT_FALSE(region->holds(UINT64_MAX, 2)) << "no overflow";

  // A runner that punches a page out: reading it could fault where the filesystem is full.
  int fd = ::open(region->path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * 4096, 4096), 0) << std::strerror(errno);
  EXPECT_TRUE(region->holds(0, 2 * 4096));
  EXPECT_FALSE(region->holds(4096, 2 * 4096));
  EXPECT_TRUE(region->holds(3 * 4096, 4096));
  // A runner that cuts the file short: reading past its end is SIGBUS.
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  EXPECT_TRUE(region->holds(0, 4096));
  EXPECT_FALSE(region->holds(3 * 4096, 4096));
}

TEST_F(OutputRegionTest, RunFilesGoToSharedMemoryWhenItHasRoom) {
  struct stat status {};
  if (::stat("/dev/shm", &status) == 0 && S_ISDIR(status.st_mode) && ::access("/dev/shm", W_OK) == 0) {
    EXPECT_EQ(run_files_dir(4096), "/dev/shm");
  }
  EXPECT_EQ(run_files_dir(uint64_t(1) << 60), fs::temp_directory_path().string()) << "too big for /dev/shm";
}

#ifdef CA_WITH_CUDA
TEST_F(OutputRegionTest, CudaCopiesLandInAPinnedRegionAndInPageableMemory) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto device = make_cuda_device(0);
  ASSERT_TRUE(device) << device.error().message;
  TensorSpec spec = {"x", DType::float32, {300000}, {Dist::randn, 0, 1}};
  const std::vector<uint8_t> expected = make_tensor_bytes(spec, 5, 0).value();
  auto input = (*device)->fresh_input(spec, 5, 0, "input");
  ASSERT_TRUE(input) << input.error().message;
  ASSERT_TRUE((*device)->before_call());

  // Where the harness puts it: the kernel page-locks shared memory, while some filesystems refuse (/tmp on overlayfs).
  const uint64_t bytes = layout_outputs(std::vector<uint64_t>{expected.size()}, 2).bytes;
  const fs::path dir = fs::path(run_files_dir(bytes)) / ("ca-region-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto region = OutputRegion::create(dir.string(), bytes);
  ASSERT_TRUE(region) << region.error();
  fs::remove_all(dir);  // the mapping outlives the name
  auto pinned = region->pin();
  ASSERT_TRUE(pinned) << pinned.error();
  EXPECT_TRUE(region->pin()) << "pinning twice is harmless";
  const uint64_t second = layout_outputs(std::vector<uint64_t>{expected.size()}, 2).offsets[1][0];
  ASSERT_TRUE((*device)->copy_out(*input, {region->data() + second, expected.size()}));
  EXPECT_EQ(std::memcmp(region->data() + second, expected.data(), expected.size()), 0)
      << "one DMA into the pinned region";

  std::vector<uint8_t> pageable(expected.size());
  ASSERT_TRUE((*device)->copy_out(*input, pageable));
  EXPECT_EQ(pageable, expected) << "staged where the target is not page-locked";
  (*device)->end_call();
}
#endif

}  // namespace
}  // namespace ca
