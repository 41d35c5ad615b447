#include "torch/kernelbench.h"

#include <cstdlib>
#include <filesystem>

#include "ir/safetensors.h"
#include "torch/interpreter.h"
#include "torch/runtime.h"
#include "torch/task_check.h"
#include "torch/tensors.h"
#include "util/executable_dir.h"
#include "util/subprocess.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

at::Device device_of(Backend backend) {
  return at::Device(backend == Backend::cuda ? at::kCUDA : at::kCPU);
}
using Error = std::unexpected<std::string>;

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The bridge prints one line per problem; 200 problems take about 1 MB.
constexpr size_t k_max_bridge_output = size_t(256) << 20;

std::expected<void, std::string> dump(const Json& record, const Program& program, const std::vector<at::Tensor>& inputs,
                                      const std::vector<at::Tensor>& outputs, const std::string& dump_dir) {
  std::vector<at::Tensor> host;  // keeps the bytes alive until written
  std::vector<SafetensorsTensor> entries;
  auto add = [&](const std::string& key, const at::Tensor& tensor) -> std::expected<void, std::string> {
    auto dtype = from_scalar_type(tensor.scalar_type());
    if (!dtype) return Error(key + ": dtype " + std::string(c10::toString(tensor.scalar_type())) + " cannot be dumped");
    host.push_back(tensor.contiguous().cpu());
    const auto* data = static_cast<const uint8_t*>(host.back().data_ptr());
    entries.push_back({key, *dtype, host.back().sizes().vec(), {data, host.back().nbytes()}});
    return {};
  };
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (auto ok = add("inputs." + program.inputs[i].name, inputs[i]); !ok) return ok;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (auto ok = add("outputs." + std::to_string(i), outputs[i]); !ok) return ok;
  }
  std::error_code ec;
  fs::create_directories(dump_dir, ec);
  return write_safetensors((fs::path(dump_dir) / (record["id"].get<std::string>() + ".safetensors")).string(), entries);
}

std::expected<Json, std::string> digest_record(const Json& record, const Program& program,
                                               const std::vector<at::Tensor>& inputs,
                                               const std::vector<at::Tensor>& outputs,
                                               const KernelbenchImport& options) {
  Json out = {{"id", record["id"]},
              {"seed", options.seed},
              {"device", std::string(backend_name(options.backend))},
              {"inputs", Json::array()},
              {"outputs", Json::array()}};
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    auto digest = tensor_digest(inputs[i]);
    if (!digest) return Error(digest.error());
    out["inputs"].push_back({{"name", program.inputs[i].name}, {"stream", i}, {"digest", *digest}});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto dtype = from_scalar_type(outputs[i].scalar_type());
    if (!dtype) {
      return Error("outputs." + std::to_string(i) + ": dtype " + std::string(c10::toString(outputs[i].scalar_type())) +
                   " has no digest");
    }
    auto digest = tensor_digest(outputs[i]);
    if (!digest) return Error(digest.error());
    out["outputs"].push_back({{"dtype", dtype_name(*dtype)}, {"shape", outputs[i].sizes().vec()}, {"digest", *digest}});
  }
  return out;
}

// Runs the task on inputs from the seed, then dumps and digests as the options say. Returns the digest record
// (null without digests).
std::expected<Json, std::string> run_for_check(const Json& record, const Program& program,
                                               const KernelbenchImport& options) {
  auto interpreter = Interpreter::create(program, "program");
  if (!interpreter) return Error(interpreter.error());
  std::vector<at::Tensor> tensors = make_tensors(program, options.seed, device_of(options.backend));
  auto outputs = interpreter->run(tensors);
  if (!outputs) return Error(outputs.error());
  if (!options.dump_dir.empty()) {
    auto dumped = dump(record, program, tensors, *outputs, options.dump_dir);
    if (!dumped) return Error("dump: " + dumped.error());
  }
  if (!options.digests) return Json();
  auto digests = digest_record(record, program, tensors, *outputs, options);
  if (!digests) return Error("digest: " + digests.error());
  return digests;
}

}  // namespace

