// ca-model: run the policy model (a Hugging Face checkpoint) over JSONL prompts (completions with token ids and
// logprobs), or serve it as an OpenAI-compatible chat-completions endpoint.
#include <chrono>
#include <cstdio>

#include "model/generate_records.h"
#include "model/serve.h"
#include "util/atomic_file.h"
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
  CLI::App* srv = cli.app().add_subcommand("serve", "An OpenAI-compatible chat-completions server over the model");
  cli.app().require_subcommand(1);
  std::string model_dir, device = "cpu", dtype = "float32", output = "-", port_file;
  std::vector<std::string> inputs = {"-"};
  SamplingParams sampling;
  ServeOptions serving;
  int64_t batch = 8;
  bool no_stop = false, fail_fast = false;
  for (CLI::App* sub : {gen, srv}) {
    sub->add_option("-m,--model", model_dir, "Checkpoint directory (config.json, safetensors, tokenizer.json)")
        ->required();
    sub->add_option("--device", device, "cpu, cuda or cuda:N")->capture_default_str();
    sub->add_option("--dtype", dtype, "float32 or bfloat16")->capture_default_str();
  }
  gen->add_option("FILE", inputs, "Prompt JSONL files, - for stdin")->capture_default_str();
  gen->add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
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
  srv->add_option("--host", serving.host, "Address to listen on")->capture_default_str();
  srv->add_option("--port", serving.port, "Port to listen on; 0 picks a free one")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  srv->add_option("--port-file", port_file, "Write the bound port here once requests are accepted");
  srv->add_option("--served-model-name", serving.model_name, "The model id requests name (default: the directory's)");
  srv->add_option("--max-tokens", serving.default_max_tokens, "Completion tokens when a request sets none")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  srv->add_option("--max-batch", serving.max_batch, "Sequences generated together across requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  srv->add_option("--threads", serving.threads, "Connections served at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  if (auto code = cli.parse(argc, argv)) return to_int(*code);
  sampling.seed = cli.common().seed;
  set_threads(cli.common().jobs > 1 ? cli.common().jobs : 0);
  const ExitCode load_failed = std::filesystem::exists(model_dir) ? ExitCode::data_error : ExitCode::no_input;

  if (srv->parsed()) {
    auto model = ChatModel::load(model_dir, device, dtype);
    if (!model) {
      error(model.error());
      return to_int(load_failed);
    }
    if (serving.model_name.empty()) serving.model_name = std::filesystem::absolute(model_dir).filename().string();
    auto served = serve(*model, serving, [&](int port) {
      note("serving " + serving.model_name + " on http://" + serving.host + ":" + std::to_string(port) + "/v1");
      if (!port_file.empty()) {
        if (auto written = write_file_atomic(port_file, std::to_string(port) + "\n"); !written) error(written.error());
      }
    });
    if (!served) {
      error(served.error());
      return to_int(ExitCode::io_error);
    }
    return to_int(*served ? ExitCode::interrupted : ExitCode::ok);
  }

  auto generator = Generator::load(model_dir, device, dtype);
  if (!generator) {
    error(generator.error());
    return to_int(load_failed);
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
