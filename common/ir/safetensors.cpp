#include "ir/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "util/atomic_file.h"
#include "util/jsonl.h"
#include "util/spell.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so are tensors here");

// The format caps the header at 100 MB; a larger length means a corrupt file.
constexpr uint64_t k_max_header = 100'000'000;

constexpr std::array<std::pair<DType, std::string_view>, 10> k_names = {{
    {DType::float32, "F32"},
    {DType::float64, "F64"},
    {DType::float16, "F16"},
    {DType::bfloat16, "BF16"},
    {DType::int64, "I64"},
    {DType::int32, "I32"},
    {DType::int16, "I16"},
    {DType::int8, "I8"},
    {DType::uint8, "U8"},
    {DType::boolean, "BOOL"},
}};

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

std::expected<File, std::string> open(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return Error(path + ": cannot open: " + std::strerror(errno));
  return file;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

struct Header {
  std::vector<SafetensorsEntry> entries;
  uint64_t data_start = 0;
};

std::expected<SafetensorsEntry, std::string> parse_entry(const std::string& key, const Json& json,
                                                         const std::string& where, uint64_t data_size) {
  if (!json.is_object()) return Error(where + ": expected an object");
  auto dtype = json.find("dtype");
  auto shape = json.find("shape");
  auto offsets = json.find("data_offsets");
  if (dtype == json.end() || !dtype->is_string()) return Error(where + ".dtype: missing or not a string");
  if (shape == json.end() || !shape->is_array()) return Error(where + ".shape: missing or not an array");
  if (offsets == json.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return Error(where + ".data_offsets: expected [begin, end]");
  }
  SafetensorsEntry entry;
  entry.key = key;
  auto name = dtype->get<std::string>();
  auto it = std::find_if(k_names.begin(), k_names.end(), [&](const auto& pair) { return pair.second == name; });
  if (it == k_names.end()) return Error(where + ".dtype: unsupported dtype '" + name + "'");
  entry.dtype = it->first;
  uint64_t numel = 1;
  for (const auto& size : *shape) {
    if (!size.is_number_unsigned()) return Error(where + ".shape: expected sizes >= 0");
    entry.shape.push_back(size.get<int64_t>());
    numel *= size.get<uint64_t>();
  }
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end - entry.begin != numel * dtype_size(entry.dtype)) {
    return Error(where + ".data_offsets: " + std::to_string(entry.end - entry.begin) + " bytes do not hold " + name +
                 " " + shape_text(entry.shape));
  }
  if (entry.end > data_size) return Error(where + ".data_offsets: past the end of the file");
  return entry;
}

std::expected<Header, std::string> read_header(FILE* file, const std::string& path) {
  std::array<unsigned char, 8> length_bytes{};
  if (std::fread(length_bytes.data(), 1, 8, file) != 8)
    return Error(path + ": not a safetensors file (shorter than 8 bytes)");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[size_t(i)];
  if (std::fseek(file, 0, SEEK_END) != 0) return Error(path + ": cannot seek");
  const auto file_size = uint64_t(std::ftell(file));
  if (length > k_max_header || 8 + length > file_size) {
    return Error(path + ": not a safetensors file (header length " + std::to_string(length) + " does not fit)");
  }
  std::string text(length, '\0');
  std::fseek(file, 8, SEEK_SET);
  if (std::fread(text.data(), 1, length, file) != length) return Error(path + ": cannot read the header");
  auto parsed = parse_json(text);
  if (!parsed || !parsed->is_object()) return Error(path + ": the header is not a JSON object");
  Json json = std::move(*parsed);
  Header header;
  header.data_start = 8 + length;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    auto entry = parse_entry(it.key(), it.value(), path + ": '" + it.key() + "'", file_size - header.data_start);
    if (!entry) return Error(entry.error());
    header.entries.push_back(std::move(*entry));
  }
  return header;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& [type, name] : k_names) {
    if (type == dtype) return name;
  }
  return "?";
}

std::expected<std::vector<SafetensorsEntry>, std::string> read_safetensors_header(const std::string& path) {
  auto file = open(path);
  if (!file) return Error(file.error());
  auto header = read_header(file->get(), path);
  if (!header) return Error(header.error());
  return std::move(header->entries);
}

std::expected<std::vector<uint8_t>, std::string> read_safetensors_tensor(const std::string& path,
                                                                         const std::string& key, DType dtype,
                                                                         const std::vector<int64_t>& shape) {
  auto file = open(path);
  if (!file) return Error(file.error());
  auto header = read_header(file->get(), path);
  if (!header) return Error(header.error());
  auto it = std::find_if(header->entries.begin(), header->entries.end(), [&](const auto& e) { return e.key == key; });
  if (it == header->entries.end()) {
    std::vector<std::string> keys;
    for (const auto& e : header->entries) keys.push_back(e.key);
    return Error(path + ": no tensor '" + key + "'" + did_you_mean(key, keys));
  }
  if (it->dtype != dtype || it->shape != shape) {
    return Error(path + ": tensor '" + key + "' is " + std::string(dtype_name(it->dtype)) + " " +
                 shape_text(it->shape) + ", the spec says " + std::string(dtype_name(dtype)) + " " + shape_text(shape));
  }
  std::vector<uint8_t> bytes(it->end - it->begin);
  if (fseeko(file->get(), off_t(header->data_start + it->begin), SEEK_SET) != 0 ||
      std::fread(bytes.data(), 1, bytes.size(), file->get()) != bytes.size()) {
    return Error(path + ": cannot read tensor '" + key + "'");
  }
  return bytes;
}

std::expected<void, std::string> write_safetensors(const std::string& path,
                                                   const std::vector<SafetensorsTensor>& tensors) {
  Json header = Json::object();
  uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    header[tensor.key] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                          {"shape", tensor.shape},
                          {"data_offsets", {offset, offset + tensor.bytes.size()}}};
    offset += tensor.bytes.size();
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::array<unsigned char, 8> length{};
  for (size_t i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));
  auto file = AtomicFile::create(path);
  if (!file) return Error(file.error());
  bool ok = std::fwrite(length.data(), 1, 8, file->stream()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), file->stream()) == text.size();
  for (const auto& tensor : tensors) {
    ok = ok && std::fwrite(tensor.bytes.data(), 1, tensor.bytes.size(), file->stream()) == tensor.bytes.size();
  }
  if (!ok) return Error(path + ": write failed");
  return file->commit();
}

}  // namespace ca
