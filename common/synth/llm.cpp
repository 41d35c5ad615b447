#include "synth/llm.h"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "torch/kernelbench.h"
#include "torch/task_check.h"
#include "util/atomic_file.h"
#include "util/remove_tree.h"

namespace fs = std::filesystem;

namespace ca {

std::string llm_prompt(const std::vector<Json>& picked, double target_ms, const std::string& device) {
  std::string text =
      "Write a KernelBench-style PyTorch reference program (model.py) that combines the following operators and "
      "modules into one fused computation: the forward pass should use each of them at least once, feeding the "
      "result of one into the next.\n\n";
  for (const auto& record : picked) {
    if (record.value("kind", "") == "module") {
      text += "- module " + record.value("name", "") + record.value("init_signature", "") + "\n";
    } else {
      text += "- operator " + record.value("schema", record.value("name", "")) + "\n";
    }
  }
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
      "dependent control flow. Answer with the complete file in one ```python code block.";
  return text;
}

Json chat_request(const LlmOptions& options, const std::string& prompt, uint64_t seed) {
  return {{"model", options.model},
          {"messages", Json::array({{{"role", "system"},
                                     {"content", "You write PyTorch reference programs for a CUDA kernel benchmark."}},
                                    {{"role", "user"}, {"content", prompt}}})},
          {"temperature", options.temperature},
          {"seed", seed}};
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
  if (imported.value("kind", "") != "task") return fail("import", imported.value("error", "the bridge made no task"));
  // The importer's own fields (kernelbench id, level, scratch file) do not apply.
  Json record = {{"kind", "task"}, {"id", id}, {"source", "llm"}, {"program", imported["program"]}, {"seed", seed}};
  move_param_paths(record["program"], dir + "/" + weights, host_weights);
  if (imported.contains("derived_inputs")) record["derived_inputs"] = imported["derived_inputs"];
  return record;
}

LlmComposer::LlmComposer(std::vector<Json> records, LlmOptions options, HttpPost post)
    : m_options(std::move(options)), m_post(std::move(post)), m_rng(m_options.seed) {
  for (auto& record : records) {
    if (record.value("kind", "") == "module" || record.value("usable", false)) m_pool.push_back(std::move(record));
  }
}

std::expected<Json, LlmComposer::Failure> LlmComposer::attempt() {
  std::vector<Json> picked;
  size_t count = std::min<size_t>(m_pool.size(), 2 + m_rng.below(4));
  while (picked.size() < count) picked.push_back(m_rng.pick(m_pool));
  uint64_t seed = m_rng.next() & 0x7fffffff;
  std::string body = chat_request(m_options, llm_prompt(picked, m_options.target_ms, m_options.device), seed).dump();
  std::vector<std::string> headers = {"Content-Type: application/json"};
  if (!m_options.api_key.empty()) headers.push_back("Authorization: Bearer " + m_options.api_key);
  auto reply = m_post(m_options.url + "/chat/completions", body, headers);
  if (!reply) return std::unexpected(Failure{"http", reply.error()});
  auto code = code_from_reply(*reply);
  if (!code) return std::unexpected(Failure{"no code block", code.error()});
  char id[64];
  std::snprintf(id, sizeof id, "llm-%llu-%06zu", static_cast<unsigned long long>(m_options.seed), m_tasks);
  auto imported = import_model_py(*code, id, seed, m_options);
  if (!imported) return std::unexpected(Failure{imported.error().reason, imported.error().detail});
  // A refused task leaves no weights behind (the importer names them by id).
  std::string weights = m_options.params_dir + "/kernelbench-" + id + ".safetensors";
  auto checked = check_task(*imported);
  if (!checked) {
    std::remove(weights.c_str());
    return std::unexpected(Failure{"check", checked.error()});
  }
  if (!m_fingerprints.insert((*checked)["meta"]["fingerprint"].get<std::string>()).second) {
    std::remove(weights.c_str());
    return std::unexpected(Failure{"duplicate", "fingerprint seen before"});
  }
  return *checked;
}

std::expected<Json, std::string> LlmComposer::next() {
  ++m_requests;
  auto task = attempt();
  if (!task) {
    ++m_failures[task.error().reason];
    return std::unexpected(task.error().reason + ": " + task.error().detail);
  }
  ++m_tasks;
  return *task;
}

std::string LlmComposer::summary() const {
  std::string text = std::to_string(m_tasks) + " tasks from " + std::to_string(m_requests) + " requests; failed:";
  if (m_failures.empty()) text += " none";
  for (const auto& [reason, count] : m_failures) text += " " + reason + " " + std::to_string(count) + ",";
  if (text.back() == ',') text.pop_back();
  return text;
}

}  // namespace ca
