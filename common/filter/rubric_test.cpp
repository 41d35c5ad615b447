#include "filter/rubric.h"

#include <gtest/gtest.h>

#include "torch/interpreter.h"

namespace ca {
namespace {

Outputs one(at::Tensor tensor) {
  return {std::move(tensor)};
}

// The task program of `inputs` (name -> shape, float32, rand) and nodes; the last node's output is the program's.
Program program_of(Json inputs, Json nodes) {
  std::string out = nodes.back()["out"][0];
  auto program = parse_program({{"inputs", inputs}, {"params", Json::array()}, {"nodes", nodes}, {"outputs", {out}}});
  EXPECT_TRUE(program) << program.error();
  return *program;
}

Json input(const std::string& name, Json shape) {
  return {{"name", name}, {"dtype", "float32"}, {"shape", shape}, {"init", "rand"}};
}

Json node(const std::string& op, Json args, const std::string& out) {
  return {{"op", op}, {"args", args}, {"out", {out}}};
}

// A trial of `program` on tensors drawn from `seed`, run by the interpreter.
Trial trial_of(const Program& program, uint64_t seed) {
  auto interpreter = Interpreter::create(program);
  EXPECT_TRUE(interpreter) << interpreter.error();
  Trial trial{{}, {}};
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    trial.tensors.push_back(at::rand(program.inputs[i].shape, at::TensorOptions().dtype(at::kFloat)) + double(seed));
  }
  auto outputs = interpreter->run(trial.tensors);
  EXPECT_TRUE(outputs) << outputs.error();
  trial.outputs = *outputs;
  return trial;
}

RunProgram runner_of(const Program& program) {
  auto interpreter = std::make_shared<Interpreter>(*Interpreter::create(program));
  return [interpreter](const std::vector<at::Tensor>& tensors) { return interpreter->run(tensors); };
}

TEST(FilterRubric, RandomOpsInMetaAreRejected) {
  EXPECT_FALSE(check_random_ops({{"ops", {"aten::relu", "aten::add.Tensor"}}}));
  auto step = check_random_ops({{"ops", {"aten::relu", "aten::bernoulli.p"}}});
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::random_op);
  EXPECT_EQ(step->detail, "aten::bernoulli.p draws random numbers");
  EXPECT_FALSE(check_random_ops(Json::object()));
}

TEST(FilterRubric, DeterminismIsBitForBit) {
  at::Tensor a = at::tensor({1.0f, NAN, -0.0f});
  EXPECT_FALSE(check_deterministic(one(a), one(a.clone()), 7));                    // NaN equals NaN of the same bits
  auto step = check_deterministic(one(a), one(at::tensor({1.0f, NAN, 0.0f})), 7);  // -0.0 differs from 0.0
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::nondeterministic);
  EXPECT_NE(step->detail.find("seed 7"), std::string::npos);
  EXPECT_TRUE(check_deterministic(one(a), {}, 7));
}

TEST(FilterRubric, NonFiniteOutputsAreCounted) {
  EXPECT_FALSE(check_finite(one(at::tensor({1.0f, 2.0f}))));
  EXPECT_FALSE(check_finite(one(at::tensor({int64_t(1), int64_t(2)}))));
  auto step = check_finite({at::ones({2}), at::tensor({1.0f, INFINITY, NAN})});
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::non_finite);
  EXPECT_EQ(step->detail, "output 1 has 2 of 3 elements NaN or Inf");
}

TEST(FilterRubric, ZerosControlPassesOnlyWhenZerosPassBothTimedTrials) {
  Tolerance tolerance;
  Trial big{{}, one(at::full({4}, 1.0f))}, tiny{{}, one(at::full({4}, 1e-4f))};
  EXPECT_FALSE(check_zeros_control(big, big, tolerance));
  EXPECT_FALSE(check_zeros_control(tiny, big, tolerance));  // must pass both seeds of the timed distribution
  Trial zero{{}, one(at::zeros({4}))};
  auto step = check_zeros_control(zero, zero, tolerance);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::control_zeros);
  EXPECT_NE(step->detail.find("output 0: all zeros pass verification on the timed inputs (atol 0.01, rtol 0.01)"),
            std::string::npos)
      << step->detail;
}

