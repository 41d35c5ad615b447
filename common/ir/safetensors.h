// The safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length, a JSON header mapping each key to
// {dtype, shape, data_offsets}, then the raw little-endian data. KernelBench
// imports keep their weights in such files; the IR's file init reads them.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace ca {

struct SafetensorsEntry {
  std::string key;
  DType dtype = DType::float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data that follows the header
  uint64_t end = 0;
};

/// The entries of a file, in header order ("__metadata__" is skipped). Errors
/// name the file: bad header length, invalid JSON, unknown dtypes, offsets
/// that disagree with shape and dtype or lie past the end of the file.
std::expected<std::vector<SafetensorsEntry>, std::string> read_safetensors_header(const std::string& path);

/// The bytes of tensor `key`, which must have `dtype` and `shape`; the error
/// names the file and the key.
std::expected<std::vector<uint8_t>, std::string> read_safetensors_tensor(const std::string& path,
                                                                         const std::string& key, DType dtype,
                                                                         const std::vector<int64_t>& shape);

struct SafetensorsTensor {
  std::string key;
  DType dtype = DType::float32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // numel * dtype_size bytes, little-endian
};

/// Writes `tensors` in order, atomically (util/atomic_file.h).
std::expected<void, std::string> write_safetensors(const std::string& path,
                                                   const std::vector<SafetensorsTensor>& tensors);

/// The format's dtype names ("F32", "BF16", "BOOL", ...).
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace ca
