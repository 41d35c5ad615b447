// ca-synth: compose fused tasks of 1-5 ops from op records, with the built-in
// grammar or through an OpenAI-compatible LLM endpoint.
#include <cstdlib>

#include "http/http.h"
#include "synth/records_in.h"
#include "synth/synthesize.h"
#include "util/cli.h"
#include "util/exceptions.h"
#include "util/log.h"

using namespace ca;

int main(int argc, char** argv) try {
  ToolCli cli("ca-synth", "Compose fused tasks of 1-5 ops from op records (ca-crawl ops) into task records.");
  std::string ops_path = "-", output = "-", mix_text = format_mix(k_paper_mix), cost_model = "h200";
  std::string modules_path, api_key_env;
  size_t count = 10;
  double timeout_s = 120;
  SynthOptions options;
  LlmOptions llm;
  cli.app().add_option("FILE", ops_path, "Op records (ca-crawl ops), - for stdin")->capture_default_str();
  cli.app().add_option("-o,--output", output, "Output file, - for stdout")->capture_default_str();
  cli.app().add_option("-n,--count", count, "Tasks to make")->capture_default_str()->check(ca::count(1e9));
  cli.app().add_option("--mix", mix_text, "Weights of tasks with 1,2,3,4,5 ops")->capture_default_str();
  cli.app()
      .add_option("--target-ms", options.target_ms, "Estimated runtime to size tasks toward")
      ->capture_default_str()
      ->check(positive(1e6));
  cli.app()
      .add_option("--cost-model", cost_model, "Device whose runtime the estimate models: h200 or cpu")
      ->capture_default_str();
  cli.app()
      .add_option("--max-elements", options.max_elements, "Largest tensor of a task, in elements")
      ->capture_default_str()
      ->check(ca::count(1e12));
  cli.app().add_option("--llm", llm.url,
                       "OpenAI-compatible API base URL (e.g. http://localhost:8000/v1): ask it instead of the grammar");
  cli.app().add_option("--model", llm.model, "Model name for --llm");
  cli.app().add_option("--api-key-env", api_key_env, "Environment variable holding the API key for --llm");
  cli.app().add_option("--modules", modules_path, "Module records (ca-crawl modules) to sample from too, with --llm");
  cli.app()
      .add_option("--params-dir", llm.params_dir, "Where --llm tasks' weights go (safetensors)")
      ->capture_default_str();
  cli.app()
      .add_option("--temperature", llm.temperature, "Sampling temperature for --llm")
      ->capture_default_str()
      ->check(non_negative(10));
  cli.app()
      .add_option("--request-timeout", timeout_s, "Seconds for one --llm request")
      ->capture_default_str()
      ->check(seconds());
  cli.app()
      .add_option_function<double>(
          "--import-timeout", [&llm](double s) { llm.import_limits.wall_s = llm.import_limits.cpu_s = s; },
          "Seconds of wall clock and CPU the sandbox gives one --llm model's import (its code runs there)")
      ->default_str(std::to_string(int(llm.import_limits.wall_s)))
      ->check(seconds());
  LlmRun run;
  cli.app()
      .add_option("--prompts", run.prompts,
                  "With --llm: send exactly this many prompts and write the tasks they give, however few (instead "
                  "of -n)")
      ->check(ca::count(1e9));
  cli.app()
      .add_option("--llm-jobs", run.jobs,
                  "Requests in flight at once with --llm (a server that batches answers them together)")
      ->capture_default_str()
      ->check(ca::count(1024));
  cli.app()
      .add_option("--max-tokens", llm.max_tokens,
                  "Completion tokens one --llm answer may have (0: the server's default)")
      ->capture_default_str()
      ->check(non_negative(1e9));
  cli.add_resume_flag(&cli.app(), {"FILE", "--modules"});
  if (auto code = cli.parse(argc, argv)) return to_int(*code);

  auto mix = parse_mix(mix_text);
  if (!mix) return to_int(usage_error(mix.error()));
  auto device = device_model(cost_model);
  if (!device) return to_int(usage_error("--cost-model: " + device.error()));
  if (!llm.url.empty() && llm.model.empty()) return to_int(usage_error("--llm needs --model"));
  if (llm.url.empty() && (!llm.model.empty() || !modules_path.empty() || run.prompts > 0 ||
                          cli.app().count("--llm-jobs") > 0 || cli.app().count("--max-tokens") > 0))
    return to_int(usage_error("--model, --modules, --prompts, --llm-jobs and --max-tokens need --llm"));
  if (run.prompts > 0 && cli.app().count("--count") > 0)
    return to_int(usage_error("--prompts and -n exclude each other"));
  options.mix = *mix;
  options.device = *device;
  options.seed = cli.common().seed;

  auto records = read_input_records(ops_path, "op");
  if (records && !modules_path.empty()) {
    auto modules = read_input_records(modules_path, "module");
    if (!modules) records = std::unexpected(modules.error());
    if (modules) records->insert(records->end(), modules->begin(), modules->end());
  }
  if (!records) {
    error(records.error().message);
    return to_int(records.error().code);
  }
  if (llm.url.empty())
    return to_int(synthesize_with_grammar(*records, ops_path, options, count, output, cli.journal_options()));

  llm.api_key = api_key_env.empty() ? "" : (std::getenv(api_key_env.c_str()) ? std::getenv(api_key_env.c_str()) : "");
  if (!api_key_env.empty() && llm.api_key.empty())
    warning("--api-key-env: $" + api_key_env + " is not set; sending no key");
  llm.target_ms = options.target_ms;
  llm.device = device->name;
  llm.seed = options.seed;
  auto post = [timeout_s](const std::string& url, const std::string& body, const std::vector<std::string>& headers) {
    return http_post(url, body, headers, timeout_s);
  };
  run.count = count;
  return to_int(synthesize_with_llm(std::move(*records), llm, post, run, output, cli.journal_options()));
} catch (...) {  // LibTorch's and the standard library's exceptions: util/exceptions.h
  return report_uncaught_exception();
}
