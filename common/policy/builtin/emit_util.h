// Text helpers of the kernel emitter: shapes, strides and the index expressions of broadcasting and reductions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ca::builtin {

/// "[2, 3]".
std::string shape_text(const std::vector<int64_t>& shape);
/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
/// Statements that split linear index `index` into `prefix`0, `prefix`1, ... over `shape`.
std::string coordinates(const std::vector<int64_t>& shape, const std::string& index, const std::string& prefix);
/// The linear index into an operand of `arg` shape for output coordinates c0, c1, ... of `out` shape ("i" when the
/// order is the output's). `align`: the output dim of the operand's dim 0, -1 for right alignment.
std::string broadcast_index(const std::vector<int64_t>& arg, const std::vector<int64_t>& out, int align);
/// Index of element `r` of unit `u` of a tensor seen as [outer, extent, inner], a unit being one (outer, inner) pair.
std::string strided_index(int64_t extent, int64_t inner, const std::string& u, const std::string& r);
std::string replace_all(std::string text, const std::string& from, const std::string& to);
int64_t round_up(int64_t value, int64_t multiple);
int64_t product_of(const std::vector<int64_t>& shape);

/// The definitions (CA_FN functions) of the special functions that pointwise expressions call by name (ca_i0,
/// ca_i0e, ca_i1, ca_i1e, ca_digamma), for those that `used` mentions.
std::string special_functions(const std::string& used);

}  // namespace ca::builtin
