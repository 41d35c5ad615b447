// The one timing method (docs/TIMING.md) for the candidate in the runner and for both baselines in the trusted process:
// before each timed call the cache is flushed and the device is idle; the call is timed by two clocks, the device's
// (CUDA events on the call's stream) and the host's (steady_clock up to a device-wide sync), and the slower wins
// wherever they disagree (docs/EXPLOITS.md, C1, C7, C8, C9). On cuda the device is held busy for k_hold_us before the
// start event (timing/hold_cuda.h), so the device clock does not count the host's launch of the call: from an idle
// device it did, and that launch moved the gemm's median by 2-10% from one process to the next (bench/RESULTS.md,
// session 9). No LibTorch here: the runner uses it too.
#pragma once

#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <string>

namespace ca {

/// How long the cuda clock holds the device before each timed call's start event: longer than a call takes to
/// launch (a cuBLAS gemm from C++, 10-20 us), so its launch is not counted; a launch that takes longer counts the
/// rest. The host clock does not count it either.
inline constexpr double k_hold_us = 50;

/// The two clocks' readings of one timed call, in microseconds. On the cpu backend both are the host clock; on
/// cuda the host clock is less the hold.
struct ClockSample {
  double device_us = 0;
  double host_us = 0;
};

class CallClock {
 public:
  virtual ~CallClock() = default;
  /// Waits for the device to be idle, drops persisting L2 lines and limits (cuda), and flushes the cache by writing
  /// a buffer twice its size (L2 on cuda, the last-level cache on cpu).
  virtual void prepare() = 0;
  /// Starts both clocks (cuda: behind the hold).
  virtual void start() = 0;
  /// Stops both clocks after a device-wide synchronisation, so work on any stream is inside the region.
  virtual ClockSample stop() = 0;
  /// Bytes written by each prepare()'s flush.
  virtual size_t flush_bytes() const = 0;
};

/// Host clock and a flush sized by what it takes to evict what a call touched before it: measured once a process, at
/// the first flush (choose_flush_bytes over a probe of k_flush_probe_bytes), at most twice cpu0's last-level cache as
/// sysfs reports it (else 32 MiB assumed) and k_max_cpu_flush_bytes. sysfs may report far more than one core can fill
/// (480 MiB on one VM, about 1 GB written before every timed call). The environment's CA_CPU_FLUSH_BYTES, where set,
/// is the size instead (parse_flush_bytes; a bad value throws at the first flush).
std::unique_ptr<CallClock> make_cpu_clock();

/// CA_CPU_FLUSH_BYTES's value: digits, then nothing (bytes) or K, M or G (2^10, 2^20, 2^30 bytes); at most
/// k_max_cpu_flush_bytes; 0 flushes nothing. Or why it is not one.
std::expected<size_t, std::string> parse_flush_bytes(const std::string& text);

inline constexpr size_t k_flush_probe_bytes = size_t(1) << 20;
inline constexpr size_t k_max_cpu_flush_bytes = size_t(1) << 30;

/// The flush of the cpu clock: `probe_us(f)` is the time to read back a probe of `probe_bytes` touched before `f`
/// bytes were written. Returns twice the smallest f of 2, 4, 8... x probe_bytes after which the read costs at least
/// three quarters of the way from the unflushed read (f = 0) to the read after `cap`; `cap` when no f below it
/// does, or when the cap's flush does not slow the read by half (nothing to size by).
size_t choose_flush_bytes(const std::function<double(size_t)>& probe_us, size_t probe_bytes, size_t cap);
/// CUDA events on `stream` (a cudaStream_t; NULL is the legacy default stream, where LibTorch queues its work) of
/// device `device_index`, and a flush of twice its L2. Fails when this build has no CUDA or the device cannot be used.
std::expected<std::unique_ptr<CallClock>, std::string> make_cuda_clock(int device_index, void* stream);

/// The time a timed call counts for: the device clock, unless the host clock is slower by more than a launch's
/// allowance (20 us + 20%): then work escaped the events (a side stream, docs/EXPLOITS.md, C1) and the host clock
/// stands.
double counted_us(const ClockSample& sample);

}  // namespace ca
