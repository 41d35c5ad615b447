// Checks a hand-written `task` record and fills in what the IR implies:
// meta.fingerprint, meta.ops and meta.output_shapes (from shape inference).
#pragma once

#include <expected>
#include <string>

#include <ATen/ATen.h>

#include "torch/interpreter.h"
#include "util/jsonl.h"

namespace ca {

/// Validates record.program fully (structure, param files, schemas, shapes) and returns the
/// record with `meta` completed; other fields pass through. Errors name the field.
/// Nodes without a meta kernel are shape-checked on `fallback` (Interpreter::infer_shapes).
std::expected<Json, std::string> check_task(const Json& record, const at::Device& fallback = at::kCPU);

/// The task's "seed" (0 when absent): an integer in [0, 2^64). Anything else ("one", -1, 1.5) is an error
/// naming the field, never a silent 0.
std::expected<uint64_t, std::string> task_seed(const Json& record);

/// A task's program, bound and shape-checked, as ca-verify and ca-profile need it before running anything.
struct TaskProgram {
  Interpreter interpreter;          // interpreter.program() is the parsed program
  std::vector<TensorShape> shapes;  // of the outputs
};

/// Parses task.program, checks its weight files (so that drawing tensors cannot fail later), binds it and infers
/// its output shapes. Errors name the field: "task.program.nodes[2] (aten::conv2d): ...".
std::expected<TaskProgram, std::string> load_task_program(const Json& task);

}  // namespace ca
