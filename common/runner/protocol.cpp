// Parsing and writing of the runner's request and results (see protocol.h), with errors that name the field.
#include "runner/protocol.h"

#include <algorithm>
#include <cstring>

#include "util/json_field.h"
#include "util/spell.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

std::expected<uint64_t, std::string> as_uint(const Json& value, std::string_view path) {
  // nlohmann stores every non-negative integer literal as unsigned, so this admits 0..2^64-1 and nothing else.
  if (!value.is_number_unsigned())
    return Error(std::string(path) + ": expected an unsigned integer, got " + json_type(value));
  return value.get<uint64_t>();
}

std::expected<int32_t, std::string> int_at_least(const Json& json, std::string_view key, std::string_view path,
                                                 int32_t low, int32_t fallback) {
  auto it = json.find(std::string(key));
  if (it == json.end()) return fallback;
  auto value = as_int(*it, field_path(path, key));
  if (!value) return Error(value.error());
  if (*value < low || *value > INT32_MAX)
    return Error(field_path(path, key) + ": " + std::to_string(*value) + " is out of range (at least " +
                 std::to_string(low) + ")");
  return int32_t(*value);
}

std::expected<DType, std::string> dtype_field(const Json& json, std::string_view path) {
  auto name = string_field(json, "dtype", path);
  if (!name) return Error(name.error());
  auto dtype = parse_dtype(*name);
  if (!dtype) {
    return Error(field_path(path, "dtype") + ": unknown dtype '" + *name + "'" + did_you_mean(*name, dtype_names()) +
                 " (one of " + quoted_list(dtype_names()) + ")");
  }
  return *dtype;
}

std::expected<const Json*, std::string> array_field(const Json& json, std::string_view key, std::string_view path) {
  auto field = require_field(json, key, path);
  if (!field) return Error(field.error());
  if (!(*field)->is_array()) return Error(field_path(path, key) + ": expected an array, got " + json_type(**field));
  return *field;
}

// parse_program owns the rules for a TensorSpec (names, dtypes, shapes, inits), so the list is checked as the inputs
// of a program that just returns its first tensor, and the error paths are renamed back.
std::expected<std::vector<TensorSpec>, std::string> parse_tensor_specs(const Json& list, std::string_view path) {
  for (size_t i = 0; i < list.size(); ++i) {
    auto init = require_field(list[i], "init", index_path(path, i));
    if (!init) return Error(init.error());
  }
  if (list.empty()) return std::vector<TensorSpec>{};
  auto name = list[0].find("name");
  Json anchor = name != list[0].end() && name->is_string() ? *name : Json("t");
  Json program = {{"inputs", list}, {"nodes", Json::array()}, {"outputs", Json::array({anchor})}};
  const std::string wrapped = "\x01";
  auto parsed = parse_program(program, wrapped);
  if (parsed) return std::move(parsed->inputs);
  std::string message = parsed.error();
  const std::string prefix = wrapped + ".inputs";
  if (message.starts_with(prefix)) message = std::string(path) + message.substr(prefix.size());
  return Error(message);
}

std::expected<OutputSpec, std::string> parse_output(const Json& json, std::string_view path) {
  if (auto ok = check_known_fields(json, {"dtype", "shape"}, path); !ok) return Error(ok.error());
  OutputSpec output;
  auto dtype = dtype_field(json, path);
  if (!dtype) return Error(dtype.error());
  output.dtype = *dtype;
  auto shape = int_list_field(json, "shape", path);
  if (!shape) return Error(shape.error());
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] < 0)
      return Error(index_path(field_path(path, "shape"), i) + ": negative size " + std::to_string((*shape)[i]));
  }
  output.shape = std::move(*shape);
  return output;
}

// A call's own tensors may change how values are drawn, never what the candidate is handed.
std::expected<void, std::string> check_same_layout(const std::vector<TensorSpec>& own,
                                                   const std::vector<TensorSpec>& request, std::string_view path) {
  if (own.size() != request.size()) {
    return Error(std::string(path) + ": " + std::to_string(own.size()) + " tensor(s), the request has " +
                 std::to_string(request.size()));
  }
  for (size_t i = 0; i < own.size(); ++i) {
    if (own[i].name != request[i].name || own[i].dtype != request[i].dtype || own[i].shape != request[i].shape) {
      return Error(index_path(path, i) + ": '" + own[i].name + "' differs from request.tensors[" + std::to_string(i) +
                   "] in name, dtype or shape; only init may differ");
    }
  }
  return {};
}

