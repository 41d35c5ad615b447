// A C ABI over the project's seeded tensors and tensor digest, for processes that are not ours:
// bridge/check_import.py loads it with ctypes (libca_tensors.so, target ca_tensors) to draw a task's inputs
// exactly as ca-crawl does (make_tensor_bytes on the host, draw_on_device on a GPU) into memory torch allocated,
// and to digest tensors as ca-crawl kernelbench --digests does. Errors are returned as values: 0 is success, 1 a
// failure whose message (NUL-terminated, cut to err_size - 1 bytes) is written to `err` when err_size > 0.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

/// Draws the tensor `spec_json` describes (one element of a task's program.inputs, as JSON text; defaults as for
/// an input) for (seed, stream) into `out`, which holds `nbytes` bytes (exactly numel * dtype size, aligned for the
/// dtype): host memory when `device` < 0, else memory of CUDA device `device`, drawn by a kernel queued on
/// `cuda_stream` (a cudaStream_t; null is the legacy default stream) without waiting. A file init is read on the
/// host (and copied, waiting, to a device). A device in a build without CUDA is an error.
int ca_draw_tensor(const char* spec_json, uint64_t seed, uint64_t stream, void* out, uint64_t nbytes, int device,
                   void* cuda_stream, char* err, size_t err_size);

/// Writes the digest (ir/tensor_digest.h) of `nbytes` bytes at `data` to `hex`: 32 hex digits and a NUL, 33 bytes.
/// Host memory when `device` < 0; else memory of CUDA device `device`, read by a kernel queued on `cuda_stream`
/// after what is queued there, and waited for.
int ca_tensor_digest(const void* data, uint64_t nbytes, int device, void* cuda_stream, char* hex, char* err,
                     size_t err_size);

}  // extern "C"
