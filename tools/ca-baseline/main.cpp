// ca-baseline: time a task's eager and compiled baselines for ca-profile, one JSON request a line on stdin and one
// answer a line on stdout (internal: ca-profile starts several, each a CUDA context of its own; aten/baseline_worker.h).
#include <fcntl.h>
#include <unistd.h>

#include "aten/baseline_worker.h"
#include "util/cli.h"
#include "util/log.h"

using namespace ca;

int main(int argc, char** argv) {
  ToolCli cli("ca-baseline", "Time eager and compiled baselines on request (internal: ca-profile starts it; see ca-baseline(1)).");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  // Answers go out on a descriptor of their own, and fd 1 becomes stderr, so that nothing the libraries print
  // (LibTorch, a loaded package) can break a line of the protocol.
  int out = ::fcntl(1, F_DUPFD_CLOEXEC, 10);
  if (out < 0 || ::dup2(2, 1) < 0) {
    error("cannot set up stdout");
    return to_int(ExitCode::io_error);
  }
  auto served = serve_baselines(0, out);
  if (!served) {
    error(served.error());
    return to_int(ExitCode::io_error);
  }
  return to_int(ExitCode::ok);
}
