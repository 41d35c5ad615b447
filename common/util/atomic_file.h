// Output files that appear complete or not at all: written under a temporary
// name beside the target and renamed on commit (STYLE 11).
#pragma once

#include <cstdio>
#include <expected>
#include <string>

namespace ca {

class AtomicFile {
 public:
  /// Creates a temporary file next to `path`, "<path>.tmp-<pid>-XXXXXX", held
  /// under an exclusive flock until it is committed or removed; when `path`
  /// exists and is not a regular file (/dev/null, a FIFO), writes to it
  /// directly, since renaming over a device would replace it. Returns an error
  /// message on failure.
  static std::expected<AtomicFile, std::string> create(const std::string& path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  FILE* stream() { return m_stream; }
  /// Flushes, closes and renames onto the target. Returns an error message on failure.
  std::expected<void, std::string> commit();

 private:
  AtomicFile(std::string path, std::string temp_path, FILE* stream);
  std::string m_path;
  std::string m_temp_path;
  FILE* m_stream = nullptr;
};

/// Removes the temporaries of output `path` that runs killed before their commit (SIGKILL, a power cut) left
/// beside it: "<path>.tmp-<pid>-XXXXXX" whose process is gone and whose lock no process holds (a process in another
/// pid namespace, a sandbox's, shows another pid, but its lock still counts). Returns how many it removed; a file it
/// cannot inspect is left alone. JsonlWriter::open calls it for every output file.
size_t remove_stale_temporaries(const std::string& path);

/// Writes `contents` to `path` atomically. Returns an error message on failure.
std::expected<void, std::string> write_file_atomic(const std::string& path, std::string_view contents);

/// Whether output paths `a` and `b` ("-" for stdout) would end up as one file, so that one output's commit would
/// replace the other's: the same path however spelled ("x", "./x", "d/../x", through a symlinked folder), or two names
/// of one existing file (a symlink to it, a hard link). Existing files that are not regular (/dev/null, a FIFO) are
/// written in place, not replaced, so they never count.
bool same_output_file(const std::string& a, const std::string& b);

/// Reads a whole file. Returns an error message naming the file on failure.
std::expected<std::string, std::string> read_file(const std::string& path);

}  // namespace ca
