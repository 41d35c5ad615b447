// The one exit-code table of every ca-* tool (docs/RECORDS.md), after sysexits.h.
#pragma once

namespace ca {

enum class ExitCode : int {
  ok = 0,               // everything done
  some_failed = 1,      // some records failed; they were reported and skipped
  usage = 64,           // bad command line (EX_USAGE)
  data_error = 65,      // malformed input data (EX_DATAERR)
  no_input = 66,        // an input file is missing or unreadable (EX_NOINPUT)
  internal_error = 70,  // the tool itself failed: an exception reached its top (EX_SOFTWARE; util/exceptions.h)
  io_error = 74,        // reading or writing failed (EX_IOERR)
  interrupted = 130,    // SIGINT or SIGTERM
};

inline int to_int(ExitCode code) {
  return static_cast<int>(code);
}

}  // namespace ca
