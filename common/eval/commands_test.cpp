// Tests of ca-eval's subcommands: a results file read back (and each way it can be wrong), the work folder of a run,
// a run without solutions, and report and compare on good and missing results.
#include "eval/commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "eval/metrics.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ca_eval_commands_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file);
  for (const std::string& line : lines) out << line << "\n";
  return file.string();
}

// A results file as `ca-eval run` writes it: a passing task, a missing one and the summary.
std::string write_results(const fs::path& file) {
  TaskResult pass, missing;
  pass.task_id = "a";
  pass.samples = 1;
  pass.pass = true;
  pass.reward = 1.0;
  missing.task_id = "b";
  missing.stage = "missing";
  Json summary = {{"kind", "eval_summary"}, {"suite", "suite.jsonl"}, {"source", "judged j.jsonl"}};
  summary["environment"] = Json::object();
  summary.update(summarize({pass, missing}));
  return write_lines(file, {to_json(pass).dump(), to_json(missing).dump(), summary.dump()});
}

TEST(LoadRunTest, ReadsTheTasksAndTheSummary) {
  TempDir dir;
  auto run = load_run(write_results(dir.path / "results.jsonl"));
  ASSERT_TRUE(run) << run.error().second;
  ASSERT_EQ(run->tasks.size(), 2u);
  EXPECT_EQ(run->tasks[0].task_id, "a");
  EXPECT_TRUE(run->tasks[0].pass);
  EXPECT_EQ(run->summary["suite"], "suite.jsonl");
}

TEST(LoadRunTest, AMissingFileIsNoInput) {
  TempDir dir;
  const std::string path = (dir.path / "none.jsonl").string();
  auto run = load_run(path);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().first, ExitCode::no_input);
  EXPECT_EQ(run.error().second.rfind(path + ": cannot open: ", 0), 0u) << run.error().second;
}

TEST(LoadRunTest, ALineThatIsNotJsonIsBadDataAtItsLine) {
  TempDir dir;
  const std::string path = write_lines(dir.path / "r.jsonl", {R"({"kind": "eval_summary"})", "{oops"});
  auto run = load_run(path);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().first, ExitCode::data_error);
  EXPECT_EQ(run.error().second.rfind(path + ":2: ", 0), 0u) << run.error().second;
}

TEST(LoadRunTest, RecordsThatAreNotARunAreBadDataNamingTheFile) {
  TempDir dir;
  const std::string foreign = write_lines(dir.path / "f.jsonl", {R"({"kind": "candidate"})"});
  auto run = load_run(foreign);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().first, ExitCode::data_error);
  EXPECT_EQ(run.error().second, foreign + ": record 1: kind 'candidate' is not eval_task or eval_summary");
  TaskResult task;
  task.task_id = "a";
  const std::string headless = write_lines(dir.path / "h.jsonl", {to_json(task).dump()});
  run = load_run(headless);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().first, ExitCode::data_error);
  EXPECT_EQ(run.error().second, headless + ": no eval_summary record");
}

TEST(MakeWorkDirTest, AGivenFolderIsMadeAndKept) {
  TempDir dir;
  const std::string given = (dir.path / "given" / "deeper").string();
  auto work = make_work_dir(given, "out.jsonl.journal", false);
  ASSERT_TRUE(work) << work.error();
  EXPECT_EQ(work->path, given);
  EXPECT_FALSE(work->temporary);
  EXPECT_TRUE(fs::is_directory(given));
}

TEST(MakeWorkDirTest, BesideTheJournalItIsEmptiedUnlessResuming) {
  TempDir dir;
  const std::string journal = (dir.path / "out.jsonl.journal").string();
  fs::create_directories(journal + ".d");
  write_lines(journal + ".d/verified.jsonl", {"{}"});
  auto resumed = make_work_dir("", journal, true);
  ASSERT_TRUE(resumed) << resumed.error();
  EXPECT_EQ(resumed->path, journal + ".d");
  EXPECT_TRUE(resumed->temporary);
  EXPECT_TRUE(fs::exists(journal + ".d/verified.jsonl"));
  auto fresh = make_work_dir("", journal, false);
  ASSERT_TRUE(fresh) << fresh.error();
  EXPECT_TRUE(fs::is_directory(journal + ".d"));
  EXPECT_FALSE(fs::exists(journal + ".d/verified.jsonl"));
}

TEST(MakeWorkDirTest, WithoutEitherItIsAFreshTemporaryFolder) {
  auto work = make_work_dir("", "", false);
  ASSERT_TRUE(work) << work.error();
  EXPECT_TRUE(work->temporary);
  EXPECT_EQ(fs::path(work->path).parent_path(), fs::temp_directory_path());
  EXPECT_EQ(fs::path(work->path).filename().string().rfind("ca-eval-", 0), 0u);
  EXPECT_TRUE(fs::is_directory(work->path));
  auto other = make_work_dir("", "", false);
  ASSERT_TRUE(other) << other.error();
  EXPECT_NE(other->path, work->path);
  fs::remove_all(work->path);
  fs::remove_all(other->path);
}

TEST(EvalRunTest, WithoutASourceOfSolutionsItIsAUsageErrorBeforeAnythingIsWritten) {
  TempDir dir;
  EvalOptions options;
  options.suite = "suite.jsonl";
  const std::string output = (dir.path / "out.jsonl").string();
  EXPECT_EQ(eval_run(options, output, {}), ExitCode::usage);
  EXPECT_TRUE(fs::is_empty(dir.path));
}

TEST(WriteEvalReportTest, WritesMarkdownAndHtmlIntoAFolderItMakes) {
  TempDir dir;
  const fs::path out = dir.path / "report" / "here";
  ASSERT_EQ(write_eval_report(write_results(dir.path / "r.jsonl"), out.string()), ExitCode::ok);
  std::ifstream md(out / "report.md");
  std::string first;
  std::getline(md, first);
  EXPECT_EQ(first, "# ca-eval report");
  EXPECT_GT(fs::file_size(out / "report.html"), 0u);
}

TEST(WriteEvalReportTest, MissingResultsMakeNoFolderAndAnUnwritableFolderIsAnIoError) {
  TempDir dir;
  EXPECT_EQ(write_eval_report((dir.path / "none.jsonl").string(), (dir.path / "report").string()), ExitCode::no_input);
  EXPECT_FALSE(fs::exists(dir.path / "report"));
  const std::string results = write_results(dir.path / "r.jsonl");
  EXPECT_EQ(write_eval_report(results, results + "/report"), ExitCode::io_error);  // under a file
}

TEST(CompareRunsTest, ComparesTwoRunsOnStdoutAndStopsAtTheFirstBadOne) {
  TempDir dir;
  const std::string a = write_results(dir.path / "a.jsonl");
  testing::internal::CaptureStdout();
  EXPECT_EQ(compare_runs(a, a), ExitCode::ok);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("| metric (overall) | A | B | B - A |"), std::string::npos);
  const std::string bad = write_lines(dir.path / "bad.jsonl", {"[1"});
  EXPECT_EQ(compare_runs((dir.path / "none.jsonl").string(), bad), ExitCode::no_input);
  EXPECT_EQ(compare_runs(a, bad), ExitCode::data_error);
}

}  // namespace
}  // namespace ca
