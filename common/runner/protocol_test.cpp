// The runner's request and results formats: round trips, errors that name the field, poison patterns.
#include "runner/protocol.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ca {
namespace {

const char* const k_request = R"({"library": "cand.so", "backend": "cpu", "device_index": 0, "num_threads": 2,
  "tensors": [{"name": "x", "dtype": "float32", "shape": [4, 8], "init": "randn"},
              {"name": "w", "dtype": "bfloat16", "shape": [8], "init": {"uniform": [-1, 1]}}],
  "outputs": [{"dtype": "float32", "shape": [4, 8]}],
  "calls": [{"seed": 18446744073709551615, "output_offsets": [0]},
            {"seed": 7, "output_offsets": [4096],
             "tensors": [{"name": "x", "dtype": "float32", "shape": [4, 8], "init": {"uniform": [-1, 1]}},
                         {"name": "w", "dtype": "bfloat16", "shape": [8], "init": {"uniform": [-1, 1]}}]}],
  "output_region": {"path": "/dev/shm/run/io/outputs.bin", "bytes": 8192},
  "output_dir": "/tmp/run"})";

TEST(ProtocolTest, RequestRoundTripsThroughJson) {
  auto request = parse_request(Json::parse(k_request));
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(request->library, "cand.so");
  EXPECT_EQ(request->backend, Backend::cpu);
  EXPECT_EQ(request->num_threads, 2);
  ASSERT_EQ(request->tensors.size(), 2u);
  EXPECT_EQ(request->tensors[1].dtype, DType::bfloat16);
  EXPECT_EQ(request->tensors[1].init.dist, Dist::uniform);
  EXPECT_EQ(request->outputs[0].bytes(), 4u * 8u * 4u);
  ASSERT_EQ(request->calls.size(), 2u);
  EXPECT_EQ(request->calls[0].seed, UINT64_MAX);
  EXPECT_EQ(request->calls[1].output_offsets, std::vector<uint64_t>{4096});
  EXPECT_EQ(request->output_region.path, "/dev/shm/run/io/outputs.bin");
  EXPECT_EQ(request->output_region.bytes, 8192u);
  EXPECT_FALSE(request->calls[0].tensors);
  EXPECT_EQ(request->calls[0].tensors_or(request->tensors)[0].init.dist, Dist::randn);
  ASSERT_TRUE(request->calls[1].tensors);
  EXPECT_EQ(request->calls[1].tensors_or(request->tensors)[0].init.dist, Dist::uniform);

  auto again = parse_request(to_json(*request));
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(to_json(*again), to_json(*request));
}

TEST(ProtocolTest, OptionalFieldsHaveDefaults) {
  Json json = Json::parse(k_request);
  json.erase("device_index");
  json.erase("num_threads");
  auto request = parse_request(json);
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(request->device_index, 0);
  EXPECT_EQ(request->num_threads, 1);
}

struct BadRequest {
  const char* name;
  const char* pointer;  // JSON pointer to the field to replace; "" to remove `remove`
  const char* value;    // JSON text of the replacement
  const char* expected;
};

