// ca-verify's judge for the record loop of verify/candidates.h.
#pragma once

#include "verify/candidates.h"
#include "verify/verify.h"

namespace ca {

/// The Judge of ca-verify: verify_candidate with `options` on the record's backend. Sets this process's TF32 mode to
/// none (torch/precision.h): the references candidates are held to are fp32.
Judge verify_judge(const VerifyOptions& options);

}  // namespace ca
