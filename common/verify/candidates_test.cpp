#include "verify/candidates.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "util/atomic_file.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

// A candidate that wrote nothing (an episode that finished without a kernel) is told so, not that its files are
// malformed.
TEST(CandidateFilesTest, NoFilesIsSaidApartFromMalformedFiles) {
  auto none = candidate_files(Json{{"files", Json::object()}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no kernel files"), std::string::npos) << none.error();
  auto list = candidate_files(Json{{"files", Json::array({"kernels/a.cu"})}});
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().find("expected an object of path -> source"), std::string::npos) << list.error();
  auto one = candidate_files(Json{{"files", {{"kernels/a.cu", "int x;"}}}});
  ASSERT_TRUE(one) << one.error();
  EXPECT_EQ(one->at("kernels/a.cu"), "int x;");
}

// Four candidate records with embedded tasks; the judge of the test decides by task id.
struct JudgeRecordsFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("ca_candidates_test_" + std::to_string(getpid()));
  std::string input = (dir / "candidates.jsonl").string();
  std::string output = (dir / "judged.jsonl").string();
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream in(input);
    for (const char* id : {"ok1", "oom", "c10", "ok2"}) {
      in << Json{{"task", {{"kind", "task"}, {"id", id}}}, {"backend", "cpu"}, {"files", Json::object()}}.dump()
         << "\n";
    }
  }
  void TearDown() override { fs::remove_all(dir); }
};

// What a record's judging meets on a GPU that runs out of memory, and a LibTorch error outside the interpreter: both
// thrown, as LibTorch throws them.
Judge throwing_judge() {
  return [](const Json& task, const Json&, Backend) -> std::expected<Json, std::string> {
    const std::string id = task["id"];
    if (id == "oom") {
      TORCH_CHECK_WITH(OutOfMemoryError, false,
                       "CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.10 GiB total)");
    }
    if (id == "c10") TORCH_CHECK(false, "Storage size calculation overflowed with sizes=[4611686018427387904, 4]");
    return Json{{"ok", true}};
  };
}

TEST_F(JudgeRecordsFixture, AnOutOfMemoryOrC10ErrorFailsItsRecordAndTheOthersGoOn) {
  for (unsigned jobs : {1u, 2u}) {
    testing::internal::CaptureStderr();
    ExitCode code = judge_records({input}, output, "", false, "verify", throwing_judge(), jobs);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, ExitCode::some_failed) << jobs << " jobs";
    EXPECT_NE(err.find("candidates.jsonl:2: CUDA out of memory. Tried to allocate 20.00 GiB"), std::string::npos)
        << err;
    EXPECT_NE(err.find("candidates.jsonl:3: Storage size calculation overflowed"), std::string::npos) << err;
    EXPECT_EQ(err.find("Exception raised from"), std::string::npos) << "no C++ backtrace: " << err;
    auto judged = read_file(output);
    ASSERT_TRUE(judged) << judged.error();
    EXPECT_NE(judged->find("\"id\":\"ok1\""), std::string::npos);
    EXPECT_NE(judged->find("\"id\":\"ok2\""), std::string::npos);
    EXPECT_EQ(judged->find("\"id\":\"oom\""), std::string::npos);
    for (const auto& entry : fs::directory_iterator(dir)) {
      EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << entry.path();
    }
  }
}

TEST_F(JudgeRecordsFixture, FailFastStopsAtTheThrowingRecordWithoutAnOutputFile) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(judge_records({input}, output, "", true, "verify", throwing_judge()), ExitCode::data_error);
  testing::internal::GetCapturedStderr();
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  // The journal stays, so that --resume carries on from the records finished before the stop.
  EXPECT_EQ(left, (std::vector<std::string>{"candidates.jsonl", "judged.jsonl.journal"}))
      << "no output and no temporary file";
}

}  // namespace
}  // namespace ca
