// A device's lease (docs/TIMING.md): flock on a lock file per device, released when the lease goes out of scope or the
// process dies. A timing job (ca-profile's rounds) holds it exclusive: nothing else runs on the device while it
// times. Any other use of the device (ca-verify's trials and references) holds it shared: such jobs run together,
// but never while a timing job holds it. A waiting timing job goes first: every acquire passes a turnstile (a second
// lock file) that the timing job keeps closed while it waits, so a stream of shared jobs cannot starve it. Builds and
// other CPU work run outside the lease, in parallel.
#pragma once

#include <expected>
#include <string>

namespace ca {

enum class LeaseMode { exclusive, shared };

class DeviceLease {
 public:
  /// Blocks until `device` ("cuda0", "cpu") can be held in `mode`, or fails once SIGINT/SIGTERM arrived
  /// (util/signals.h). Lock files live in `dir` (default $CA_LOCK_DIR, else /tmp) as cuda-agent-<device>.lock and
  /// cuda-agent-<device>.gate.lock (the turnstile).
  /// Hold one lease at a time per thread: flock belongs to an open file description, so a second acquire while
  /// holding one waits for the first (exclusive after either, or shared behind a waiting exclusive job) forever.
  static std::expected<DeviceLease, std::string> acquire(const std::string& device, std::string dir = "",
                                                         LeaseMode mode = LeaseMode::exclusive);
  DeviceLease(DeviceLease&& other) noexcept : m_fd(other.m_fd), m_waited(other.m_waited) { other.m_fd = -1; }
  DeviceLease& operator=(DeviceLease&&) = delete;
  DeviceLease(const DeviceLease&) = delete;
  ~DeviceLease();
  /// Whether acquiring had to wait for another job (at the turnstile or at the lock).
  bool waited() const { return m_waited; }

 private:
  explicit DeviceLease(int fd, bool waited) : m_fd(fd), m_waited(waited) {}
  int m_fd = -1;
  bool m_waited = false;
};

}  // namespace ca
