// Every kind of bad program gets an error that names the field and the problem.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "ir/tensor_digest.h"
#include "ir/tensor_init.h"
#include "torch/interpreter.h"
#include "torch/tensors.h"

namespace ca {
namespace {

struct BadCase {
  const char* name;
  const char* program;
  const char* expected;  // substring of the error
};

#define X R"({"name":"x","dtype":"float32","shape":[4,8]})"

const BadCase k_bad[] = {
    {"unknown_op", R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::lineer","args":["%x"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].op: unknown operator 'aten::lineer', did you mean 'aten::linear'?"},
    {"unknown_overload",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::add.Tensr","args":["%x","%x"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].op: aten::add has no overload 'Tensr', did you mean 'Tensor'?"},
    {"no_namespace", R"({"inputs":[)" X R"(],"nodes":[{"op":"relu","args":["%x"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].op: 'relu' needs a namespace, as in 'aten::relu'"},
    {"too_many_positional",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%x",1],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args: aten::relu takes 1 positional argument(s), got 2"},
    {"missing_argument",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::linear","args":["%x"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0]: missing argument 'weight' (Tensor)"},
    {"unknown_kwarg",
     R"({"inputs":[)" X
     R"(],"nodes":[{"op":"aten::add.Tensor","args":["%x","%x"],"kwargs":{"alpah":2},"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].kwargs.alpah: aten::add.Tensor has no argument 'alpah', did you mean 'alpha'?"},
    {"kwarg_given_twice",
     R"({"inputs":[)" X
     R"(],"nodes":[{"op":"aten::leaky_relu","args":["%x",0.1],"kwargs":{"negative_slope":0.2},"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].kwargs.negative_slope: argument given both by position and by name"},
    {"literal_type_mismatch",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::leaky_relu","args":["%x","steep"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args[1]: argument 'negative_slope' (Scalar): expected a number, got string 'steep'"},
    {"int_expected_float_given",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::softmax.int","args":["%x",1.5],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args[1]: argument 'dim' (int): expected an integer, got number"},
    {"tensor_expected_literal_given",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":[3],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args[0]: argument 'self' (Tensor): expected a tensor reference such as \"%x\", got number"},
    {"ref_of_wrong_type", R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::split.Tensor","args":["%x",2],"out":["parts"]},
        {"op":"aten::relu","args":["%parts"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[1].args[0]: argument 'self' (Tensor): '%parts' is a Tensor[]"},
    {"bad_dtype_literal",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::to.dtype","args":["%x","float33"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args[1]: argument 'dtype' (ScalarType): expected a dtype name such as \"float32\", got string "
     "'float33'"},
    {"dangling_reference",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%z"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].args[0]: dangling reference '%z': no input, param or earlier output has that name"},
    {"use_before_definition",
     R"({"inputs":[)" X
     R"(],"nodes":[{"op":"aten::relu","args":["%b"],"out":["a"]},{"op":"aten::relu","args":["%x"],"out":["b"]}],"outputs":["a"]})",
     "program.nodes[0].args[0]: dangling reference '%b'"},
    {"dangling_output",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%x"],"out":["y"]}],"outputs":["w"]})",
     "program.outputs[0]: dangling reference '%w'"},
    {"wrong_output_count",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::max.dim","args":["%x",1],"out":["v"]}],"outputs":["v"]})",
     "program.nodes[0].out: aten::max.dim returns 2 value(s), 'out' names 1"},
    {"mutating_op", R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu_","args":["%x"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].op: aten::relu_ writes to 'self'; task programs use functional operators only"},
    {"duplicate_name",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%x"],"out":["x"]}],"outputs":["x"]})",
     "program.nodes[0].out[0]: 'x' is already defined"},
    {"bad_shape", R"({"inputs":[)" X R"(],"params":[{"name":"w","dtype":"float32","shape":[16,7]}],
        "nodes":[{"op":"aten::linear","args":["%x","%w"],"out":["y"]}],"outputs":["y"]})",
     "shape check on the meta device failed: program.nodes[0] (aten::linear): mat1 and mat2 shapes cannot be "
     "multiplied (4x8 and 7x16)"},
    {"bad_shape_without_meta_kernel", R"({"inputs":[)" X R"(],"params":[{"name":"w","dtype":"float32","shape":[2,3,3]}],
        "nodes":[{"op":"aten::conv2d","args":["%x","%w"],"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0] (aten::conv2d): "},
    {"unknown_dtype", R"({"inputs":[{"name":"x","dtype":"flaot32","shape":[2]}],"nodes":[],"outputs":["x"]})",
     "program.inputs[0].dtype: unknown dtype 'flaot32', did you mean 'float32'?"},
    {"negative_size", R"({"inputs":[{"name":"x","dtype":"float32","shape":[2,-1]}],"nodes":[],"outputs":["x"]})",
     "program.inputs[0].shape[1]: negative size -1"},
    {"float_init_on_int",
     R"({"inputs":[{"name":"x","dtype":"int64","shape":[2],"init":"randn"}],"nodes":[],"outputs":["x"]})",
     "program.inputs[0].init: a int64 tensor takes 'randint', 'ones', 'zeros' or 'constant'"},
    {"unknown_init",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2],"init":"gaussian"}],"nodes":[],"outputs":["x"]})",
     "program.inputs[0].init: unknown distribution 'gaussian'"},
    {"missing_nodes", R"({"inputs":[)" X R"(],"outputs":["x"]})", "program.nodes: missing field"},
    {"unknown_top_field", R"({"inputs":[)" X R"(],"node":[],"nodes":[],"outputs":["x"]})",
     "program.node: unknown field, did you mean 'nodes'?"},
    {"misspelled_node_field",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%x"],"kwarg":{},"out":["y"]}],"outputs":["y"]})",
     "program.nodes[0].kwarg: unknown field, did you mean 'kwargs'?"},
    {"misspelled_tensor_field",
     R"({"inputs":[{"name":"x","dtype":"float32","shape":[2],"inti":"rand"}],"nodes":[],"outputs":["x"]})",
     "program.inputs[0].inti: unknown field, did you mean 'init'?"},
    {"dtype_alias_literal",
     R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::to.dtype","args":["%x","half"],"out":["y"]}],"outputs":["y"]})",
     "expected a dtype name such as \"float32\", got string 'half'"},
    {"non_tensor_output",
     R"({"inputs":[)" X
     R"(],"nodes":[{"op":"aten::split.Tensor","args":["%x",2],"out":["parts"]}],"outputs":["parts"]})",
     "program.outputs[0]: 'parts' is a Tensor[]; program outputs must be tensors"},
};

}  // namespace

