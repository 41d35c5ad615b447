#include "timing/clock.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef CA_WITH_CUDA
#include <cuda_runtime.h>

#include "timing/hold_cuda.h"
#endif

namespace ca {
namespace {

using Steady = std::chrono::steady_clock;

double micros(Steady::duration duration) {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count()) / 1000.0;
}

// One core's view of its last-level cache. sysconf(_SC_LEVEL3_CACHE_SIZE) may sum every slice of the machine
// (384 MiB on a 2-core EPYC VM), which would make each flush cost a hundred milliseconds.
size_t last_level_cache_bytes() {
  for (const char* index : {"index3", "index2"}) {
    std::ifstream file(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    size_t size = 0;
    char unit = 0;
    if (file >> size) {
      file >> unit;
      return unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : size;
    }
  }
  return size_t(32) << 20;
}

// Writes `bytes` of `data` with ordinary stores, one a cache line, each line allocated in the cache and so evicting
// an older one. Not memset: glibc's memset turns to non-temporal stores above a size near the cache's, which bypass
// the cache and evict nothing (a 64 MiB memset left a 1 MiB probe as fast to read as before it; bench/RESULTS.md).
// Volatile, so the compiler cannot turn the loop back into a memset.
void sweep(uint8_t* data, size_t bytes, uint8_t value) {
  volatile uint8_t* line = data;
  for (size_t i = 0; i < bytes; i += 64) line[i] = value;
}

// What it takes to evict a probe (see choose_flush_bytes), measured.
size_t measure_flush_bytes() {
  const size_t cap = std::min(2 * last_level_cache_bytes(), k_max_cpu_flush_bytes);
  const size_t probe_bytes = std::min(k_flush_probe_bytes, cap / 2);
  std::vector<uint8_t> probe(probe_bytes, 1), flush_buffer(cap, 0);
  uint8_t round = 0;
  volatile uint64_t sink = 0;
  // Touch the probe (as a call's inputs are touched before the flush), write `flush` bytes, time a read of it.
  auto probe_us = [&](size_t flush) {
    double best = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {  // the least of three: an interrupt only ever adds time
      uint64_t sum = 0;
      for (size_t i = 0; i < probe.size(); i += 64) sum += probe[i];
      sweep(flush_buffer.data(), flush, ++round);
      auto start = Steady::now();
      for (size_t i = 0; i < probe.size(); i += 64) sum += probe[i];
      double us = micros(Steady::now() - start);
      sink = sink + sum;
      best = repeat == 0 ? us : std::min(best, us);
    }
    return best;
  };
  // The largest of three choices: on a shared machine a neighbour's burst can make one ladder look evicted early.
  size_t chosen = 0;
  for (int ladder = 0; ladder < 3; ++ladder) {
    chosen = std::max(chosen, choose_flush_bytes(probe_us, probe_bytes, cap));
  }
  return chosen;
}

// Bytes one flush writes, decided once a process (the runner and the tools each make clocks, and the answer is the
// machine's): CA_CPU_FLUSH_BYTES where it is set, else measured.
size_t cpu_flush_bytes() {
  static const size_t bytes = [] {
    const char* given = std::getenv("CA_CPU_FLUSH_BYTES");
    if (given == nullptr) return measure_flush_bytes();
    auto parsed = parse_flush_bytes(given);
    if (!parsed) throw std::runtime_error("CA_CPU_FLUSH_BYTES: " + parsed.error());
    return *parsed;
  }();
  return bytes;
}

// The flush buffer is sized and allocated at the first flush, not at construction: a clock that only starts and
// stops (the runner's, whose served calls the trusted side flushes) never pays for the measurement.
class CpuClock final : public CallClock {
 public:
  void prepare() override {
    if (!m_sized) {
      m_flush.resize(cpu_flush_bytes());
      m_sized = true;
    }
    // A new value each time, so no store writes what the line already holds.
    sweep(m_flush.data(), m_flush.size(), ++m_round);
  }
  void start() override { m_start = Steady::now(); }
  ClockSample stop() override {
    double us = micros(Steady::now() - m_start);
    return {us, us};
  }
  size_t flush_bytes() const override { return cpu_flush_bytes(); }

 private:
  std::vector<uint8_t> m_flush;
  bool m_sized = false;  // m_flush has its size (which may be 0)
  uint8_t m_round = 0;
  Steady::time_point m_start;
};

}  // namespace

size_t choose_flush_bytes(const std::function<double(size_t)>& probe_us, size_t probe_bytes, size_t cap) {
  const double hot = probe_us(0), cold = probe_us(cap);
  // No clear difference between a probe in the cache and one flushed out: nothing to size by, so the cap.
  if (!(cold > 1.5 * hot)) return cap;
  for (size_t flush = 2 * probe_bytes; flush < cap; flush *= 2) {
    // Evicted: the read costs most of what it costs after the full flush. Twice that, as a margin for a cache
    // whose replacement is not strict LRU.
    if (probe_us(flush) >= hot + 0.75 * (cold - hot)) return std::min(cap, 2 * flush);
  }
  return cap;
}

std::expected<size_t, std::string> parse_flush_bytes(const std::string& text) {
  // The size syntax of every byte-count flag (ca-sandbox exec --memory): CLI11's, K, M, G as powers of 1024.
  std::string value = text;
  std::string error;
  try {
    error = CLI::AsSizeValue(false)(value);
  } catch (const CLI::ValidationError& e) {
    error = e.what();
  }
  // CLI11 reads a bare suffix as one unit and lets a count past 64 bits through: digits first, and a checked count.
  const bool numeral = !text.empty() && text[0] >= '0' && text[0] <= '9' && !value.empty() && value.size() < 20 &&
                       value.find_first_not_of("0123456789") == std::string::npos;
  if (!error.empty() || !numeral)
    return std::unexpected("'" + text + "' is not a byte count (digits, then K, M or G for 2^10, 2^20 or 2^30)");
  const unsigned long long bytes = std::stoull(value);
  if (bytes > k_max_cpu_flush_bytes)
    return std::unexpected("'" + text + "' is more than the most a flush writes, " +
                           std::to_string(k_max_cpu_flush_bytes >> 20) + "M");
  return size_t(bytes);
}

std::unique_ptr<CallClock> make_cpu_clock() {
  return std::make_unique<CpuClock>();
}

double counted_us(const ClockSample& sample) {
  return sample.host_us > sample.device_us * 1.2 + 20.0 ? sample.host_us : sample.device_us;
}

#ifdef CA_WITH_CUDA

namespace {

class CudaClock final : public CallClock {
 public:
  CudaClock(int device, cudaStream_t stream, void* flush, size_t flush_bytes, cudaEvent_t start, cudaEvent_t stop,
            cudaEvent_t gate, cudaEvent_t join, int sms, int threads_per_sm)
      : m_device(device),
        m_stream(stream),
        m_flush(flush),
        m_flush_bytes(flush_bytes),
        m_start(start),
        m_stop(stop),
        m_gate(gate),
        m_join(join),
        m_sms(sms),
        m_threads_per_sm(threads_per_sm) {}
  CudaClock(const CudaClock&) = delete;
  CudaClock& operator=(const CudaClock&) = delete;
  ~CudaClock() override {
    cudaFree(m_flush);
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_stop);
    cudaEventDestroy(m_gate);
    cudaEventDestroy(m_join);
  }

