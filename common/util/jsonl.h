// Streaming JSONL: one JSON object a line in, one a line out. Objects keep
// their key order, so fields a tool does not know pass through untouched.
#pragma once

#include <cstdio>
#include <expected>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

namespace ca {

using Json = nlohmann::ordered_json;

/// One input record and where it came from.
struct Record {
  Json value;
  std::string file;  // "<stdin>" for standard input
  size_t line = 0;
  size_t input = 0;  // the file's index among the run's inputs (visit_records), which a journal's key names
  /// "file:line", the prefix of every diagnostic about this record.
  std::string where() const { return file + ":" + std::to_string(line); }
};

/// Where and why `text` is not valid JSON: "line 1, column 17: syntax error ...".
std::string json_parse_error(const std::string& text);

/// How deep arrays and objects may nest in any JSON the tools read. Copying,
/// dumping and walking a value recurse once a level, so a line nested 200,000
/// deep would overflow the stack of whatever touches it after the parse.
inline constexpr int k_max_json_depth = 512;

/// Parses untrusted JSON text. Returns the value, or an error ("invalid JSON: column 17: ...", "JSON nested deeper
/// than 512 levels") and never throws. Every reader of data from outside the process uses this, not Json::parse.
std::expected<Json, std::string> parse_json(const std::string& text);

class JsonlReader {
 public:
  /// interrupted: SIGINT or SIGTERM (util/signals.h) arrived while the read waited; the caller stops with 130.
  enum class Status { record, bad_record, end, io_error, interrupted };

  /// Opens `path`, or standard input for "-". Returns an error message when
  /// the file cannot be opened.
  static std::expected<JsonlReader, std::string> open(const std::string& path);
  JsonlReader(JsonlReader&&) noexcept;
  ~JsonlReader();

  /// Reads the next non-blank line into `record`. On bad_record, `message`
  /// says what is wrong and reading can go on with the next line.
  Status next(Record& record, std::string& message);
  const std::string& name() const { return m_name; }

 private:
  JsonlReader(std::string name, FILE* stream, bool owned);
  std::string m_name;
  FILE* m_stream = nullptr;
  bool m_owned = false;
  size_t m_line = 0;
  std::string m_buffer;
};

class JsonlWriter {
 public:
  enum class Status { ok, broken_pipe, io_error };

  /// Writes to standard output for "-" (flushed per record), else to a
  /// temporary file that commit() renames onto `path`, after removing the
  /// temporaries that killed runs left beside `path` (remove_stale_temporaries).
  static std::expected<JsonlWriter, std::string> open(const std::string& path);

  /// Writes one record as one line.
  Status write(const Json& record);
  /// Flushes and, for files, renames into place. Returns an error message on
  /// failure; a closed pipe on stdout is not one.
  std::expected<void, std::string> commit();

 private:
  explicit JsonlWriter(std::optional<AtomicFile> file);
  std::optional<AtomicFile> m_file;
  FILE* m_stream = nullptr;
  bool m_reader_gone = false;  // stdout's reader closed the pipe
};

}  // namespace ca
