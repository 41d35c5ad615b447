#include "ir/fingerprint.h"

#include <functional>

#include <gtest/gtest.h>

namespace ca {
namespace {

// Covers every argument kind the canonical form distinguishes: refs, element
// refs, null, int and float scalars, int lists, kwargs and escaped strings.
constexpr std::string_view k_base = R"({
  "inputs": [{"name": "x", "dtype": "float32", "shape": [4, 8], "init": "rand"}],
  "params": [{"name": "w", "dtype": "float32", "shape": [16, 8]},
             {"name": "b", "dtype": "float32", "shape": [16], "init": {"uniform": [-1, 1]}}],
  "nodes": [
    {"op": "aten::linear", "args": ["%x", "%w", "%b"], "out": ["t0"]},
    {"op": "aten::leaky_relu", "args": ["%t0", 0.1], "out": ["t1"]},
    {"op": "aten::max.dim", "args": ["%t1", 1], "kwargs": {"keepdim": true, "out": null}, "out": ["v", "i"]},
    {"op": "aten::split.Tensor", "args": ["%t1", 8, 1], "out": ["xs"]},
    {"op": "aten::mul.Tensor", "args": ["%xs[0]", "%xs[1]"], "out": ["p"]},
    {"op": "aten::sum.dim_IntList", "args": ["%p", [0, 1]], "kwargs": {"dtype": "float64"}, "out": ["s"]},
    {"op": "aten::div.Tensor_mode", "args": ["%t1", "%t0"], "kwargs": {"rounding_mode": "%%floor"}, "out": ["d"]}
  ],
  "outputs": ["t1", "i", "s", "d"]
})";

// k_base with every name changed and every object's keys in another order.
constexpr std::string_view k_renamed_reordered = R"({
  "outputs": ["act", "idx", "total", "q"],
  "params": [{"shape": [16, 8], "dtype": "float32", "name": "weight"},
             {"init": {"uniform": [-1, 1]}, "shape": [16], "name": "bias", "dtype": "float32"}],
  "inputs": [{"init": "rand", "shape": [4, 8], "dtype": "float32", "name": "input"}],
  "nodes": [
    {"out": ["lin"], "args": ["%input", "%weight", "%bias"], "op": "aten::linear.default"},
    {"args": ["%lin", 0.1], "op": "aten::leaky_relu", "out": ["act"]},
    {"kwargs": {"out": null, "keepdim": true}, "out": ["vals", "idx"], "op": "aten::max.dim", "args": ["%act", 1]},
    {"op": "aten::split.Tensor", "out": ["parts"], "args": ["%act", 8, 1]},
    {"op": "aten::mul.Tensor", "args": ["%parts[0]", "%parts[1]"], "out": ["prod"]},
    {"kwargs": {"dtype": "float64"}, "op": "aten::sum.dim_IntList", "args": ["%prod", [0, 1]], "out": ["total"]},
    {"op": "aten::div.Tensor_mode", "args": ["%act", "%lin"], "kwargs": {"rounding_mode": "%%floor"}, "out": ["q"]}
  ]
})";

Json parse_json(std::string_view text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << text;
  return json;
}

std::string fingerprint_of(const Json& json) {
  auto program = parse_program(json);
  EXPECT_TRUE(program) << (program ? "" : program.error());
  return program ? fingerprint(*program) : "";
}

// The fingerprint of k_base after `edit`, which must differ from k_base's.
void expect_changes(const std::string& what, const std::function<void(Json&)>& edit) {
  Json base = parse_json(k_base);
  Json changed = base;
  edit(changed);
  EXPECT_NE(fingerprint_of(base), fingerprint_of(changed)) << what;
}

}  // namespace

TEST(FingerprintTest, HasShaPrefixAndHexDigest) {
  std::string print = fingerprint_of(parse_json(k_base));
  ASSERT_EQ(print.size(), 7u + 64u);
  EXPECT_EQ(print.substr(0, 7), "sha256:");
  EXPECT_EQ(print.find_first_not_of("0123456789abcdef", 7), std::string::npos);
}

TEST(FingerprintTest, IgnoresNamesAndKeyOrder) {
  Json base = parse_json(k_base);
  Json other = parse_json(k_renamed_reordered);
  EXPECT_EQ(fingerprint_of(base), fingerprint_of(other));
  auto a = parse_program(base), b = parse_program(other);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(canonical_text(*a), canonical_text(*b));
}

TEST(FingerprintTest, IsStableAcrossJsonRoundTrip) {
  auto program = parse_program(parse_json(k_base));
  ASSERT_TRUE(program);
  EXPECT_EQ(fingerprint(*program), fingerprint_of(to_json(*program)));
}