TEST(ValidationTest, EveryBadProgramNamesFieldAndProblem) {
  for (const auto& bad : k_bad) {
    auto checked = check_program(Json::parse(bad.program));
    ASSERT_FALSE(checked) << bad.name << " was accepted";
    EXPECT_NE(checked.error().find(bad.expected), std::string::npos) << bad.name << ": got: " << checked.error();
  }
}

TEST(ValidationTest, GoodProgramPasses) {
  auto checked = check_program(
      Json::parse(R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::relu","args":["%x"],"out":["y"]}],"outputs":["y"]})"));
  EXPECT_TRUE(checked) << checked.error();
}

TEST(ValidationTest, ListElementCanBeAnOutput) {
  auto checked = check_program(
      Json::parse(R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::split.Tensor","args":["%x",2],"out":["p"]}],
      "outputs":["p[1]"]})"));
  ASSERT_TRUE(checked) << checked.error();
  auto outputs = checked->run(make_tensors(checked->program(), 1, at::kCPU));
  ASSERT_TRUE(outputs) << outputs.error();
  EXPECT_EQ((*outputs)[0].sizes(), (std::vector<int64_t>{2, 8}));
}

TEST(ValidationTest, IndexPastListEndFailsAtRun) {
  auto program = parse_program(
      Json::parse(R"({"inputs":[)" X R"(],"nodes":[{"op":"aten::split.Tensor","args":["%x",2],"out":["p"]},
      {"op":"aten::relu","args":["%p[5]"],"out":["y"]}],"outputs":["y"]})"));
  ASSERT_TRUE(program) << program.error();
  auto interpreter = Interpreter::create(*program);
  ASSERT_TRUE(interpreter) << interpreter.error();
  auto outputs = interpreter->run(make_tensors(*program, 1, at::kCPU));
  ASSERT_FALSE(outputs);
  EXPECT_NE(outputs.error().find("program.nodes[1] (aten::relu): element 5 of a list of 2"), std::string::npos)
      << outputs.error();
}

TEST(TensorsTest, SameSeedGivesBitIdenticalTensorsAndOtherSeedsDiffer) {
  auto program = parse_program(Json::parse(R"({"inputs":[{"name":"a","dtype":"float32","shape":[64,33]},
      {"name":"b","dtype":"bfloat16","shape":[100],"init":{"uniform":[-2,2]}},{"name":"c","dtype":"int64","shape":[50]}],
      "params":[{"name":"w","dtype":"float32","shape":[16,33]}],"nodes":[],"outputs":["a"]})"));
  ASSERT_TRUE(program) << program.error();
  auto first = make_tensors(*program, 7, at::kCPU);
  auto again = make_tensors(*program, 7, at::kCPU);
  auto other = make_tensors(*program, 8, at::kCPU);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(at::equal(first[i], again[i])) << "tensor " << i;
    EXPECT_FALSE(at::equal(first[i], other[i])) << "tensor " << i;
  }
  EXPECT_EQ(first[1].scalar_type(), at::kBFloat16);
  EXPECT_FALSE(at::equal(first[0].narrow(0, 0, 16), first[3])) << "streams must differ between tensors";
}