std::expected<uint64_t, std::string> uint_field(const Json& json, std::string_view key, std::string_view path) {
  auto field = require_field(json, key, path);
  if (!field) return Error(field.error());
  return as_uint(**field, field_path(path, key));
}

std::expected<std::string, std::string> path_field(const Json& json, std::string_view key, std::string_view path) {
  auto field = string_field(json, key, path);
  if (!field) return Error(field.error());
  if (field->empty()) return Error(field_path(path, key) + ": empty path");
  return field;
}

std::expected<OutputRegionSpec, std::string> parse_region(const Json& json, std::string_view path) {
  if (!json.is_object()) return Error(std::string(path) + ": expected an object, got " + json_type(json));
  if (auto ok = check_known_fields(json, {"path", "bytes"}, path); !ok) return Error(ok.error());
  OutputRegionSpec region;
  auto file = path_field(json, "path", path);
  if (!file) return Error(file.error());
  region.path = std::move(*file);
  auto bytes = uint_field(json, "bytes", path);
  if (!bytes) return Error(bytes.error());
  region.bytes = *bytes;
  return region;
}

std::expected<CallSpec, std::string> parse_call(const Json& json, std::string_view path, const RunRequest& request) {
  if (auto ok = check_known_fields(json, {"seed", "output_offsets", "tensors"}, path); !ok) return Error(ok.error());
  CallSpec call;
  // A served request has no seeds: each call's comes over the pipe when the call starts (serve_requests).
  if (json.contains("seed")) {
    auto seed = uint_field(json, "seed", path);
    if (!seed) return Error(seed.error());
    call.seed = *seed;
  }
  auto offsets = array_field(json, "output_offsets", path);
  if (!offsets) return Error(offsets.error());
  const std::string offsets_path = field_path(path, "output_offsets");
  if ((*offsets)->size() != request.outputs.size()) {
    return Error(offsets_path + ": " + std::to_string((*offsets)->size()) + " offset(s), the request has " +
                 std::to_string(request.outputs.size()) + " output(s)");
  }
  for (size_t k = 0; k < (*offsets)->size(); ++k) {
    auto offset = as_uint((**offsets)[k], index_path(offsets_path, k));
    if (!offset) return Error(offset.error());
    const uint64_t bytes = request.outputs[k].bytes(), size = request.output_region.bytes;
    if (*offset > size || bytes > size - *offset) {
      return Error(index_path(offsets_path, k) + ": " + std::to_string(bytes) + " bytes at offset " +
                   std::to_string(*offset) + " do not fit in the output region of " + std::to_string(size) + " bytes");
    }
    call.output_offsets.push_back(*offset);
  }
  if (auto own = json.find("tensors"); own != json.end()) {
    auto tensors_path = field_path(path, "tensors");
    if (!own->is_array()) return Error(tensors_path + ": expected an array, got " + json_type(*own));
    auto specs = parse_tensor_specs(*own, tensors_path);
    if (!specs) return Error(specs.error());
    if (auto same = check_same_layout(*specs, request.tensors, tensors_path); !same) return Error(same.error());
    call.tensors = std::move(*specs);
  }
  return call;
}

// A later call would overwrite an earlier call's outputs before the trusted side reads them.
std::expected<void, std::string> check_disjoint(const RunRequest& request, std::string_view path) {
  struct Slice {
    uint64_t begin, end;
    size_t call, output;
  };
  std::vector<Slice> slices;
  for (size_t i = 0; i < request.calls.size(); ++i) {
    for (size_t k = 0; k < request.outputs.size(); ++k) {
      const uint64_t begin = request.calls[i].output_offsets[k], bytes = request.outputs[k].bytes();
      if (bytes > 0) slices.push_back({begin, begin + bytes, i, k});
    }
  }
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) { return a.begin < b.begin; });
  for (size_t j = 1; j < slices.size(); ++j) {
    const Slice &earlier = slices[j - 1], &later = slices[j];
    if (later.begin >= earlier.end) continue;
    const Slice& first =
        earlier.call < later.call || (earlier.call == later.call && earlier.output < later.output) ? earlier : later;
    const Slice& second = &first == &earlier ? later : earlier;
    return Error(
        index_path(field_path(index_path(field_path(path, "calls"), second.call), "output_offsets"), second.output) +
        ": output " + std::to_string(second.output) + " overlaps output " + std::to_string(first.output) + " of call " +
        std::to_string(first.call) + " in the output region");
  }
  return {};
}

