#include "torch/runner_calls.h"
#include "runner/run_candidate.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "util/atomic_file.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

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
  EXPECT_NE(failure->message.find("none of the candidate's own CUDA kernels launched"), std::string::npos)
      << failure->message;

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
  RunnerOutcome tampered = outcome_of(std::nullopt);  // the runner found its results file changed
  tampered.sandbox.exit_code = to_int(k_exit_tampered);
  tampered.sandbox.err = "ca-runner: error: io/results.jsonl: changed by a writer other than the runner\n";
  failure = call_failure(tampered, 0, "trial 2/5", RunnerOptions{});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->stage, "run");
  EXPECT_NE(failure->message.find("its reports were tampered with"), std::string::npos) << failure->message;
}

// Fake runners: shell scripts that stand in for ca-runner --serve inside the real sandbox and say what a runner (or
// a candidate that took it over) could say: reports on the pipe, lines in results.jsonl, bytes in the output region,
// or damage to it. They answer pings, write the loaded event to $io/results.jsonl (io/round-K for request-K.json),
// say "ready", and run the test's on_call for each "call <i> <seed>" line with $1 = i between the holds "at" and "end";
// $region is the one io/outputs-*.bin. Each call's output, two float32 values, is 8 bytes at offset 4096 * call.
const char* const k_fake_runner = R"sh(report() {  # call output_bytes? -> the call's report on the pipe
  bytes=${2:+,\"output_bytes\":$2}
  printf '{"call":%s,"seed":1,"rc":0,"inputs_changed":false,"wall_us":1%s,"ok":true}\n' "$1" "$bytes"
}
hold() {  # mark index -> the line, then a stop until the trusted side continues it, as ca-runner holds a call
  echo "$1 $2"; kill -STOP $$
}
put() {  # slice [values] -> 1.0f and 2.0f (or 3.0f and 4.0f for odd values, default the slice) into the slice
  if [ $((${2:-$1} % 2)) = 0 ]; then value='\000\000\200\077\000\000\000\100'; else value='\000\000\100\100\000\000\200\100'; fi
  printf "$value" | dd of="$region" bs=4096 seek="$1" conv=notrunc 2>/dev/null
}
while read request; do
  case "$request" in ping*) n=${request#ping }; hold at $n; hold end $n; report $n; continue ;; esac
  round=$(basename "$request" .json); io=$(dirname "$request")/io/round-${round#request-}
  region=$(ls "$(dirname "$request")"/io/outputs-*.bin)
  mkdir -p "$io"; echo '{"event":"loaded"}' > "$io/results.jsonl"
  n=$(grep -o '"output_offsets"' "$request" | wc -l); i=0
  echo ready
  while [ $i -lt $n ]; do read call; hold at $i; said=$(on_call $i); hold end $i; echo "$said"; i=$((i + 1)); done
done
)sh";

class FakeRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::path(::testing::TempDir()) / ("ca-fake-runner-" + std::to_string(getpid()));
    fs::create_directories(m_dir);
    ::chmod(m_dir.c_str(), 0755);  // the sandbox's user reaches the scripts and the library through it
    m_library = (m_dir / "candidate.so").string();
    ASSERT_TRUE(write_file_atomic(m_library, ""));
    ::chmod(m_library.c_str(), 0644);
    auto program =
        parse_program(Json::parse(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "init": "randn"}],
      "nodes": [{"op": "aten::relu", "args": ["%x"], "out": ["y"]}], "outputs": ["y"]})"));
    ASSERT_TRUE(program) << program.error();
    m_program = *program;
  }
  void TearDown() override { fs::remove_all(m_dir); }

  // A fake runner whose on_call is `body` (shell, $1 = the call's index).
  RunnerOptions fake(const std::string& name, const std::string& body) {
    std::string path = (m_dir / name).string();
    EXPECT_TRUE(write_file_atomic(path, "#!/bin/sh\non_call() {\n" + body + "\n}\n" + k_fake_runner));
    ::chmod(path.c_str(), 0755);
    RunnerOptions options;
    options.runner = path;
    options.limits.wall_s = 30;
    return options;
  }
  std::vector<TensorShape> shapes() const { return {{{2}, at::kFloat}}; }

  fs::path m_dir;
  std::string m_library;
  Program m_program;
};

std::vector<float> values(const at::Tensor& tensor) {
  return {tensor.data_ptr<float>(), tensor.data_ptr<float>() + tensor.numel()};
}

