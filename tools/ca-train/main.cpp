// ca-train: train the policy model on ca-rollout's trajectories (docs/TRAINING.md): rft, value, warmup, ppo.
#include "train/run.h"
#include "util/cli.h"
#include "util/exceptions.h"

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
  TrainRun run;
  TrainOptions& o = run.options;
  RftFilter& filter = run.filter;
  PpoRunOptions& p = run.ppo;
  bool fail_fast = false;
  for (CLI::App* s : {rft, value, warmup, ppo}) {
    s->add_option("-m,--model", o.model, "Starting checkpoint directory (config.json, safetensors, tokenizer.json)")
        ->required();
    s->add_option("-d,--data", run.data, "Trajectory JSONL files (ca-rollout's), - for stdin")->capture_default_str();
    s->add_option("-o,--out", o.out, "Output directory: checkpoint-NNNNNN/ and log.jsonl")->required();
    s->add_option("--device", o.device, "Where the models run: cpu, cuda, cuda:N")->capture_default_str();
    s->add_option("--dtype", run.dtype, "float32, or bfloat16: autocast over float32 weights")->capture_default_str();
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
    s->add_option("--max-context", run.max_context, "Tokens per trajectory at most; longer ones are bad records")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    s->add_flag("--resume", o.resume, "Continue from the newest checkpoint in --out");
    s->add_option("--dist-timeout", run.dist_timeout_s,
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
    s->add_option("--ref", p.reference, "KL reference checkpoint (default: --model)");
  }
  ppo->add_option("--critic", p.critic, "Critic checkpoint (ca-train value's output)")->required();
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
  run.stage = rft->parsed()      ? Stage::rft
              : value->parsed()  ? Stage::value
              : warmup->parsed() ? Stage::warmup
                                 : Stage::ppo;
  o.seed = cli.common().seed;
  run.threads = static_cast<int>(cli.common().jobs);
  run.on_bad = fail_fast ? OnBadRecord::stop : OnBadRecord::skip;
  return to_int(run_training(std::move(run)));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
