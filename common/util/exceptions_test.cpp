#include "util/exceptions.h"

#include <stdexcept>

#include <gtest/gtest.h>

#include "util/exit_codes.h"
#include "util/log.h"

namespace ca {
namespace {

std::string text_of(auto thrown) {
  try {
    throw thrown;
  } catch (...) {
    return current_exception_text();
  }
}

TEST(Exceptions, TextIsTheFirstLineOfWhat) {
  EXPECT_EQ(text_of(std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB\nException raised from malloc")),
            "CUDA out of memory. Tried to allocate 2.00 GiB");
  EXPECT_EQ(text_of(std::bad_alloc()), "std::bad_alloc");
  EXPECT_EQ(text_of(std::runtime_error("")), "exception without a message");
  EXPECT_EQ(text_of(42), "unknown exception");
}

TEST(Exceptions, AnExceptionBecomesTheError) {
  auto thrown =
      exception_as_error<int>([]() -> std::expected<int, std::string> { throw std::out_of_range("index 9"); });
  ASSERT_FALSE(thrown);
  EXPECT_EQ(thrown.error(), "index 9");
  auto value = exception_as_error<int>([]() -> std::expected<int, std::string> { return 7; });
  EXPECT_EQ(value, 7);
  auto error = exception_as_error<int>([]() -> std::expected<int, std::string> { return std::unexpected("bad"); });
  EXPECT_EQ(error.error(), "bad");
}

TEST(Exceptions, UncaughtIsReportedAsTheToolsErrorWithExit70) {
  set_tool_name("ca-test");
  testing::internal::CaptureStderr();
  int code = 0;
  try {
    throw std::runtime_error("DefaultCPUAllocator: can't allocate memory\nframe #0");
  } catch (...) {
    code = report_uncaught_exception();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "ca-test: error: DefaultCPUAllocator: can't allocate memory\n");
  EXPECT_EQ(code, 70);
  EXPECT_EQ(code, to_int(ExitCode::internal_error));
}

}  // namespace
}  // namespace ca
