#include "util/journal.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

struct JournalFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("ca_journal_test_" + std::to_string(getpid()));
  std::string output = (dir / "out.jsonl").string();
  std::string input = (dir / "in.jsonl").string();
  JournalOptions options;
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream(input) << "{\"id\":\"a\"}\n";
    options.tool = "ca-test";
    options.flags = {{"--trials", "3"}};
    options.inputs = {input};
  }
  void TearDown() override { fs::remove_all(dir); }
  RecordJournal open_ok() {
    auto journal = RecordJournal::open(output, options);
    EXPECT_TRUE(journal) << journal.error().message;
    EXPECT_TRUE(*journal);
    return std::move(**journal);
  }
};

TEST_F(JournalFixture, ResumeFindsWhatWasAppended) {
  {
    RecordJournal journal = open_ok();
    ASSERT_TRUE(journal.append("0:1", "d1", JournalEntry{{{0, Json{{"id", "a"}}}, {1, Json{{"id", "r"}}}}, {}}));
    ASSERT_TRUE(journal.append("0:2", "d2", JournalEntry{{}, std::string("bad record")}));
  }
  options.resume = true;
  RecordJournal journal = open_ok();
  EXPECT_EQ(journal.resumed(), 2u);
  auto found = journal.find("0:1", "d1");
  ASSERT_TRUE(found);
  ASSERT_NE(*found, nullptr);
  ASSERT_EQ((*found)->out.size(), 2u);
  EXPECT_EQ((*found)->out[1].first, 1);
  EXPECT_EQ((*found)->out[1].second["id"], "r");
  auto failed = journal.find("0:2", "d2");
  ASSERT_TRUE(failed && *failed != nullptr);
  EXPECT_EQ((*failed)->error, "bad record");
  auto missing = journal.find("0:3", "d3");
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, nullptr);
  // The same place with another record: the input changed under the journal.
  EXPECT_FALSE(journal.find("0:1", "other"));
  ASSERT_TRUE(journal.finish());
  EXPECT_FALSE(fs::exists(RecordJournal::path_for(output)));
}

TEST_F(JournalFixture, AJournalLeftIsRefusedWithoutResume) {
  { open_ok(); }
  auto again = RecordJournal::open(output, options);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ExitCode::usage);
  EXPECT_NE(again.error().message.find("pass --resume"), std::string::npos);
}

TEST_F(JournalFixture, AResumeOfAnotherRunIsRefused) {
  { open_ok(); }
  options.resume = true;
  options.flags["--trials"] = "5";
  auto flags = RecordJournal::open(output, options);
  ASSERT_FALSE(flags);
  EXPECT_EQ(flags.error().code, ExitCode::usage);
  EXPECT_NE(flags.error().message.find("--trials was \"3\", now \"5\""), std::string::npos) << flags.error().message;
  options.flags["--trials"] = "3";
  std::ofstream(input, std::ios::app) << "{\"id\":\"b\"}\n";
  auto inputs = RecordJournal::open(output, options);
  ASSERT_FALSE(inputs);
  EXPECT_NE(inputs.error().message.find("in.jsonl changed since"), std::string::npos) << inputs.error().message;
}

TEST_F(JournalFixture, ALineTornByAKillIsDropped) {
  {
    RecordJournal journal = open_ok();
    ASSERT_TRUE(journal.append("0:1", "d1", JournalEntry{{{0, Json{{"id", "a"}}}}, {}}));
  }
  std::ofstream(RecordJournal::path_for(output), std::ios::app) << "{\"key\":\"0:2\",\"sha";
  options.resume = true;
  {
    RecordJournal journal = open_ok();
    EXPECT_EQ(journal.resumed(), 1u);
    ASSERT_TRUE(journal.append("0:2", "d2", JournalEntry{{{0, Json{{"id", "b"}}}}, {}}));
  }
  RecordJournal journal = open_ok();
  EXPECT_EQ(journal.resumed(), 2u);
}

TEST_F(JournalFixture, StandardOutputKeepsNone) {
  auto none = RecordJournal::open("-", options);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  options.resume = true;
  auto resume = RecordJournal::open("-", options);
  ASSERT_FALSE(resume);
  EXPECT_EQ(resume.error().code, ExitCode::usage);
}

}  // namespace
}  // namespace ca
