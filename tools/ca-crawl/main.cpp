// ca-crawl: bring operators, modules and hand-written tasks in as JSONL records.
#include <map>
#include <optional>

#include "aten/op_catalog.h"
#include "aten/task_check.h"
#include "crawl/module_records.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/signals.h"

using namespace ca;

namespace {

// Writes records to `path` ("-" = stdout); returns the exit code.
template <typename Produce>
ExitCode write_records(const std::string& path, Produce produce) {
  auto writer = JsonlWriter::open(path);
  if (!writer) {
    error(writer.error());
    return ExitCode::io_error;
  }
  ExitCode code = produce(*writer);
  // Records that failed were reported and skipped; anything worse leaves no file.
  if (code != ExitCode::ok && code != ExitCode::some_failed) return code;
  if (auto committed = writer->commit(); !committed) {
    error(committed.error());
    return ExitCode::io_error;
  }
  return code;
}

// Writes one record; returns the code to stop with, or nullopt to go on. A
// reader that stopped reading (`| head`) ends the run quietly and successfully.
std::optional<ExitCode> emit(JsonlWriter& writer, const Json& record) {
  switch (writer.write(record)) {
    case JsonlWriter::Status::ok: return std::nullopt;
    case JsonlWriter::Status::broken_pipe: return ExitCode::ok;
    case JsonlWriter::Status::io_error: error("writing output failed"); return ExitCode::io_error;
  }
  return ExitCode::io_error;
}

void print_summary(const std::vector<Json>& ops) {
  std::map<std::string, std::pair<int, int>> counts;  // category -> (all, usable)
  for (const auto& op : ops) {
    auto& [all, usable] = counts[op["category"].get<std::string>()];
    ++all;
    usable += op["usable"].get<bool>() ? 1 : 0;
  }
  std::printf("%-15s %6s %6s\n", "category", "ops", "usable");
  int total = 0, total_usable = 0;
  for (const auto& [category, count] : counts) {
    std::printf("%-15s %6d %6d\n", category.c_str(), count.first, count.second);
    total += count.first;
    total_usable += count.second;
  }
  std::printf("%-15s %6d %6d\n", "total", total, total_usable);
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

  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (ops->parsed()) {
    std::vector<Json> records = crawl_ops();
    if (usable_only) std::erase_if(records, [](const Json& r) { return !r["usable"].get<bool>(); });
    if (summary) {
      print_summary(records);
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

  return to_int(write_records(output, [&](JsonlWriter& writer) {
    ExitCode result = ExitCode::ok;
    for (const auto& path : inputs) {
      auto reader = JsonlReader::open(path);
      if (!reader) {
        error(reader.error());
        return ExitCode::no_input;
      }
      Progress progress("tasks");
      Record record;
      std::string message;
      for (;;) {
        auto status = reader->next(record, message);
        if (status == JsonlReader::Status::end) break;
        if (status == JsonlReader::Status::io_error) {
          error(reader->name(), message);
          return ExitCode::io_error;
        }
        if (interrupted()) return ExitCode::interrupted;
        auto checked = status == JsonlReader::Status::record ? check_task(record.value) : std::unexpected(message);
        progress.tick();
        if (!checked) {
          error(record.where(), checked.error());
          if (fail_fast) return ExitCode::data_error;
          result = ExitCode::some_failed;
          continue;
        }
        if (auto stop = emit(writer, *checked)) return *stop;
      }
    }
    return result;
  }));
}
