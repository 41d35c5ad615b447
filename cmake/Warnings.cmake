# One warnings target that every project target links (STYLE 16). nvcc takes
# the host compiler's warning flags through -Xcompiler.
add_library(ca_warnings INTERFACE)
target_compile_options(ca_warnings INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter>"
                                             "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>")
option(CA_WERROR "Treat warnings as errors (developer builds)" OFF)
if(CA_WERROR)
  target_compile_options(ca_warnings INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:-Werror>" "$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings;-Xcompiler=-Werror>")
endif()