TEST_F(FakeRunnerTest, OutputsAreViewsOfTheRegionThatOutliveTheRun) {
  auto ran =
      run_in_runner(m_program, shapes(), m_library, {{1, false}, {2, true}}, fake("writes", "put $1; report $1 8"));
  ASSERT_TRUE(ran) << ran.error();
  ASSERT_EQ(ran->calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(call_failure(*ran, i, "trial", RunnerOptions{})) << ran->sandbox.err;
    ASSERT_EQ(ran->calls[i].outputs.size(), 1u);
    EXPECT_EQ(ran->calls[i].outputs[0].sizes(), at::IntArrayRef({2}));
    EXPECT_EQ(ran->calls[i].outputs[0].scalar_type(), at::kFloat);
  }
  // The run directory is gone; the views keep the region mapped.
  EXPECT_EQ(values(ran->calls[0].outputs[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(values(ran->calls[1].outputs[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ran->calls[1].outputs[0].data_ptr()) -
                reinterpret_cast<uintptr_t>(ran->calls[0].outputs[0].data_ptr()),
            4096u)
      << "no copy: both are views of one mapping";
  EXPECT_EQ(ran->sandbox.exit_code, 0) << ran->sandbox.err;
}

TEST_F(FakeRunnerTest, AnOutputTheRunnerDidNotWriteIsMissing) {
  auto ran = run_in_runner(m_program, shapes(), m_library, {{1, false}, {2, false}},
                           fake("lazy", "if [ $1 = 0 ]; then report 0; else put 1; report 1 4; fi"));
  ASSERT_TRUE(ran) << ran.error();
  EXPECT_EQ(ran->calls[0].output_problem, "no output written");
  EXPECT_TRUE(ran->calls[0].outputs.empty());
  auto failure = call_failure(*ran, 0, "trial 1/2", RunnerOptions{});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->stage, "run");
  EXPECT_EQ(failure->message, "trial 1/2: no output written");
  EXPECT_EQ(ran->calls[1].output_problem, "output is short: the runner reported 4 of 8 bytes written");
}

TEST_F(FakeRunnerTest, OutputsWrittenAfterTheirCallReturnedFailIt) {
  // Call 1 writes call 0's slice anew, as a candidate that answers at once and computes later would (late writes).
  auto ran = run_in_runner(m_program, shapes(), m_library, {{1, false}, {2, false}},
                           fake("late", "if [ $1 = 0 ]; then put 0; report 0 8; else put 0 1; put 1; report 1 8; fi"));
  ASSERT_TRUE(ran) << ran.error();
  auto failure = call_failure(*ran, 0, "trial 1/2", RunnerOptions{});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->stage, "run");
  EXPECT_EQ(failure->message,
            "trial 1/2: its outputs changed after the call returned (written by a later call or between calls)");
  EXPECT_FALSE(call_failure(*ran, 1, "trial 2/2", RunnerOptions{}));
}

TEST_F(FakeRunnerTest, ReportsOfAnotherCallOrInResultsJsonlAreNotBelieved) {
  // The runner reports each call on its pipe when asked for it; anything else is someone else's (docs/EXPLOITS.md, C4).
  struct Case {
    const char* body;
    const char* says;
  };
  for (Case c : {Case{"put $1; report $(($1 + 1)) 8", "as the report of call 0"},
                 Case{"echo not json", "as the report of call 0"},
                 Case{"put $1; report $1 8; report $1 8 >> \"$io/results.jsonl\"",
                      "results.jsonl is not as the runner writes it"}}) {
    auto ran = run_in_runner(m_program, shapes(), m_library, {{1, false}, {2, false}}, fake("forged", c.body));
    ASSERT_TRUE(ran) << ran.error();
    auto failure = call_failure(*ran, 0, "trial 1/2", RunnerOptions{});
    ASSERT_TRUE(failure) << c.body;
    EXPECT_EQ(failure->stage, "run");
    EXPECT_NE(failure->message.find(c.says), std::string::npos) << failure->message;
  }
}

TEST_F(FakeRunnerTest, ARegionCutShortOrPunchedIsNeverRead) {
  // Reading a page the file no longer has would be SIGBUS in this process; the runner cannot arrange that.
  auto ran =
      run_in_runner(m_program, shapes(), m_library, {{1, false}, {2, false}},
                    fake("vandal",
                         "put $1\nif [ $1 = 0 ]; then fallocate --punch-hole --offset 0 --length 4096 \"$region\"; "
                         "else truncate -s 4096 \"$region\"; fi\nreport $1 8"));
  ASSERT_TRUE(ran) << ran.error();
  EXPECT_EQ(ran->calls[0].output_problem, "output 0 is gone from the output region (its file was cut short or punched)")
      << ran->sandbox.err;
  EXPECT_EQ(ran->calls[1].output_problem,
            "output 0 is gone from the output region (its file was cut short or punched)");
}

TEST_F(FakeRunnerTest, ASessionGrowsItsRegionAndReusesItOnlyOnceTheOutputsAreDropped) {
  RunnerOptions options = fake("serve", "put $1; report $1 8");
  auto session = RunnerSession::open(m_program, shapes(), m_library, options, 3, 3);
  ASSERT_TRUE(session) << session.error();
  std::optional<RunnerOutcome> first;
  {
    auto ran = session->run({{1, false}, {2, false}});
    ASSERT_TRUE(ran) << ran.error();
    first = std::move(*ran);
  }
  ASSERT_FALSE(call_failure(*first, 1, "call", session->options())) << first->sandbox.err;
  EXPECT_EQ(values(first->calls[1].outputs[0]), (std::vector<float>{3, 4}));

  auto refused = session->run({{3, false}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "an earlier round's outputs are still in use; drop them before the next round");
  first.reset();

  auto too_big = session->run({{3, false}, {4, false}, {5, false}, {6, false}});
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error(), "a round of 4 calls does not fit in the session's output region, opened for 3");

  {
    // One call more than the region holds: a new region, which the runner (started already, as the sandbox's user)
    // can write too; call 2's output lies past the end of the first region.
    auto grown = session->run({{3, false}, {4, false}, {5, false}});
    ASSERT_TRUE(grown) << grown.error();
    ASSERT_FALSE(call_failure(*grown, 2, "call", session->options())) << grown->sandbox.err;
    EXPECT_EQ(values(grown->calls[2].outputs[0]), (std::vector<float>{1, 2}));
    EXPECT_EQ(values(grown->calls[1].outputs[0]), (std::vector<float>{3, 4}));
  }

  // Fewer calls: the same region again.
  auto again = session->run({{6, false}});
  ASSERT_TRUE(again) << again.error();
  ASSERT_FALSE(call_failure(*again, 0, "call", session->options())) << again->sandbox.err;
  EXPECT_EQ(values(again->calls[0].outputs[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(again->sandbox.exit_code, 0);
  auto ended = session->finish();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->exit_code, 0) << ended->err;
}

}  // namespace
}  // namespace ca
