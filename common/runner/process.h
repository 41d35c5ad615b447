// How the ca-runner process ends and serves: at once when its work is done (no destructor of the runner or the
// candidate runs), and in --serve mode on protocol descriptors of its own.
#pragma once

namespace ca {

/// Flushes stdio and ends the process with `code` without running destructors or atexit handlers (the candidate's
/// among them): the kernel and the driver release the device context and every buffer at once, where the runner's
/// destructor would free each call's buffers one by one.
[[noreturn]] void end_runner_process(int code);

/// --serve: moves the protocol's stdin and stdout to descriptors of their own and makes fds 0 and 1 /dev/null and
/// stderr, so that a candidate that reads stdin or prints cannot take a request line or forge a "done" by accident;
/// then serves requests (serve_requests) until the end of input and ends the process: 0, or the failure's code.
[[noreturn]] void serve_runner_requests();

}  // namespace ca