const BadRequest k_bad[] = {
    {"unknown_field", "/num_thread", "2", "request.num_thread: unknown field, did you mean 'num_threads'?"},
    {"bad_backend", "/backend", R"("cudda")", "request.backend: unknown backend 'cudda', did you mean 'cuda'?"},
    {"zero_threads", "/num_threads", "0", "request.num_threads: 0 is out of range (at least 1)"},
    {"negative_seed", "/calls/1/seed", "-1", "request.calls[1].seed: expected an unsigned integer, got number"},
    {"float_seed", "/calls/0/seed", "1.5", "request.calls[0].seed: expected an unsigned integer"},
    {"offsets_not_array", "/calls/0/output_offsets", "0",
     "request.calls[0].output_offsets: expected an array, got number"},
    {"offsets_count", "/calls/0/output_offsets", "[0, 256]",
     "request.calls[0].output_offsets: 2 offset(s), the request has 1 output(s)"},
    {"negative_offset", "/calls/1/output_offsets/0", "-4096",
     "request.calls[1].output_offsets[0]: expected an unsigned integer"},
    {"output_past_region", "/calls/1/output_offsets/0", "8128",
     "request.calls[1].output_offsets[0]: 128 bytes at offset 8128 do not fit in the output region of 8192 bytes"},
    {"offset_past_region", "/calls/1/output_offsets/0", "18446744073709551615",
     "request.calls[1].output_offsets[0]: 128 bytes at offset 18446744073709551615 do not fit in the output region of "
     "8192 bytes"},
    {"region_too_small", "/output_region/bytes", "4200",
     "request.calls[1].output_offsets[0]: 128 bytes at offset 4096 do not fit in the output region of 4200 bytes"},
    {"overlapping_outputs", "/calls/1/output_offsets/0", "64",
     "request.calls[1].output_offsets[0]: output 0 overlaps output 0 of call 0 in the output region"},
    {"same_outputs", "/calls/0/output_offsets/0", "4096",
     "request.calls[1].output_offsets[0]: output 0 overlaps output 0 of call 0"},
    {"region_not_object", "/output_region", R"("/dev/shm/x")", "request.output_region: expected an object, got string"},
    {"region_empty_path", "/output_region/path", R"("")", "request.output_region.path: empty path"},
    {"region_unknown_field", "/output_region/size", "8192", "request.output_region.size: unknown field"},
    {"tensor_dtype", "/tensors/1/dtype", R"("bflaot16")",
     "request.tensors[1].dtype: unknown dtype 'bflaot16', did you mean 'bfloat16'?"},
    {"tensor_init_missing", "/tensors/0", R"({"name":"x","dtype":"float32","shape":[2]})",
     "request.tensors[0].init: missing field"},
    {"tensor_bad_init", "/tensors/1/init", R"("gaussian")", "request.tensors[1].init: unknown distribution 'gaussian'"},
    {"tensor_duplicate_name", "/tensors/1/name", R"("x")", "request.tensors[1].name: 'x' is already defined"},
    {"call_tensor_shape", "/calls/1/tensors/0/shape", "[4, 9]",
     "request.calls[1].tensors[0]: 'x' differs from request.tensors[0] in name, dtype or shape; only init may differ"},
    {"call_tensor_count", "/calls/1/tensors", R"([{"name":"x","dtype":"float32","shape":[4,8],"init":"rand"}])",
     "request.calls[1].tensors: 1 tensor(s), the request has 2"},
    {"call_tensor_init", "/calls/1/tensors/1/init", R"("randn ")",
     "request.calls[1].tensors[1].init: unknown distribution 'randn '"},
    {"output_dtype", "/outputs/0/dtype", R"("flaot32")",
     "request.outputs[0].dtype: unknown dtype 'flaot32', did you mean 'float32'?"},
    {"output_negative_size", "/outputs/0/shape", "[4, -8]", "request.outputs[0].shape[1]: negative size -8"},
    {"no_outputs", "/outputs", "[]", "request.outputs: expected at least one output"},
    {"calls_not_array", "/calls", "{}", "request.calls: expected an array, got object"},
    {"library_not_string", "/library", "3", "request.library: expected a string, got number"},
    {"input_region_alone", "/input_region", R"({"path": "/dev/shm/x", "bytes": 4096})",
     "request: input_region and input_offsets go together"},
};

TEST(ProtocolTest, BadRequestsNameTheField) {
  for (const auto& bad : k_bad) {
    Json json = Json::parse(k_request);
    json[Json::json_pointer(bad.pointer)] = Json::parse(bad.value);
    auto request = parse_request(json);
    ASSERT_FALSE(request) << bad.name << " was accepted";
    EXPECT_NE(request.error().find(bad.expected), std::string::npos) << bad.name << ": got: " << request.error();
  }
  for (const char* field : {"output_dir", "output_region"}) {
    Json json = Json::parse(k_request);
    json.erase(field);
    auto request = parse_request(json);
    ASSERT_FALSE(request);
    EXPECT_EQ(request.error(), "request." + std::string(field) + ": missing field");
  }
}

TEST(ProtocolTest, OutputsMayTouchButNotOverlapAndEmptyOnesTakeNoRoom) {
  Json json = Json::parse(k_request);
  json["calls"][1]["output_offsets"] = Json::parse("[128]");  // right after call 0's 128 bytes
  json["output_region"]["bytes"] = Json::parse("256");
  auto request = parse_request(json);
  ASSERT_TRUE(request) << request.error();

  json["outputs"] = Json::parse(R"([{"dtype": "float32", "shape": [4, 8]}, {"dtype": "int64", "shape": [0]}])");
  json["calls"][0]["output_offsets"] = Json::parse("[0, 256]");  // empty, at the very end of the region
  json["calls"][1]["output_offsets"] = Json::parse("[128, 0]");
  request = parse_request(json);
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(request->calls[0].output_offsets, (std::vector<uint64_t>{0, 256}));
  json["calls"][0]["output_offsets"] = Json::parse("[0, 257]");
  request = parse_request(json);
  ASSERT_FALSE(request);
  EXPECT_EQ(request.error(),
            "request.calls[0].output_offsets[1]: 0 bytes at offset 257 do not fit in the output region of 256 bytes");
}

