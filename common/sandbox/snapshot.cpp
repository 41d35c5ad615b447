// Packs and unpacks workspace snapshots with libarchive; unpacking treats the
// archive as hostile (it may come from a sandbox) and refuses anything that
// could write outside the destination.
#include "sandbox/snapshot.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "sandbox/sandbox.h"
#include "util/atomic_file.h"
#include "util/remove_tree.h"

namespace ca {

namespace fs = std::filesystem;

namespace {

using ArchivePtr = std::unique_ptr<archive, int (*)(archive*)>;
using EntryPtr = std::unique_ptr<archive_entry, void (*)(archive_entry*)>;

std::string archive_message(archive* a) {
  const char* text = archive_error_string(a);
  return text != nullptr ? text : "unknown libarchive error";
}

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= path.size();) {
    size_t end = std::min(path.find('/', start), path.size());
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Why an entry path is unsafe, or "" when it stays inside the destination.
std::string bad_path(std::string_view path) {
  if (path.empty()) return "empty path";
  if (path.front() == '/') return "absolute path";
  for (const auto& part : components(path)) {
    if (part == "..") return "path contains '..'";
  }
  return "";
}

// Why a symlink at `path` with `target` is unsafe. Leading ".." may climb
// from the link's own directory (unpacking never goes through symlinks, so
// that directory is real); a ".." after any other component might follow a
// symlink out of the tree, so it is refused.
std::string bad_symlink(std::string_view path, std::string_view target) {
  if (target.empty()) return "symlink with an empty target";
  if (target.front() == '/') return "symlink to an absolute path '" + std::string(target) + "'";
  auto where = components(path);
  int depth = static_cast<int>(where.size()) - 1;  // directories between the destination and the link
  bool descending = false;
  for (const auto& part : components(target)) {
    if (part == ".") continue;
    if (part != "..") {
      descending = true;
      ++depth;
      continue;
    }
    if (descending || --depth < 0) return "symlink '" + std::string(target) + "' points outside the destination";
  }
  return "";
}

std::expected<void, std::string> add_file(archive* a, const fs::path& file) {
  FILE* in = std::fopen(file.c_str(), "rb");
  if (in == nullptr) return std::unexpected(file.string() + ": " + std::strerror(errno));
  char buffer[65536];
  size_t n;
  std::expected<void, std::string> result;
  while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0) {
    if (archive_write_data(a, buffer, n) < 0) {
      result = std::unexpected(archive_message(a));
      break;
    }
  }
  if (result && std::ferror(in)) result = std::unexpected(file.string() + ": read error");
  std::fclose(in);
  return result;
}

std::expected<void, std::string> add_entry(archive* a, const fs::path& root, const fs::path& relative) {
  fs::path path = root / relative;
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) return std::unexpected(path.string() + ": " + std::strerror(errno));
  EntryPtr entry(archive_entry_new(), archive_entry_free);
  std::string name = relative.generic_string();
  std::string link_target;
  // Owners and times are left out so that equal trees give equal archives.
  if (S_ISDIR(info.st_mode)) {
    archive_entry_set_filetype(entry.get(), AE_IFDIR);
    archive_entry_set_perm(entry.get(), 0755);
  } else if (S_ISREG(info.st_mode)) {
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), (info.st_mode & S_IXUSR) != 0 ? 0755 : 0644);
    archive_entry_set_size(entry.get(), info.st_size);
  } else if (S_ISLNK(info.st_mode)) {
    std::error_code ec;
    link_target = fs::read_symlink(path, ec).string();
    if (ec) return std::unexpected(path.string() + ": " + ec.message());
    archive_entry_set_filetype(entry.get(), AE_IFLNK);
    archive_entry_set_perm(entry.get(), 0777);
    archive_entry_set_symlink(entry.get(), link_target.c_str());
  } else {
    return std::unexpected(path.string() + ": not a directory, regular file or symlink");
  }
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_mtime(entry.get(), 0, 0);
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK) return std::unexpected(name + ": " + archive_message(a));
  if (S_ISREG(info.st_mode)) return add_file(a, path);
  return {};
}

std::string over_quota(const std::string& name) {
  return name + ": the snapshot unpacks to more than " + std::to_string(k_unpack_max_bytes) +
         " bytes (the unpack quota); nothing was kept";
}

// `used`: what the entries so far hold, as k_unpack_max_bytes counts it; grown by each block before it is written.
std::expected<void, std::string> copy_data(archive* in, archive* out, const std::string& name, int64_t& used) {
  const void* block;
  size_t size;
  la_int64_t offset;
  for (;;) {
    int status = archive_read_data_block(in, &block, &size, &offset);
    if (status == ARCHIVE_EOF) return {};
    if (status != ARCHIVE_OK) return std::unexpected(name + ": " + archive_message(in));
    used += int64_t(size);
    if (used > k_unpack_max_bytes) return std::unexpected(over_quota(name));
    if (archive_write_data_block(out, block, size, offset) != ARCHIVE_OK)
      return std::unexpected(name + ": " + archive_message(out));
  }
}

