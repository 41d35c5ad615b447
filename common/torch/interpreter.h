// The reference interpreter: runs a task program through LibTorch's
// dispatcher exactly as PyTorch eager would, on CPU, CUDA or meta.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "ir/program.h"

namespace ca {

/// How one schema argument gets its value when a node runs.
struct ValueRef {
  int value = -1;    // index into the interpreter's values
  int element = -1;  // >= 0 picks one element of a list value
};

struct ArgRecipe {
  enum class Kind { constant, ref, tensor_list, optional_tensor_list, device };
  Kind kind = Kind::constant;
  c10::IValue constant;
  ValueRef ref;
  std::vector<std::optional<ValueRef>> list;  // tensor_list elements; nullopt is None
};

struct BoundNode {
  c10::OperatorHandle op;
  std::vector<ArgRecipe> args;  // one per schema argument
  std::vector<int> outputs;     // value index of each return
};

/// The shape and dtype of one value, as shape inference found it.
struct TensorShape {
  std::vector<int64_t> sizes;
  at::ScalarType dtype = at::kFloat;
};

class Interpreter {
 public:
  /// Resolves every node against the dispatcher and checks it: unknown op or
  /// overload, mutating op, wrong arity, unknown or repeated keyword, missing
  /// argument, literal or reference of the wrong type, wrong number of outputs.
  /// Errors name the field, e.g. "program.nodes[1].args[0]: ...".
  static std::expected<Interpreter, std::string> create(const Program& program, std::string_view path = "program");

  /// Runs on the program's inputs then params, in order (see make_tensors).
  /// Device-typed arguments get the device of the first tensor. Returns the
  /// program's outputs, or an error naming the node that failed.
  std::expected<std::vector<at::Tensor>, std::string> run(const std::vector<at::Tensor>& tensors) const;

  /// Runs on the meta device: the outputs' shapes and dtypes, or the first
  /// shape error, naming its node. LibTorch's C++ build lacks meta kernels for
  /// many ops (relu, convolution, the norms: PyTorch registers those from
  /// Python), so a node that fails on meta runs again on `fallback` with
  /// zero-filled inputs of its shapes, and only its output shapes are kept.
  std::expected<std::vector<TensorShape>, std::string> infer_shapes(const at::Device& fallback = at::kCPU) const;

  const Program& program() const { return m_program; }

 private:
  std::expected<std::vector<at::Tensor>, std::string> execute(const std::vector<at::Tensor>& tensors,
                                                              const at::Device* meta_fallback) const;
  Interpreter(Program program, std::string path) : m_program(std::move(program)), m_path(std::move(path)) {}
  Program m_program;
  std::string m_path;
  std::vector<BoundNode> m_nodes;
  std::vector<c10::TypePtr> m_value_types;
  std::vector<ValueRef> m_outputs;  // each program output: a value, or an element of a list value
};

/// Parses and fully checks a program (structure, schemas, shapes on meta).
/// Returns the error of the first problem found.
std::expected<Interpreter, std::string> check_program(const Json& json, std::string_view path = "program");

}  // namespace ca
