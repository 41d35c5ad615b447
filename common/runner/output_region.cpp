// The output region shared by the trusted side and the runner (see output_region.h).
#include "runner/output_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#ifdef CA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

// Room left in /dev/shm beyond the region, for the requests and results files and for whoever else uses it.
constexpr uint64_t k_shm_headroom = uint64_t(64) << 20;

uint64_t aligned(uint64_t bytes) {
  return (bytes + k_output_alignment - 1) / k_output_alignment * k_output_alignment;
}

// Populated at once, writable: the candidate writes its outputs (and reads its inputs) straight through the runner's
// mapping inside a timed call, where a first write to each page would be a fault counted against it (MAP_POPULATE
// alone maps a shared file's pages for reading: 256 faults, ~70 us, per MiB of outputs on the 2-core VM).
std::expected<uint8_t*, std::string> map_shared(int fd, uint64_t bytes, const std::string& path) {
  if (bytes == 0) return nullptr;
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (data == MAP_FAILED)
    return Error(path + ": cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
#ifdef MADV_POPULATE_WRITE
  ::madvise(data, bytes, MADV_POPULATE_WRITE);  // an older kernel refuses it, and the writes fault as before
#endif
  return static_cast<uint8_t*>(data);
}

}  // namespace

OutputLayout layout_outputs(std::span<const uint64_t> output_bytes, size_t calls) {
  OutputLayout layout;
  for (size_t call = 0; call < calls; ++call) {
    std::vector<uint64_t> offsets;
    for (uint64_t bytes : output_bytes) {
      offsets.push_back(layout.bytes);
      layout.bytes = aligned(layout.bytes + bytes);
    }
    layout.offsets.push_back(std::move(offsets));
  }
  return layout;
}

OutputRegion::OutputRegion(std::string path, int fd, uint8_t* data, uint64_t size)
    : m_path(std::move(path)), m_fd(fd), m_data(data), m_size(size) {}

OutputRegion::OutputRegion(OutputRegion&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_fd(std::exchange(other.m_fd, -1)),
      m_data(std::exchange(other.m_data, nullptr)),
      m_size(std::exchange(other.m_size, 0)),
      m_pinned(std::exchange(other.m_pinned, false)) {}

OutputRegion& OutputRegion::operator=(OutputRegion&& other) noexcept {
  if (this != &other) {
    release();
    m_path = std::move(other.m_path);
    m_fd = std::exchange(other.m_fd, -1);
    m_data = std::exchange(other.m_data, nullptr);
    m_size = std::exchange(other.m_size, 0);
    m_pinned = std::exchange(other.m_pinned, false);
  }
  return *this;
}

OutputRegion::~OutputRegion() {
  release();
}

void OutputRegion::release() {
#ifdef CA_WITH_CUDA
  // Before the unmap: the driver must let go of the pages first. At exit the runtime may be gone already; then
  // there is nothing left to undo.
  if (m_pinned) {
    cudaHostUnregister(m_data);
    cudaGetLastError();
  }
#endif
  m_pinned = false;
  if (m_data != nullptr) ::munmap(m_data, m_size);
  if (m_fd >= 0) ::close(m_fd);
  m_data = nullptr;
  m_fd = -1;
  m_size = 0;
}

std::expected<OutputRegion, std::string> OutputRegion::create(const std::string& dir, uint64_t bytes,
                                                              std::string_view stem) {
  std::string path = dir + "/" + std::string(stem) + "-XXXXXX.bin";
  int fd = ::mkostemps(path.data(), 4, O_CLOEXEC);
  if (fd < 0) return Error(dir + ": cannot create the output region: " + std::strerror(errno));
  OutputRegion region(path, fd, nullptr, 0);
  if (bytes > 0) {
    if (int error = ::posix_fallocate(fd, 0, off_t(bytes)); error != 0) {
      return Error(path + ": cannot reserve " + std::to_string(bytes) +
                   " bytes for the runner's outputs: " + std::strerror(error));
    }
  }
  auto data = map_shared(fd, bytes, path);
  if (!data) return Error(data.error());
  region.m_data = *data;
  region.m_size = bytes;
  return region;
}

std::expected<OutputRegion, std::string> OutputRegion::open(const std::string& path, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Error(path + ": cannot open the output region: " + std::strerror(errno));
  OutputRegion region(path, fd, nullptr, 0);
  struct stat status {};
  if (::fstat(fd, &status) != 0) return Error(path + ": " + std::strerror(errno));
  if (!S_ISREG(status.st_mode)) return Error(path + ": the output region is not a regular file");
  // Mapping past the end would turn every write there into SIGBUS.
  if (uint64_t(status.st_size) < bytes) {
    return Error(path + ": the output region holds " + std::to_string(status.st_size) + " bytes, the request says " +
                 std::to_string(bytes));
  }
  auto data = map_shared(fd, bytes, path);
  if (!data) return Error(data.error());
  region.m_data = *data;
  region.m_size = bytes;
  return region;
}

std::expected<void, std::string> OutputRegion::pin() {
#ifdef CA_WITH_CUDA
  if (m_pinned) return {};
  if (m_data == nullptr) return Error(m_path + ": an empty region has nothing to page-lock");
  cudaError_t error = cudaHostRegister(m_data, m_size, cudaHostRegisterPortable);
  if (error != cudaSuccess) {
    cudaGetLastError();  // pageable then; the error is not the candidate's
    return Error(m_path + ": cannot page-lock " + std::to_string(m_size) + " bytes: " + cudaGetErrorString(error));
  }
  m_pinned = true;
  return {};
#else
  return Error("built without CUDA");
#endif
}

bool OutputRegion::holds(uint64_t offset, uint64_t bytes) const {
  if (offset > m_size || bytes > m_size - offset) return false;
  if (bytes == 0) return true;
  struct stat status {};
  if (::fstat(m_fd, &status) != 0 || uint64_t(status.st_size) < offset + bytes) return false;
  // A page punched out reads back as a fresh one, which a full tmpfs cannot supply: SIGBUS. A filesystem that does
  // not track holes says the data runs to the end of the file.
  off_t hole = ::lseek(m_fd, off_t(offset), SEEK_HOLE);
  return hole >= 0 && uint64_t(hole) >= offset + bytes;
}

std::string run_files_dir(uint64_t bytes) {
  struct stat status {};
  struct statvfs space {};
  if (::stat("/dev/shm", &status) == 0 && S_ISDIR(status.st_mode) && ::access("/dev/shm", W_OK | X_OK) == 0 &&
      ::statvfs("/dev/shm", &space) == 0 && uint64_t(space.f_bavail) * space.f_frsize >= bytes + k_shm_headroom) {
    return "/dev/shm";
  }
  return std::filesystem::temp_directory_path().string();
}

}  // namespace ca
