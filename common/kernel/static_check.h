// Checks on a candidate before and after it is built: file paths, includes,
// the libraries it links and the symbols it imports (docs/EXPLOITS.md, docs/EXPLOITS.md, A1).
#pragma once

#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/builder.h"

namespace ca {

/// Symbols the shared library `so` imports (undefined in its dynamic symbol
/// table, weak ones included), without version suffixes. Returns an error
/// message when the file cannot be read or is not a 64-bit ELF object.
std::expected<std::vector<std::string>, std::string> undefined_symbols(const std::string& so);
/// Symbols `so` exports: defined, global or weak, not hidden. Errors as above.
std::expected<std::vector<std::string>, std::string> defined_symbols(const std::string& so);
/// The DT_NEEDED entries of `so`, e.g. "libc.so.6". Errors as above.
std::expected<std::vector<std::string>, std::string> needed_libraries(const std::string& so);

/// Why a candidate may not import `symbol`, or "" when it may.
std::string forbidden_symbol_reason(std::string_view symbol);
/// Why a candidate built with `options` may not link `library` (a DT_NEEDED
/// name such as "libdl.so.2"), or "" when it may.
std::string forbidden_library_reason(std::string_view library, const BuildOptions& options);

/// Checks the built library: it exports ca_forward, links only allowed
/// libraries and imports no forbidden symbol. Returns "" when fine, else the
/// findings, one a line, in words an agent can act on.
std::string check_library(const std::string& so, const BuildOptions& options);

/// Checks candidate file paths (relative, no "..") and includes (no PyTorch,
/// ATen, c10, pybind11 or Python headers, nothing outside the candidate).
/// Returns "" when fine, else the first finding as "path:line: what".
std::string check_sources(const std::map<std::string, std::string>& files);

}  // namespace ca
