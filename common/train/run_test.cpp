// Tests of ca-train's run: the launch a data-parallel environment gives, the checkpoint's tokenizer, the trajectories
// read per stage with their bad records, and the closing note.
#include "train/run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "train/refusing_port_test_util.h"
#include "util/atomic_file.h"

namespace ca::train {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ca_train_run_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// A tokenizer of a few letters: enough for records that are dropped or refused before they are tokenized.
model::Tokenizer letters() {
  const Json j = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", Json::array()}}}};
  auto tokenizer = model::Tokenizer::from_json(j, "letters");
  EXPECT_TRUE(tokenizer) << tokenizer.error();
  return std::move(*tokenizer);
}

std::string write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file);
  for (const std::string& line : lines) out << line << "\n";
  return file.string();
}

TEST(TrainStageTest, NamesAndFollowedFieldsPerStage) {
  EXPECT_EQ(stage_name(Stage::warmup), "warmup");
  EXPECT_EQ(stage_key(Stage::rft), "loss");
  EXPECT_EQ(stage_key(Stage::value), "explained_variance");
  EXPECT_EQ(stage_key(Stage::warmup), "reward_mean");
  EXPECT_EQ(stage_key(Stage::ppo), "reward_mean");
}

TEST(JoinLaunchTest, WorldSizeOneIsOneProcessOnTheDeviceAsGiven) {
  std::string device = "cuda:3";  // not parsed alone: a plain process finds out when it loads the model
  auto dp = join_launch(DistEnv{}, device, std::chrono::seconds(1));
  ASSERT_TRUE(dp) << dp.error().second;
  EXPECT_FALSE(dp->active());
  EXPECT_TRUE(dp->is_main());
  EXPECT_EQ(device, "cuda:3");
}

TEST(JoinLaunchTest, ABadDeviceInALaunchIsAUsageError) {
  DistEnv env;
  env.world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = 1;
  std::string device = "tpu";
  auto dp = join_launch(env, device, std::chrono::seconds(1));
  ASSERT_FALSE(dp);
  EXPECT_EQ(dp.error().first, ExitCode::usage);
  EXPECT_NE(dp.error().second.find("tpu"), std::string::npos) << dp.error().second;
}

TEST(JoinLaunchTest, AStoreThatCannotBeReachedIsAnIoError) {
  RefusingPort refusing;
  ASSERT_NE(refusing.port, 0);
  DistEnv env = second_of_two_ranks_at(refusing.port);
  std::string device = "cpu";
  auto dp = join_launch(env, device, std::chrono::milliseconds(300));
  ASSERT_FALSE(dp);
  EXPECT_EQ(dp.error().first, ExitCode::io_error);
  EXPECT_NE(dp.error().second.find("rank 1 of 2: no rendezvous"), std::string::npos) << dp.error().second;
  EXPECT_EQ(device, "cpu");
}

TEST(LoadCheckpointTokenizerTest, AMissingCheckpointIsNoInputAndOneWithoutATokenizerIsBadData) {
  TempDir dir;
  auto missing = load_checkpoint_tokenizer(dir.path / "nowhere");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().first, ExitCode::no_input);
  auto empty = load_checkpoint_tokenizer(dir.path);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().first, ExitCode::data_error);
  EXPECT_NE(empty.error().second.find("tokenizer.json"), std::string::npos) << empty.error().second;
  ASSERT_TRUE(write_file_atomic((dir.path / "tokenizer.json").string(), "{\"model\": "));
  auto bad = load_checkpoint_tokenizer(dir.path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().first, ExitCode::data_error);
}

TEST(ReadTrajectoriesTest, RftCountsWhatItDropsAndSkipsABadLine) {
  TempDir dir;
  TrainRun run;
  run.data = {write_lines(dir.path / "t.jsonl",
                          {R"({"reward": {"value": 0}, "messages": []})", "{not json", R"({"messages": []})"})};
  RftData data;
  EXPECT_EQ(read_trajectories(run, letters(), data), ExitCode::some_failed);
  EXPECT_TRUE(data.kept.empty());
  EXPECT_EQ(data.summary(), "kept 0 of 2 trajectories (no reward: 1, reward <= 0: 1)");
}

TEST(ReadTrajectoriesTest, TheOtherStagesRefuseATrajectoryWithoutRewardAndFailFastStops) {
  TempDir dir;
  TrainRun run;
  run.stage = Stage::value;
  run.data = {write_lines(dir.path / "t.jsonl", {R"({"messages": []})", R"({"messages": []})"})};
  RftData data;
  EXPECT_EQ(read_trajectories(run, letters(), data), ExitCode::some_failed);
  EXPECT_TRUE(data.kept.empty());
  run.on_bad = OnBadRecord::stop;
  EXPECT_EQ(read_trajectories(run, letters(), data), ExitCode::data_error);
}

TEST(ReadTrajectoriesTest, AMissingFileIsNoInput) {
  TempDir dir;
  TrainRun run;
  run.data = {(dir.path / "none.jsonl").string()};
  RftData data;
  EXPECT_EQ(read_trajectories(run, letters(), data), ExitCode::no_input);
}

TEST(FinishedNoteTest, SaysUpdatesOrStepsWithTheFollowedFieldAndTheFolder) {
  TrainResult done;
  done.first_step = 6;
  done.last_step = 12;
  EXPECT_EQ(finished_note(Stage::rft, done, {{"loss", 2.5}}, {{"loss", 0.5}}, "", "out", nullptr),
            "updates 7..12: loss 2.5 -> 0.5; checkpoints and log.jsonl in out");
  EXPECT_EQ(finished_note(Stage::value, done, {{"explained_variance", 0}}, {{"explained_variance", 1}},
                          "explained variance over the data 0 -> 1; ", "o", nullptr),
            "updates 7..12: explained_variance 0 -> 1; explained variance over the data 0 -> 1; checkpoints and "
            "log.jsonl in o");
  EXPECT_EQ(finished_note(Stage::ppo, done, Json::object(), {{"reward_mean", 0.25}}, "", "o", nullptr),
            "steps 7..12: reward_mean null -> 0.25; checkpoints and log.jsonl in o");
}

TEST(FinishedNoteTest, ARunWithoutStepsHasNoFieldsToShow) {
  TrainResult done;
  done.first_step = done.last_step = 12;  // resumed at its last step
  EXPECT_EQ(finished_note(Stage::warmup, done, Json(), Json(), "", "o", nullptr),
            "steps 13..12: reward_mean null -> null; checkpoints and log.jsonl in o");
}

}  // namespace
}  // namespace ca::train