TEST(TensorsTest, DistributionsHaveTheirDocumentedMoments) {
  auto program = parse_program(Json::parse(R"({"inputs":[{"name":"n","dtype":"float32","shape":[200000]},
      {"name":"u","dtype":"float32","shape":[200000],"init":"rand"},
      {"name":"k","dtype":"int64","shape":[200000],"init":{"randint":[3,7]}}],
      "params":[{"name":"w","dtype":"float32","shape":[64,400]}],"nodes":[],"outputs":["n"]})"));
  ASSERT_TRUE(program) << program.error();
  auto t = make_tensors(*program, 3, at::kCPU);
  EXPECT_NEAR(t[0].mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(t[0].std().item<double>(), 1.0, 0.01);
  EXPECT_GE(t[1].min().item<double>(), 0.0);
  EXPECT_LT(t[1].max().item<double>(), 1.0);
  EXPECT_NEAR(t[1].mean().item<double>(), 0.5, 0.01);
  EXPECT_EQ(t[2].min().item<int64_t>(), 3);
  EXPECT_EQ(t[2].max().item<int64_t>(), 6);
  double bound = 1.0 / std::sqrt(400.0);  // kaiming_uniform: 1/sqrt(fan_in)
  EXPECT_LE(t[3].abs().max().item<double>(), bound);
  EXPECT_GT(t[3].abs().max().item<double>(), 0.99 * bound);
}

// make_tensor_bytes (shared with the runner) must equal what make_tensor used to do: draw in float32 or int64, then
// let ATen's Tensor.to(dtype) convert. Constants sit on float16/bfloat16 rounding ties, overflow edges and subnormals.
TEST(TensorsTest, MakeTensorBytesEqualsAtenConversion) {
  auto old_path = [](const TensorSpec& spec, uint64_t seed, uint64_t stream) {
    at::Tensor host;
    if (is_floating(spec.dtype)) {
      host = at::empty(spec.shape, at::TensorOptions().dtype(at::kFloat));
      fill_floats(spec, seed, stream, std::span<float>(host.data_ptr<float>(), size_t(host.numel())));
    } else {
      host = at::empty(spec.shape, at::TensorOptions().dtype(at::kLong));
      fill_ints(spec, seed, stream, std::span<int64_t>(host.data_ptr<int64_t>(), size_t(host.numel())));
    }
    return host.to(to_scalar_type(spec.dtype)).contiguous();
  };
  auto as_double = [](uint32_t bits) { return double(std::bit_cast<float>(bits)); };
  const std::vector<double> float_constants = {1 + std::ldexp(1.0, -11),
                                               1 + 3 * std::ldexp(1.0, -11),
                                               2049,
                                               2051,
                                               65519,
                                               65520,
                                               -65520,
                                               65504,
                                               std::ldexp(1.0, -25),
                                               3 * std::ldexp(1.0, -25),
                                               std::ldexp(1.0, -24),
                                               std::ldexp(1.0, -14) * (1 - std::ldexp(1.0, -12)),
                                               1 + std::ldexp(1.0, -8),
                                               1 + 3 * std::ldexp(1.0, -8),
                                               257,
                                               259,
                                               -259,
                                               as_double(0x7F7F8000u),
                                               as_double(0x7F7F7FFFu),
                                               as_double(0x00000001u),
                                               1e39,
                                               -1e39,
                                               0.0,
                                               -0.0,
                                               0.1,
                                               1.0 / 3.0};
  std::vector<Init> float_inits = {{Dist::randn, 0, 1},          {Dist::uniform, -70000, 70000},
                                   {Dist::uniform, -1e-6, 1e-6}, {Dist::uniform, -1e-38, 1e-38},
                                   {Dist::uniform, 0, 4096},     {Dist::normal, 3, 100}};
  for (double value : float_constants) float_inits.push_back({Dist::constant, value, 1});
  const std::vector<Init> int_inits = {{Dist::randint, -300, 300}, {Dist::randint, -3e9, 3e9},
                                       {Dist::randint, -2, 3},     {Dist::constant, 4294967297.0, 1},
                                       {Dist::constant, -129, 1},  {Dist::ones, 0, 1}};
  const std::vector<std::vector<int64_t>> shapes = {{4099}, {}, {0, 3}};

  int checked = 0;
  for (DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int64, DType::int32,
                      DType::int16, DType::int8, DType::uint8, DType::boolean}) {
    for (const Init& init : is_floating(dtype) ? float_inits : int_inits) {
      for (const auto& shape : shapes) {
        TensorSpec spec{"t", dtype, shape, init};
        std::string what =
            std::string(dtype_name(dtype)) + " init " + to_json(init).dump() + " numel " + std::to_string(spec.numel());
        at::Tensor expected = old_path(spec, 11, 2);
        std::vector<uint8_t> bytes = make_tensor_bytes(spec, 11, 2).value();
        ASSERT_EQ(bytes.size(), expected.nbytes()) << what;
        EXPECT_TRUE(bytes.empty() || std::memcmp(bytes.data(), expected.data_ptr(), bytes.size()) == 0) << what;
        at::Tensor made = make_tensor(spec, 11, 2, at::kCPU);
        ASSERT_EQ(made.scalar_type(), expected.scalar_type()) << what;
        ASSERT_EQ(made.sizes(), expected.sizes()) << what;
        EXPECT_TRUE(made.nbytes() == 0 || std::memcmp(made.data_ptr(), expected.data_ptr(), made.nbytes()) == 0)
            << what;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// On a GPU make_tensor draws there (ir/tensor_init_cuda.h), on the current stream; the bytes must still be
// make_tensor_bytes's. Skipped without one.
TEST(TensorsTest, MakeTensorOnCudaHoldsMakeTensorBytes) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const std::vector<Init> float_inits = {{Dist::randn, 0, 1},
                                         {Dist::uniform, -70000, 70000},
                                         {Dist::kaiming_uniform, 0, 1},
                                         {Dist::randint, -3, 9},
                                         {Dist::constant, -0.0, 1}};
  const std::vector<Init> int_inits = {{Dist::randint, -300, 300}, {Dist::constant, -129, 1}, {Dist::ones, 0, 1}};
  int checked = 0;
  for (DType dtype : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int64, DType::int32,
                      DType::int16, DType::int8, DType::uint8, DType::boolean}) {
    for (const Init& init : is_floating(dtype) ? float_inits : int_inits) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4099}, {5, 3, 3}, {0, 3}}) {
        TensorSpec spec{"t", dtype, shape, init};
        std::string what =
            std::string(dtype_name(dtype)) + " init " + to_json(init).dump() + " numel " + std::to_string(spec.numel());
        at::Tensor made = make_tensor(spec, 11, 2, at::Device("cuda"));
        ASSERT_TRUE(made.is_cuda()) << what;
        ASSERT_EQ(made.scalar_type(), to_scalar_type(dtype)) << what;
        ASSERT_EQ(made.sizes(), at::IntArrayRef(shape)) << what;
        at::Tensor host = made.cpu();
        std::vector<uint8_t> expected = make_tensor_bytes(spec, 11, 2).value();
        ASSERT_EQ(host.nbytes(), expected.size()) << what;
        EXPECT_TRUE(expected.empty() || std::memcmp(host.data_ptr(), expected.data(), expected.size()) == 0) << what;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 80);
}

