// Helpers shared by the op handlers (ops_*.cpp): argument reading and shape arithmetic.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <vector>

#include "policy/builtin/ops.h"

namespace ca::builtin {

/// A number argument (int, float, inf or nan, or bool Scalar), or an error naming it.
std::expected<double, std::string> number(const Json& args, const std::string& name);
/// `expr` with its {name} placeholders filled by the float literals of the named scalar args.
std::expected<std::string, std::string> with_scalars(std::string expr, const Json& args,
                                                     const std::vector<std::string>& names);
/// The values of the tensor args named (Lowering::operand: integer and bool inputs too), in order, or the first error.
std::expected<std::vector<int>, std::string> operands(Lowering& lowering, const Json& args,
                                                      const std::vector<std::string>& names);
/// An int list argument; a single int is repeated `length` times (int[2] stride = 2 -> [2, 2]).
std::expected<std::vector<int64_t>, std::string> int_list(const Json& args, const std::string& name, size_t length = 1);
/// `dim` wrapped into [0, rank), or an error.
std::expected<int, std::string> wrap_dim(int64_t dim, size_t rank);
int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end);
/// A permute view of value `src`: output dim d is its dim perm[d], read through index math.
int permute_view(Lowering& lowering, int src, const std::vector<int>& perm);
/// A softmax (`op` softmax or log_softmax) of value `self` over its dim `dim` (wrapped), as a step; returns its output.
int softmax_step(Lowering& lowering, int self, int dim, const std::string& op);
/// The reduction `op` (a reduce step's op; `p` the norm's order or var's correction) of value `self` over `dims`
/// (empty: all dims), as a step; returns its output.
std::expected<int, std::string> reduce_val(Lowering& lowering, int self, const std::vector<int64_t>& dims, bool keepdim,
                                           const std::string& op, double p = 2);
/// The scan `op` (cumsum, cumprod, logcumsumexp) of value `self` along `dim`, as a step; returns its output.
std::expected<int, std::string> scan_val(Lowering& lowering, int self, int64_t dim, const std::string& op);
/// Fails unless a ScalarType? argument is null or float32 (the writer computes in float32 only).
std::expected<void, std::string> float32_only(const Json& args, const std::string& name);

void register_pointwise_ops(std::map<std::string, OpEntry>& table);
void register_view_ops(std::map<std::string, OpEntry>& table);
void register_reduction_ops(std::map<std::string, OpEntry>& table);
void register_norm_ops(std::map<std::string, OpEntry>& table);
void register_matmul_ops(std::map<std::string, OpEntry>& table);
void register_window_ops(std::map<std::string, OpEntry>& table);
void register_gather_ops(std::map<std::string, OpEntry>& table);
void register_loss_ops(std::map<std::string, OpEntry>& table);
void register_compare_ops(std::map<std::string, OpEntry>& table);

}  // namespace ca::builtin
