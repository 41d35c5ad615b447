# LibTorch comes from the pinned torch wheel in the project virtualenv; the
# Makefile passes its cmake prefix (torch.utils.cmake_prefix_path). The wheel is
# a CUDA build, so its config wants nvcc; naming an architecture skips probing
# for a GPU that CI does not have, and nvcc gets a dialect it supports.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
endif()
set(CMAKE_CUDA_STANDARD 20)
find_package(Torch REQUIRED)