std::expected<std::vector<std::string>, std::string> import_bridge_command(const KernelbenchImport& options) {
  const fs::path dir = executable_dir();  // the bridge and the venv are beside the build
  std::string python;
  if (const char* env = std::getenv("CA_PYTHON"); env != nullptr && *env != '\0') {
    python = env;
  } else if (fs::exists(dir / "../../.venv/bin/python")) {
    python = (dir / "../../.venv/bin/python").lexically_normal().string();
  } else {
    return Error("no Python with torch: " + (dir / "../../.venv/bin/python").lexically_normal().string() +
                 " does not exist; set CA_PYTHON");
  }
  std::string bridge;
  for (const fs::path& candidate :
       {dir / "../../bridge/import_kernelbench.py", dir / "../share/cuda-agent/bridge/import_kernelbench.py"}) {
    if (fs::exists(candidate)) {
      bridge = candidate.lexically_normal().string();
      break;
    }
  }
  if (bridge.empty()) return Error("bridge/import_kernelbench.py not found beside " + dir.string());
  std::vector<std::string> argv = {python,         bridge,
                                   "--params-dir", options.params_dir,
                                   "--scale",      std::to_string(options.scale),
                                   "--seed",       std::to_string(options.seed)};
  argv.insert(argv.end(), options.dirs.begin(), options.dirs.end());
  return argv;
}

std::expected<std::vector<Json>, std::string> run_import_bridge(const KernelbenchImport& options) {
  auto argv = import_bridge_command(options);
  if (!argv) return Error(argv.error());
  SubprocessOptions run_options;
  run_options.max_output = k_max_bridge_output;
  auto result = run_subprocess(*argv, run_options);
  if (!result) return Error(result.error());
  if (result->interrupted) return Error("interrupted");
  if (!result->ok()) {
    std::string tail = result->err.substr(result->err.size() > 2000 ? result->err.size() - 2000 : 0);
    return Error("the bridge " + result->describe() + (tail.empty() ? "" : ": " + tail));
  }
  std::vector<Json> records;
  size_t start = 0;
  while (start < result->out.size()) {
    size_t end = result->out.find('\n', start);
    if (end == std::string::npos) end = result->out.size();
    std::string_view line(result->out.data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    Json record = Json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) return Error("the bridge wrote a line that is not a JSON object");
    records.push_back(std::move(record));
  }
  return records;
}

std::expected<ImportedTask, std::string> finish_import(const Json& record, const KernelbenchImport& options) {
  auto checked = check_task(record, device_of(options.backend));
  if (!checked) return Error(checked.error());
  if (options.dump_dir.empty() && !options.digests) return ImportedTask{std::move(*checked), Json()};
  auto program = parse_program((*checked)["program"], "program");
  if (!program) return Error(program.error());
  std::expected<Json, std::string> digest;
  try {  // ops' errors are values (the interpreter's); making inputs or copies throws, e.g. when memory runs out
    digest = run_for_check(*checked, *program, options);
  } catch (const c10::Error& error) {
    digest = Error(first_line(error.what_without_backtrace()));
  }
  // The full-size check runs several imports at once on one GPU: each gives back what its task cached.
  if (options.backend == Backend::cuda) release_cached_device_memory();
  if (!digest) return Error(digest.error());
  return ImportedTask{std::move(*checked), std::move(*digest)};
}

Json import_error_record(const Json& record, const std::string& error) {
  Json out = {{"kind", "import_error"}};
  for (const char* key : {"id", "source", "level", "name", "file", "scale"}) {
    if (record.contains(key)) out[key] = record[key];
  }
  out["error"] = error;
  // The importer names the step it failed at; a task it made that fails here failed the check.
  out["stage"] = record.value("kind", "") == "import_error" ? record.value("stage", "unsupported") : "check";
  if (record.contains("program")) out["program"] = record["program"];
  return out;
}

}  // namespace ca