TEST(FilterRubric, ConstantOutputsAreDegenerate) {
  Trial varied{{}, one(at::tensor({1.0f, 2.0f}))};
  EXPECT_FALSE(check_not_constant(varied, varied));
  Trial flat{{}, one(at::full({3}, 2.5f))};
  auto all_equal = check_not_constant(flat, varied);
  ASSERT_TRUE(all_equal);
  EXPECT_EQ(all_equal->reason, RejectReason::degenerate_constant);
  EXPECT_EQ(all_equal->detail, "output 0: all 3 elements equal 2.5");
  Trial empty{{}, one(at::zeros({0}))};
  EXPECT_EQ(check_not_constant(empty, empty)->detail, "output 0 is empty");
  // One element: constant only when equal across the two trials' seeds.
  Trial scalar_a{{}, one(at::tensor({3.0f}))}, scalar_b{{}, one(at::tensor({4.0f}))};
  EXPECT_FALSE(check_not_constant(scalar_a, scalar_b));
  EXPECT_EQ(check_not_constant(scalar_a, scalar_a)->detail, "output 0: its one element is 3 for two different seeds");
}

TEST(FilterRubric, AnInputNoOutputDependsOnIsFound) {
  // y = relu(x); z is an input no output reads.
  Program program = program_of({input("x", {4, 8}), input("z", {4, 8})}, {node("aten::relu", {"%x"}, "y")});
  Trial a = trial_of(program, 0);
  std::vector<std::string> unperturbed;
  auto step = check_uses_every_tensor(program, a, runner_of(program), 99, at::kCPU, unperturbed);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::ignores_input);
  EXPECT_EQ(step->detail, "no output changes when input 'z' is redrawn");
  EXPECT_TRUE(unperturbed.empty());

  Program both = program_of({input("x", {4, 8}), input("z", {4, 8})}, {node("aten::add.Tensor", {"%x", "%z"}, "y")});
  EXPECT_FALSE(check_uses_every_tensor(both, trial_of(both, 0), runner_of(both), 99, at::kCPU, unperturbed));
}

TEST(FilterRubric, MeanAndPassThroughControls) {
  Tolerance tolerance;
  Program program = program_of({input("x", {64})}, {node("aten::relu", {"%x"}, "y")});
  // relu of positive inputs is the input itself: passing it through passes verification.
  Trial a = trial_of(program, 1), a2 = trial_of(program, 3);
  auto step = check_mean_and_passthrough_controls(program, a, a2, tolerance);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::control_passthrough);
  EXPECT_EQ(step->detail,
            "output 0: input 'x' passed through passes verification on the timed inputs (atol 0.01, rtol 0.01)");

  // A sum over many values: one number equal to the other seed's mean is as good as the output.
  Trial c{{at::rand({64})}, one(at::full({1}, 100.0f))}, c2{{at::rand({64})}, one(at::full({1}, 100.2f))};
  auto mean = check_mean_and_passthrough_controls(program, c, c2, tolerance);
  ASSERT_TRUE(mean);
  EXPECT_EQ(mean->reason, RejectReason::control_mean);
  EXPECT_NE(mean->detail.find("a constant equal to its mean on another seed (100.2) passes"), std::string::npos)
      << mean->detail;

  Trial e{{at::rand({64})}, one(at::rand({64}) * 10)}, f{{at::rand({64})}, one(at::rand({64}) * 10)};
  EXPECT_FALSE(check_mean_and_passthrough_controls(program, e, f, tolerance));
}

