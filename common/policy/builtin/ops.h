// The ops the kernel writer covers: each op's schema (as LibTorch prints it) and how it lowers into the plan.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/program.h"
#include "policy/builtin/graph.h"
#include "util/jsonl.h"

namespace ca::builtin {

/// Which operands pointwise() takes besides float32 ones. float_beside: an integer or bool one only beside a float32
/// operand (arithmetic, where type promotion makes the result float32); bools_exact: bools too (comparisons, logical
/// ops and selects, exact on 0 and 1); promoted: any (the ops that promote integers to float, exp or sin).
enum class Operands { float_beside, bools_exact, promoted };

/// What an op handler works on: the plan so far and the values of the node's arguments.
class Lowering {
 public:
  explicit Lowering(Plan& plan) : m_plan(plan) {}
  /// The value a tensor argument names; an error for a literal, an unknown name or an unusable value.
  std::expected<int, std::string> tensor(const Json& arg) const;
  /// The value of an optional tensor argument, -1 for null.
  std::expected<int, std::string> optional_tensor(const Json& arg) const;
  /// As tensor(), and also an integer or bool input, which only an arithmetic operand may read (pointwise() then
  /// wants a float operand beside it, so that the result is float32 as type promotion makes it).
  std::expected<int, std::string> operand(const Json& arg) const;
  /// The value a program output names: a float32 value, a bool one (a comparison's), or an int64 one that a step
  /// writes (argmax's indices) and that no other output is.
  std::expected<int, std::string> output(const Json& arg) const;
  const Val& val(int id) const { return m_plan.vals[id]; }
  /// Marks a value as int64 (a step's indices) or bool (a comparison's): stored as such, read only as an operand or
  /// an output.
  void set_dtype(int id, DType dtype) { m_plan.vals[id].dtype = static_cast<int>(dtype); }
  int add(Val val);
  void add_step(Step step);
  /// A pointwise value over `args` (right-aligned broadcasting), or an error when the shapes do not broadcast or the
  /// args' dtypes break `rule`.
  std::expected<int, std::string> pointwise(std::string expr, std::vector<int> args,
                                            Operands rule = Operands::float_beside);
  void bind(const std::string& name, int id) { m_names[name] = id; }
  void forbid(const std::string& name, std::string reason) { m_unusable[name] = std::move(reason); }
  /// `name` (an integer or bool input, argmax's indices) is refused as tensor() but readable as operand().
  void operand_only(const std::string& name, std::string reason) {
    forbid(name, std::move(reason));
    m_operand_only.insert(name);
  }
  void note_pattern(const std::string& pattern);
  int node = -1;

 private:
  Plan& m_plan;
  std::map<std::string, int> m_names;
  std::map<std::string, std::string> m_unusable;
  std::set<std::string> m_operand_only;
};

/// Lowers one node whose arguments are bound by name; sets its outputs with Lowering::bind. Errors are the
/// node's uncovered reason.
using OpHandler = std::function<std::expected<void, std::string>(Lowering&, const Json& args, const Node& node)>;

struct OpEntry {
  std::string schema;
  OpHandler handler;
};

/// Every covered op by qualified name ("aten::add.Tensor", "aten::relu").
const std::map<std::string, OpEntry>& op_table();

/// A float as a C literal ("0.100000001f", "INFINITY").
std::string float_literal(double value);

}  // namespace ca::builtin
