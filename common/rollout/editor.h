// The agent's file editor (the str_replace_editor tool): view, create,
// str_replace, insert, undo_edit. It runs in the harness, outside the sandbox,
// so every path is resolved (symlinks too) and must stay inside the workspace
// to be read and inside its kernels/ to be written.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/jsonl.h"

namespace ca {

class FileEditor {
 public:
  /// `workspace`: the workspace's root directory; `output_budget`: characters of a view.
  FileEditor(std::string workspace, size_t output_budget);

  /// Runs one command with the tool's arguments. Returns the text for the
  /// agent; an error is also text for the agent ("old_str occurs 2 times in
  /// kernels/a.cu; make it unique"), never a thrown exception.
  std::expected<std::string, std::string> run(const Json& arguments);

 private:
  enum class Access { read, write };
  std::expected<std::string, std::string> resolve(const std::string& path, Access access) const;
  std::expected<std::string, std::string> view(const std::string& path, const std::string& file,
                                               const Json& arguments) const;
  std::expected<std::string, std::string> write(const std::string& path, const std::string& file, std::string contents);

  std::string m_root;
  size_t m_budget;
  std::map<std::string, std::vector<std::optional<std::string>>> m_history;  // earlier contents; nullopt: no file
};

/// `text` cut to at most `budget` characters by dropping its middle, with a
/// line saying how much was dropped, so a compiler's first and last errors
/// both stay readable.
std::string cut_middle(const std::string& text, size_t budget);

}  // namespace ca
