// ca-crawl: bring operators, modules, hand-written tasks and KernelBench problems in as JSONL records.

#include <filesystem>
#include <map>
#include <optional>

#include "aten/kernelbench.h"
#include "aten/op_catalog.h"
#include "aten/task_check.h"
#include "crawl/module_records.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;

namespace {

// ca-crawl kernelbench: one record per problem file, in the bridge's order; a
// problem that fails anywhere is reported and written as an import_error record.
// With a digests path, each imported task's digest record goes there, committed with the output.
ExitCode import_kernelbench(KernelbenchImport options, const std::string& output, const std::string& digests_path) {
  for (const auto& dir : options.dirs) {
    if (!std::filesystem::is_directory(dir)) {
      error(dir, "no such directory");
      return ExitCode::no_input;
    }
  }
  if (options.params_dir.empty()) {
    auto parent = std::filesystem::path(output).parent_path();
    options.params_dir = output == "-" || parent.empty() ? "." : parent.string();
  }
  options.digests = !digests_path.empty();
  auto records = run_import_bridge(options);
  if (!records) {
    error(records.error());
    return records.error() == "interrupted" ? ExitCode::interrupted : ExitCode::data_error;
  }
  // Opened once the bridge has run, as the output is: it makes the params folder, the output's by default.
  std::optional<JsonlWriter> digests;
  if (options.digests) {
    auto opened = JsonlWriter::open(digests_path);
    if (!opened) {
      error(digests_path, opened.error());
      return ExitCode::io_error;
    }
    digests.emplace(std::move(*opened));
  }
  std::map<std::string, std::pair<int, int>> per_level;  // "level 1" -> (imported, problems)
  int imported = 0;
  ExitCode code = write_records(output, [&](JsonlWriter& writer) {
    for (const auto& record : *records) {
      auto level = record.value("level", Json()).is_number() ? "level " + std::to_string(record["level"].get<int>()) : "other";
      ++per_level[level].second;
      std::expected<ImportedTask, std::string> done = record.value("kind", "") == "import_error"
                                                          ? std::unexpected(record.value("error", "import failed"))
                                                          : finish_import(record, options);
      Json out = done ? done->task : import_error_record(record, done.error());
      if (done) {
        ++imported;
        ++per_level[level].first;
      } else {
        error(record.value("file", record.value("id", "?")), done.error());
      }
      if (digests && done && digests->write(done->digest) != JsonlWriter::Status::ok) {
        error(digests_path, "writing failed");
        return ExitCode::io_error;
      }
      if (auto stop = emit(writer, out)) return *stop;
    }
    return imported == int(records->size()) ? ExitCode::ok : ExitCode::some_failed;
  });
  if (digests && (code == ExitCode::ok || code == ExitCode::some_failed)) {
    if (auto committed = digests->commit(); !committed) {
      error(digests_path, committed.error());
      return ExitCode::io_error;
    }
  }
  std::string summary = "imported " + std::to_string(imported) + " of " + std::to_string(records->size());
  std::string levels;
  for (const auto& [level, counts] : per_level) {
    levels += (levels.empty() ? "" : ", ") + level + ": " + std::to_string(counts.first) + "/" + std::to_string(counts.second);
  }
  note(summary + (levels.empty() ? "" : " (" + levels + ")"));
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  ToolCli cli("ca-crawl", "Bring operators, nn.Module classes and hand-written tasks in as JSONL records.");
  std::string output = "-";
  cli.app().add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  cli.app().require_subcommand(1);

  auto* ops = cli.app().add_subcommand("ops", "One op record per operator in LibTorch's dispatcher");
  bool usable_only = false, summary = false;
  ops->add_flag("--usable", usable_only, "Only operators usable in tasks");
  ops->add_flag("--summary", summary, "Print a table of operators and usable ones per category instead of records");

  auto* modules = cli.app().add_subcommand("modules", "One module record per nn.Module class in Python source trees");
  std::vector<std::string> roots;
  std::string origin;
  modules->add_option("DIR", roots, "Python source trees, e.g. site-packages/torch/nn/modules")->required();
  modules->add_option("--origin", origin, "Value of the records' origin field (default: the DIR as given)");

  auto* tasks = cli.app().add_subcommand("tasks", "Check hand-written task records and fill in meta (fingerprint, ops, output shapes)");
  std::vector<std::string> inputs = {"-"};
  bool fail_fast = false;
  tasks->add_option("FILE", inputs, "Task JSONL files, - for stdin")->capture_default_str();
  tasks->add_flag("--fail-fast", fail_fast, "Stop at the first bad record");

  auto* kernelbench = cli.app().add_subcommand("kernelbench", "Import KernelBench problem files as task records through torch.export");
  KernelbenchImport import;
  std::string device = "cpu";
  kernelbench->add_option("DIR", import.dirs, "Folders of problem files (levelN gives level N)")->required();
  kernelbench->add_option("--scale", import.scale, "Divide literal sizes >= 16 by S, to no less than 16")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kernelbench->add_option("--params-dir", import.params_dir, "Where the weights go (default: the output's folder)");
  std::string digests_path;
  kernelbench->add_option("--dump", import.dump_dir, "Write each task's inputs and interpreter outputs here");
  kernelbench->add_option("--digests", digests_path,
                          "Run each task and write one line of input and output digests per task to FILE");
  kernelbench
      ->add_option("--device", device, "Device the tasks run on (--dump, --digests) and of shape checking's fallback")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();

  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (ops->parsed()) {
    std::vector<Json> records = crawl_ops();
    if (usable_only) std::erase_if(records, [](const Json& r) { return !r["usable"].get<bool>(); });
    if (summary) {
      std::fputs(summarize_ops(records).c_str(), stdout);
      return to_int(ExitCode::ok);
    }
    return to_int(write_records(output, [&](JsonlWriter& writer) {
      for (const auto& record : records) {
        if (auto stop = emit(writer, record)) return *stop;
      }
      return ExitCode::ok;
    }));
  }

  if (modules->parsed()) {
    return to_int(write_records(output, [&](JsonlWriter& writer) {
      for (const auto& root : roots) {
        auto found = scan_py_modules(root);
        if (!found) {
          error(found.error());
          return ExitCode::no_input;
        }
        for (const auto& module : *found) {
          if (auto stop = emit(writer, module_record(module, origin.empty() ? root : origin))) return *stop;
        }
      }
      return ExitCode::ok;
    }));
  }

  if (kernelbench->parsed()) {
    if (device == "cuda" && !at::hasCUDA()) return to_int(usage_error("--device cuda: no CUDA device here"));
    import.seed = cli.common().seed;
    import.device = device == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    return to_int(import_kernelbench(import, output, digests_path));
  }

  return to_int(write_records(output, [&](JsonlWriter& writer) {
    return transform_records(inputs, writer, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                             [](const Json& record) { return check_task(record); });
  }));
}
