// Exceptions where a tool meets them. Library code returns errors as values, but LibTorch throws (an out-of-memory
// in an allocation, a c10::Error from an op outside the interpreter), and so can the standard library (bad_alloc).
// They are caught at two places only: around one record (record_loop.h: the record fails, the run goes on with the
// next) and at the top of each tool's main (the run ends as `ca-x: error: ...`, exit 70, its temporary files removed
// as the stack unwinds).
#pragma once

#include <expected>
#include <string>

namespace ca {

/// The text of the exception being handled (call it inside a catch block): the first line of what() (a c10::Error
/// carries LibTorch's C++ backtrace after it), or "unknown exception" for one not derived from std::exception.
std::string current_exception_text();

/// Calls `work` (returning std::expected<T, std::string>) and turns an exception from it into its error: one record's
/// failure, not the run's.
template <typename T, typename Work>
std::expected<T, std::string> exception_as_error(Work&& work) {
  try {
    return work();
  } catch (...) {
    return std::unexpected(current_exception_text());
  }
}

/// For the catch of main's function-try-block: reports the exception being handled as `<tool>: error: <text>` and
/// returns ExitCode::internal_error as an int.
int report_uncaught_exception();

}  // namespace ca
