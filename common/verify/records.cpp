#include "verify/records.h"

#include "torch/precision.h"

namespace ca {

Judge verify_judge(const VerifyOptions& options) {
  // The references are fp32 whatever LibTorch's defaults (cuDNN's TF32 is on in them): docs/TIMING.md, "Precision".
  // Set once here, before the record loop's threads.
  set_tf32_mode(Tf32Mode::none);
  return [options](const Json& task, const Json& candidate, Backend backend) {
    VerifyOptions per_record = options;
    per_record.build.backend = backend;
    return verify_candidate(task, candidate, per_record);
  };
}

}  // namespace ca
