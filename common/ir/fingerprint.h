// Canonical fingerprints of task programs, for dedup and contamination checks
// (docs/IR.md): equal for programs that differ only in names or key order.
#pragma once

#include <string>

#include "ir/program.h"

namespace ca {

/// The canonical fingerprint of a program: "sha256:" + hex of a canonical
/// serialisation in which value names are replaced by their position (inputs
/// i0.., params p0.., node outputs n<node>_<k>), kwargs keys are sorted, the op
/// is written with its overload ("aten::linear" for the default overload), and
/// dtypes, shapes, init distributions and literal arguments are kept. Two
/// programs that differ only in names (or in JSON key order) have the same
/// fingerprint; any change of op, literal, shape, dtype, init, wiring or output
/// order changes it. Literals keep their number kind (1 and 1.0 differ, as LibTorch
/// treats int and float scalars differently).
std::string fingerprint(const Program& program);

/// The serialisation that fingerprint() hashes, one line per tensor, node and
/// the outputs; exposed so a differing pair can be diffed. Its format is
/// versioned by its first line and may change only with that version.
std::string canonical_text(const Program& program);

}  // namespace ca
