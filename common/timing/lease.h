// One timing job per device at a time (DESIGN §7): an exclusive flock on a lock file per device, held while a
// profile times and released when the lease goes out of scope or the process dies. Builds and other CPU work run
// outside it, in parallel.
#pragma once

#include <expected>
#include <string>

namespace ca {

class DeviceLease {
 public:
  /// Blocks until `device` ("cuda0", "cpu") is free. Lock files live in `dir` (default $CA_LOCK_DIR, else /tmp) as
  /// cuda-agent-<device>.lock.
  static std::expected<DeviceLease, std::string> acquire(const std::string& device, std::string dir = "");
  DeviceLease(DeviceLease&& other) noexcept : m_fd(other.m_fd), m_waited(other.m_waited) { other.m_fd = -1; }
  DeviceLease& operator=(DeviceLease&&) = delete;
  DeviceLease(const DeviceLease&) = delete;
  ~DeviceLease();
  /// Whether acquiring had to wait for another job.
  bool waited() const { return m_waited; }

 private:
  explicit DeviceLease(int fd, bool waited) : m_fd(fd), m_waited(waited) {}
  int m_fd = -1;
  bool m_waited = false;
};

}  // namespace ca
