#include "filter/records.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "torch/runtime.h"
#include "util/atomic_file.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"
#include "util/side_file.h"

namespace ca {
namespace {

// Adds every task record of a reference file (a side file: util/side_file.h); records of another kind (import_error)
// are skipped.
ExitCode load_references(const std::string& path, TaskFilter& filter) {
  auto records = read_side_file(path);
  if (!records) return report_side_file_error(records.error());
  for (const Record& record : *records) {
    if (!record.value.is_object() || record.value.value("kind", "") != "task") continue;
    if (auto added = filter.add_reference(record.value); !added) {
      error(record.where(), added.error());
      return ExitCode::data_error;
    }
  }
  return ExitCode::ok;
}

// "kept 3 of 5; rejected: duplicate 1, too-fast 1; not judged: 1"
std::string summary_line(ExitCode code, size_t kept, size_t rejected, const std::map<std::string, size_t>& counts,
                         size_t unjudged) {
  // An interrupted run's counts are of the records judged before the signal, not of the input.
  std::string summary = std::string(code == ExitCode::interrupted ? "interrupted; so far " : "") + "kept " +
                        std::to_string(kept) + " of " + std::to_string(kept + rejected) + "; rejected:";
  if (counts.empty()) summary += " none";
  bool first = true;
  for (const auto& name : reason_names()) {
    if (auto count = counts.find(name); count != counts.end()) {
      summary += std::string(first ? " " : ", ") + name + " " + std::to_string(count->second);
      first = false;
    }
  }
  if (unjudged > 0) summary += "; not judged: " + std::to_string(unjudged);
  return summary;
}

}  // namespace

ExitCode filter_records(FilterOptions options, FilterRun run) {
  // Each output is committed by a rename: one onto the other would keep only the rejects (or only the kept tasks).
  if (!run.rejects.empty() && same_output_file(run.output, run.rejects)) {
    return usage_error("--rejects '" + run.rejects + "' is the same file as -o '" + run.output +
                       "': one would replace the other; give them different paths");
  }
  if (options.backend == Backend::cuda && !torch_has_cuda()) {
    return usage_error("--device cuda: no CUDA device is available (this build or machine)");
  }
  set_torch_threads(run.threads);
  options.compiled.num_threads = run.threads;  // the compiled baseline runs with eager's threads

  TaskFilter filter(options);
  for (const auto& path : run.references) {
    if (ExitCode code = load_references(path, filter); code != ExitCode::ok) return code;
  }
  if (!run.references.empty()) verbose("reference tasks: " + std::to_string(filter.reference_count()));
  if (run.inputs.empty()) run.inputs = {"-"};

  // Opened before the outputs: a resume of another run is refused before any work.
  auto journal = open_journal(run.output, run.journal);
  if (!journal) return journal.error();
  RecordJournal* kept_journal = *journal ? &**journal : nullptr;
  std::optional<JsonlWriter> rejects;
  if (!run.rejects.empty()) {
    auto opened = JsonlWriter::open(run.rejects);
    if (!opened) {
      error(opened.error());
      return ExitCode::io_error;
    }
    rejects.emplace(std::move(*opened));
  }
  size_t kept = 0, rejected = 0, unjudged = 0;
  std::map<std::string, size_t> counts;
  auto start = std::chrono::steady_clock::now();
  // A cold Python start-up per compiled task would dominate the run: compile them all first, in -j processes
  // (files only: standard input can be read once).
  if (std::ranges::none_of(run.inputs, [](const std::string& path) { return path == "-"; })) {
    filter.precompile(run.inputs, run.jobs);
  }

  // A journal entry holds the verdict's record: stream 0 kept, stream 1 rejected (journaled without --rejects too,
  // for the summary's counts and the filter's memory of fingerprints on resume).
  auto judge = [&](const Record& record) -> std::expected<JournalEntry, std::string> {
    auto verdict = filter.judge(record.value);
    if (!verdict) return std::unexpected(verdict.error());
    if (verdict->reason) {
      verbose(record.where() + ": " + record.value.value("id", "") + ": " + reason_name(*verdict->reason) + ": " +
              verdict->detail);
    }
    return JournalEntry{{{verdict->reason ? 1 : 0, std::move(verdict->record)}}, std::nullopt};
  };
  ExitCode code = write_records(run.output, [&](JsonlWriter& writer) {
    ExitCode result = visit_records(
        run.inputs, run.fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
        [&](const Record& record) {
          bool replayed = false;
          auto compute = [&](const Record& r) {
            replayed = false;
            return judge(r);
          };
          replayed = true;
          return journaled_visit(kept_journal, record, compute, [&](const JournalEntry& entry) {
            for (const auto& [stream, out] : entry.out) {
              if (replayed) filter.remember(out);
              if (stream == 0) {
                ++kept;
                if (auto stop = emit(writer, out)) return stop;
                continue;
              }
              ++counts[out.contains("reject") ? out["reject"].value("reason", "?") : "?"];
              ++rejected;
              if (rejects) {
                if (auto stop = emit(*rejects, out)) return stop;
              }
            }
            return std::optional<ExitCode>();
          });
        },
        &unjudged);
    if (result != ExitCode::ok && result != ExitCode::some_failed) return result;
    if (rejects) {
      if (auto committed = rejects->commit(); !committed) {
        error(committed.error());
        return ExitCode::io_error;
      }
    }
    return result;
  });
  if (code == ExitCode::ok || code == ExitCode::some_failed) code = finish_journal(*journal, code);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  note(summary_line(code, kept, rejected, counts, unjudged) + " (" + std::to_string(int(seconds)) + " s)");
  return code;
}

}  // namespace ca
