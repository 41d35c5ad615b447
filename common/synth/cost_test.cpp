#include "synth/cost.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

Program program_of(const Json& json) {
  return *parse_program(json);
}

TEST(CostTest, MatmulCountsTwoFlopsPerMultiplyAdd) {
  Program program = program_of(Json::parse(R"({"inputs":[{"name":"x","dtype":"float32","shape":[64,128]}],
    "params":[{"name":"w","dtype":"float32","shape":[256,128]}],
    "nodes":[{"op":"aten::linear","args":["%x","%w"],"out":["y"]}],"outputs":["y"]})"));
  std::map<std::string, ValueInfo> values = {{"x", {{64, 128}, 4}}, {"w", {{256, 128}, 4}}, {"y", {{64, 256}, 4}}};
  DeviceModel device{"test", 1e9, 1e9, 0};
  Cost cost = estimate_cost(program, values, {"matmul"}, device);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 64 * 256 * 128);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (64 * 128 + 256 * 128 + 64 * 256));
  EXPECT_DOUBLE_EQ(cost.ms, 1e3 * cost.flops / 1e9);  // compute-bound here
}

TEST(CostTest, ElementwiseIsBoundByBytesAndPaysLaunches) {
  Program program = program_of(Json::parse(R"({"inputs":[{"name":"x","dtype":"float32","shape":[1000]}],
    "nodes":[{"op":"aten::relu","args":["%x"],"out":["a"]},{"op":"aten::add.Tensor","args":["%a","%x"],"out":["b"]}],
    "outputs":["b"]})"));
  std::map<std::string, ValueInfo> values = {{"x", {{1000}, 4}}, {"a", {{1000}, 4}}, {"b", {{1000}, 4}}};
  DeviceModel device{"test", 4e6, 1e12, 1e-6};
  Cost cost = estimate_cost(program, values, {"activation", "elementwise"}, device);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * 5000);
  EXPECT_NEAR(cost.ms, 1e3 * (20000 / 4e6 + 2e-6), 1e-12);
}

TEST(CostTest, KnowsItsDevices) {
  EXPECT_EQ(device_model("h200")->bytes_per_s, 4.8e12);
  EXPECT_EQ(device_model("h100").error(), "unknown device model 'h100', did you mean 'h200'? (known: 'h200', 'cpu')");
}

}  // namespace
}  // namespace ca
