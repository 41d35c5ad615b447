// The runner proper: loads one candidate library into this (sandboxed) process and runs the calls of a request,
// writing each call's outputs and results line before the next call starts (protocol.h).
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>

#include "runner/protocol.h"
#include "util/exit_codes.h"

namespace ca {

/// Why a run stopped before its last call. A candidate that returns non-zero or changes its inputs does not stop
/// the run: that is a failed call, reported in results.jsonl.
enum class RunFailure {
  no_request,   // the request file cannot be read
  bad_request,  // the request is malformed or asks for what this runner cannot do (backend cuda today)
  load_failed,  // dlopen or dlsym("ca_forward") failed; a load_failed event was written
  io_error,     // output_dir, an output file or results.jsonl could not be written, or buffers could not be had
  interrupted,  // SIGINT or SIGTERM arrived between calls
};

struct RunError {
  RunFailure failure;
  std::string message;
};

struct RunSummary {
  size_t calls = 0;   // calls run
  size_t failed = 0;  // calls whose result has ok == false
};

/// Reads and parses a request file. Fails with no_request or bad_request.
std::expected<RunRequest, RunError> read_request(const std::string& path);

/// Loads request.library (dlopen RTLD_NOW | RTLD_LOCAL) and runs every call in order. For each call it makes fresh
/// input buffers from (seed, stream = tensor index) with make_tensor_bytes, hashes them, poisons fresh output
/// buffers, times ca_forward on the host clock, re-hashes the inputs, writes the outputs (concatenated, atomically)
/// to output_dir/output_file and appends a flushed line to output_dir/results.jsonl. Returns how many calls ran and
/// failed, or why the run stopped early; a crash inside the candidate ends the process instead.
std::expected<RunSummary, RunError> run_candidate(const RunRequest& request);

/// The exit code ca-runner uses for each failure (documented in ca-runner(1)).
ExitCode exit_code_of(RunFailure failure);

/// A fast 64-bit hash for detecting input mutation: any single changed 8-byte word changes it.
uint64_t hash_bytes(std::span<const uint8_t> bytes);

}  // namespace ca
