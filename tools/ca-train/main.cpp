// ca-train: train the policy model on ca-rollout's trajectories (docs/TRAINING.md): rft, value, warmup, ppo.
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>

#include "train/distributed.h"
#include "train/ppo.h"
#include "train/precision.h"
#include "train/rft.h"
#include "train/value.h"
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
  CLI::App& app = cli.app();
  CLI::App* rft = app.add_subcommand("rft", "Rejection fine-tuning: token-mean NLL of the kept trajectories");
  CLI::App* value = app.add_subcommand("value", "Value pretraining: a critic (backbone + value head) on returns");
  CLI::App* warmup = app.add_subcommand("warmup", "Single-turn RL: PPO loss with group-normalized advantages");
  CLI::App* ppo = app.add_subcommand("ppo", "PPO with a critic: GAE, clip-higher, dual clip, value clipping");
  app.require_subcommand(1);
  TrainOptions o;
  RftFilter filter;
  PpoRunOptions p;
  std::vector<std::string> data = {"-"};
  int64_t max_context = 32768;
  int64_t dist_timeout = 300;
  bool fail_fast = false;
  std::string model, out, critic, reference, dtype = "float32";
  for (CLI::App* s : {rft, value, warmup, ppo}) {
    s->add_option("-m,--model", model, "Starting checkpoint directory (config.json, safetensors, tokenizer.json)")
        ->required();
    s->add_option("-d,--data", data, "Trajectory JSONL files (ca-rollout's), - for stdin")->capture_default_str();
    s->add_option("-o,--out", out, "Output directory: checkpoint-NNNNNN/ and log.jsonl")->required();
    s->add_option("--device", o.device, "Where the models run: cpu, cuda, cuda:N")->capture_default_str();
    s->add_option("--dtype", dtype, "float32, or bfloat16: autocast over float32 weights")->capture_default_str();
    s->add_option("--steps", o.steps, "Steps in all")->capture_default_str()->check(CLI::PositiveNumber);
    s->add_option("--batch", o.batch, s == warmup ? "Tasks per step (all their samples)" : "Sequences per step")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_option("--micro-batch", o.micro_batch, "Sequences per forward/backward (gradient accumulation)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str()->check(CLI::PositiveNumber);
    s->add_option("--warmup", o.warmup, "Optimizer updates of linear learning-rate warm-up")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    s->add_option("--max-grad-norm", o.max_grad_norm, "Global gradient-norm clip; 0 turns it off")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    s->add_option("--weight-decay", o.adamw.weight_decay, "AdamW's decoupled weight decay")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    s->add_option("--checkpoint-every", o.checkpoint_every, "Steps between checkpoints")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_option("--max-context", max_context, "Tokens per trajectory at most; longer ones are bad records")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_flag("--resume", o.resume, "Continue from the newest checkpoint in --out");
    s->add_option("--dist-timeout", dist_timeout,
                  "Data parallel: seconds every rank waits for the others at the rendezvous store")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_flag("--fail-fast", fail_fast, "Stop at the first bad record");
  }
  for (CLI::App* s : {warmup, ppo}) {
    s->add_option("--epochs", p.config.epochs, "PPO passes over each step's sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_option("--minibatches", p.config.minibatches, "Optimizer updates per pass")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_option("--clip-low", p.config.clip.eps_low, "Ratio floor 1 - X")->capture_default_str();
    s->add_option("--clip-high", p.config.clip.eps_high, "Ratio ceiling 1 + X (clip-higher)")->capture_default_str();
    s->add_option("--dual-clip", p.config.clip.dual_clip, "Dual clip c (loss <= -c A for A < 0); <= 1: off")
        ->capture_default_str();
    s->add_option("--kl-coef", p.config.kl_coef, "Weight of the k3 KL to --ref in the loss; 0: no KL")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    s->add_option("--ref", reference, "KL reference checkpoint (default: --model)");
  }
  ppo->add_option("--critic", critic, "Critic checkpoint (ca-train value's output)")->required();
  ppo->add_option("--critic-lr", p.critic_lr, "The critic's peak learning rate")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  ppo->add_option("--gamma", p.config.gae.gamma, "Discount")->capture_default_str();
  ppo->add_option("--lambda-actor", p.config.gae.lambda_actor, "GAE lambda of the advantages")->capture_default_str();
  ppo->add_option("--lambda-critic", p.config.gae.lambda_critic, "GAE lambda of the returns")->capture_default_str();
  ppo->add_option("--value-clip", p.config.value_clip, "Value clipping around old values; 0: off")
      ->capture_default_str();
  rft->add_option("--max-turns", filter.max_turns, "Drop trajectories with more assistant turns; 0: no bound")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_option("--max-repeated-failures", filter.max_repeated_failures,
                  "Drop trajectories where one identical call fails more often")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  rft->add_flag("--keep-invalid-calls", filter.keep_invalid_calls,
                "Keep trajectories with calls to unknown tools or non-JSON arguments");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  o.model = model;
  o.out = out;
  o.seed = cli.common().seed;
  p.critic = critic;
  p.reference = reference;
  p.config.micro_batch = o.micro_batch;
  p.config.group_advantages = warmup->parsed();
  at::set_num_threads(static_cast<int>(cli.common().jobs));
  if (auto r = set_compute_dtype(o.device, dtype); !r) return to_int(usage_error("--dtype: " + r.error()));
  install_interrupt_handlers();

  // Data parallel: torchrun's or Slurm's variables (docs/TRAINING.md); world size 1 is one plain process.
  auto env = read_dist_env();
  if (!env) {
    error(env.error());
    return to_int(ExitCode::usage);
  }
  DistOptions dist;
  if (env->world_size > 1) {
    auto device = parse_device(o.device);
    if (!device) {
      error(device.error());
      return to_int(ExitCode::usage);
    }
    dist.device = *device;
    if (device->is_cuda()) {
      o.device = "cuda:" + std::to_string(env->local_rank);  // the rank's GPU on its node, as DataParallel uses
    }
  }
  dist.rendezvous_timeout = std::chrono::seconds(dist_timeout);
  auto dp = DataParallel::init(*env, dist);
  if (!dp) {
    error(dp.error());
    return to_int(ExitCode::io_error);
  }
  o.dp = dp->active() ? &*dp : nullptr;
  const bool main_rank = dp->is_main();  // the others train as quietly as they log

  auto tokenizer = model::Tokenizer::load(o.model / "tokenizer.json");
  if (!tokenizer) {
    error(tokenizer.error());
    return to_int(std::filesystem::exists(o.model) ? ExitCode::data_error : ExitCode::no_input);
  }
  RftData set;  // rft keeps what its filter passes; the other stages learn from every trajectory with a reward
  const ExitCode read = visit_records(data, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                                      [&](const Record& r) -> std::expected<std::optional<ExitCode>, std::string> {
                                        auto added = rft->parsed()
                                                         ? add_rft_record(set, r.value, *tokenizer, filter, max_context)
                                                         : add_record(set, r.value, *tokenizer, max_context);
                                        if (!added) return std::unexpected(added.error());
                                        return std::nullopt;
                                      });
  if (read != ExitCode::ok && read != ExitCode::some_failed) return to_int(read);
  if (main_rank) {
    note(set.summary());
  }
  const std::string stage = app.get_subcommands()[0]->get_name();
  const char* key = rft->parsed() ? "loss" : value->parsed() ? "explained_variance" : "reward_mean";
  Progress progress(stage, static_cast<size_t>(o.steps));
  Json first, last;
  auto on_step = [&](const Json& s) {
    first = first.is_null() ? s : first;
    last = s;
    if (main_rank) {
      progress.tick(std::string(key) + " " + s.value(key, Json()).dump());
    }
  };
  std::expected<TrainResult, std::string> done;
  std::string summary;
  if (value->parsed()) {
    auto fitted = train_value(o, set.kept, on_step);
    if (!fitted) {
      done = std::unexpected(fitted.error());
    } else {
      done = fitted->run;
      summary = "explained variance over the data " + std::to_string(fitted->explained_variance_before) + " -> " +
                std::to_string(fitted->explained_variance_after) + "; ";
    }
  } else {
    done = rft->parsed() ? train_rft(o, set.kept, on_step) : train_ppo(o, p, set.kept, on_step);
  }
  if (!done) {
    error(done.error());
    return to_int(ExitCode::data_error);
  }
  if (main_rank) {
    note(std::string(rft->parsed() || value->parsed() ? "updates " : "steps ") + std::to_string(done->first_step + 1) +
         ".." + std::to_string(done->last_step) + ": " + key + " " + first.value(key, Json()).dump() + " -> " +
         last.value(key, Json()).dump() + "; " + summary + "checkpoints and log.jsonl in " + out +
         (o.dp != nullptr ? " (" + std::to_string(dp->world_size()) + " ranks, " + dp->backend() + ")" : ""));
  }
  if (done->interrupted) return to_int(ExitCode::interrupted);
  return to_int(read);
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
