// ca-profile's parts around profile_candidate: the judge its record loop calls per candidate, and --precompile.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ir/backend.h"
#include "profile/profile.h"
#include "util/exit_codes.h"
#include "util/record_loop.h"
#include "verify/candidates.h"

namespace ca {

/// The Judge (verify/candidates.h) of ca-profile: a candidate whose `verify` failed is not timed ({ok: false,
/// skipped}); others get profile_candidate with `options` on the record's backend. On cpu the baselines' tensors come
/// from the LibTorch layer's caching CPU allocator, emptied after each record; the judge fails when
/// c10 kept another allocator.
Judge profile_judge(const ProfileOptions& options);

/// The flags of how a profile times, declared once for ca-profile and ca-judge serve: --rounds, --min-ms,
/// --max-calls, --samples, --threads.
void add_timing_flags(CLI::App& app, ProfileOptions& options);

/// An agent's profile of its workspace (--workspace), its reward coming from a record-mode profile after the episode:
/// of the timing flags `app` was not given, --rounds 9, --max-calls 25 and --ci 0.02, so a 40 us kernel's profile
/// takes seconds rather than the record defaults' 800 calls a method (issue 24 item 6; ca-profile(1)).
void apply_workspace_timing(const CLI::App& app, ProfileOptions& options);

/// ca-profile --precompile: compiles the missing compiled baselines of every task of `tasks_path` for `backend`
/// (precompile_tasks, in `jobs` bridge processes) and prints its summary line on stdout. Returns its exit code.
ExitCode precompile_baselines(const std::string& tasks_path, Backend backend, const ProfileOptions& options,
                              unsigned jobs, OnBadRecord on_bad);

}  // namespace ca