// Extracts every entry of `in` under `root`, checking each first.
std::expected<void, std::string> extract(archive* in, const fs::path& root) {
  ArchivePtr out(archive_write_disk_new(), archive_write_free);
  // Entries were checked, but libarchive checks again as it writes: never
  // through a symlink, never "..". Destinations are absolute (root/name), so
  // its check for absolute paths cannot be used; `root` is symlink-free.
  archive_write_disk_set_options(
      out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  archive_entry* entry;
  int64_t used = 0;
  for (;;) {
    int status = archive_read_next_header(in, &entry);
    if (status == ARCHIVE_EOF) return {};
    if (status != ARCHIVE_OK && status != ARCHIVE_WARN) return std::unexpected(archive_message(in));
    const char* raw_name = archive_entry_pathname(entry);
    std::string name = raw_name != nullptr ? raw_name : "";
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    if (name == "." || name == "./") continue;  // the root itself, as `tar -C dir .` writes it
    std::string why = bad_path(name);
    auto type = archive_entry_filetype(entry);
    const char* hardlink = archive_entry_hardlink(entry);
    if (why.empty() && hardlink != nullptr) {
      why = bad_path(hardlink);
      if (!why.empty()) why = "hardlink: " + why;
    } else if (why.empty() && type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      why = bad_symlink(name, target != nullptr ? target : "");
    } else if (why.empty() && type != AE_IFDIR && type != AE_IFREG) {
      why = "not a directory, regular file or link";
    }
    if (!why.empty()) return std::unexpected("entry '" + name + "': " + why);
    // Its header's size first, so that an entry that cannot fit is refused before a byte of it is written.
    used += k_disk_entry_bytes;
    if (used + std::max<int64_t>(0, archive_entry_size(entry)) > k_unpack_max_bytes)
      return std::unexpected(over_quota("entry '" + name + "'"));
    std::string destination = (root / name).string();
    archive_entry_set_pathname(entry, destination.c_str());
    archive_entry_set_perm(entry, archive_entry_perm(entry) & 0777);  // no setuid, setgid or sticky bits
    std::string link_destination;
    if (hardlink != nullptr) {
      link_destination = (root / hardlink).string();
      archive_entry_set_hardlink(entry, link_destination.c_str());
    }
    if (archive_write_header(out.get(), entry) != ARCHIVE_OK)
      return std::unexpected("entry '" + name + "': " + archive_message(out.get()));
    if (archive_entry_size(entry) > 0) {
      if (auto copied = copy_data(in, out.get(), "entry '" + name + "'", used); !copied) return copied;
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK)
      return std::unexpected("entry '" + name + "': " + archive_message(out.get()));
  }
}

bool is_empty_or_missing(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return true;
  return fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_empty(dir, ec) && !ec;
}

}  // namespace

std::expected<void, std::string> pack_directory(const std::string& dir, const std::string& archive_path) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::unexpected(dir + ": not a directory");
  std::vector<fs::path> entries;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(it->path().lexically_relative(dir));
  }
  if (ec) return std::unexpected(dir + ": " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const fs::path& a, const fs::path& b) { return a.generic_string() < b.generic_string(); });

  auto file = AtomicFile::create(archive_path);
  if (!file) return std::unexpected(file.error());
  ArchivePtr a(archive_write_new(), archive_write_free);
  archive_write_set_format_pax_restricted(a.get());
  bool zstd = archive_path.ends_with(".zst") || archive_path.ends_with(".tzst");
  if ((zstd ? archive_write_add_filter_zstd(a.get()) : archive_write_add_filter_gzip(a.get())) != ARCHIVE_OK) {
    return std::unexpected(archive_path + ": " + archive_message(a.get()));
  }
  if (!zstd) archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr);  // no time in the gzip header
  // Padding the last block with zeros is for tapes; after zstd it is trailing garbage.
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open_FILE(a.get(), file->stream()) != ARCHIVE_OK)
    return std::unexpected(archive_path + ": " + archive_message(a.get()));
  for (const auto& entry : entries) {
    if (auto added = add_entry(a.get(), dir, entry); !added) return added;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return std::unexpected(archive_path + ": " + archive_message(a.get()));
  if (auto committed = file->commit(); !committed) return committed;
  // The temporary file was private (0600); a snapshot is as readable as any other output.
  if (fs::is_regular_file(archive_path, ec)) fs::permissions(archive_path, fs::perms(0644), ec);
  return {};
}

std::expected<void, UnpackError> unpack_archive(const std::string& archive_path, const std::string& dir) {
  auto bad_archive = [](std::string message) { return std::unexpected(UnpackError{std::move(message), false}); };
  auto cannot_write = [](std::string message) { return std::unexpected(UnpackError{std::move(message), true}); };
  ArchivePtr in(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(in.get());
  archive_read_support_format_tar(in.get());
  if (archive_read_open_filename(in.get(), archive_path.c_str(), 65536) != ARCHIVE_OK) {
    return bad_archive(archive_path + ": " + archive_message(in.get()));
  }
  fs::path target = fs::path(dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  if (!is_empty_or_missing(target)) return bad_archive(target.string() + ": already exists and is not empty");
  std::error_code ec;
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), ec);
  std::string pattern = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return cannot_write(pattern + ": " + std::strerror(errno));
  fs::path temp = pattern;
  fs::permissions(temp, fs::perms(0755), ec);
  auto extracted = extract(in.get(), fs::canonical(temp, ec));
  std::expected<void, UnpackError> result;
  if (!extracted) result = bad_archive(archive_path + ": " + extracted.error());
  if (extracted && std::rename(temp.c_str(), target.c_str()) != 0) {
    result = cannot_write(target.string() + ": " + std::strerror(errno));
  }
  if (!result) remove_tree(temp.string());
  return result;
}

}  // namespace ca
