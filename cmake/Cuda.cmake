# The project's own CUDA code (common/ir/tensor_init_cuda.cu, the device-side
# tensor generator) is built where the CUDA toolkit is found, which also
# defines CA_WITH_CUDA (common/CMakeLists.txt); no GPU is needed to build it.
# Included before Torch.cmake: Torch's config replaces CMAKE_CUDA_ARCHITECTURES
# with OFF, so the project keeps its own list, CA_CUDA_ARCHITECTURES (default
# "80;90", or a -DCMAKE_CUDA_ARCHITECTURES given on the first configure); sm_90
# (the H200) is always added.
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  return()
endif()
if(DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(ca_cuda_architectures_default "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(ca_cuda_architectures_default "80;90")
endif()
set(CA_CUDA_ARCHITECTURES "${ca_cuda_architectures_default}" CACHE STRING
    "GPU architectures of the project's CUDA kernels, as CMAKE_CUDA_ARCHITECTURES takes them (90 is always added)")
# The shared runtime, as CUDA::cudart and LibTorch use: CMake's default would add
# cudart_static to every executable linking CUDA objects, a second runtime in
# the same process.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
