// `module` records (DESIGN §3) for the nn.Module classes that scan_py_modules finds.
#pragma once

#include <string>

#include "crawl/py_modules.h"
#include "util/jsonl.h"

namespace ca {

/// {kind:"module", name, file, line, bases, init_signature, forward_source, origin}.
Json module_record(const PyModule& module, const std::string& origin);

}  // namespace ca
