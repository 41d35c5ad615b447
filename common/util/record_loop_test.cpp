#include "util/record_loop.h"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>

#include "util/atomic_file.h"
#include "util/signals.h"

namespace ca {
namespace {

struct LoopFixture : ::testing::Test {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ca_loop_test_" + std::to_string(getpid()));
  std::string input = (dir / "in.jsonl").string();
  std::string output = (dir / "out.jsonl").string();
  void SetUp() override {
    std::filesystem::create_directories(dir);
    std::ofstream(input) << "{\"n\":1}\n{\"n\":-1}\nnot json\n{\"n\":2}\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  // Doubles n; rejects negative n.
  static std::expected<Json, std::string> doubled(const Json& record) {
    if (record["n"].get<int>() < 0) return std::unexpected("n: negative");
    Json out = record;
    out["n"] = record["n"].get<int>() * 2;
    return out;
  }
  ExitCode run(OnBadRecord on_bad, unsigned jobs = 1, const Transform& transform = doubled) {
    auto writer = JsonlWriter::open(output);
    EXPECT_TRUE(writer);
    ExitCode code = transform_records({input}, *writer, on_bad, transform, jobs);
    EXPECT_TRUE(writer->commit());
    return code;
  }
};

TEST_F(LoopFixture, BadRecordsAreSkippedAndCounted) {
  EXPECT_EQ(run(OnBadRecord::skip), ExitCode::some_failed);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n{\"n\":4}\n");
}

TEST_F(LoopFixture, FailFastStopsAtFirstBadRecord) {
  EXPECT_EQ(run(OnBadRecord::stop), ExitCode::data_error);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n");
}

TEST_F(LoopFixture, ParallelJobsKeepInputOrderAndTheSameVerdicts) {
  EXPECT_EQ(run(OnBadRecord::skip, 3), ExitCode::some_failed);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n{\"n\":4}\n");
  EXPECT_EQ(run(OnBadRecord::stop, 3), ExitCode::data_error);
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n") << "records after the failing one are never written";
}

TEST_F(LoopFixture, AnExceptionFailsItsRecordOnly) {
  // Line 2 throws what an allocation throws, line 4 a library's exception; line 1 goes through.
  Transform throwing = [](const Json& record) -> std::expected<Json, std::string> {
    if (record["n"] == -1) throw std::bad_alloc();
    if (record["n"] == 2) throw std::runtime_error("op failed\nException raised from somewhere (backtrace)");
    return doubled(record);
  };
  for (unsigned jobs : {1u, 3u}) {
    testing::internal::CaptureStderr();
    EXPECT_EQ(run(OnBadRecord::skip, jobs, throwing), ExitCode::some_failed) << jobs << " jobs";
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("in.jsonl:2: std::bad_alloc\n"), std::string::npos) << err;
    EXPECT_NE(err.find("in.jsonl:4: op failed\n"), std::string::npos) << err;
    EXPECT_EQ(err.find("backtrace"), std::string::npos) << "only the message's first line: " << err;
    EXPECT_EQ(*read_file(output), "{\"n\":2}\n") << "the records before and after are processed";
  }
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(OnBadRecord::stop, 1, throwing), ExitCode::data_error);
  testing::internal::GetCapturedStderr();
}

TEST_F(LoopFixture, ParallelJobsOverlapUpToTheirNumber) {
  std::ofstream(input) << "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n{\"n\":6}\n";
  std::atomic<int> running = 0, most = 0;
  std::mutex mutex;
  std::condition_variable two_running;
  // Each record waits until two have run at once (once seen, the rest go on); the deadline only keeps a sequential
  // loop from hanging, and fails it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Transform overlapping = [&](const Json& record) -> std::expected<Json, std::string> {
    int now = ++running;
    for (int seen = most; seen < now && !most.compare_exchange_weak(seen, now);) {
    }
    {
      std::unique_lock lock(mutex);
      two_running.notify_all();
      two_running.wait_until(lock, deadline, [&] { return most >= 2; });
    }
    --running;
    return doubled(record);
  };
  EXPECT_EQ(run(OnBadRecord::skip, 2, overlapping), ExitCode::ok);
  EXPECT_EQ(most, 2) << "two records at a time, never more";
  EXPECT_EQ(*read_file(output), "{\"n\":2}\n{\"n\":4}\n{\"n\":6}\n{\"n\":8}\n{\"n\":10}\n{\"n\":12}\n");
}

// A record that fails because SIGTERM arrived meanwhile (a wait for the device gave up) ends the run as interrupted,
// sequential or parallel, rather than counting as bad input. In a child process: the flag cannot be cleared.
TEST_F(LoopFixture, RecordFailingOnASignalEndsTheRunInterrupted) {
  Transform stopped = [](const Json& record) -> std::expected<Json, std::string> {
    if (record["n"].get<int>() < 0) {
      std::raise(SIGTERM);
      return std::unexpected("interrupted while waiting for the device");
    }
    return doubled(record);
  };
  auto run_stopped = [&](unsigned jobs) {
    install_interrupt_handlers();
    auto writer = JsonlWriter::open(output);
    std::exit(int(transform_records({input}, *writer, OnBadRecord::skip, stopped, jobs)));
  };
  EXPECT_EXIT(run_stopped(1), ::testing::ExitedWithCode(130), "interrupted while waiting for the device");
  EXPECT_EXIT(run_stopped(3), ::testing::ExitedWithCode(130), "interrupted while waiting for the device");
}

TEST_F(LoopFixture, MissingInputIsNoInput) {
  auto writer = JsonlWriter::open(output);
  ASSERT_TRUE(writer);
  EXPECT_EQ(transform_records({(dir / "missing.jsonl").string()}, *writer, OnBadRecord::skip, doubled),
            ExitCode::no_input);
}

}  // namespace
}  // namespace ca
