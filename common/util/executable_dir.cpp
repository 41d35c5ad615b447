#include "util/executable_dir.h"

#include <unistd.h>

namespace ca {

std::string executable_dir() {
  char buffer[4096];
  ssize_t size = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (size <= 0) return ".";
  std::string path(buffer, size_t(size));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace ca