// The trusted side's input slot: every tensor inside the region, at the request's offsets, on its own pages.
std::expected<void, std::string> check_input_slot(const RunRequest& request, std::string_view path) {
  const std::string offsets_path = field_path(path, "input_offsets");
  if (request.backend != Backend::cpu)
    return Error(field_path(path, "input_region") + ": only the cpu backend takes its inputs from a region");
  if (request.input_offsets.size() != request.tensors.size()) {
    return Error(offsets_path + ": " + std::to_string(request.input_offsets.size()) + " offset(s), the request has " +
                 std::to_string(request.tensors.size()) + " tensor(s)");
  }
  const uint64_t size = request.input_region->bytes;
  for (size_t k = 0; k < request.tensors.size(); ++k) {
    const uint64_t offset = request.input_offsets[k],
                   bytes = uint64_t(request.tensors[k].numel()) * dtype_size(request.tensors[k].dtype);
    if (offset % 64 != 0 || offset > size || bytes > size - offset) {
      return Error(index_path(offsets_path, k) + ": " + std::to_string(bytes) + " bytes at offset " +
                   std::to_string(offset) + " are not 64-byte aligned inside the input region of " +
                   std::to_string(size) + " bytes");
    }
  }
  return {};
}

const std::vector<std::string> k_request_fields = {"library",    "backend",      "device_index", "num_threads",
                                                   "tensors",    "outputs",      "calls",        "output_region",
                                                   "output_dir", "input_region", "input_offsets"};
const std::vector<std::string> k_backends = {"cpu", "cuda"};

}  // namespace

int64_t OutputSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t OutputSpec::bytes() const {
  return size_t(numel()) * dtype_size(dtype);
}

std::expected<RunRequest, std::string> parse_request(const Json& json, std::string_view path) {
  if (auto ok = check_known_fields(json, k_request_fields, path); !ok) return Error(ok.error());
  RunRequest request;
  auto library = path_field(json, "library", path);
  if (!library) return Error(library.error());
  request.library = std::move(*library);

  auto backend = string_field(json, "backend", path);
  if (!backend) return Error(backend.error());
  if (std::find(k_backends.begin(), k_backends.end(), *backend) == k_backends.end()) {
    return Error(field_path(path, "backend") + ": unknown backend '" + *backend + "'" +
                 did_you_mean(*backend, k_backends) + " (one of " + quoted_list(k_backends) + ")");
  }
  request.backend = *backend == "cuda" ? Backend::cuda : Backend::cpu;

  auto device_index = int_at_least(json, "device_index", path, 0, 0);
  if (!device_index) return Error(device_index.error());
  request.device_index = *device_index;
  auto num_threads = int_at_least(json, "num_threads", path, 1, 1);
  if (!num_threads) return Error(num_threads.error());
  request.num_threads = *num_threads;

  auto tensors = array_field(json, "tensors", path);
  if (!tensors) return Error(tensors.error());
  auto specs = parse_tensor_specs(**tensors, field_path(path, "tensors"));
  if (!specs) return Error(specs.error());
  request.tensors = std::move(*specs);

  auto outputs = array_field(json, "outputs", path);
  if (!outputs) return Error(outputs.error());
  if ((*outputs)->empty()) return Error(field_path(path, "outputs") + ": expected at least one output");
  for (size_t i = 0; i < (*outputs)->size(); ++i) {
    auto output = parse_output((**outputs)[i], index_path(field_path(path, "outputs"), i));
    if (!output) return Error(output.error());
    request.outputs.push_back(std::move(*output));
  }

  auto region = require_field(json, "output_region", path);
  if (!region) return Error(region.error());
  auto region_spec = parse_region(**region, field_path(path, "output_region"));
  if (!region_spec) return Error(region_spec.error());
  request.output_region = std::move(*region_spec);

  auto calls = array_field(json, "calls", path);
  if (!calls) return Error(calls.error());
  for (size_t i = 0; i < (*calls)->size(); ++i) {
    auto call = parse_call((**calls)[i], index_path(field_path(path, "calls"), i), request);
    if (!call) return Error(call.error());
    request.calls.push_back(std::move(*call));
  }
  if (auto disjoint = check_disjoint(request, path); !disjoint) return Error(disjoint.error());

  if (json.contains("input_region") != json.contains("input_offsets")) {
    return Error(std::string(path) + ": input_region and input_offsets go together");
  }
  if (json.contains("input_region")) {
    auto input_region = parse_region(json["input_region"], field_path(path, "input_region"));
    if (!input_region) return Error(input_region.error());
    request.input_region = std::move(*input_region);
    auto offsets = array_field(json, "input_offsets", path);
    if (!offsets) return Error(offsets.error());
    for (size_t k = 0; k < (*offsets)->size(); ++k) {
      auto offset = as_uint((**offsets)[k], index_path(field_path(path, "input_offsets"), k));
      if (!offset) return Error(offset.error());
      request.input_offsets.push_back(*offset);
    }
    if (auto slot = check_input_slot(request, path); !slot) return Error(slot.error());
  }

  auto output_dir = path_field(json, "output_dir", path);
  if (!output_dir) return Error(output_dir.error());
  request.output_dir = std::move(*output_dir);
  return request;
}

