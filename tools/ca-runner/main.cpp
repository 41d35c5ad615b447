// ca-runner: run one candidate library on the calls of a request, inside the sandbox (internal to ca-verify and ca-profile).

#include "runner/run_candidate.h"
#include "util/cli.h"
#include "util/log.h"

using namespace ca;

int main(int argc, char** argv) {
  ToolCli cli("ca-runner", "Run one candidate library on the calls of a request file (internal: ca-verify and ca-profile start it in the sandbox).");
  std::string request_path;
  cli.app().add_option("request", request_path, "Request JSON file; see ca-runner(1)")->required();
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  auto request = read_request(request_path);
  if (!request) {
    error(request_path, request.error().message);
    return to_int(exit_code_of(request.error().failure));
  }
  auto summary = run_candidate(*request);
  if (!summary) {
    error(request_path, summary.error().message);
    return to_int(exit_code_of(summary.error().failure));
  }
  verbose(std::to_string(summary->calls) + " call(s) run, " + std::to_string(summary->failed) + " failed");
  return to_int(summary->failed == 0 ? ExitCode::ok : ExitCode::some_failed);
}
