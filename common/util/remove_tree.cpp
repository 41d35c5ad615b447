#include "util/remove_tree.h"

#include <ftw.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace ca {
namespace {

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  int rc = type == FTW_DP ? rmdir(path) : unlink(path);
  return rc == 0 || errno == ENOENT ? 0 : -1;
}

}  // namespace

bool remove_tree(const std::string& path) {
  // FTW_DEPTH: children before their directory; FTW_PHYS: a symlink is removed, not followed.
  if (nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0) return true;
  return errno == ENOENT;
}

}  // namespace ca
