// Data parallelism over torch.distributed's C++ process groups (c10d): the launcher's environment (torchrun or
// Slurm), a TCPStore rendezvous, gloo on the CPU and NCCL on cuda, parameter broadcast, bucketed gradient
// all-reduce and the rank's share of a global batch. World size 1 is a no-op that needs no store.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ca::train {

/// Where this process stands in a launch: from torchrun's variables or, without them, Slurm's.
struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // the GPU of this process on its node (cuda:LOCAL_RANK)
  std::string master_addr;   // the TCPStore's host; empty at world size 1
  uint16_t master_port = 0;  // the TCPStore's port
  bool agent_store = false;  // torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True): all ranks connect
  std::string source = "none";  // "torchrun", "slurm" or "none"
};

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and TORCHELASTIC_USE_AGENT_STORE) through `get`;
/// without RANK and WORLD_SIZE, SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID stand for them; with neither, world size
/// 1. Errors (a usage error: exit 64) name the variable: not an integer, a rank outside 0..WORLD_SIZE-1, RANK without
/// WORLD_SIZE, MASTER_ADDR or MASTER_PORT missing at world size > 1, a port outside 1..65535.
std::expected<DistEnv, std::string> read_dist_env(
    const std::function<std::optional<std::string>(const std::string&)>& get);
/// read_dist_env over this process's environment.
std::expected<DistEnv, std::string> read_dist_env();

/// The variables that keep NVLink multicast off in NCCL, PyTorch and NVSHMEM (NCCL_NVLS_ENABLE=0,
/// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1): on a shared multi-GPU host a program using it can
/// put every GPU out of service. Give them to any process started with an environment of its own.
const std::vector<std::pair<std::string, std::string>>& nvlink_multicast_off_env();
/// Sets nvlink_multicast_off_env() in this process's environment (overriding other values); called by
/// DataParallel::init before any NCCL communicator exists.
void disable_nvlink_multicast();

struct DistOptions {
  at::Device device = at::kCPU;  // kCPU: gloo; kCUDA: NCCL on cuda:local_rank (the index given here is ignored)
  std::chrono::milliseconds rendezvous_timeout = std::chrono::minutes(5);   // every rank reaching the store
  std::chrono::milliseconds collective_timeout = std::chrono::minutes(30);  // one collective (gloo; NCCL's watchdog)
  std::filesystem::path file_store;    // a FileStore at this path instead of the TCPStore (tests, shared file systems)
  bool group_at_world_size_1 = false;  // build the store and group even alone (to exercise NCCL on one GPU)
  size_t bucket_bytes = 25u << 20;     // gradients are flattened into buckets of about this size (DDP's default)
};

/// A process group of `world_size` ranks, or none (world size 1). Collectives are no-ops without a group. Every
/// rank must call the same collectives in the same order with parameters of the same names, shapes and dtypes.
class DataParallel {
 public:
  /// Joins the group `env` describes: disables NVLink multicast, rank 0 hosts a TCPStore at master_addr:port (or
  /// all connect to torchrun's agent store), every rank waits up to rendezvous_timeout for the others, then gloo
  /// (CPU) or NCCL (cuda; the current device becomes cuda:local_rank). World size 1 (without group_at_world_size_1):
  /// no store, no group. Errors: a store that cannot be reached or a rank missing within the timeout (exit 74), a
  /// backend this build lacks (libgloo-dev's headers, nccl.h) or a device that is not there.
  static std::expected<DataParallel, std::string> init(const DistEnv& env, const DistOptions& options);

  DataParallel();
  ~DataParallel();
  DataParallel(DataParallel&&) noexcept;
  DataParallel& operator=(DataParallel&&) noexcept;

  int rank() const { return m_rank; }
  int world_size() const { return m_world; }
  /// Rank 0: the one that writes checkpoints and logs.
  bool is_main() const { return m_rank == 0; }
  /// Whether a process group exists (false at world size 1).
  bool active() const;
  /// "gloo", "nccl" or "none".
  std::string backend() const;

  /// Copies rank 0's values into every rank's `params` (same names, shapes, dtypes everywhere), bucketed.
  std::expected<void, std::string> broadcast_parameters(const std::map<std::string, at::Tensor>& params) const;

  enum class Reduce { sum, mean };
  /// All-reduces the .grad() of `params` in buckets of about bucket_bytes, each a flattened concatenation of
  /// gradients of one dtype, all launched before the first is waited for. A parameter without a gradient counts
  /// as zeros (it gets one), so that every rank's buckets line up. Reduce::sum when each rank's loss is already
  /// normalized by the global batch (the trainers' token mean over the whole update); Reduce::mean when each
  /// rank's loss is a mean over its own share. Errors: a collective that failed or timed out.
  std::expected<void, std::string> all_reduce_gradients(const std::map<std::string, at::Tensor>& params,
                                                        Reduce reduce) const;

  /// Replaces each of `tensors` by its element-wise sum over ranks, in place, in buckets as the gradients (every
  /// rank passes tensors of the same shapes and dtypes). For values each rank computed on its share of a batch
  /// and that every rank needs in full: a rank fills its share into zeros, the sum is everybody's (x + 0 is exact).
  std::expected<void, std::string> sum_tensors(const std::vector<at::Tensor>& tensors) const;
  /// The element-wise sum of `values` over ranks (float64; for logs: loss, tokens).
  std::expected<std::vector<double>, std::string> sum(std::vector<double> values) const;
  /// Waits until every rank got here.
  std::expected<void, std::string> barrier() const;

 private:
  // Sums `tensors` over ranks in place (bucketed), times `scale`.
  std::expected<void, std::string> all_reduce(const std::vector<at::Tensor>& tensors, double scale) const;

  struct Group;
  std::unique_ptr<Group> m_group;
  int m_rank = 0, m_world = 1;
  size_t m_bucket_bytes = 25u << 20;
};

/// This rank's share of a global batch: positions rank, rank + world_size, ... of `global`, so that the ranks see
/// disjoint parts of the same batch and together all of it (some get one fewer when world_size does not divide
/// the batch).
std::vector<size_t> shard_indices(const std::vector<size_t>& global, int rank, int world_size);

}  // namespace ca::train