// tensor_digest digests what .contiguous() holds, so a view and its copy agree, and one changed bit shows.
TEST(TensorsTest, DigestIsOfTheRowMajorBytes) {
  const at::Tensor t = at::arange(35, at::kFloat).reshape({5, 7});
  const std::string digest = tensor_digest(t).value();
  EXPECT_EQ(digest, digest_bytes(t.data_ptr(), t.nbytes()));
  EXPECT_EQ(tensor_digest(t.t()).value(), tensor_digest(t.t().contiguous()).value());
  EXPECT_NE(tensor_digest(t.t()).value(), digest) << "the same bytes in another order";
  EXPECT_EQ(tensor_digest(t.narrow(1, 1, 3)).value(), tensor_digest(t.narrow(1, 1, 3).clone()).value());
  at::Tensor changed = t.clone();
  changed.view(at::kInt)[2][3].bitwise_xor_(1);  // the lowest mantissa bit of one element
  EXPECT_NE(tensor_digest(changed).value(), digest);
}

// On a GPU the digest is computed there and must be the host's, views and odd offsets included. Skipped without one.
TEST(TensorsTest, DigestOnCudaEqualsDigestOnCpu) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor t = at::randn({257, 129}).to(at::kHalf);
  const at::Tensor d = t.cuda();
  // A view of the device tensor 6 bytes into its storage: contiguous() keeps it there, unaligned for 8-byte words.
  EXPECT_EQ(tensor_digest(d.flatten().narrow(0, 3, 1001)).value(),
            tensor_digest(t.flatten().narrow(0, 3, 1001)).value());
  EXPECT_EQ(tensor_digest(d).value(), tensor_digest(t).value());
  EXPECT_EQ(tensor_digest(d.t()).value(), tensor_digest(t.t()).value());
  EXPECT_EQ(tensor_digest(d.narrow(1, 1, 77)).value(), tensor_digest(t.narrow(1, 1, 77)).value());
}

}  // namespace ca
