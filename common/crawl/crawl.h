// ca-crawl's subcommands, each a whole run from its options to an exit code: operator records from LibTorch's
// dispatcher, module records from Python sources, checked hand-written tasks, and the KernelBench import.
#pragma once

#include <string>
#include <vector>

#include "torch/kernelbench.h"
#include "util/exit_codes.h"
#include "util/record_loop.h"

namespace ca {

/// `ca-crawl ops`: one op record per dispatcher operator (only usable ones with `usable_only`) to `output`, or with
/// `summary` a table per category on stdout. Returns ok, or the writing's code.
ExitCode write_op_records(const std::string& output, bool usable_only, bool summary);

/// `ca-crawl modules`: one module record per nn.Module class under each of `roots`, with `origin` (default: the root
/// as given). A root that cannot be read ends the run with no_input.
ExitCode write_module_records(const std::vector<std::string>& roots, const std::string& origin,
                              const std::string& output);

/// `ca-crawl tasks`: each task record of `inputs` checked and completed (check_task); bad ones reported as
/// file:line, then skipped (exit 1) or, with OnBadRecord::stop, the end of the run (exit 65).
/// Checked records are journaled beside `output` (util/journal.h); journal.resume carries on from a run cut short.
ExitCode write_checked_tasks(const std::vector<std::string>& inputs, const std::string& output, OnBadRecord on_bad,
                             const JournalOptions& journal = {});

/// `ca-crawl kernelbench`: one record per problem file, in the bridge's order; a problem that fails anywhere is
/// reported and written as an import_error record (exit 1). With a `digests_path`, each imported task's digest record
/// goes there, committed with the output. params_dir defaults to the output's folder. Exit 66 for a missing folder,
/// 64 for backend cuda without a CUDA device, 65 when the bridge fails, 130 when it was interrupted.
/// Every finished problem is journaled beside `output` (util/journal.h, keyed by its file, with the file's digest) as
/// the bridge streams its records; with journal.resume the bridge skips the problems the journal holds, and their
/// records (and digests) are replayed in their place.
ExitCode import_kernelbench(KernelbenchImport options, const std::string& output, const std::string& digests_path,
                            const JournalOptions& journal = {});

}  // namespace ca
