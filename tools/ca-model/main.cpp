// ca-model: run the policy model (a Hugging Face checkpoint) over JSONL prompts: completions with token ids
// and logprobs.
#include <chrono>
#include <cstdio>

#include "model/generate_records.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"
#include "util/record_loop.h"
#include "util/record_output.h"

using namespace ca;
using namespace ca::model;

int main(int argc, char** argv) try {
  ToolCli cli("ca-model", "Run a Llama/Qwen2 checkpoint over JSONL prompts (docs/MODEL.md).");
  CLI::App* gen =
      cli.app().add_subcommand("generate", "One completion per record ({\"prompt\": text} or {\"ids\": [...]})");
  cli.app().require_subcommand(1);
  std::string model_dir, device = "cpu", dtype = "float32", output = "-";
  std::vector<std::string> inputs = {"-"};
  SamplingParams sampling;
  int64_t batch = 8;
  bool no_stop = false, fail_fast = false;
  gen->add_option("FILE", inputs, "Prompt JSONL files, - for stdin")->capture_default_str();
  gen->add_option("-m,--model", model_dir, "Checkpoint directory (config.json, safetensors, tokenizer.json)")
      ->required();
  gen->add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  gen->add_option("--device", device, "cpu, cuda or cuda:N")->capture_default_str();
  gen->add_option("--dtype", dtype, "float32 or bfloat16")->capture_default_str();
  gen->add_option("--batch", batch, "Records generated together")->capture_default_str()->check(CLI::PositiveNumber);
  gen->add_option("--max-tokens", sampling.max_tokens, "Tokens per completion at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  gen->add_option("--temperature", sampling.temperature, "Sampling temperature; 0 is greedy")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--top-p", sampling.top_p, "Nucleus sampling mass")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  gen->add_option("--top-k", sampling.top_k, "Most likely tokens kept; 0 keeps all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen->add_flag("--no-stop", no_stop, "Do not stop at the model's end-of-turn tokens");
  gen->add_flag("--fail-fast", fail_fast, "Stop at the first bad record");
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  sampling.seed = cli.common().seed;
  set_threads(cli.common().jobs > 1 ? cli.common().jobs : 0);

  auto generator = Generator::load(model_dir, device, dtype);
  if (!generator) {
    error(generator.error());
    return to_int(std::filesystem::exists(model_dir) ? ExitCode::data_error : ExitCode::no_input);
  }
  if (!no_stop) sampling.stop_ids = generator->eos_ids();
  const Tokenizer& tokenizer = generator->tokenizer();
  int64_t tokens = 0;
  double seconds = 0;
  return to_int(write_records(output, [&](JsonlWriter& writer) {
    std::vector<Json> pending;
    std::vector<std::vector<int32_t>> prompts;
    auto flush = [&]() -> std::expected<std::optional<ExitCode>, std::string> {
      if (prompts.empty()) return std::nullopt;
      const auto start = std::chrono::steady_clock::now();
      auto done = generator->generate(prompts, sampling);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!done) return std::unexpected(done.error());
      for (size_t i = 0; i < done->size(); ++i) {
        tokens += static_cast<int64_t>((*done)[i].ids.size());
        if (auto stop = emit(writer, completion_record(std::move(pending[i]), (*done)[i], tokenizer))) return stop;
      }
      pending.clear();
      prompts.clear();
      return std::nullopt;
    };
    ExitCode code = visit_records(inputs, fail_fast ? OnBadRecord::stop : OnBadRecord::skip,
                                  [&](const Record& record) -> std::expected<std::optional<ExitCode>, std::string> {
                                    auto ids = record_prompt(record.value, tokenizer);
                                    if (!ids) return std::unexpected(ids.error());
                                    pending.push_back(record.value);
                                    prompts.push_back(std::move(*ids));
                                    if (static_cast<int64_t>(prompts.size()) < batch) return std::nullopt;
                                    return flush();
                                  });
    if (code == ExitCode::ok || code == ExitCode::some_failed) {
      auto last = flush();
      if (!last) {
        error(last.error());
        return ExitCode::data_error;
      }
      if (*last) return **last;
    }
    char summary[128];
    std::snprintf(summary, sizeof summary, "generated %lld tokens in %.3f s (%.2f tokens/s)",
                  static_cast<long long>(tokens), seconds, seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0);
    note(summary);
    return code;
  }));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
