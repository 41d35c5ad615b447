#include "synth/llm.h"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "torch/kernelbench.h"
#include "torch/task_check.h"
#include "util/atomic_file.h"
#include "util/remove_tree.h"

namespace fs = std::filesystem;

namespace ca {

namespace {

// "(self, a, b)" -> "(a, b)": what a caller passes.
std::string without_self(std::string signature) {
  for (const char* self : {"(self, ", "(self,", "(self"}) {
    if (signature.starts_with(self)) return "(" + signature.substr(std::strlen(self));
  }
  return signature;
}

// The parameter list of the first `def forward(...)` in `source`, on one line; "" when there is none.
std::string forward_signature(const std::string& source) {
  size_t start = source.find("def forward(");
  if (start == std::string::npos) return "";
  start += std::strlen("def forward");
  std::string out;
  int depth = 0;
  for (size_t i = start; i < source.size(); ++i) {
    char c = source[i];
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == '\n' || c == ' ') {
      if (!out.empty() && out.back() != ' ' && out.back() != '(') out += ' ';
      continue;
    }
    if (c == ')' && !out.empty() && (out.back() == ' ' || out.back() == ',')) {
      while (!out.empty() && (out.back() == ' ' || out.back() == ',')) out.pop_back();
    }
    out += c;
    if (depth == 0) break;
  }
  return without_self(out);
}

// Where a module's class is found: transformers' records name their file under models/, torch.nn's are nn.<Name>.
std::string module_path(const Json& record) {
  const std::string name = record.value("name", "");
  const std::string origin = record.value("origin", "");
  std::string file = record.value("file", "");
  if (origin == "transformers" && file.ends_with(".py")) {
    file.resize(file.size() - 3);
    std::replace(file.begin(), file.end(), '/', '.');
    return "transformers.models." + file + "." + name;
  }
  if (origin.starts_with("torch")) return "nn." + name;
  return name;
}

}  // namespace

std::string llm_prompt(const std::vector<Json>& picked, double target_ms, const std::string& device) {
  std::string text =
      "Write a KernelBench-style PyTorch reference program (model.py) that combines the following operators and "
      "modules into one fused computation: the forward pass should use each of them at least once, feeding the "
      "result of one into the next.\n\n";
  bool configs = false;
  for (const auto& record : picked) {
    if (record.value("kind", "") != "module") {
      text += "- operator " + record.value("schema", record.value("name", "")) + "\n";
      continue;
    }
    text += "- module " + module_path(record) + without_self(record.value("init_signature", "()"));
    if (record.contains("config_fields") && record["config_fields"].is_array() && !record["config_fields"].empty()) {
      text += ", reading config fields";
      for (const auto& field : record["config_fields"]) text += " " + field.get<std::string>();
      configs = true;
    }
    std::string forward = forward_signature(record.value("forward_source", ""));
    if (!forward.empty()) text += "; forward" + forward;
    text += "\n";
  }
  if (configs)
    text +=
        "\nA module that takes a config may be imported from transformers; give it a config of its model family "
        "(transformers' Config class) with small sizes set explicitly.\n";
  char size[160];
  std::snprintf(size, sizeof size,
                "\nChoose input sizes so that the forward pass takes about %g ms in float32 on %s.\n", target_ms,
                device == "h200" ? "an NVIDIA H200" : device.c_str());
  text += size;
  text +=
      "Requirements: `import torch` and `import torch.nn as nn`; `class Model(nn.Module)` with `__init__` taking the "
      "values of get_init_inputs() and a `forward` that takes the tensors of get_inputs() and returns a tensor; "
      "module-level `get_inputs()` returning a list of input tensors and `get_init_inputs()` returning a list of "
      "constructor arguments. float32 only; deterministic (no dropout, no random ops inside forward); no data-"
      "dependent control flow. Answer with the complete file in one ```python code block and nothing else: no "
      "explanation before or after it.";
  return text;
}

Json chat_request(const LlmOptions& options, const std::string& prompt, uint64_t seed) {
  Json request = {
      {"model", options.model},
      {"messages", Json::array({{{"role", "system"},
                                 {"content", "You write PyTorch reference programs for a CUDA kernel benchmark."}},
                                {{"role", "user"}, {"content", prompt}}})},
      {"temperature", options.temperature},
      {"seed", seed}};
  if (options.max_tokens > 0) request["max_tokens"] = options.max_tokens;
  return request;
}

