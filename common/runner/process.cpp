#include "runner/process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "runner/run_candidate.h"
#include "util/exit_codes.h"
#include "util/log.h"

namespace ca {

void end_runner_process(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

void serve_runner_requests() {
  int in = ::fcntl(0, F_DUPFD_CLOEXEC, 10), out = ::fcntl(1, F_DUPFD_CLOEXEC, 10);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || out < 0 || null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(2, 1) < 0) {
    error("--serve", "cannot set up stdin and stdout");
    end_runner_process(to_int(ExitCode::io_error));
  }
  ::close(null_fd);
  auto served = serve_requests(in, out, *new CandidateRunner);  // never destroyed: see end_runner_process
  if (!served) {
    error(served.error().message);
    end_runner_process(to_int(exit_code_of(served.error().failure)));
  }
  end_runner_process(to_int(ExitCode::ok));
}

}  // namespace ca