TEST(FilterRubric, RoundingErrorJudgesTheRoundedExactOutput) {
  at::Tensor ref = at::tensor({1.0f, -2.0f, 3.0f});
  Tolerance tolerance;
  // Within float32 rounding of the exact values: ok at any share.
  EXPECT_TRUE(rounding_error(ref.to(at::kDouble) + 1e-9, ref, tolerance, 0.01).ok);
  // 0.8% off: within the tolerance, not within half of it.
  at::Tensor off = ref.to(at::kDouble) * 1.008;
  EXPECT_TRUE(rounding_error(off, ref, tolerance, 1.0).ok);
  EXPECT_FALSE(rounding_error(off, ref, tolerance, 0.5).ok);
  // Noise around an exact 0: below atol everywhere, but the normalized error is 1.
  at::Tensor noise = at::tensor({1e-8f, -2e-8f, 5e-9f});
  Comparison c = rounding_error(at::zeros({3}, at::kDouble), noise, tolerance, 0.5);
  EXPECT_FALSE(c.ok);
  EXPECT_NEAR(c.rel_l2, 1.0, 1e-12);
}

TEST(FilterRubric, RoundingNoiseOnEitherTrialRejects) {
  Tolerance tolerance;
  at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f});
  Trial a{{x}, one(x * 2)};
  // The float64 run returns the float32 outputs' values: the rounding error is 0.
  RunProgram exact = [](const std::vector<at::Tensor>& tensors) -> std::expected<Outputs, std::string> {
    return one(tensors[0] * 2);
  };
  double rounding = -1;
  std::vector<std::string> flags;
  EXPECT_FALSE(check_rounding_noise(a, a, exact, tolerance, 0.5, rounding, flags));
  EXPECT_EQ(rounding, 0);
  // The signed trial's reference is 1% off what the exact run gives: noise at half the tolerance.
  Trial b{{x}, one(x * 2 * 1.01)};
  auto step = check_rounding_noise(a, b, exact, tolerance, 0.5, rounding, flags);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::noise_output);
  EXPECT_NE(step->detail.find("output 0: rounding noise on signed inputs"), std::string::npos) << step->detail;
  // Off (share 0), and a float64 run that fails: a flag, not a reject.
  EXPECT_FALSE(check_rounding_noise(a, b, exact, tolerance, 0, rounding, flags));
  RunProgram failing = [](const std::vector<at::Tensor>&) -> std::expected<Outputs, std::string> {
    return std::unexpected("no float64 kernel");
  };
  EXPECT_FALSE(check_rounding_noise(a, b, failing, tolerance, 0.5, rounding, flags));
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0], "noise-unmeasured: the float64 run fails: no float64 kernel");
}

TEST(FilterRubric, TinyOutputsAreFlagged) {
  auto flags = tiny_output_flags({at::full({2}, 1e-4f), at::ones({2}), at::zeros({2}, at::kLong)}, 0.01);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0], "tiny-output: output 0 max |ref| 0.0001 < atol 0.01");
}

TEST(FilterRubric, RuntimeWindow) {
  EXPECT_FALSE(check_runtime_window(5, 3, 1, 10));
  EXPECT_FALSE(check_runtime_window(5, 3, 0, 0));  // no bounds
  auto fast = check_runtime_window(0.5, 3, 1, 10);
  ASSERT_TRUE(fast);
  EXPECT_EQ(fast->reason, RejectReason::too_fast);
  EXPECT_EQ(fast->detail, "eager 0.5 ms (window 1-10 ms, median of 3 calls)");
  EXPECT_EQ(check_runtime_window(11, 3, 1, 10)->reason, RejectReason::too_slow);
}

TEST(FilterRubric, CompiledOutputsMustMatchEager) {
  Tolerance tolerance;
  Outputs eager = one(at::tensor({1.0f, 2.0f}));
  EXPECT_FALSE(check_compiled_outputs(one(at::tensor({1.0f, 2.001f})), eager, tolerance));
  auto step = check_compiled_outputs(one(at::tensor({1.0f, 3.0f})), eager, tolerance);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->reason, RejectReason::compile_error);
  EXPECT_EQ(step->detail.rfind("compiled output 0 differs from eager: ", 0), 0u) << step->detail;
}

}  // namespace
}  // namespace ca
