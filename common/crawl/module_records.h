// `module` records (docs/RECORDS.md) for the nn.Module classes that scan_py_modules finds.
#pragma once

#include <string>
#include <vector>

#include "crawl/py_modules.h"
#include "util/jsonl.h"

namespace ca {

/// {kind:"module", name, file, line, bases, role, init_signature, init_source, forward_source, config_fields,
/// origin}.
Json module_record(const PyModule& module, const std::string& origin);

/// The block a class is, by its name, as a composer picks them: "attention", "mlp", "norm", "rotary_embedding",
/// "embedding", or "other".
std::string module_role(const std::string& class_name);

/// The fields of a model config that `source` reads (`config.X`, `self.config.X`), sorted, each once.
std::vector<std::string> config_fields(const std::string& source);

}  // namespace ca
