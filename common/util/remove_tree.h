// Deleting a directory tree without std::filesystem: LibTorch's libtorch.so exports its own, older
// std::filesystem, and where it comes first in a process's symbol lookup its remove_all crashes (seen on the GPU
// machine). Code that runs in tools linking LibTorch removes trees with this.
#pragma once

#include <string>

namespace ca {

/// Removes `path` and everything under it, never following symbolic links. Returns false if something could not be
/// removed; a path that does not exist is not an error.
bool remove_tree(const std::string& path);

}  // namespace ca
