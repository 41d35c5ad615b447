#include "rollout/editor.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "util/atomic_file.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

std::expected<std::string, std::string> string_argument(const Json& arguments, const char* key) {
  auto found = arguments.find(key);
  if (found == arguments.end()) return std::unexpected(std::string("missing argument '") + key + "'");
  if (!found->is_string()) return std::unexpected(std::string("argument '") + key + "' must be a string");
  return found->get<std::string>();
}

bool inside(const fs::path& path, const fs::path& root) {
  auto [end, _] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return end == root.end();
}

size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::string cut_middle(const std::string& text, size_t budget) {
  if (text.size() <= budget) return text;
  std::string note = "\n[... " + std::to_string(text.size() - budget) + " characters cut ...]\n";
  size_t keep = budget > note.size() ? budget - note.size() : 0;
  return text.substr(0, keep / 2) + note + text.substr(text.size() - (keep - keep / 2));
}

FileEditor::FileEditor(std::string workspace, size_t output_budget) : m_budget(output_budget) {
  std::error_code ec;
  m_root = fs::weakly_canonical(workspace, ec).string();
  if (ec) m_root = workspace;
}

std::expected<std::string, std::string> FileEditor::resolve(const std::string& path, Access access) const {
  if (path.empty()) return std::unexpected("empty path");
  fs::path given(path);
  if (given.is_absolute())
    return std::unexpected("path must be relative to the workspace root, e.g. kernels/kernel.cu");
  std::error_code ec;
  // Symlinks the agent made (with bash) are followed here, so the check sees where a write would really land.
  fs::path real = fs::weakly_canonical(fs::path(m_root) / given, ec);
  if (ec) return std::unexpected(path + ": " + ec.message());
  fs::path limit = access == Access::write ? fs::path(m_root) / "kernels" : fs::path(m_root);
  if (!inside(real, limit) || (access == Access::write && real == limit)) {
    return std::unexpected(access == Access::write ? path + ": files may be written only under kernels/"
                                                   : path + ": outside the workspace");
  }
  return real.string();
}

std::expected<std::string, std::string> FileEditor::view(const std::string& path, const std::string& file,
                                                         const Json& arguments) const {
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    std::string listing;
    for (auto it = fs::recursive_directory_iterator(file, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it.depth() > 1) {
        it.disable_recursion_pending();
        continue;
      }
      listing += fs::relative(it->path(), m_root, ec).string() + (it->is_directory(ec) ? "/\n" : "\n");
    }
    return cut_middle(listing.empty() ? "(empty directory)\n" : listing, m_budget);
  }
  auto contents = read_file(file);
  if (!contents) return std::unexpected(path + ": no such file");
  auto lines = split_lines(*contents);
  int64_t first = 1, last = int64_t(lines.size());
  if (auto range = arguments.find("view_range"); range != arguments.end()) {
    if (!range->is_array() || range->size() != 2 || !(*range)[0].is_number_integer() ||
        !(*range)[1].is_number_integer()) {
      return std::unexpected("view_range must be [first_line, last_line] (last_line -1: to the end)");
    }
    first = (*range)[0].get<int64_t>();
    last = (*range)[1].get<int64_t>() == -1 ? int64_t(lines.size()) : (*range)[1].get<int64_t>();
    if (first < 1 || first > last || last > int64_t(lines.size())) {
      return std::unexpected("view_range [" + std::to_string(first) + ", " + std::to_string(last) +
                             "] is outside the file's " + std::to_string(lines.size()) + " lines");
    }
  }
  std::string shown;
  for (int64_t i = first; i <= last; ++i) shown += std::to_string(i) + "\t" + lines[size_t(i - 1)] + "\n";
  return cut_middle(shown, m_budget);
}

std::expected<std::string, std::string> FileEditor::write(const std::string& path, const std::string& file,
                                                          std::string contents) {
  std::error_code ec;
  std::optional<std::string> before;
  if (auto old = read_file(file)) before = std::move(*old);
  fs::create_directories(fs::path(file).parent_path(), ec);
  if (auto written = write_file_atomic(file, contents); !written) return std::unexpected(path + ": " + written.error());
  m_history[file].push_back(std::move(before));
  return path;
}

std::expected<std::string, std::string> FileEditor::run(const Json& arguments) {
  auto command = string_argument(arguments, "command");
  if (!command) return std::unexpected(command.error());
  auto path = string_argument(arguments, "path");
  if (!path) return std::unexpected(path.error());
  bool reads = *command == "view";
  if (!reads && *command != "create" && *command != "str_replace" && *command != "insert" && *command != "undo_edit") {
    return std::unexpected("unknown command '" + *command +
                           "': expected view, create, str_replace, insert or undo_edit");
  }
  auto file = resolve(*path, reads ? Access::read : Access::write);
  if (!file) return std::unexpected(file.error());
  if (reads) return view(*path, *file, arguments);

  if (*command == "create") {
    auto text = string_argument(arguments, "file_text");
    if (!text) return std::unexpected(text.error());
    auto written = write(*path, *file, *text);
    if (!written) return written;
    return "created " + *path + " (" + std::to_string(text->size()) + " bytes)";
  }
  if (*command == "undo_edit") {
    auto history = m_history.find(*file);
    if (history == m_history.end() || history->second.empty())
      return std::unexpected("no edit of " + *path + " to undo");
    std::optional<std::string> before = std::move(history->second.back());
    history->second.pop_back();
    std::error_code ec;
    if (!before) {
      fs::remove(*file, ec);
      return "undid the creation of " + *path;
    }
    if (auto written = write_file_atomic(*file, *before); !written)
      return std::unexpected(*path + ": " + written.error());
    return "restored " + *path + " to before its last edit";
  }
  auto contents = read_file(*file);
  if (!contents) return std::unexpected(*path + ": no such file (create it first)");
  auto new_str = arguments.contains("new_str") ? string_argument(arguments, "new_str")
                                               : std::expected<std::string, std::string>("");
  if (!new_str) return std::unexpected(new_str.error());
  if (*command == "str_replace") {
    auto old_str = string_argument(arguments, "old_str");
    if (!old_str) return std::unexpected(old_str.error());
    if (old_str->empty()) return std::unexpected("old_str is empty");
    size_t count = count_occurrences(*contents, *old_str);
    if (count != 1) {
      return std::unexpected(count == 0 ? "old_str does not occur in " + *path
                                        : "old_str occurs " + std::to_string(count) + " times in " + *path +
                                              "; make it unique");
    }
    std::string edited = *contents;
    edited.replace(edited.find(*old_str), old_str->size(), *new_str);
    auto written = write(*path, *file, std::move(edited));
    if (!written) return written;
    return "replaced 1 occurrence in " + *path;
  }
  auto line = arguments.find("insert_line");
  if (line == arguments.end() || !line->is_number_integer())
    return std::unexpected("insert needs an integer insert_line");
  auto lines = split_lines(*contents);
  int64_t after = line->get<int64_t>();
  if (after < 0 || after > int64_t(lines.size())) {
    return std::unexpected("insert_line " + std::to_string(after) + " is outside 0.." + std::to_string(lines.size()));
  }
  auto added = split_lines(*new_str);
  if (added.empty()) added.push_back("");
  lines.insert(lines.begin() + after, added.begin(), added.end());
  std::string edited;
  for (const auto& text : lines) edited += text + "\n";
  // The file keeps whether it ended with a newline.
  if (!contents->empty() && contents->back() != '\n') edited.pop_back();
  auto written = write(*path, *file, std::move(edited));
  if (!written) return written;
  return "inserted after line " + std::to_string(after) + " of " + *path;
}

}  // namespace ca
