// ca-crawl: bring operators, modules, hand-written tasks and KernelBench problems in as JSONL records.
#include "crawl/crawl.h"
#include "util/cli.h"
#include "util/exceptions.h"

using namespace ca;

int main(int argc, char** argv) try {
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
  modules->add_option("DIR", roots, "Python source trees, e.g. the nn/modules folder of an installed torch")
      ->required();
  modules->add_option("--origin", origin, "Value of the records' origin field (default: the DIR as given)");

  auto* tasks = cli.app().add_subcommand(
      "tasks", "Check hand-written task records and fill in meta (fingerprint, ops, output shapes)");
  std::vector<std::string> inputs = {"-"};
  bool fail_fast = false;
  tasks->add_option("FILE", inputs, "Task JSONL files, - for stdin")->capture_default_str();
  tasks->add_flag("--fail-fast", fail_fast, "Stop at the first bad record");
  cli.add_resume_flag(tasks, {"FILE"});

  auto* kernelbench =
      cli.app().add_subcommand("kernelbench", "Import KernelBench problem files as task records through torch.export");
  KernelbenchImport import;
  std::string device = "cpu";
  kernelbench->add_option("DIR", import.dirs, "Folders of problem files (levelN gives level N)")->required();
  kernelbench->add_option("--scale", import.scale, "Divide literal sizes >= 16 by S, to no less than 16")
      ->capture_default_str()
      ->check(count(1e6));
  kernelbench->add_option("--params-dir", import.params_dir, "Where the weights go (default: the output's folder)");
  std::string digests_path;
  kernelbench->add_option("--dump", import.dump_dir, "Write each task's inputs and interpreter outputs here");
  kernelbench->add_option("--digests", digests_path,
                          "Run each task and write one line of input and output digests per task to FILE");
  kernelbench
      ->add_option("--device", device, "Device the tasks run on (--dump, --digests) and of shape checking's fallback")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cli.add_resume_flag(kernelbench, {});  // each problem's file is digested in its journal entry

  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  if (ops->parsed()) return to_int(write_op_records(output, usable_only, summary));
  if (modules->parsed()) return to_int(write_module_records(roots, origin, output));
  if (kernelbench->parsed()) {
    import.seed = cli.common().seed;
    import.backend = device == "cuda" ? Backend::cuda : Backend::cpu;
    return to_int(import_kernelbench(import, output, digests_path, cli.journal_options()));
  }
  return to_int(
      write_checked_tasks(inputs, output, fail_fast ? OnBadRecord::stop : OnBadRecord::skip, cli.journal_options()));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
