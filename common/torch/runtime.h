// What the stages ask of LibTorch's runtime, without including LibTorch: whether it sees a GPU, how many threads
// its CPU operators use, and giving its cached device memory back.
#pragma once

namespace ca {

/// True when LibTorch sees a CUDA device.
bool torch_has_cuda();

/// The threads of LibTorch's CPU operators (intra-op) in this process. Not while another thread runs operators.
void set_torch_threads(int threads);

/// Hands the CUDA caching allocator's unused blocks back to the device, so that other processes sharing the GPU can
/// have them; nothing in a build without CUDA.
void release_cached_device_memory();

}  // namespace ca
