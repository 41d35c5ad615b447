# One warnings target that every project target links (STYLE 16).
add_library(ca_warnings INTERFACE)
target_compile_options(ca_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter)
option(CA_WERROR "Treat warnings as errors (developer builds)" OFF)
if(CA_WERROR)
  target_compile_options(ca_warnings INTERFACE -Werror)
endif()
