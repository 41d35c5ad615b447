// Snapshots of workspaces as compressed tar archives (libarchive), so that an
// episode's files can be stored, shipped and restored.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

namespace ca {

/// The most an unpacked snapshot may hold, counted as ca-sandbox exec's --disk quota counts kernels/ (bytes, and
/// k_disk_entry_bytes an entry): checked entry by entry and block by block while it is written, so an archive that
/// expands past it (2 MB of gzip to 2 GiB) stops there and leaves nothing behind. ca-sandbox exec's default quota.
inline constexpr int64_t k_unpack_max_bytes = int64_t{1} << 30;

/// Packs the contents of `dir` (not `dir` itself) into `archive_path`: a tar
/// compressed with zstd when the name ends in ".zst", else gzip. Entries are
/// sorted by path, with mtime 0 and owner 0, so equal trees give equal
/// archives. Directories, regular files and symlinks are stored; anything
/// else (a FIFO, a socket, a device) is an error naming it. The archive
/// appears only when complete. Returns an error message naming the path.
std::expected<void, std::string> pack_directory(const std::string& dir, const std::string& archive_path);

/// Unpacks `archive_path` into `dir`, which must not exist or be empty.
/// Refuses, naming the entry, entries with an absolute path or a ".."
/// component, symlinks whose target is absolute or leads outside `dir`,
/// hardlinks to such paths, and anything but directories, regular files and
/// links; then nothing is left at `dir`, since entries go to a temporary
/// directory renamed onto `dir` at the end. `destination` in the error says
/// that `dir` could not be written (an I/O error, exit 74), not that the
/// archive was bad.
struct UnpackError {
  std::string message;
  bool destination = false;
};
std::expected<void, UnpackError> unpack_archive(const std::string& archive_path, const std::string& dir);

}  // namespace ca
