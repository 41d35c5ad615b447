#include "rollout/rollout.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "rollout/journal.h"
#include "rollout/judge.h"
#include "rollout/tools.h"
#include "util/atomic_file.h"
#include "util/unix_socket.h"

namespace ca {
namespace {
namespace fs = std::filesystem;

TEST(ShardTest, ParsesAndSplitsEveryTaskIntoExactlyOneShard) {
  EXPECT_EQ(parse_shard("2/5")->index, 2);
  for (const char* bad : {"5/5", "-1/2", "1", "1/0", "a/b", "1/2x"}) EXPECT_FALSE(parse_shard(bad)) << bad;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 300; ++i) {
    int owners = 0;
    for (int shard = 0; shard < 3; ++shard) {
      if (in_shard("task/" + std::to_string(i), {shard, 3})) {
        ++owners;
        ++counts[shard];
      }
    }
    EXPECT_EQ(owners, 1);
  }
  for (int count : counts) EXPECT_GT(count, 50);  // roughly even
}

TEST(EpisodeSeedTest, DiffersBySampleTaskAndRunSeed) {
  EXPECT_EQ(episode_seed(1, "a", 0), episode_seed(1, "a", 0));
  EXPECT_NE(episode_seed(1, "a", 0), episode_seed(1, "a", 1));
  EXPECT_NE(episode_seed(1, "a", 0), episode_seed(1, "b", 0));
  EXPECT_NE(episode_seed(1, "a", 0), episode_seed(2, "a", 0));
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_path = (fs::path(::testing::TempDir()) / ("journal-" + std::to_string(::getpid()) + ".jsonl")).string();
    fs::remove(m_path);
  }
  void TearDown() override { fs::remove(m_path); }
  std::string m_path;
};

TEST_F(JournalTest, ResumesFromWhatIsThereAndDropsATornLastLine) {
  {
    auto journal = Journal::open(m_path, false);
    ASSERT_TRUE(journal) << journal.error();
    ASSERT_TRUE(journal->append({{"kind", "trajectory"}, {"task_id", "a"}, {"sample", 0}}));
    ASSERT_TRUE(journal->append({{"kind", "trajectory"}, {"task_id", "a"}, {"sample", 1}}));
  }
  std::ofstream(m_path, std::ios::app) << R"({"kind": "trajectory", "task_id": "b", "sam)";
  EXPECT_TRUE(Journal::open(m_path, false).error().find("pass --resume") != std::string::npos);
  auto journal = Journal::open(m_path, true);
  ASSERT_TRUE(journal) << journal.error();
  EXPECT_EQ(journal->done(), (std::set<std::pair<std::string, int>>{{"a", 0}, {"a", 1}}));
  ASSERT_TRUE(journal->append({{"kind", "trajectory"}, {"task_id", "b"}, {"sample", 0}}));
  EXPECT_EQ(read_file(m_path).value(),
            "{\"kind\":\"trajectory\",\"task_id\":\"a\",\"sample\":0}\n{\"kind\":\"trajectory\",\"task_id\":\"a\","
            "\"sample\":1}\n"
            "{\"kind\":\"trajectory\",\"task_id\":\"b\",\"sample\":0}\n");
}

TEST_F(JournalTest, AResumeRunsAgainTheEpisodesWithAnError) {
  const std::string good = R"({"kind":"trajectory","task_id":"a","sample":0,"error":null})";
  const std::string other = R"({"kind":"note"})";
  ASSERT_TRUE(write_file_atomic(m_path, good + "\n" +
                                            R"({"kind":"trajectory","task_id":"b","sample":0,"error":"judge: oom"})"
                                            "\n" +
                                            other + "\n"));
  {
    auto journal = Journal::open(m_path, true);
    ASSERT_TRUE(journal) << journal.error();
    EXPECT_EQ(journal->done(), (std::set<std::pair<std::string, int>>{{"a", 0}}));
    EXPECT_EQ(journal->retried(), 1u);
    EXPECT_EQ(read_file(m_path).value(), good + "\n" + other + "\n");
    ASSERT_TRUE(journal->append({{"kind", "trajectory"}, {"task_id", "b"}, {"sample", 0}, {"error", nullptr}}));
  }
  auto again = Journal::open(m_path, true);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->done(), (std::set<std::pair<std::string, int>>{{"a", 0}, {"b", 0}}));
  EXPECT_EQ(again->retried(), 0u);
}

TEST_F(JournalTest, NamesABrokenLineAndRefusesToResumeStdout) {
  ASSERT_TRUE(write_file_atomic(m_path, "{\"kind\": \"trajectory\"}\nnot json\n"));
  EXPECT_EQ(Journal::open(m_path, true).error(), m_path + ":2: not a JSON object");
  EXPECT_TRUE(Journal::open("-", true).error().starts_with("--resume needs an output file"));
}

TEST(GlobMatchTest, MatchesWithinAndAcrossDirectories) {
  EXPECT_TRUE(glob_match("kernels/*.cu", "kernels/a.cu"));
  EXPECT_FALSE(glob_match("kernels/*.cu", "kernels/sub/a.cu"));
  EXPECT_TRUE(glob_match("**/*.cu", "kernels/sub/a.cu"));
  EXPECT_TRUE(glob_match("**/*.cu", "a.cu"));
  EXPECT_FALSE(glob_match("*.py", "kernels/a.py"));
  EXPECT_TRUE(glob_match("model.p?", "model.py"));
}

