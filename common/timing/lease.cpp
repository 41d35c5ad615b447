#include "timing/lease.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util/signals.h"

namespace ca {
namespace {

using Error = std::unexpected<std::string>;

std::expected<int, std::string> open_lock(const std::string& path) {
  // 0666 and no O_EXCL: every user's jobs share the one lock of a device.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return Error(path + ": cannot open the device lock: " + std::strerror(errno));
  return fd;
}

/// flock(fd, op), waiting as long as another job holds it; sets `waited` when the lock was not free at once.
/// Polls rather than blocks: a blocked flock returns (EINTR) only in the thread that took a signal, so an interrupted
/// tool with several jobs in flight would keep waiting for the device.
std::expected<void, std::string> lock(int fd, int op, const std::string& path, bool& waited) {
  for (;;) {
    if (flock(fd, op | LOCK_NB) == 0) return {};
    if (errno != EWOULDBLOCK && errno != EINTR) return Error(path + ": cannot lock: " + std::strerror(errno));
    if (interrupted()) return Error(path + ": interrupted while waiting for the device");
    waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::expected<DeviceLease, std::string> DeviceLease::acquire(const std::string& device, std::string dir,
                                                             LeaseMode mode) {
  if (dir.empty()) {
    const char* env = std::getenv("CA_LOCK_DIR");
    dir = env != nullptr && *env != '\0' ? env : "/tmp";
  }
  const std::string stem = dir + "/cuda-agent-" + device, path = stem + ".lock", gate_path = stem + ".gate.lock";
  auto gate = open_lock(gate_path);
  if (!gate) return Error(gate.error());
  auto fd = open_lock(path);
  if (!fd) {
    close(*gate);
    return Error(fd.error());
  }
  // The turnstile: whoever holds the gate is next at the lock, and an exclusive job keeps holding it until the shared
  // holders ahead of it are gone, so shared jobs arriving meanwhile queue behind it instead of overtaking it.
  bool waited = false;
  auto locked = lock(*gate, LOCK_EX, gate_path, waited);
  if (locked) locked = lock(*fd, mode == LeaseMode::exclusive ? LOCK_EX : LOCK_SH, path, waited);
  // Unlock explicitly: a runner forked by another thread may hold a copy of the descriptor until it execs.
  flock(*gate, LOCK_UN);
  close(*gate);
  if (!locked) {
    close(*fd);
    return Error(locked.error());
  }
  return DeviceLease(*fd, waited);
}

DeviceLease::~DeviceLease() {
  if (m_fd < 0) return;
  flock(m_fd, LOCK_UN);  // as for the gate: a forked copy of the descriptor must not keep the device
  close(m_fd);
}

}  // namespace ca
