// ca-runner: run one candidate library on the calls of a request, inside the sandbox (internal to ca-verify and
// ca-profile). With --serve it stays up and runs one request per line of stdin (ca-profile: one per round).

#include "runner/process.h"
#include "runner/run_candidate.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-runner",
              "Run one candidate library on the calls of a request file (internal: ca-verify and ca-profile start it "
              "in the sandbox).");
  std::string request_path;
  bool serve_mode = false;
  cli.app().add_option("request", request_path, "Request JSON file; see ca-runner(1)");
  cli.app().add_flag(
      "--serve", serve_mode,
      "Stay up: read one request path per line of stdin, run it, and answer \"done\" on stdout; exit at end of input");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  if (serve_mode) {
    if (!request_path.empty()) return to_int(usage_error("--serve takes its requests on stdin, not as an argument"));
    serve_runner_requests();
  }
  if (request_path.empty()) return to_int(usage_error("a request file is required (or --serve)"));

  auto request = read_request(request_path);
  if (!request) {
    error(request_path, request.error().message);
    return to_int(exit_code_of(request.error().failure));
  }
  auto summary = (new CandidateRunner)->run(*request);  // never destroyed: see end_runner_process
  if (!summary) {
    error(request_path, summary.error().message);
    end_runner_process(to_int(exit_code_of(summary.error().failure)));
  }
  verbose(std::to_string(summary->calls) + " call(s) run, " + std::to_string(summary->failed) + " failed");
  end_runner_process(to_int(summary->failed == 0 ? ExitCode::ok : ExitCode::some_failed));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