  void prepare() override {
    cudaSetDevice(m_device);
    // docs/EXPLOITS.md, C8: persisting lines would survive the flush below.
    cudaCtxResetPersistingL2Cache();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    cudaMemsetAsync(m_flush, int(++m_round), m_flush_bytes, m_stream);
    cudaDeviceSynchronize();
    // Refusals above (no persisting L2 on this device) are not the timed call's errors.
    cudaGetLastError();
  }

  void start() override {
    m_host_start = Steady::now();
    hold_device(m_stream, uint32_t(k_hold_us * 1000), m_sms, m_threads_per_sm);
    cudaEventRecord(m_start, m_stream);
    // The per-thread default stream is a handle every candidate holds without making a stream (docs/EXPLOITS.md, C1):
    // work the call queues there starts after the start event and ends before the stop event.
    cudaEventRecord(m_gate, m_stream);
    cudaStreamWaitEvent(cudaStreamPerThread, m_gate, 0);
  }

  ClockSample stop() override {
    cudaEventRecord(m_join, cudaStreamPerThread);
    cudaStreamWaitEvent(m_stream, m_join, 0);
    cudaEventRecord(m_stop, m_stream);
    // Device-wide: work the call queued on other streams ends inside the host clock's region (docs/EXPLOITS.md, C1).
    cudaDeviceSynchronize();
    double host = std::max(0.0, micros(Steady::now() - m_host_start) - k_hold_us);
    float ms = 0;
    // After a failed call the events may not have completed; the call has failed anyway, and -1 says "no time".
    if (cudaEventElapsedTime(&ms, m_start, m_stop) != cudaSuccess) return {-1, host};
    return {double(ms) * 1000.0, host};
  }

  size_t flush_bytes() const override { return m_flush_bytes; }

 private:
  int m_device;
  cudaStream_t m_stream;
  void* m_flush;
  size_t m_flush_bytes;
  cudaEvent_t m_start, m_stop;
  cudaEvent_t m_gate, m_join;  // untimed: they order cudaStreamPerThread inside the timed region
  int m_sms, m_threads_per_sm;
  uint8_t m_round = 0;
  Steady::time_point m_host_start;
};

std::string describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

}  // namespace

std::expected<std::unique_ptr<CallClock>, std::string> make_cuda_clock(int device_index, void* stream) {
  int l2 = 0, sms = 0, threads_per_sm = 0;
  cudaError_t error = cudaSetDevice(device_index);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_index);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_index);
  if (error == cudaSuccess) {
    error = cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device_index);
  }
  void* flush = nullptr;
  size_t flush_bytes = 2 * size_t(std::max(l2, 1 << 20));
  if (error == cudaSuccess) error = cudaMalloc(&flush, flush_bytes);
  cudaEvent_t start = nullptr, stop = nullptr, gate = nullptr, join = nullptr;
  if (error == cudaSuccess) error = cudaEventCreate(&start);
  if (error == cudaSuccess) error = cudaEventCreate(&stop);
  if (error == cudaSuccess) error = cudaEventCreateWithFlags(&gate, cudaEventDisableTiming);
  if (error == cudaSuccess) error = cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  if (error != cudaSuccess) {
    if (flush != nullptr) cudaFree(flush);
    for (cudaEvent_t event : {start, stop, gate, join}) {
      if (event != nullptr) cudaEventDestroy(event);
    }
    return std::unexpected("CUDA device " + std::to_string(device_index) +
                           ": cannot set up the timer: " + describe(error));
  }
  return std::make_unique<CudaClock>(device_index, static_cast<cudaStream_t>(stream), flush, flush_bytes, start, stop,
                                     gate, join, sms, threads_per_sm);
}

#else

std::expected<std::unique_ptr<CallClock>, std::string> make_cuda_clock(int, void*) {
  return std::unexpected("cuda is unavailable: built without the CUDA toolkit");
}

#endif

}  // namespace ca
