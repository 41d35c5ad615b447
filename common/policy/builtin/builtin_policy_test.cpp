// The built-in policy's episodes against scripted tool results: write, verify, next variant on [FAIL], profile,
// keep the fastest, finish; and finish with reasons for a task outside the patterns.
#include "policy/builtin/builtin_policy.h"

#include <gtest/gtest.h>

#include "policy/builtin/tool_results.h"

namespace ca {
namespace {

const Json k_tools = Json::parse(R"([{"type":"function","function":{"name":"str_replace_editor"}},
    {"type":"function","function":{"name":"verify"}},{"type":"function","function":{"name":"profile"}},
    {"type":"function","function":{"name":"finish"}}])");

Json task_of(const std::string& program) {
  return {{"kind", "task"}, {"id", "t"}, {"program", Json::parse(program)}};
}

const char* k_covered = R"({"inputs":[{"name":"x","dtype":"float32","shape":[8,16]}],
    "nodes":[{"op":"aten::relu","args":["%x"],"out":["y"]}],"outputs":["y"]})";

// Drives one episode: answers each tool call with the next scripted result (editor calls get "ok").
struct Episode {
  std::unique_ptr<Policy> policy;
  Json messages = Json::array();
  std::vector<AssistantTurn> turns;

  Episode(int variants, const std::string& program, uint64_t seed = 0) {
    policy = make_builtin_policy({variants});
    policy->begin({task_of(program), "cpu", seed, 0});
  }

  const AssistantTurn& step(const std::string& tool_result) {
    if (!turns.empty()) messages.push_back({{"role", "tool"}, {"tool_call_id", "x"}, {"content", tool_result}});
    auto turn = policy->next(messages, k_tools);
    EXPECT_TRUE(turn.has_value());
    turns.push_back(*turn);
    messages.push_back({{"role", "assistant"}, {"content", turn->content}});
    return turns.back();
  }
  std::string tool() const { return turns.back().tool_calls.at(0).name; }
  Json arguments() const { return Json::parse(turns.back().tool_calls.at(0).arguments); }
};

TEST(BuiltinPolicyTest, TriesTheNextVariantAfterAFailAndKeepsTheFastest) {
  Episode episode(3, k_covered);
  episode.step("");
  ASSERT_EQ(episode.tool(), "str_replace_editor");
  EXPECT_EQ(episode.arguments()["path"], "kernels/kernel.cpp");
  std::string first = episode.arguments()["file_text"];
  episode.step("created kernels/kernel.cpp");
  ASSERT_EQ(episode.tool(), "verify");
  episode.step("[FAIL] compare: trial 1/5, output 0: max_abs 0.5");
  ASSERT_EQ(episode.tool(), "str_replace_editor");
  std::string second = episode.arguments()["file_text"];
  EXPECT_NE(first, second);
  episode.step("created");
  episode.step("[PASS] static\n[PASS] compare");
  ASSERT_EQ(episode.tool(), "profile");
  episode.step("Torch Baseline: 10.0 us, Torch Compile: n/a, CUDA Extension: 4.0 us");
  ASSERT_EQ(episode.tool(), "str_replace_editor");
  std::string third = episode.arguments()["file_text"];
  episode.step("created");
  episode.step("[PASS] compare");
  episode.step("Torch Baseline: 10.0 us, Torch Compile: 9.0 us, CUDA Extension: 6.5 us");
  // The second variant was faster than the third, which is on disk: it is written back, then the episode ends.
  ASSERT_EQ(episode.tool(), "str_replace_editor");
  EXPECT_EQ(episode.arguments()["file_text"], second);
  episode.step("created");
  ASSERT_EQ(episode.tool(), "finish");
  EXPECT_EQ(episode.turns.back().extra["variants_tried"], 3);
}

TEST(BuiltinPolicyTest, FinishesWithAReasonPerUncoveredNode) {
  Episode episode(4, R"({"inputs":[{"name":"x","dtype":"float32","shape":[8,16]}],
      "nodes":[{"op":"aten::roll","args":["%x",[1],[1]],"out":["c"]},{"op":"aten::sort","args":["%x"],"out":["s","i"]},
               {"op":"aten::add.Tensor","args":["%c","%s"],"out":["y"]}],"outputs":["y"]})");
  episode.step("");
  ASSERT_EQ(episode.tool(), "finish");
  const Json& uncovered = episode.turns.back().extra["uncovered"];
  ASSERT_EQ(uncovered.size(), 2u);
  EXPECT_EQ(uncovered[0]["op"], "aten::roll");
  EXPECT_EQ(uncovered[1]["node"], 1);
  EXPECT_NE(episode.arguments()["message"].get<std::string>().find("aten::sort"), std::string::npos);
}

TEST(BuiltinPolicyTest, FinishesWhenNoVariantPasses) {
  Episode episode(2, k_covered);
  episode.step("");
  episode.step("created");
  episode.step("[FAIL] compile: kernel.cpp:3: error: expected ';'");
  episode.step("created");
  episode.step("[FAIL] run: exit 1");
  ASSERT_EQ(episode.tool(), "finish");
  EXPECT_NE(episode.arguments()["message"].get<std::string>().find("None of the 2"), std::string::npos);
}

TEST(BuiltinPolicyTest, SameSeedSameEpisodeAndSeedsVaryTheOrder) {
  auto sources = [](uint64_t seed) {
    Episode episode(3, k_covered, seed);
    std::vector<std::string> written;
    episode.step("");
    for (int i = 0; i < 3; ++i) {
      written.push_back(episode.arguments()["file_text"]);
      episode.step("created");
      episode.step("[FAIL] compare: wrong");
    }
    return written;
  };
  EXPECT_EQ(sources(5), sources(5));
  EXPECT_NE(sources(0), sources(1));
  EXPECT_EQ(sources(0)[0], sources(1)[0]);  // the safest variant always comes first
}

TEST(BuiltinPolicyTest, StopsOnAnEditorError) {
  Episode episode(4, k_covered);
  episode.step("");
  episode.step("error: path outside kernels/");
  ASSERT_EQ(episode.tool(), "finish");
}

TEST(ToolResultsTest, ReadsVerifyAndProfileLines) {
  EXPECT_TRUE(parse_verify("[PASS] static\n[PASS] compare: 5 trials").passed);
  VerifyOutcome failed = parse_verify("[PASS] static\n[FAIL] compare: NaN at [0]");
  EXPECT_FALSE(failed.passed);
  EXPECT_EQ(failed.failure, "compare: NaN at [0]");
  EXPECT_FALSE(parse_verify("error: verify timed out").passed);
  ProfileOutcome profile = parse_profile("Torch Baseline: 12.5 us, Torch Compile: n/a, CUDA Extension: 3.25 us");
  EXPECT_EQ(profile.eager_us, 12.5);
  EXPECT_FALSE(profile.compile_us.has_value());
  EXPECT_EQ(profile.candidate_us, 3.25);
}

}  // namespace
}  // namespace ca