std::expected<RunRequest, std::string> parse_request_text(const std::string& text, std::string_view path) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return Error(std::string(path) + ": invalid JSON: " + json_parse_error(text));
  }
  return parse_request(json, path);
}

Json to_json(const RunRequest& request) {
  auto tensors_json = [](const std::vector<TensorSpec>& specs) {
    Json list = Json::array();
    for (const auto& spec : specs) {
      list.push_back({{"name", spec.name},
                      {"dtype", dtype_name(spec.dtype)},
                      {"shape", spec.shape},
                      {"init", to_json(spec.init)}});
    }
    return list;
  };
  Json outputs = Json::array();
  for (const auto& output : request.outputs)
    outputs.push_back({{"dtype", dtype_name(output.dtype)}, {"shape", output.shape}});
  Json calls = Json::array();
  for (const auto& call : request.calls) {
    Json entry = {{"seed", call.seed}, {"output_offsets", call.output_offsets}};
    if (call.tensors) entry["tensors"] = tensors_json(*call.tensors);
    calls.push_back(std::move(entry));
  }
  Json json = {{"library", request.library},
               {"backend", backend_name(request.backend)},
               {"device_index", request.device_index},
               {"num_threads", request.num_threads},
               {"tensors", tensors_json(request.tensors)},
               {"outputs", std::move(outputs)},
               {"calls", std::move(calls)},
               {"output_region", {{"path", request.output_region.path}, {"bytes", request.output_region.bytes}}},
               {"output_dir", request.output_dir}};
  if (request.input_region) {
    json["input_region"] = {{"path", request.input_region->path}, {"bytes", request.input_region->bytes}};
    json["input_offsets"] = request.input_offsets;
  }
  return json;
}

Json to_json(const CallReport& result) {
  Json json = {{"call", result.call},
               {"seed", result.seed},
               {"rc", result.rc},
               {"inputs_changed", result.inputs_changed},
               {"changed_inputs", result.changed_inputs},
               {"wall_us", result.wall_us},
               {"device_us", result.device_us}};
  if (!result.cuda_error.empty()) json["cuda_error"] = result.cuda_error;
  if (!result.workspace_error.empty()) json["workspace_error"] = result.workspace_error;
  if (result.own_launches >= 0) json["own_launches"] = result.own_launches;
  if (result.output_bytes >= 0) json["output_bytes"] = result.output_bytes;
  json["ok"] = result.ok();
  return json;
}

Json loaded_event(const Json& facts) {
  Json event = facts;
  event["event"] = "loaded";
  return event;
}

Json load_failed_event(std::string_view message) {
  return {{"event", "load_failed"}, {"message", message}};
}