std::expected<std::string, std::string> code_from_reply(const std::string& body) {
  Json reply = Json::parse(body, nullptr, false);
  Json content;
  if (reply.is_object() && reply.contains("choices") && reply["choices"].is_array() && !reply["choices"].empty()) {
    const Json& choice = reply["choices"][0];
    if (choice.is_object() && choice.contains("message") && choice["message"].is_object()) {
      content = choice["message"].value("content", Json());
    }
  }
  if (!content.is_string()) return std::unexpected("not a chat completion: no choices[0].message.content");
  std::string text = content.get<std::string>();
  size_t fence = text.find("```python");
  size_t start = fence == std::string::npos ? text.find("```") : fence;
  if (start == std::string::npos) return std::unexpected("no code block in the reply");
  start = text.find('\n', start);
  size_t end = start == std::string::npos ? std::string::npos : text.find("```", start);
  if (end == std::string::npos) return std::unexpected("no code block in the reply (unclosed fence)");
  return text.substr(start + 1, end - start - 1);
}

namespace {

// The Python installation the sandbox must see besides the system's own directories: the venv the interpreter path
// lies in (<venv>/bin/python) and the installation its link resolves to (which may live under a home directory).
std::vector<std::string> python_mounts(const std::string& python) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (fs::path bin : {fs::absolute(python, ec).parent_path(), fs::canonical(python, ec).parent_path()}) {
    std::string prefix = bin.parent_path().string();
    if (!ec && !prefix.empty() && prefix != "/" && !prefix.starts_with("/usr") &&
        std::find(dirs.begin(), dirs.end(), prefix) == dirs.end())
      dirs.push_back(prefix);
  }
  return dirs;
}

// Rewrites the param files' paths that point at `from` to `to`.
void move_param_paths(Json& program, const std::string& from, const std::string& to) {
  if (!program.contains("params") || !program["params"].is_array()) return;
  for (Json& param : program["params"]) {
    if (!param.is_object() || !param.contains("init") || !param["init"].is_object()) continue;
    Json& init = param["init"];
    if (init.contains("file") && init["file"].is_object() && init["file"].value("path", "") == from)
      init["file"]["path"] = to;
  }
}

}  // namespace

std::expected<Json, LlmImportError> import_model_py(const std::string& code, const std::string& id, uint64_t seed,
                                                    const LlmOptions& options) {
  // The scratch folder, the one place the model's code may write, is made inside --params-dir so that its weights
  // move out with a rename.
  std::error_code ec;
  fs::create_directories(options.params_dir, ec);
  if (ec) return std::unexpected(LlmImportError{"import", options.params_dir + ": cannot make it: " + ec.message()});
  std::string dir = fs::absolute(options.params_dir).string() + "/.scratch-XXXXXX";
  if (!mkdtemp(dir.data()))
    return std::unexpected(LlmImportError{"import", options.params_dir + ": cannot make a scratch directory in it"});
  // mkdtemp's 0700 would shut out bwrap, which drops every capability before it enters the folder.
  ::chmod(dir.c_str(), 0755);
  const std::string weights = "kernelbench-" + id + ".safetensors";
  std::expected<SandboxResult, std::string> ran = std::unexpected("");
  KernelbenchImport import;
  import.dirs = {dir};
  import.params_dir = dir;
  import.seed = seed;
  auto written = write_file_atomic(dir + "/" + id + ".py", code);
  auto argv = import_bridge_command(import);
  if (!written) ran = std::unexpected(written.error());
  if (written && !argv) ran = std::unexpected(argv.error());
  if (written && argv) {
    // The model's code runs when the importer loads it: in the sandbox (no network, the project and the Python
    // installation read-only, only the scratch folder writable), within the time and memory limits.
    SandboxSpec spec;
    spec.argv = *argv;
    spec.workdir = dir;
    spec.writable = {dir};
    spec.readable = python_mounts((*argv)[0]);
    spec.readable.push_back(fs::path((*argv)[1]).parent_path().string());
    spec.limits = options.import_limits;
    ran = run_sandboxed(spec);
  }
  Json imported;
  if (ran && ran->exit_code == 0 && !ran->timed_out) imported = Json::parse(ran->out, nullptr, false);
  const std::string host_weights = options.params_dir + "/" + weights;
  const bool made_weights = std::rename((dir + "/" + weights).c_str(), host_weights.c_str()) == 0;
  remove_tree(dir);
  // A model that made no task leaves no weights behind.
  auto fail = [&](std::string reason, std::string detail) {
    if (made_weights) std::remove(host_weights.c_str());
    return std::unexpected(LlmImportError{std::move(reason), std::move(detail)});
  };
  if (!ran) return fail("import", ran.error());
  if (ran->timed_out || ran->limit_hit == "wall" || ran->limit_hit == "cpu") {
    const bool cpu = ran->limit_hit == "cpu";
    char why[96];
    std::snprintf(why, sizeof why, "the model's import ran past its %s limit (%g s)", cpu ? "CPU-time" : "wall-clock",
                  cpu ? options.import_limits.cpu_s : options.import_limits.wall_s);
    return fail("timeout", why);
  }
  if (ran->exit_code != 0) {
    std::string err = ran->err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    auto last = err.rfind('\n');
    std::string why = ran->limit_hit.empty() ? "exit " + std::to_string(ran->exit_code) : ran->limit_hit + " limit";
    return fail("import", "bridge " + why + ": " + (last == std::string::npos ? err : err.substr(last + 1)));
  }
  if (!imported.is_object()) return fail("import", "the bridge printed no JSON record");
  // The importer names the stage the model's file failed at (syntax, load, shape, forward, export, unsupported).
  if (imported.value("kind", "") != "task")
    return fail(imported.value("stage", "import"), imported.value("error", "the bridge made no task"));
  // The importer's own fields (kernelbench id, level, scratch file) do not apply.
  Json record = {{"kind", "task"}, {"id", id}, {"source", "llm"}, {"program", imported["program"]}, {"seed", seed}};
  move_param_paths(record["program"], dir + "/" + weights, host_weights);
  if (imported.contains("derived_inputs")) record["derived_inputs"] = imported["derived_inputs"];
  return record;
}

