#include "crawl/module_records.h"

namespace ca {

Json module_record(const PyModule& module, const std::string& origin) {
  return {{"kind", "module"},
          {"name", module.name},
          {"file", module.file},
          {"line", module.line},
          {"bases", module.bases},
          {"init_signature", module.init_signature},
          {"forward_source", module.forward_source},
          {"origin", origin}};
}

}  // namespace ca
