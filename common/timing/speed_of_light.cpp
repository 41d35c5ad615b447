#include "timing/speed_of_light.h"

#include <fstream>

#ifdef CA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ca {

std::expected<double, std::string> peak_bandwidth(Backend backend, int device_index) {
  if (backend == Backend::cpu) return 1e12;
#ifdef CA_WITH_CUDA
  int clock_khz = 0, bus_bits = 0;
  cudaError_t error = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device_index);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_index);
  if (error != cudaSuccess || clock_khz <= 0 || bus_bits <= 0) {
    cudaGetLastError();
    return std::unexpected("CUDA device " + std::to_string(device_index) +
                           ": its memory clock and bus width are unknown");
  }
  return 2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0;
#else
  (void)device_index;
  return std::unexpected("cuda is unavailable: built without the CUDA toolkit");
#endif
}

std::string device_description(Backend backend, int device_index) {
  if (backend == Backend::cuda) {
    std::string name = "cuda:" + std::to_string(device_index);
#ifdef CA_WITH_CUDA
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, device_index) == cudaSuccess) return name + " " + properties.name;
    cudaGetLastError();
#endif
    return name;
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.starts_with("model name") && line.find(':') != std::string::npos)
      return "cpu " + line.substr(line.find(':') + 2);
  }
  return "cpu";
}

}  // namespace ca
