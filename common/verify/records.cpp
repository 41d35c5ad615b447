#include "verify/records.h"

namespace ca {

Judge verify_judge(const VerifyOptions& options) {
  return [options](const Json& task, const Json& candidate, Backend backend) {
    VerifyOptions per_record = options;
    per_record.build.backend = backend;
    return verify_candidate(task, candidate, per_record);
  };
}

}  // namespace ca
