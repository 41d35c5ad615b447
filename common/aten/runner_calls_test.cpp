#include "aten/runner_calls.h"

#include <gtest/gtest.h>

namespace ca {
namespace {

// One invocation with a single call reported as `report`.
RunnerOutcome outcome_of(std::optional<CallReport> report) {
  RunnerOutcome outcome;
  outcome.calls.push_back({std::move(report), {}, ""});
  return outcome;
}

CallReport clean_cuda_call() {
  CallReport report;
  report.own_launches = 2;
  return report;
}

std::string stage_of(const RunnerOutcome& outcome) {
  auto failure = call_failure(outcome, 0, "trial 1/1", RunnerOptions{});
  return failure ? failure->stage : "ok";
}

TEST(CallFailureTest, EachReportedProblemHasItsStage) {
  EXPECT_EQ(stage_of(outcome_of(clean_cuda_call())), "ok");
  CallReport cpu;  // own_launches -1: not counted
  EXPECT_EQ(stage_of(outcome_of(cpu)), "ok");

  CallReport decoy = clean_cuda_call();
  decoy.own_launches = 0;
  auto failure = call_failure(outcome_of(decoy), 0, "trial 1/1", RunnerOptions{});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->stage, "launch");
  EXPECT_NE(failure->message.find("none of the candidate's own CUDA kernels launched"), std::string::npos) << failure->message;

  // A CUDA error or a bad return code comes first: a failed launch is not a decoy.
  CallReport broken = decoy;
  broken.cuda_error = "cudaErrorInvalidValue: invalid argument";
  EXPECT_EQ(stage_of(outcome_of(broken)), "run");
  CallReport nonzero = clean_cuda_call();
  nonzero.rc = 3;
  EXPECT_EQ(stage_of(outcome_of(nonzero)), "run");
  CallReport mutated = clean_cuda_call();
  mutated.inputs_changed = true;
  EXPECT_EQ(stage_of(outcome_of(mutated)), "run");

  RunnerOutcome crashed = outcome_of(std::nullopt);
  crashed.sandbox.signal = 11;
  EXPECT_EQ(stage_of(crashed), "run");
  RunnerOutcome hung = outcome_of(std::nullopt);
  hung.sandbox.timed_out = true;
  EXPECT_EQ(stage_of(hung), "timeout");
  RunnerOutcome spun = outcome_of(std::nullopt);  // SIGXCPU before the wall clock ran out
  spun.sandbox.signal = 24;
  spun.sandbox.limit_hit = "cpu";
  EXPECT_EQ(stage_of(spun), "timeout");
}

}  // namespace
}  // namespace ca
