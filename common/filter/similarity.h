// ca-filter's notions of "the same task" (man/man1/ca-filter.1): duplicates within a
// set, and contamination by a reference set such as KernelBench.
//
// - The normalized op sequence of a program: its nodes' op names in node order,
//   without namespace, overload or leading underscores, synonyms mapped to one
//   name (mm/bmm/matmul -> matmul, addmm -> linear, _softmax -> softmax,
//   native_layer_norm -> layer_norm, clamp_min -> clamp, ...), and ops that
//   only change a tensor's view or copy it (view, reshape, permute, transpose,
//   expand, squeeze, unsqueeze, flatten, contiguous, clone, alias, detach, to)
//   dropped.
// - Similarity: the Jaccard index of the two sequences' 3-shingles, taken over
//   the sequence framed by "^" and "$" (so a one-op task has one shingle,
//   "^ relu $", and equal sequences score 1). Shapes are not part of it:
//   the reference set is itself imported at a reduced scale, and the same op
//   chain at another size is the same kernel-writing problem.
// - Near-duplicate key: the normalized op sequence plus the exact shapes and
//   dtypes of inputs and params (what is left to differ: literals, inits).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"

namespace ca {

/// "aten::_softmax.default" -> "softmax"; "" for a view-or-copy op that the sequence drops.
std::string normalize_op(std::string_view qualified);

/// The normalized op names of `program`, in node order.
std::vector<std::string> normalized_ops(const Program& program);

/// The 3-shingles of "^ ops... $", each written "a b c".
std::set<std::string> op_shingles(const std::vector<std::string>& ops);

/// |a ∩ b| / |a ∪ b|; 1 for two empty sets.
double jaccard(const std::set<std::string>& a, const std::set<std::string>& b);

/// Normalized ops, then "|" and the inputs' and params' dtypes and shapes.
std::string near_duplicate_key(const Program& program);

/// The reference tasks a filtered set must not resemble.
class ReferenceSet {
 public:
  struct Match {
    std::string id;
    double similarity = 0;
    std::string ops;  // the reference's normalized ops, space-separated
  };
  void add(std::string id, const Program& program);
  size_t size() const { return m_entries.size(); }
  /// The most similar reference task (the first of equals), or nullopt when the set is empty.
  std::optional<Match> best_match(const Program& program) const;

 private:
  struct Entry {
    std::string id;
    std::string ops;
    std::set<std::string> shingles;
  };
  std::vector<Entry> m_entries;
};

/// Space-separated.
std::string join_ops(const std::vector<std::string>& ops);

}  // namespace ca
