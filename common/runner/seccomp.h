// The runner's seccomp filters (EXPLOITS.md "Processes, signals and code loads"): what the candidate's process may
// not do at run time, whatever its code imports. A refused call ends the runner with k_exit_forbidden and a line on
// stderr naming the call, which the trusted side reports as the verdict's reason.
#pragma once

#include <expected>
#include <string>

#include "util/exit_codes.h"

namespace ca {

/// ca-runner's exit code after a forbidden system call (EX_NOPERM).
inline constexpr ExitCode k_exit_forbidden = ExitCode{77};

/// Before the candidate loads, for every thread of the process (TSYNC): no new processes (fork, vfork, clone without
/// CLONE_THREAD; clone3 answers ENOSYS so that glibc uses clone, whose flags a filter can read), no exec, no signals
/// to other processes (kill and tgkill only to this process), no handler for SIGSYS, no ptrace, no access to other
/// processes' memory, no io_uring or userfaultfd, no sched_setaffinity (the sandbox's share of the cores holds).
/// Threads are allowed: OpenMP needs them, and every thread's CPU time is counted and every thread is stopped between
/// calls (runner_calls.h). Fails when the kernel refuses.
std::expected<void, std::string> forbid_processes_and_signals();

/// After the candidate and the libraries it needs are loaded (cpu only): no new executable mappings (mmap or
/// mprotect with PROT_EXEC), so no library can be loaded by any route (dlopen found by walking libc's symbols) and
/// no code generated at run time.
std::expected<void, std::string> forbid_new_code();

}  // namespace ca