LlmComposer::LlmComposer(std::vector<Json> records, LlmOptions options, HttpPost post)
    : m_options(std::move(options)), m_post(std::move(post)) {
  for (auto& record : records) {
    if (record.value("kind", "") == "module") {
      m_modules.push_back(std::move(record));
    } else if (record.value("usable", false)) {
      m_ops.push_back(std::move(record));
    }
  }
}

LlmRequest LlmComposer::prepare() {
  LlmRequest request;
  while (m_replayed.contains(m_next_index)) ++m_next_index;
  request.index = m_next_index++;
  ++m_requests;
  Rng rng = Rng::for_item(m_options.seed, request.index);
  std::vector<Json> picked;
  size_t count = std::min<size_t>(m_ops.size() + m_modules.size(), 2 + rng.below(4));
  while (picked.size() < count) {
    // Even odds between the pools, whatever their sizes (transformers alone has thousands of modules).
    bool module = m_ops.empty() || (!m_modules.empty() && rng.chance(0.5));
    picked.push_back(rng.pick(module ? m_modules : m_ops));
  }
  request.seed = rng.next() & 0x7fffffff;
  request.body =
      chat_request(m_options, llm_prompt(picked, m_options.target_ms, m_options.device), request.seed).dump();
  char id[64];
  std::snprintf(id, sizeof id, "llm-%llu-%06zu", static_cast<unsigned long long>(m_options.seed), request.index);
  request.id = id;
  return request;
}

std::expected<Json, LlmFailure> LlmComposer::ask(const LlmRequest& request) const {
  std::vector<std::string> headers = {"Content-Type: application/json"};
  if (!m_options.api_key.empty()) headers.push_back("Authorization: Bearer " + m_options.api_key);
  auto reply = m_post(m_options.url + "/chat/completions", request.body, headers);
  if (!reply) return std::unexpected(LlmFailure{"http", reply.error()});
  auto code = code_from_reply(*reply);
  if (!code) return std::unexpected(LlmFailure{"no code", code.error()});
  auto imported = import_model_py(*code, request.id, request.seed, m_options);
  if (!imported) return std::unexpected(LlmFailure{imported.error().reason, imported.error().detail});
  return *imported;
}

std::expected<Json, LlmFailure> LlmComposer::finish(const LlmRequest& request, std::expected<Json, LlmFailure> answer) {
  // A refused task leaves no weights behind (the importer names them by id).
  const std::string weights = m_options.params_dir + "/kernelbench-" + request.id + ".safetensors";
  auto refuse = [&](LlmFailure failure) -> std::expected<Json, LlmFailure> {
    ++m_failures[failure.reason];
    return std::unexpected(std::move(failure));
  };
  if (!answer) return refuse(std::move(answer.error()));
  auto checked = check_task(*answer);
  if (!checked) {
    std::remove(weights.c_str());
    return refuse({"check", checked.error()});
  }
  if (!m_fingerprints.insert((*checked)["meta"]["fingerprint"].get<std::string>()).second) {
    std::remove(weights.c_str());
    return refuse({"duplicate", "fingerprint seen before"});
  }
  ++m_tasks;
  return *checked;
}

void LlmComposer::replay(size_t index, const std::expected<Json, LlmFailure>& outcome) {
  m_replayed.insert(index);
  ++m_requests;
  if (!outcome) {
    ++m_failures[outcome.error().reason];
    return;
  }
  m_fingerprints.insert(outcome->value("meta", Json::object()).value("fingerprint", ""));
  ++m_tasks;
}

size_t LlmComposer::answers() const {
  auto http = m_failures.find("http");
  return m_requests - (http == m_failures.end() ? 0 : http->second);
}

std::string LlmComposer::summary() const {
  std::string text = std::to_string(m_tasks) + " tasks from " + std::to_string(m_requests) + " requests (" +
                     std::to_string(answers()) + " answers); failed:";
  if (m_failures.empty()) text += " none";
  for (const auto& [reason, count] : m_failures) text += " " + reason + " " + std::to_string(count) + ",";
  if (text.back() == ',') text.pop_back();
  return text;
}

}  // namespace ca