TEST(ProtocolTest, InvalidJsonGivesItsPosition) {
  auto request = parse_request_text("{\"library\": \"a.so\",\n \"backend\" \"cpu\"}");
  ASSERT_FALSE(request);
  EXPECT_NE(request.error().find("request: invalid JSON: line 2, column"), std::string::npos) << request.error();
}

TEST(ProtocolTest, ResultsParseEventsAndCallsAndIgnoreACutOffLine) {
  CallReport first{0, 5, 0, false, {}, 12.5, 11.0, ""};
  CallReport second{1, 6, 3, true, {1}, 7.0, 7.0, ""};
  std::string text = loaded_event({{"device_s", 0.25}, {"region", "page-locked"}}).dump() + "\n" +
                     to_json(first).dump() + "\n" + to_json(second).dump() + "\n" + R"({"call":2,"seed":9,"rc":0,"inp)";
  auto log = parse_results(text);
  ASSERT_TRUE(log) << log.error();
  EXPECT_TRUE(log->loaded);
  EXPECT_TRUE(log->load_error.empty());
  EXPECT_EQ(log->facts, (Json{{"device_s", 0.25}, {"region", "page-locked"}}))
      << "the start-up facts, without the event";
  ASSERT_EQ(log->calls.size(), 2u);
  EXPECT_TRUE(log->calls[0].ok());
  EXPECT_EQ(log->calls[0].wall_us, 12.5);
  EXPECT_EQ(log->calls[0].device_us, 11.0);
  EXPECT_EQ(log->calls[1].rc, 3);
  EXPECT_EQ(log->calls[1].changed_inputs, std::vector<uint64_t>{1});
  EXPECT_FALSE(log->calls[1].ok());
  EXPECT_EQ(to_json(second)["ok"], false);

  auto failed = parse_results(load_failed_event("no symbol ca_forward").dump() + "\n");
  ASSERT_TRUE(failed) << failed.error();
  EXPECT_FALSE(failed->loaded);
  EXPECT_EQ(failed->load_error, "no symbol ca_forward");

  auto bad =
      parse_results(loaded_event().dump() + "\n" + R"({"call":0,"seed":1,"inputs_changed":false,"wall_us":1})" + "\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "results.jsonl:2: rc: missing field");
}

TEST(ProtocolTest, OutputBytesAreWrittenOnlyForCallsThatWroteOutputs) {
  CallReport none{0, 5, 0, false, {}, 1.0, 1.0, ""};
  EXPECT_FALSE(to_json(none).contains("output_bytes"));
  CallReport written = none;
  written.output_bytes = 4096;
  EXPECT_EQ(to_json(written)["output_bytes"], 4096);
  auto log = parse_results(to_json(none).dump() + "\n" + to_json(written).dump() + "\n");
  ASSERT_TRUE(log) << log.error();
  EXPECT_EQ(log->calls[0].output_bytes, -1);
  EXPECT_EQ(log->calls[1].output_bytes, 4096);
  EXPECT_TRUE(log->calls[1].ok()) << "how much was written is for the trusted side to judge";
  auto negative = parse_results(R"({"call":0,"seed":1,"rc":0,"inputs_changed":false,"wall_us":1,"output_bytes":-1})"
                                "\n");
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error(), "results.jsonl:1: output_bytes: expected an unsigned integer, got number");
}