TEST(FingerprintTest, CanonicalTextUsesPositionalNames) {
  auto program = parse_program(parse_json(k_base));
  ASSERT_TRUE(program);
  std::string text = canonical_text(*program);
  EXPECT_NE(text.find("[Ri0,Rp0,Rp1]"), std::string::npos) << text;
  EXPECT_NE(text.find("[Rn3_0[0],Rn3_0[1]]"), std::string::npos) << text;
  EXPECT_NE(text.find("outputs Rn1_0 Rn2_1 Rn5_0 Rn6_0"), std::string::npos) << text;
  EXPECT_EQ(text.find("%x"), std::string::npos) << text;
}

TEST(FingerprintTest, ChangesWithOp) {
  expect_changes("op", [](Json& p) { p["nodes"][1]["op"] = "aten::relu"; });
  expect_changes("overload", [](Json& p) { p["nodes"][2]["op"] = "aten::max.names_dim"; });
}

TEST(FingerprintTest, ChangesWithLiteral) {
  expect_changes("float value", [](Json& p) { p["nodes"][1]["args"][1] = 0.2; });
  expect_changes("int to float", [](Json& p) { p["nodes"][2]["args"][1] = 1.0; });
  expect_changes("list element", [](Json& p) { p["nodes"][5]["args"][1][1] = 2; });
  expect_changes("list length", [](Json& p) { p["nodes"][5]["args"][1] = Json::array({0}); });
  expect_changes("bool kwarg", [](Json& p) { p["nodes"][2]["kwargs"]["keepdim"] = false; });
  expect_changes("null to value", [](Json& p) { p["nodes"][2]["kwargs"]["out"] = 0; });
  expect_changes("string kwarg", [](Json& p) { p["nodes"][5]["kwargs"]["dtype"] = "float32"; });
  expect_changes("escaped string", [](Json& p) { p["nodes"][6]["kwargs"]["rounding_mode"] = "%%trunc"; });
  expect_changes("kwarg name", [](Json& p) {
    p["nodes"][2]["kwargs"].erase("keepdim");
    p["nodes"][2]["kwargs"]["keep_dim"] = true;
  });
  expect_changes("kwarg dropped", [](Json& p) { p["nodes"][5]["kwargs"] = Json::object(); });
}

TEST(FingerprintTest, ChangesWithTensorSpec) {
  expect_changes("shape", [](Json& p) { p["inputs"][0]["shape"] = {4, 9}; });
  expect_changes("rank", [](Json& p) { p["inputs"][0]["shape"] = {4, 8, 1}; });
  expect_changes("dtype", [](Json& p) { p["params"][0]["dtype"] = "float16"; });
  expect_changes("init kind", [](Json& p) { p["inputs"][0]["init"] = "randn"; });
  expect_changes("init number", [](Json& p) { p["params"][1]["init"] = {{"uniform", {-1, 2}}}; });
  expect_changes("param becomes input", [](Json& p) {
    p["inputs"].push_back(p["params"][1]);
    p["params"].erase(1);
  });
}

TEST(FingerprintTest, ChangesWithWiring) {
  expect_changes("swapped args", [](Json& p) { p["nodes"][6]["args"] = {"%t0", "%t1"}; });
  expect_changes("other source", [](Json& p) { p["nodes"][3]["args"][0] = "%t0"; });
  expect_changes("element index", [](Json& p) { p["nodes"][4]["args"][1] = "%xs[0]"; });
  expect_changes("ref vs escaped literal", [](Json& p) { p["nodes"][6]["args"][1] = "%%t0"; });
  expect_changes("output of multi-output node", [](Json& p) { p["outputs"][1] = "v"; });
}

TEST(FingerprintTest, ChangesWithOutputs) {
  expect_changes("order", [](Json& p) { p["outputs"] = {"i", "t1", "s", "d"}; });
  expect_changes("dropped", [](Json& p) { p["outputs"].erase(3); });
  expect_changes("element output", [](Json& p) { p["outputs"][0] = "xs[1]"; });
}

TEST(FingerprintTest, TreatsSignedAndUnsignedIntegersAlike) {
  // JSON parsing stores 1 as unsigned; code that builds programs stores int64.
  Json parsed = parse_json(k_base);
  Json built = parsed;
  built["nodes"][2]["args"][1] = int64_t{1};
  ASSERT_TRUE(parsed["nodes"][2]["args"][1].is_number_unsigned());
  EXPECT_EQ(fingerprint_of(parsed), fingerprint_of(built));
}

}  // namespace ca
