# Sanitizer builds (`make sanitize`, `make sanitize-thread`; .ci/sanitize): -DCA_SANITIZE=address,undefined or
# -DCA_SANITIZE=thread instruments every C++ target of the project, in a build directory of its own (build-asan,
# build-tsan). LibTorch, the CUDA libraries and the system's GoogleTest are not instrumented; what that costs is
# said, with the suppressions, in tests/sanitize/. Two things are built without sanitizer even here (common/
# CMakeLists.txt, CA_SANITIZE_EXEMPT): ca-runner, which runs under RLIMIT_AS and a seccomp filter that ASan's shadow
# reservation and LeakSanitizer's ptrace-based stop-the-world cannot run under, and the shared libraries that
# Python processes load (a sanitizer runtime must be the first library of its process).
set(CA_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined or thread (empty: none)")
if(NOT CA_SANITIZE)
  return()
endif()
if(NOT CA_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
  message(FATAL_ERROR "CA_SANITIZE=${CA_SANITIZE}: expected address,undefined or thread")
endif()
# Frame pointers for the reports' stacks; undefined behaviour stops the process (a test cannot pass over it).
set(ca_sanitize_flags -fsanitize=${CA_SANITIZE} -fno-omit-frame-pointer)
if(CA_SANITIZE MATCHES "undefined")
  list(APPEND ca_sanitize_flags -fno-sanitize-recover=undefined)
endif()
# C++ only: nvcc's host objects (the .cu files) stay plain, which ASan and TSan tolerate.
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${ca_sanitize_flags}>")
add_link_options(-fsanitize=${CA_SANITIZE})
# What a target that must stay plain adds after the flags above (the last -f[no-]sanitize wins).
set(CA_SANITIZE_EXEMPT "$<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=all>")
