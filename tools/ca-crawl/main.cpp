// ca-crawl: bring operators, modules and hand-written tasks in as JSONL records.

#include "aten/op_catalog.h"
#include "aten/task_check.h"
#include "crawl/module_records.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;

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

  return to_int(write_records(output, [&](JsonlWriter& writer) {
    return transform_records(inputs, writer, fail_fast ? OnBadRecord::stop : OnBadRecord::skip, check_task);
  }));
}
