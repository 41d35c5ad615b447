// ca-train: train the policy model on ca-rollout's trajectories (docs/TRAINING.md). This session's stage: rft.
#include <ATen/Parallel.h>

#include <limits>

#include "train/rft.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/record_loop.h"
#include "util/signals.h"

using namespace ca;
using namespace ca::train;

int main(int argc, char** argv) try {
  ToolCli cli("ca-train", "Train a Llama/Qwen2 checkpoint on trajectory records (docs/TRAINING.md).");
  cli.default_jobs(1, "CPU threads for the model's operators");
  CLI::App* rft = cli.app().add_subcommand("rft", "Rejection fine-tuning: token-mean NLL of the kept trajectories");
  cli.app().require_subcommand(1);
  TrainOptions o;
  RftFilter filter;
  std::vector<std::string> data = {"-"};
  int64_t max_context = 32768;
  bool fail_fast = false;
  std::string model, out;
  rft->add_option("-m,--model", model, "Starting checkpoint directory (config.json, safetensors, tokenizer.json)")
      ->required();
  rft->add_option("-d,--data", data, "Trajectory JSONL files (ca-rollout's), - for stdin")->capture_default_str();
  rft->add_option("-o,--out", out, "Output directory: checkpoint-NNNNNN/ and log.jsonl")->required();
  rft->add_option("--steps", o.steps, "Optimizer updates in all")->capture_default_str()->check(CLI::PositiveNumber);
  rft->add_option("--batch", o.batch, "Sequences per update")->capture_default_str()->check(CLI::PositiveNumber);
  rft->add_option("--micro-batch", o.micro_batch, "Sequences per forward/backward (gradient accumulation)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  rft->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  rft->add_option("--warmup", o.warmup, "Updates of linear learning-rate warm-up")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_option("--max-grad-norm", o.max_grad_norm, "Global gradient-norm clip; 0 turns it off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_option("--weight-decay", o.adamw.weight_decay, "AdamW's decoupled weight decay")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_option("--checkpoint-every", o.checkpoint_every, "Updates between checkpoints")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  rft->add_option("--max-context", max_context, "Tokens per trajectory at most; longer ones are bad records")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  rft->add_option("--max-turns", filter.max_turns, "Drop trajectories with more assistant turns; 0: no bound")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_option("--max-repeated-failures", filter.max_repeated_failures,
                  "Drop trajectories where one identical call fails more often")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_flag("--keep-invalid-calls", filter.keep_invalid_calls,
                "Keep trajectories with calls to unknown tools or non-JSON arguments");
  rft->add_flag("--resume", o.resume, "Continue from the newest checkpoint in --out");
  rft->add_flag("--fail-fast", fail_fast, "Stop at the first bad record");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  o.model = model;
  o.out = out;
  o.seed = cli.common().seed;
  at::set_num_threads(static_cast<int>(cli.common().jobs));
  install_interrupt_handlers();

  auto tokenizer = model::Tokenizer::load(o.model / "tokenizer.json");
  if (!tokenizer) {
    error(tokenizer.error());
    return to_int(std::filesystem::exists(o.model) ? ExitCode::data_error : ExitCode::no_input);
  }
  RftData set;
  const ExitCode read = visit_records(data, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                                      [&](const Record& r) -> std::expected<std::optional<ExitCode>, std::string> {
                                        auto added = add_rft_record(set, r.value, *tokenizer, filter, max_context);
                                        if (!added) return std::unexpected(added.error());
                                        return std::nullopt;
                                      });
  if (read != ExitCode::ok && read != ExitCode::some_failed) return to_int(read);
  note(set.summary());
  Progress progress("rft", static_cast<size_t>(o.steps));
  double first_loss = std::numeric_limits<double>::quiet_NaN(), last_loss = first_loss;
  auto done = train_rft(o, set.kept, [&](const StepLog& s) {
    if (std::isnan(first_loss)) first_loss = s.loss;
    last_loss = s.loss;
    progress.tick("loss " + std::to_string(s.loss));
  });
  if (!done) {
    error(done.error());
    return to_int(ExitCode::data_error);
  }
  note("updates " + std::to_string(done->first_step + 1) + ".." + std::to_string(done->last_step) + ": loss " +
       std::to_string(first_loss) + " -> " + std::to_string(last_loss) + "; checkpoints and log.jsonl in " + out);
  if (done->interrupted) return to_int(ExitCode::interrupted);
  return to_int(read);
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
