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

/// Releases the cached device memory (on cuda) when it goes out of scope. Declared after a device lease, it gives
/// the memory back before the lease goes, so the next job on the device (perhaps this one's own re-run alone) can have
/// all of it: a process that keeps its cache while it waits for the device starves the job that holds it.
class DeviceMemoryReturn {
 public:
  explicit DeviceMemoryReturn(bool on_cuda) : m_on_cuda(on_cuda) {}
  DeviceMemoryReturn(const DeviceMemoryReturn&) = delete;
  DeviceMemoryReturn& operator=(const DeviceMemoryReturn&) = delete;
  ~DeviceMemoryReturn() {
    if (m_on_cuda) release_cached_device_memory();
  }

 private:
  bool m_on_cuda;
};

}  // namespace ca
