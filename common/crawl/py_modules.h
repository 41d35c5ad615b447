// Finds the torch.nn.Module subclasses of a Python source tree by scanning its text, without running Python.
#pragma once

#include <expected>
#include <string>
#include <vector>

namespace ca {

/// One class of the tree that derives, directly or transitively, from a `Module`.
struct PyModule {
  std::string name;                // class name, e.g. "BatchNorm2d"
  std::string file;                // path relative to the scanned root, '/'-separated
  int line = 0;                    // 1-based line of the `class` statement
  std::vector<std::string> bases;  // as written, keyword arguments dropped, subscripts stripped
  /// Parameter list of `__init__` joined to one line, whitespace-normalised and
  /// without a trailing comma, e.g. "(self, eps: float = 1e-5)". Inherited from
  /// the nearest base in the tree that defines one; "" if none does.
  std::string init_signature;
  /// Source of `def forward` (decorators excluded) dedented to column 0, each
  /// line ending in '\n'. Inherited like init_signature; "" if none.
  std::string forward_source;
  /// Source of `def __init__`, dedented like forward_source and inherited like
  /// init_signature: what a composer reads to learn which config fields and
  /// submodules the class needs.
  std::string init_source;
};

/// Scans every *.py file under `root` (recursively, in path order) and returns
/// the classes deriving, directly or through classes of the tree, from a class
/// written `Module` or as any dotted name ending in `.Module`; ordered by file,
/// then line. Files that cannot be read are skipped. Returns "<root>: <what>"
/// when `root` is missing or is not a directory.
std::expected<std::vector<PyModule>, std::string> scan_py_modules(const std::string& root);

}  // namespace ca
