#include "util/jsonl.h"

#include <cerrno>
#include <cstring>

#include "util/signals.h"

namespace ca {

std::expected<JsonlReader, std::string> JsonlReader::open(const std::string& path) {
  if (path == "-") return JsonlReader("<stdin>", stdin, false);
  FILE* stream = std::fopen(path.c_str(), "r");
  if (stream == nullptr) return std::unexpected(path + ": cannot open: " + std::strerror(errno));
  return JsonlReader(path, stream, true);
}

JsonlReader::JsonlReader(std::string name, FILE* stream, bool owned)
    : m_name(std::move(name)), m_stream(stream), m_owned(owned) {}

JsonlReader::JsonlReader(JsonlReader&& other) noexcept
    : m_name(std::move(other.m_name)), m_stream(other.m_stream), m_owned(other.m_owned), m_line(other.m_line) {
  other.m_stream = nullptr;
}

JsonlReader::~JsonlReader() {
  if (m_owned && m_stream != nullptr) std::fclose(m_stream);
}

namespace {

bool is_blank(const std::string& line) {
  return line.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Learns where a line that failed to parse went wrong, without exceptions.
struct ErrorFinder : nlohmann::json_sax<Json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 17: ..." -> "line 1, column 17: ..."
    message = e.what();
    auto at = message.find("line ");
    if (at != std::string::npos) message = message.substr(at);
    return false;
  }
};

}  // namespace

std::string json_parse_error(const std::string& text) {
  ErrorFinder finder;
  Json::sax_parse(text, &finder);
  return finder.message;
}

namespace {

// Whether brackets outside strings nest deeper than `limit`; a scan without recursion, before any parse.
bool nests_deeper_than(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote perhaps
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

std::expected<Json, std::string> parse_json(const std::string& text) {
  if (nests_deeper_than(text, k_max_json_depth)) {
    return std::unexpected("JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels");
  }
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded()) return value;
  // One record is one line, so only the column says where.
  std::string where = json_parse_error(text);
  if (where.starts_with("line 1, ")) where.erase(0, 8);
  return std::unexpected("invalid JSON: " + where);
}

JsonlReader::Status JsonlReader::next(Record& record, std::string& message) {
  for (;;) {
    m_buffer.clear();
    int c;
    for (;;) {
      while ((c = std::getc(m_stream)) != EOF && c != '\n') m_buffer.push_back(static_cast<char>(c));
      if (c != EOF || !std::ferror(m_stream)) break;
      // The handlers are installed without SA_RESTART (util/signals.h), so a signal ends a waiting read with EINTR:
      // SIGINT or SIGTERM asks the tool to stop; another signal's interruption reads on from where it was.
      if (errno != EINTR) {
        message = std::string("read failed: ") + std::strerror(errno);
        return Status::io_error;
      }
      if (interrupted()) {
        message = "interrupted";
        return Status::interrupted;
      }
      std::clearerr(m_stream);
    }
    if (c == EOF && m_buffer.empty()) return Status::end;
    ++m_line;
    if (is_blank(m_buffer)) continue;

    record.file = m_name;
    record.line = m_line;
    auto parsed = parse_json(m_buffer);
    if (!parsed) {
      message = parsed.error();
      return Status::bad_record;
    }
    record.value = std::move(*parsed);
    if (!record.value.is_object()) {
      message = std::string("expected a JSON object, got ") + record.value.type_name();
      return Status::bad_record;
    }
    return Status::record;
  }
}

std::expected<JsonlWriter, std::string> JsonlWriter::open(const std::string& path) {
  if (path == "-") return JsonlWriter(std::nullopt);
  remove_stale_temporaries(path);
  auto file = AtomicFile::create(path);
  if (!file) return std::unexpected(file.error());
  return JsonlWriter(std::move(*file));
}

JsonlWriter::JsonlWriter(std::optional<AtomicFile> file) : m_file(std::move(file)) {
  m_stream = m_file ? m_file->stream() : stdout;
}

JsonlWriter::Status JsonlWriter::write(const Json& record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += '\n';
  bool ok = std::fwrite(line.data(), 1, line.size(), m_stream) == line.size();
  if (ok && !m_file) ok = std::fflush(m_stream) == 0;
  if (ok) return Status::ok;
  if (errno != EPIPE) return Status::io_error;
  m_reader_gone = true;
  return Status::broken_pipe;
}

std::expected<void, std::string> JsonlWriter::commit() {
  if (m_file) return m_file->commit();
  if (m_reader_gone) return {};
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    return std::unexpected(std::string("<stdout>: writing output failed: ") + std::strerror(errno));
  }
  return {};
}

}  // namespace ca
