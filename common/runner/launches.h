// Counting the candidate's own kernel launches (docs/EXPLOITS.md, A2: a kernel that is
// compiled but never launched, while the output comes from somewhere else).
//
// The runner executable defines the CUDA runtime's launch entry points
// (launches.cpp) and exports them (tools/ca-runner/exported.list), so the
// candidate library, which links the shared cudart, binds to them first.
// Each one notes a launch when its caller's return address lies in the
// candidate's code, then forwards to cudart. Launches made by cuBLAS, cuDNN or
// the runner itself do not count. A candidate whose kernels run only inside a
// CUDA graph counts a graph launch, once one of its kernels has been captured.
#pragma once

#include <cstdint>

namespace ca {

/// The candidate's code is the object file that holds `symbol` (ca_forward).
void watch_launches_from(const void* symbol);

/// Sets the count to zero, before a call.
void reset_launches();

/// Launches of the candidate's own kernels since reset_launches() that cudart accepted.
int64_t own_launches();

}  // namespace ca
