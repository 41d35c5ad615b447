// Where the running tool lives: the project's executables find their neighbours (ca-runner, ca-verify, ...), the
// bridge and the virtualenv relative to it.
#pragma once

#include <string>

namespace ca {

/// The directory of /proc/self/exe, or "." where it cannot be read. Through readlink, not std::filesystem, so that it
/// is safe in tools linking LibTorch (remove_tree.h says why).
std::string executable_dir();

}  // namespace ca