TEST(ProtocolTest, AFailedWorkspaceRequestIsWrittenOnlyWhenThereIsOne) {
  CallReport clean{0, 5, 0, false, {}, 1.0, 1.0, ""};
  EXPECT_FALSE(to_json(clean).contains("workspace_error"));
  CallReport starved = clean;
  starved.rc = 3;
  starved.workspace_error = "ctx->workspace(64 bytes) returned NULL: out of memory";
  auto log = parse_results(to_json(starved).dump() + "\n");
  ASSERT_TRUE(log) << log.error();
  EXPECT_EQ(log->calls[0].workspace_error, starved.workspace_error);
  auto bad = parse_results(R"({"call":0,"seed":1,"rc":3,"inputs_changed":false,"wall_us":1,"workspace_error":1})"
                           "\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "results.jsonl:1: workspace_error: expected a string, got number");
}

TEST(ProtocolTest, CudaErrorIsWrittenOnlyWhenThereIsOneAndFailsTheCall) {
  CallReport clean{0, 5, 0, false, {}, 1.0, 1.0, ""};
  EXPECT_FALSE(to_json(clean).contains("cuda_error"));
  CallReport broken{1, 6, 0, false, {}, 2.0, -1, "cudaErrorIllegalAddress: an illegal memory access was encountered"};
  Json json = to_json(broken);
  EXPECT_EQ(json["cuda_error"], broken.cuda_error);
  EXPECT_EQ(json["ok"], false);

  auto log = parse_results(to_json(clean).dump() + "\n" + json.dump() + "\n");
  ASSERT_TRUE(log) << log.error();
  ASSERT_EQ(log->calls.size(), 2u);
  EXPECT_TRUE(log->calls[0].ok());
  EXPECT_EQ(log->calls[1].cuda_error, broken.cuda_error);
  EXPECT_FALSE(log->calls[1].ok());

  // An empty cuda_error must not read as "no error".
  auto empty = parse_results(R"({"call":0,"seed":1,"rc":0,"inputs_changed":false,"wall_us":1,"cuda_error":""})"
                             "\n");
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_FALSE(empty->calls[0].ok());
  auto bad = parse_results(R"({"call":0,"seed":1,"rc":0,"inputs_changed":false,"wall_us":1,"cuda_error":3})"
                           "\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "results.jsonl:1: cuda_error: expected a string, got number");
}

TEST(ProtocolTest, OwnLaunchesAreWrittenWhenCountedAndZeroFailsTheCall) {
  CallReport cpu{0, 5, 0, false, {}, 1.0, 1.0, ""};
  EXPECT_FALSE(to_json(cpu).contains("own_launches")) << "cpu calls are not counted";
  CallReport launched = cpu, decoy = cpu;
  launched.own_launches = 3;
  decoy.own_launches = 0;
  EXPECT_EQ(to_json(launched)["own_launches"], 3);
  EXPECT_EQ(to_json(decoy)["ok"], false);

  auto log = parse_results(to_json(cpu).dump() + "\n" + to_json(launched).dump() + "\n" + to_json(decoy).dump() + "\n");
  ASSERT_TRUE(log) << log.error();
  EXPECT_EQ(log->calls[0].own_launches, -1);
  EXPECT_TRUE(log->calls[0].ok());
  EXPECT_EQ(log->calls[1].own_launches, 3);
  EXPECT_TRUE(log->calls[1].ok());
  EXPECT_EQ(log->calls[2].own_launches, 0);
  EXPECT_FALSE(log->calls[2].ok());
  auto negative = parse_results(R"({"call":0,"seed":1,"rc":0,"inputs_changed":false,"wall_us":1,"own_launches":-2})"
                                "\n");
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error(), "results.jsonl:1: own_launches: expected a count, got -2");
}

TEST(ProtocolTest, PoisonIsQuietNanForFloatsAndA5ForIntegers) {
  struct Case {
    DType dtype;
    uint64_t bits;
  };
  for (auto [dtype, bits] :
       {Case{DType::float32, 0x7FC00000u}, Case{DType::float64, 0x7FF8000000000000ull}, Case{DType::float16, 0x7E00u},
        Case{DType::bfloat16, 0x7FC0u}, Case{DType::int64, 0xA5A5A5A5A5A5A5A5ull}, Case{DType::int32, 0xA5A5A5A5u},
        Case{DType::int8, 0xA5u}, Case{DType::boolean, 0xA5u}}) {
    const size_t size = dtype_size(dtype);
    std::vector<uint8_t> bytes(5 * size, 0);
    fill_poison(dtype, bytes);
    for (size_t i = 0; i < 5; ++i) {
      uint64_t element = 0;
      std::memcpy(&element, bytes.data() + i * size, size);
      EXPECT_EQ(element, bits) << dtype_name(dtype) << " element " << i;
    }
    EXPECT_EQ(count_poison(dtype, bytes), 5u) << dtype_name(dtype);
    bytes[size] ^= 1;  // the second element is written
    EXPECT_EQ(count_poison(dtype, bytes), 4u) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace ca
