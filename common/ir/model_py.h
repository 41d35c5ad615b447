// Renders a task program as the KernelBench-style model.py that the agent
// reads (docs/IR.md).
//
// Arguments render as Python literals: null -> None, true -> True, integers as
// integers, floats always with a '.' or exponent (inf/nan as float('inf') /
// float('nan')), lists as [a, b], references as the variable ("%xs[1]" ->
// xs[1], params as self.<name>), and "%%..." as the string without its first
// '%'. One rule is not literal: a string that is a canonical dtype name
// (dtype_names(): "float32", "int64", "bool", ...) renders as torch.<name>, and
// "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"
// and "strided" render as torch.<name>, because the IR spells ScalarType,
// MemoryFormat and Layout arguments as strings. This is safe because no LibTorch
// str argument takes one of those values.
//
// Value names that are Python keywords, or that would shadow what the file
// uses (torch, safetensors, self, Model, super, float, get_inputs, get_init_inputs; for
// params, any torch.nn.Module attribute), get '_' appended until unique.
#pragma once

#include <string>
#include <string_view>

#include "ir/program.h"

namespace ca {

/// Renders `program` as a model.py: `class Model(torch.nn.Module)` whose
/// __init__ creates the params (floating ones as torch.nn.Parameter, integer
/// and bool ones via register_buffer) and whose forward takes the inputs in
/// order and calls each node as torch.ops.<ns>.<name>.<overload or default>
/// (args..., key=value...); then get_inputs() returning new input tensors and
/// get_init_inputs() returning []. Values are drawn with torch's own generator
/// from the same distributions as the harness's, so they are not the same
/// numbers. `title` (e.g. the task id) goes into the header comment.
std::string render_model_py(const Program& program, std::string_view title);

}  // namespace ca
