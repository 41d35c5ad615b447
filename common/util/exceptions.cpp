#include "util/exceptions.h"

#include <exception>

#include "util/exit_codes.h"
#include "util/log.h"

namespace ca {

std::string current_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    std::string text = e.what();
    if (auto end = text.find('\n'); end != std::string::npos) text.resize(end);
    return text.empty() ? "exception without a message" : text;
  } catch (...) {
    return "unknown exception";
  }
}

int report_uncaught_exception() {
  error(current_exception_text());
  return to_int(ExitCode::internal_error);
}

}  // namespace ca
