// ca-filter: keep the task records that pass the paper's rubric (common/filter/filter.h); rejects go to --rejects
// with their reason, and a count per reason goes to stderr.
#include <algorithm>
#include <chrono>
#include <map>

#include <ATen/Parallel.h>

#include "filter/filter.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;

namespace {

// Reads every task record of a reference file; records of another kind (import_error) are skipped.
ExitCode load_references(const std::string& path, TaskFilter& filter) {
  auto reader = JsonlReader::open(path);
  if (!reader) {
    error(reader.error());
    return ExitCode::no_input;
  }
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) return ExitCode::ok;
    if (status == JsonlReader::Status::io_error) {
      error(reader->name(), message);
      return ExitCode::io_error;
    }
    if (status == JsonlReader::Status::bad_record) {
      error(record.where(), message);
      return ExitCode::data_error;
    }
    if (!record.value.is_object() || record.value.value("kind", "") != "task") continue;
    if (auto added = filter.add_reference(record.value); !added) {
      error(record.where(), added.error());
      return ExitCode::data_error;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ToolCli cli("ca-filter", "Keep the task records that pass the paper's filter rubric; write rejects with reasons.");
  std::vector<std::string> inputs, references;
  std::string output = "-", rejects_path, device_name = "cpu";
  FilterOptions options;
  bool compile = false, no_compile = false, fail_fast = false;
  int threads = 1;
  auto& app = cli.app();
  app.add_option("FILE", inputs, "Task JSONL files, - for stdin (default)");
  app.add_option("-o,--output", output, "Kept tasks, - for stdout")->capture_default_str();
  app.add_option("--rejects", rejects_path, "Write rejected tasks here, each with reject:{reason, detail}");
  app.add_option("--reference", references, "Task records not to resemble (e.g. the KernelBench import); repeatable");
  app.add_option("--device", device_name, "Device to run and time on: cpu or cuda")->capture_default_str();
  auto* min_flag = app.add_option("--min-ms", options.min_ms, "Eager median at least (default cpu 0.01, cuda 1; 0: none)");
  auto* max_flag = app.add_option("--max-ms", options.max_ms, "Eager median at most (default cpu 1000, cuda 100; 0: none)");
  app.add_option("--calls", options.timed_calls, "Timed eager calls after one warm-up")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "cpu: threads of eager (ATen intra-op) and of the compiled baseline")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--compile", compile, "Check that the task runs under torch.compile (default on cuda; minutes a task on cpu)");
  app.add_flag("--no-compile", no_compile, "Do not check torch.compile (default on cpu)");
  app.add_flag("--tf32", options.compiled.allow_tf32, "Let the compiled package use TF32");
  app.add_option("--atol", options.tolerance.atol, "Absolute tolerance of the negative controls (as ca-verify)")->capture_default_str();
  app.add_option("--rtol", options.tolerance.rtol, "Relative tolerance of the negative controls (as ca-verify)")->capture_default_str();
  app.add_option("--max-similarity", options.max_similarity, "Reject at this op-shingle similarity to a reference task or above")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--rounding-share", options.rounding_share,
                 "Reject (noise-output) when a float64 run of the task, rounded, fails verification at this share of "
                 "--atol/--rtol (0: no check)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--fail-fast", fail_fast, "Stop at the first record that cannot be judged");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (device_name == "cuda") {
    if (!at::hasCUDA()) return to_int(usage_error("--device cuda: no CUDA device is available (this build or machine)"));
    options.device = at::Device(at::kCUDA, 0);
  } else if (device_name != "cpu") {
    return to_int(usage_error("--device: expected cpu or cuda, got '" + device_name + "'"));
  }
  const bool cuda = options.device.is_cuda();
  if (min_flag->count() == 0) options.min_ms = cuda ? 1 : 0.01;
  if (max_flag->count() == 0) options.max_ms = cuda ? 100 : 1000;
  if (options.max_ms > 0 && options.min_ms > options.max_ms) return to_int(usage_error("--min-ms is above --max-ms"));
  if (compile && no_compile) return to_int(usage_error("--compile and --no-compile exclude each other"));
  options.compile = compile || (cuda && !no_compile);
  options.seed = cli.common().seed;
  at::set_num_threads(threads);
  options.compiled.num_threads = threads;  // the compiled baseline runs with eager's threads
  at::globalContext().setAllowTF32CuBLAS(options.compiled.allow_tf32);
  at::globalContext().setAllowTF32CuDNN(options.compiled.allow_tf32);

  TaskFilter filter(options);
  for (const auto& path : references) {
    if (ExitCode code = load_references(path, filter); code != ExitCode::ok) return to_int(code);
  }
  if (!references.empty()) verbose("reference tasks: " + std::to_string(filter.reference_count()));
  if (inputs.empty()) inputs = {"-"};

  std::optional<JsonlWriter> rejects;
  if (!rejects_path.empty()) {
    auto opened = JsonlWriter::open(rejects_path);
    if (!opened) {
      error(opened.error());
      return to_int(ExitCode::io_error);
    }
    rejects.emplace(std::move(*opened));
  }
  size_t kept = 0, rejected = 0, unjudged = 0;
  std::map<std::string, size_t> counts;
  auto start = std::chrono::steady_clock::now();
  // A cold Python start-up per compiled task would dominate the run: compile them all first, in -j processes
  // (files only: standard input can be read once).
  if (std::ranges::none_of(inputs, [](const std::string& path) { return path == "-"; })) {
    filter.precompile(inputs, cli.common().jobs);
  }

  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    ExitCode result = visit_records(inputs, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                                    [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
      auto verdict = filter.judge(record.value);
      if (!verdict) return std::unexpected(verdict.error());
      if (!verdict->reason) {
        ++kept;
        return emit(writer, verdict->record);
      }
      ++counts[reason_name(*verdict->reason)];
      ++rejected;
      verbose(record.where() + ": " + record.value.value("id", "") + ": " + reason_name(*verdict->reason) + ": " + verdict->detail);
      return rejects ? emit(*rejects, verdict->record) : std::nullopt;
    }, &unjudged);
    if (result != ExitCode::ok && result != ExitCode::some_failed) return result;
    if (rejects) {
      if (auto committed = rejects->commit(); !committed) {
        error(committed.error());
        return ExitCode::io_error;
      }
    }
    return result;
  });

  // An interrupted run's counts are of the records judged before the signal, not of the input.
  std::string summary = std::string(code == ExitCode::interrupted ? "interrupted; so far " : "") + "kept " + std::to_string(kept) + " of " + std::to_string(kept + rejected) + "; rejected:";
  if (counts.empty()) summary += " none";
  bool first = true;
  for (const auto& name : reason_names()) {
    if (auto count = counts.find(name); count != counts.end()) {
      summary += std::string(first ? " " : ", ") + name + " " + std::to_string(count->second);
      first = false;
    }
  }
  if (unjudged > 0) summary += "; not judged: " + std::to_string(unjudged);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  note(summary + " (" + std::to_string(int(seconds)) + " s)");
  return to_int(code);
}
