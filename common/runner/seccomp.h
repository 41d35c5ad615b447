// The runner's seccomp filters (EXPLOITS.md "Processes, signals and code loads"): what the candidate's process may
// not do at run time, whatever its code imports. A refused call ends the runner with k_exit_forbidden and a line on
// stderr naming the call, which the trusted side reports as the verdict's reason.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "util/exit_codes.h"

namespace ca {

/// The largest file the runner may write (RLIMIT_FSIZE): it writes results.jsonl only, a line a request.
inline constexpr int64_t k_runner_file_bytes = int64_t{4} << 20;

/// cuda: what io/ may hold besides the regions (the results files), as the parent's disk quota counts it.
inline constexpr int64_t k_runner_disk_slack_bytes = int64_t{64} << 20;

/// ca-runner's exit code after a forbidden system call (EX_NOPERM).
inline constexpr ExitCode k_exit_forbidden = ExitCode{77};

/// Before the candidate loads, for every thread of the process (TSYNC): no new processes (fork, vfork, clone without
/// CLONE_THREAD; clone3 answers ENOSYS so that glibc uses clone, whose flags a filter can read), no exec, no signals
/// to other processes (kill and tgkill only to this process), no handler for SIGSYS, no ptrace, no access to other
/// processes' memory, no io_uring or userfaultfd, no sched_setaffinity (the sandbox's share of the cores holds).
/// Threads are allowed: OpenMP needs them, and every thread's CPU time is counted and every thread is stopped between
/// calls (runner_calls.h). Fails when the kernel refuses.
std::expected<void, std::string> forbid_processes_and_signals();

/// Before the candidate loads (cpu only; its initialisers run inside dlopen): no storage beyond what the process was
/// given, so that its memory is the address-space limit and the regions the trusted side made (docs/EXPLOITS.md,
/// shares). No file, directory, link or node is made (open/openat with O_CREAT or O_TMPFILE, creat, mkdir*, mknod*,
/// link*, symlink*, rename*), none grown or cut (truncate, ftruncate, fallocate; a write past the end is
/// RLIMIT_FSIZE's), and no memory outside the address space: memfd, pipes, sockets, System V shared memory, message
/// queues. openat2 answers ENOSYS (its flags are out of a filter's reach). Files that exist are opened as before.
std::expected<void, std::string> forbid_new_storage();

/// After the candidate and the libraries it needs are loaded (cpu only): no new executable mappings (mmap or
/// mprotect with PROT_EXEC), so no library can be loaded by any route (dlopen found by walking libc's symbols) and
/// no code generated at run time.
std::expected<void, std::string> forbid_new_code();

}  // namespace ca
