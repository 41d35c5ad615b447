// ca-runner: run one candidate library on the calls of a request, inside the sandbox (internal to ca-verify and
// ca-profile). With --serve it stays up and runs one request per line of stdin (ca-profile: one per round).

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "runner/run_candidate.h"
#include "util/cli.h"
#include "util/log.h"

using namespace ca;

namespace {

// The process ends as soon as its work is done: the runner is never destroyed, and no destructor or atexit handler
// runs (the candidate's among them). The kernel and the driver release the device context and every buffer at once,
// where the runner's destructor would free each call's buffers one by one.
[[noreturn]] void end(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

// The protocol's stdin and stdout move to descriptors of their own, and fds 0 and 1 become /dev/null and stderr,
// so that a candidate that reads stdin or prints cannot take a request line or forge a "done" by accident.
[[noreturn]] void serve() {
  int in = ::fcntl(0, F_DUPFD_CLOEXEC, 10), out = ::fcntl(1, F_DUPFD_CLOEXEC, 10);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || out < 0 || null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(2, 1) < 0) {
    error("--serve", "cannot set up stdin and stdout");
    end(to_int(ExitCode::io_error));
  }
  ::close(null_fd);
  auto served = serve_requests(in, out, *new CandidateRunner);
  if (!served) {
    error(served.error().message);
    end(to_int(exit_code_of(served.error().failure)));
  }
  end(to_int(ExitCode::ok));
}

}  // namespace

int main(int argc, char** argv) {
  ToolCli cli("ca-runner", "Run one candidate library on the calls of a request file (internal: ca-verify and ca-profile start it in the sandbox).");
  std::string request_path;
  bool serve_mode = false;
  cli.app().add_option("request", request_path, "Request JSON file; see ca-runner(1)");
  cli.app().add_flag("--serve", serve_mode,
                     "Stay up: read one request path per line of stdin, run it, and answer \"done\" on stdout; exit at end of input");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (serve_mode) {
    if (!request_path.empty()) return to_int(usage_error("--serve takes its requests on stdin, not as an argument"));
    serve();
  }
  if (request_path.empty()) return to_int(usage_error("a request file is required (or --serve)"));

  auto request = read_request(request_path);
  if (!request) {
    error(request_path, request.error().message);
    return to_int(exit_code_of(request.error().failure));
  }
  auto summary = (new CandidateRunner)->run(*request);
  if (!summary) {
    error(request_path, summary.error().message);
    end(to_int(exit_code_of(summary.error().failure)));
  }
  verbose(std::to_string(summary->calls) + " call(s) run, " + std::to_string(summary->failed) + " failed");
  end(to_int(summary->failed == 0 ? ExitCode::ok : ExitCode::some_failed));
}