TEST(ToolboxTest, AnswersBadCallsWithErrorsThePolicyCanRead) {
  ToolOptions options;
  options.max_argument_bytes = 64;
  Toolbox toolbox(::testing::TempDir(), options);
  EXPECT_EQ(toolbox.call({"1", "nope", "{}"}).content,
            "error: unknown tool 'nope': the tools are bash, str_replace_editor, glob, verify, profile, finish");
  EXPECT_TRUE(toolbox.call({"2", "bash", "{\"command\": "}).content.starts_with("error: arguments are not valid JSON"));
  EXPECT_EQ(toolbox.call({"3", "bash", "[1]"}).content, "error: arguments must be a JSON object");
  EXPECT_EQ(toolbox.call({"4", "glob", "{}"}).content, "error: glob needs a string argument 'pattern'");
  ToolResult big = toolbox.call({"5", "bash", std::string(100, ' ')});
  EXPECT_FALSE(big.ok);
  EXPECT_EQ(big.content, "error: the call's arguments are 100 bytes; at most 64 are accepted");
  ToolResult finish = toolbox.call({"6", "finish", ""});
  EXPECT_TRUE(finish.finish);
  EXPECT_TRUE(finish.ok);
}

TEST(ToolboxTest, SaysSoWhenTheSandboxToolIsMissing) {
  ToolOptions options;
  options.bin_dir = "/no/such/dir";
  Toolbox toolbox(::testing::TempDir(), options);
  ToolResult result = toolbox.call({"1", "bash", "{\"command\": \"ls\"}"});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.content.starts_with("error: cannot run /no/such/dir/ca-sandbox")) << result.content;
}

// A stand-in for ca-verify in a bin directory of its own: prints what the cold tool would, exits 1.
std::string fake_cold_tools(const std::string& name) {
  std::string dir = ::testing::TempDir() + name;
  fs::create_directories(dir);
  std::ofstream(dir + "/ca-verify")
      << "#!/bin/sh\nprintf '[FAIL] compare: cold\\n'\necho 'ca-verify: note' >&2\nexit 1\n";
  fs::permissions(dir + "/ca-verify", fs::perms::owner_all);
  return dir;
}

TEST(ToolboxTest, AWarmJudgesAnswerReadsAsTheColdToolsOutput) {
  std::string socket = ::testing::TempDir() + "toolbox_judge.sock";
  fs::remove(socket);
  auto listener = UnixListener::bind(socket);
  ASSERT_TRUE(listener) << listener.error();
  Json request;
  std::thread judge([&] {
    std::optional<int> fd;
    while (!fd) fd = listener->accept(std::chrono::milliseconds(1000)).value();
    request = Json::parse(read_line(*fd, 1 << 20, std::chrono::milliseconds(0)).value());
    Json answer = {{"exit", 1}, {"stdout", "[FAIL] compare: warm\n"}, {"stderr", "ca-verify: note\n"}};
    (void)write_all(*fd, answer.dump() + "\n");
    ::close(*fd);
  });
  ToolOptions options;
  options.bin_dir = fake_cold_tools("toolbox_judge_bin");
  options.judge_socket = socket;
  options.profile_compile = false;
  Toolbox toolbox(::testing::TempDir(), options);
  ToolResult warm = toolbox.call({"1", "verify", "{}"});
  judge.join();
  EXPECT_EQ(request["tool"], "verify");
  EXPECT_EQ(request["backend"], "cpu");
  EXPECT_EQ(request["compile"], false);
  EXPECT_TRUE(fs::path(request["workspace"].get<std::string>()).is_absolute()) << request.dump();
  EXPECT_FALSE(warm.ok);
  // The same text the cold tool's process gives: stdout, stderr, how it ended.
  ToolOptions cold_options = options;
  cold_options.judge_socket.clear();
  ToolResult cold = Toolbox(::testing::TempDir(), cold_options).call({"2", "verify", "{}"});
  EXPECT_EQ(warm.content, "[FAIL] compare: warm\nca-verify: note\n\n[exited with status 1]");
  EXPECT_EQ(cold.content, "[FAIL] compare: cold\nca-verify: note\n\n[exited with status 1]");
}

TEST(ToolboxTest, NoJudgeAtTheSocketMeansTheColdTool) {
  ToolOptions options;
  options.bin_dir = fake_cold_tools("toolbox_nojudge_bin");
  options.judge_socket = ::testing::TempDir() + "no_judge_here.sock";
  fs::remove(options.judge_socket);
  ToolResult result = Toolbox(::testing::TempDir(), options).call({"1", "verify", "{}"});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.content.starts_with("[FAIL] compare: cold\n")) << result.content;
}

// A tool that fails with an error and then a backtrace (LibTorch's) is reported by its error line.
TEST(JudgeTest, AFailedToolIsReportedByItsErrorLine) {
  std::string dir = ::testing::TempDir() + "judge_error_bin";
  fs::create_directories(dir);
  std::ofstream(dir + "/ca-verify")
      << "#!/bin/sh\necho 'ca-verify: note: judging' >&2\n"
      << "printf 'ca-verify: error: c.jsonl:1: CUDA out of memory.\\nframe #0: f\\n' >&2\n"
      << "exit 1\n";
  fs::permissions(dir + "/ca-verify", fs::perms::owner_all);
  std::string scratch = ::testing::TempDir() + "judge_error_scratch";
  fs::create_directories(scratch);
  JudgeOptions options;
  options.bin_dir = dir;
  auto judged = judge_candidate(Json{{"kind", "candidate"}}, scratch, options);
  ASSERT_FALSE(judged);
  EXPECT_EQ(judged.error(), "ca-verify exited with status 1: ca-verify: error: c.jsonl:1: CUDA out of memory.");
}

TEST(Base64Test, EncodesWithPadding) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode(std::string("\xff\x00", 2)), "/wA=");
}

}  // namespace
}  // namespace ca
