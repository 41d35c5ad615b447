// The output region (docs/EXPLOITS.md): one file that the trusted side and the sandboxed runner both map shared. The
// trusted side makes it and decides where each call's outputs go; the runner copies them there (cuda: one DMA into
// page-locked memory) and the trusted side reads them in place once the runner is paused or gone, with no file per
// call and no copy of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ca {

/// Every output in a region starts at a multiple of this: its own page, so DMA and the hole check (holds) are
/// per page, and from_blob views are aligned for any dtype.
inline constexpr uint64_t k_output_alignment = 4096;

/// Where each call's outputs lie in a region: offsets[call][output], calls one after another.
struct OutputLayout {
  std::vector<std::vector<uint64_t>> offsets;
  uint64_t bytes = 0;  // the region's size: the end of the last output, rounded up to k_output_alignment
};

/// The layout of `calls` calls whose outputs have `output_bytes` each, in order, each aligned.
OutputLayout layout_outputs(std::span<const uint64_t> output_bytes, size_t calls);

/// A file mapped shared, read and write. Move-only; unmaps (and unpins) when it goes, and never removes the file.
class OutputRegion {
 public:
  /// Trusted side: creates a new file `dir`/outputs-XXXXXX.bin of `bytes`, reserves its memory (posix_fallocate, so
  /// that the runner's writes cannot fail for want of space: a mapped write would end it with SIGBUS) and maps it.
  /// Fails with a message naming the file, e.g. "/dev/shm/ca-run-x/io/outputs-y.bin: cannot reserve 512 MiB: No
  /// space left on device".
  /// `stem` names the file: "inputs" for the trusted side's input slot (runner_calls.h), which is the same kind of
  /// file.
  static std::expected<OutputRegion, std::string> create(const std::string& dir, uint64_t bytes,
                                                         std::string_view stem = "outputs");
  /// Runner side: maps the first `bytes` of the existing file `path`, which must be at least that long.
  static std::expected<OutputRegion, std::string> open(const std::string& path, uint64_t bytes);

  OutputRegion(OutputRegion&& other) noexcept;
  OutputRegion& operator=(OutputRegion&& other) noexcept;
  OutputRegion(const OutputRegion&) = delete;
  OutputRegion& operator=(const OutputRegion&) = delete;
  ~OutputRegion();

  uint8_t* data() const { return m_data; }
  uint64_t size() const { return m_size; }
  const std::string& path() const { return m_path; }

  /// Page-locks the mapping for CUDA (cudaHostRegister), so that copies between it and a device are one DMA. Where
  /// that fails, or the build has no CUDA, it stays pageable (copies are staged) and the error says why.
  std::expected<void, std::string> pin();
  bool pinned() const { return m_pinned; }

  /// Whether the `bytes` at `offset` can be read through the mapping without a fault the kernel would answer with
  /// SIGBUS: inside the region, inside the file as it is now (not truncated), and with no page punched out of it
  /// (SEEK_HOLE). The runner can change the file; the trusted side asks this once the runner is stopped, before it
  /// reads a range.
  bool holds(uint64_t offset, uint64_t bytes) const;

 private:
  OutputRegion(std::string path, int fd, uint8_t* data, uint64_t size);
  void release();

  std::string m_path;
  int m_fd = -1;
  uint8_t* m_data = nullptr;
  uint64_t m_size = 0;
  bool m_pinned = false;
};

/// Where a run's files go: /dev/shm when it is a writable directory with room for `bytes` more (RAM-backed, so
/// nothing is written back to a disk), else std::filesystem::temp_directory_path().
std::string run_files_dir(uint64_t bytes);

}  // namespace ca
