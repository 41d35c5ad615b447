// ca-filter's rubric (ca-filter(1), EXPLOITS part D; man/man1/ca-filter.1): a task is
// kept when it runs in eager (and under torch.compile when asked), is
// deterministic, has non-degenerate outputs that depend on every input and
// param, defeats the negative controls, runs within the runtime window, is no
// duplicate of an earlier task and does not resemble the reference set.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filter/similarity.h"
#include "harness/options.h"
#include "ir/backend.h"
#include "timing/clock.h"
#include "util/jsonl.h"

namespace ca {

/// The fixed set of reasons, in the order the checks run.
enum class RejectReason {
  eager_error,          // the program does not check or run in eager
  random_op,            // an op draws random numbers
  duplicate,            // same fingerprint as an earlier task of the input
  contaminated,         // op sequence too similar to a reference task
  nondeterministic,     // two runs on the same inputs differ bit for bit
  non_finite,           // NaN or Inf in an output on the task's own inputs
  control_zeros,        // an all-zeros output passes verification
  degenerate_constant,  // an output is constant (all elements equal, or a scalar equal across seeds)
  ignores_input,        // no output changes when one input or param is redrawn
  control_mean,         // a constant equal to the output's mean on another seed passes verification
  control_passthrough,  // an input or param of the output's shape passes verification
  noise_output,         // the output is rounding noise: a float64 run, rounded, fails verification at --rounding-share
  too_fast,             // eager median below --min-ms
  too_slow,             // eager median above --max-ms
  compile_error,        // torch.compile (AOTInductor) fails, or its output differs from eager
  near_duplicate,       // same op sequence and input/param shapes as a kept task (only literals or inits differ)
};

std::string reason_name(RejectReason reason);
std::vector<std::string> reason_names();

/// Whether an op draws random numbers: tagged nondeterministic_seeded (attention ops, seeded only through a dropout
/// that defaults to 0, excepted), or named like one (rand*, dropout, bernoulli, multinomial, normal, poisson,
/// uniform, exponential, ...). `qualified` is "aten::bernoulli.p".
bool is_random_op(std::string_view qualified);

struct FilterOptions {
  Backend backend = Backend::cpu;  // the device tasks run and are timed on (cuda: device 0)
  double min_ms = 0.01;            // eager median at least (0: no lower bound)
  double max_ms = 1000;            // eager median at most (0: no upper bound)
  int timed_calls = 5;             // timed eager calls after one warm-up; the median counts
  bool compile = false;            // build and run the AOTInductor package (minutes per task on a CPU)
  CompiledOptions compiled;
  Tolerance tolerance;          // the negative controls are judged with ca-verify's compare_output and this
  uint64_t seed = 0;            // added to each task's own seed
  double max_similarity = 0.5;  // contamination: reject at this op-shingle Jaccard or above
  // noise_output: the share of the tolerance the reference's own rounding may use (0: no check). At 0.5 a correct
  // candidate whose rounding error is as large as the reference's still passes (the two errors add up to 1).
  double rounding_share = 0.5;
  std::string lock_dir;  // for the device lease; "" = $CA_LOCK_DIR or /tmp
};

struct Verdict {
  Json record;                         // the task with meta completed, and meta.eager_ms, filter or reject
  std::optional<RejectReason> reason;  // nullopt: kept
  std::string detail;
};

class TaskFilter {
 public:
  explicit TaskFilter(FilterOptions options);
  /// Adds a reference task record (its program); errors name the field.
  std::expected<void, std::string> add_reference(const Json& record);
  size_t reference_count() const { return m_references.size(); }
  /// Judges one record: the record's own checks (it runs in eager; random ops; duplicate; contaminated), then the
  /// steps of filter/rubric.h on two trials, the runtime window, the compiled baseline and near-duplicates, in the
  /// order of RejectReason; the first that fails is the reason. An error means the record could not be judged at all
  /// (not a task record, no id, no program, a harness failure); a task that fails a check is a Verdict with a reason.
  std::expected<Verdict, std::string> judge(const Json& record);
  /// With options.compile: compiles the baselines of every task in the JSONL files `inputs` that checks, in up to
  /// `jobs` bridge processes at once (compile_missing), so that judge() finds them cached instead of paying a cold
  /// Python start-up per task. A failed compile is remembered and judge() rejects with its message without compiling
  /// again. Records that cannot be read are left for judge() to report.
  void precompile(const std::vector<std::string>& inputs, unsigned jobs);
  /// Takes in a verdict's record judged in an earlier run (a journal's, on --resume) as judge() would have left it:
  /// its fingerprint, and a kept task's near-duplicate key, count for the records after it.
  void remember(const Json& verdict_record);

 private:
  FilterOptions m_options;
  ReferenceSet m_references;
  std::map<std::string, std::string> m_fingerprints;    // fingerprint -> id of its first task
  std::map<std::string, std::string> m_kept_keys;       // near_duplicate_key -> id of the kept task
  std::map<std::string, std::string> m_compile_errors;  // compiled_key_text -> why precompile could not compile it
  std::unique_ptr<CallClock> m_clock;
};

}  // namespace ca
