// The task IR (docs/IR.md): a dataflow program over LibTorch's aten:: operators. This file
// parses and checks its structure; checking ops against their schemas needs
// LibTorch and lives in the LibTorch layer (the interpreter).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "ir/dist.h"
#include "ir/dtype.h"
#include "util/jsonl.h"

namespace ca {

struct Init {
  Dist dist = Dist::randn;
  double a = 0;        // uniform/randint: low; normal: mean; constant: value
  double b = 1;        // uniform/randint: high; normal: std
  std::string path{};  // file: a safetensors file, relative to the current directory
  std::string key{};   // file: the tensor's name in it
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::float32;
  std::vector<int64_t> shape;
  Init init;
  int64_t numel() const;
};

struct Node {
  std::string op;        // "aten::add"
  std::string overload;  // "Tensor"; "" is the default overload
  Json args = Json::array();
  Json kwargs = Json::object();
  std::vector<std::string> outputs;
  /// "aten::add.Tensor", or "aten::linear" for the default overload.
  std::string qualified_name() const;
};

struct Program {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> params;
  std::vector<Node> nodes;
  std::vector<std::string> outputs;
};

/// A reference to a value in an argument: "%x", or "%xs[1]" for one element
/// of a list-valued result. A literal string that starts with '%' is written "%%...".
struct Ref {
  std::string name;
  std::optional<int64_t> index;
};

/// Returns the reference that `arg` spells, or nullopt when it is a literal.
std::optional<Ref> parse_ref(const Json& arg);

/// The value of a non-finite float literal, which JSON numbers cannot hold: {"float": "inf"}, {"float": "-inf"} or
/// {"float": "nan"} (docs/IR.md, Arguments); nullopt for anything else.
std::optional<double> parse_special_float(const Json& arg);

/// Parses and structurally checks a program: names, dtypes, shapes, inits,
/// and that every reference names an input, a param or an earlier output.
/// `path` prefixes error messages ("program.nodes[2].args[0]: ...").
std::expected<Program, std::string> parse_program(const Json& json, std::string_view path = "program");

Json to_json(const Program& program);
Json to_json(const Init& init);

/// Splits "aten::add.Tensor" into ("aten::add", "Tensor"); ".default" means "".
std::pair<std::string, std::string> split_op_name(std::string_view qualified);

}  // namespace ca
