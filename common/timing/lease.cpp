#include "timing/lease.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ca {

std::expected<DeviceLease, std::string> DeviceLease::acquire(const std::string& device, std::string dir) {
  if (dir.empty()) {
    const char* env = std::getenv("CA_LOCK_DIR");
    dir = env != nullptr && *env != '\0' ? env : "/tmp";
  }
  std::string path = dir + "/cuda-agent-" + device + ".lock";
  // 0666 and no O_EXCL: every user's jobs share the one lock of a device.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return std::unexpected(path + ": cannot open the device lock: " + std::strerror(errno));
  bool waited = false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    waited = true;
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        int saved = errno;
        close(fd);
        return std::unexpected(path + ": cannot lock: " + std::strerror(saved));
      }
    }
  }
  return DeviceLease(fd, waited);
}

DeviceLease::~DeviceLease() {
  if (m_fd >= 0) close(m_fd);
}

}  // namespace ca