namespace {

std::expected<CallReport, std::string> parse_call_result(const Json& json, std::string_view where) {
  CallReport result;
  for (auto [key, target] : {std::pair{"call", &result.call}, std::pair{"seed", &result.seed}}) {
    auto field = require_field(json, key, where);
    if (!field) return Error(field.error());
    auto value = as_uint(**field, field_path(where, key));
    if (!value) return Error(value.error());
    *target = *value;
  }
  auto rc = require_field(json, "rc", where);
  if (!rc) return Error(rc.error());
  auto rc_value = as_int(**rc, field_path(where, "rc"));
  if (!rc_value) return Error(rc_value.error());
  result.rc = *rc_value;
  auto changed = require_field(json, "inputs_changed", where);
  if (!changed) return Error(changed.error());
  if (!(*changed)->is_boolean())
    return Error(field_path(where, "inputs_changed") + ": expected a boolean, got " + json_type(**changed));
  result.inputs_changed = (*changed)->get<bool>();
  if (auto list = json.find("changed_inputs"); list != json.end()) {
    auto indices = as_int_list(*list, field_path(where, "changed_inputs"));
    if (!indices) return Error(indices.error());
    for (int64_t index : *indices) result.changed_inputs.push_back(uint64_t(index));
  }
  auto wall = require_field(json, "wall_us", where);
  if (!wall) return Error(wall.error());
  auto wall_value = as_number(**wall, field_path(where, "wall_us"));
  if (!wall_value) return Error(wall_value.error());
  result.wall_us = *wall_value;
  // Optional: a runner of an earlier version wrote only the host clock.
  result.device_us = result.wall_us;
  if (auto device = json.find("device_us"); device != json.end()) {
    auto value = as_number(*device, field_path(where, "device_us"));
    if (!value) return Error(value.error());
    result.device_us = *value;
  }
  if (auto error = json.find("cuda_error"); error != json.end()) {
    auto text = as_string(*error, field_path(where, "cuda_error"));
    if (!text) return Error(text.error());
    // An empty string would read as "no error" and turn a failed call into a passing one.
    result.cuda_error = text->empty() ? "unknown CUDA error" : std::move(*text);
  }
  if (auto error = json.find("workspace_error"); error != json.end()) {
    auto text = as_string(*error, field_path(where, "workspace_error"));
    if (!text) return Error(text.error());
    result.workspace_error = std::move(*text);
  }
  if (auto launches = json.find("own_launches"); launches != json.end()) {
    auto count = as_int(*launches, field_path(where, "own_launches"));
    if (!count) return Error(count.error());
    if (*count < 0)
      return Error(field_path(where, "own_launches") + ": expected a count, got " + std::to_string(*count));
    result.own_launches = *count;
  }
  if (auto bytes = json.find("output_bytes"); bytes != json.end()) {
    auto count = as_uint(*bytes, field_path(where, "output_bytes"));
    if (!count) return Error(count.error());
    if (*count > uint64_t(INT64_MAX))
      return Error(field_path(where, "output_bytes") + ": " + std::to_string(*count) + " is out of range");
    result.output_bytes = int64_t(*count);
  }
  return result;
}

}  // namespace

std::expected<CallReport, std::string> parse_call_report(std::string_view line) {
  Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return Error("expected a JSON object");
  if (json.contains("event")) return Error("expected a call's report, got an event");
  return parse_call_result(json, "");
}

std::expected<RunLog, std::string> parse_results(std::string_view text) {
  RunLog log;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) break;  // cut off mid-write: that call never finished
    std::string line(text.substr(start, end - start));
    start = end + 1;
    std::string where = std::string(k_results_file) + ":" + std::to_string(++line_number);
    if (line.empty()) continue;
    Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) return Error(where + ": expected a JSON object");
    auto event = json.find("event");
    if (event == json.end()) {
      auto result = parse_call_result(json, "");
      if (!result) return Error(where + ": " + result.error());
      log.calls.push_back(std::move(*result));
      continue;
    }
    if (*event == "loaded") {
      log.loaded = true;
      log.facts = json;
      log.facts.erase("event");
      continue;
    }
    if (*event == "load_failed") {
      auto message = json.find("message");
      log.load_error = message != json.end() && message->is_string() ? message->get<std::string>() : "load failed";
      continue;
    }
    return Error(where + ": unknown event " + event->dump());
  }
  return log;
}

std::vector<uint8_t> poison_element(DType dtype) {
  const size_t size = dtype_size(dtype);
  std::vector<uint8_t> element(size, 0xA5);
  uint64_t bits = 0;
  switch (dtype) {
    case DType::float32:
      bits = 0x7FC00000u;
      break;
    case DType::float64:
      bits = 0x7FF8000000000000ull;
      break;
    case DType::float16:
      bits = 0x7E00u;
      break;
    case DType::bfloat16:
      bits = 0x7FC0u;
      break;
    default:
      return element;
  }
  std::memcpy(element.data(), &bits, size);  // little-endian: the low bytes are the value
  return element;
}

void fill_poison(DType dtype, std::span<uint8_t> bytes) {
  const std::vector<uint8_t> element = poison_element(dtype);
  const size_t size = element.size();
  for (size_t at = 0; at + size <= bytes.size(); at += size) std::memcpy(bytes.data() + at, element.data(), size);
}

size_t count_poison(DType dtype, std::span<const uint8_t> bytes) {
  const std::vector<uint8_t> element = poison_element(dtype);
  const size_t size = element.size();
  size_t count = 0;
  for (size_t at = 0; at + size <= bytes.size(); at += size)
    count += std::memcmp(bytes.data() + at, element.data(), size) == 0 ? 1 : 0;
  return count;
}

}  // namespace ca
