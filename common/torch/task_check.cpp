#include "torch/task_check.h"

#include <set>

#include "ir/fingerprint.h"
#include "ir/tensor_init.h"
#include "torch/interpreter.h"
#include "torch/tensors.h"
#include "util/json_field.h"

namespace ca {

std::expected<uint64_t, std::string> task_seed(const Json& record) {
  auto seed = record.find("seed");
  if (seed == record.end()) return 0;
  // A parsed 1 is unsigned, a 1 set in C++ (records made by the tools) is signed: both are seeds.
  if (!seed->is_number_integer() || (!seed->is_number_unsigned() && seed->get<int64_t>() < 0))
    return std::unexpected("seed: expected an integer >= 0, got " + seed->dump());
  return seed->get<uint64_t>();
}

std::expected<Json, std::string> check_task(const Json& record, const at::Device& fallback) {
  auto kind = string_field(record, "kind", "");
  if (!kind) return std::unexpected(kind.error());
  if (*kind != "task") return std::unexpected("kind: expected \"task\", got \"" + *kind + "\"");
  auto id = string_field(record, "id", "");
  if (!id) return std::unexpected(id.error());
  auto program = require_field(record, "program", "");
  if (!program) return std::unexpected(program.error());
  if (auto seed = task_seed(record); !seed) return std::unexpected(seed.error());

  auto parsed = parse_program(**program, "program");
  if (!parsed) return std::unexpected(parsed.error());
  if (auto files = check_file_inits(*parsed); !files) return std::unexpected("program.params: " + files.error());
  auto interpreter = Interpreter::create(*parsed, "program");
  if (!interpreter) return std::unexpected(interpreter.error());
  auto shapes = interpreter->infer_shapes(fallback);
  if (!shapes) return std::unexpected(shapes.error());

  Json out = record;
  if (!out.contains("meta") || !out["meta"].is_object()) out["meta"] = Json::object();
  Json& meta = out["meta"];
  std::set<std::string> ops;
  for (const auto& node : interpreter->program().nodes) ops.insert(node.qualified_name());
  meta["ops"] = ops;
  meta["fingerprint"] = fingerprint(interpreter->program());
  Json output_shapes = Json::array();
  for (const auto& shape : *shapes) {
    auto dtype = from_scalar_type(shape.dtype);
    std::string dtype_text = dtype ? std::string(dtype_name(*dtype)) : std::string(c10::toString(shape.dtype));
    output_shapes.push_back({{"shape", shape.sizes}, {"dtype", dtype_text}});
  }
  meta["output_shapes"] = output_shapes;
  return out;
}

std::expected<TaskProgram, std::string> load_task_program(const Json& task) {
  auto program_json = require_field(task, "program", "task");
  if (!program_json) return std::unexpected(program_json.error());
  if (auto seed = task_seed(task); !seed) return std::unexpected("task." + seed.error());
  auto program = parse_program(**program_json, "task.program");
  if (!program) return std::unexpected(program.error());
  if (auto files = check_file_inits(*program); !files) return std::unexpected(files.error());
  auto interpreter = Interpreter::create(*program, "task.program");
  if (!interpreter) return std::unexpected(interpreter.error());
  auto shapes = interpreter->infer_shapes();
  if (!shapes) return std::unexpected(shapes.error());
  return TaskProgram{std::move(*interpreter), std::move(*shapes)};
}

}  // namespace ca
