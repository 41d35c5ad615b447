// The device side of the tensor digest (tensor_digest.h): the same sums over bytes in GPU memory, so a GB-sized
// output is digested where it lies. Only in builds with the CUDA toolkit (CA_WITH_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ir/tensor_digest.h"

namespace ca {

/// Sets `sums` to the digest sums of `nbytes` bytes of device memory at `data` (current device, any alignment),
/// which finish_digest turns into what digest_bytes gives for the same bytes on the host. Runs on `cuda_stream`
/// after what is queued there and waits for it; returns the first CUDA error, leaving `sums` as it was.
cudaError_t digest_on_device(const void* data, uint64_t nbytes, cudaStream_t cuda_stream, DigestSums& sums);

}  // namespace ca
