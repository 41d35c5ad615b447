// Data parallelism over c10d: launcher environment, store rendezvous, gloo/NCCL groups, bucketed collectives.
#include "train/distributed.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <charconv>
#include <cstdlib>

#ifdef CA_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CA_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ca::train {

namespace {

// c10's errors carry a C++ backtrace in what(); the message alone is what a user needs.
std::string describe(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

std::expected<int64_t, std::string> parse_int(const std::string& name, const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::unexpected(name + "='" + text + "' is not an integer");
  }
  return value;
}

}  // namespace

std::expected<DistEnv, std::string> read_dist_env(
    const std::function<std::optional<std::string>(const std::string&)>& get) {
  DistEnv env;
  std::string rank_var = "RANK", world_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  if (get("RANK") || get("WORLD_SIZE")) {
    env.source = "torchrun";
  } else if (get("SLURM_PROCID") || get("SLURM_NTASKS")) {
    env.source = "slurm";
    rank_var = "SLURM_PROCID", world_var = "SLURM_NTASKS", local_var = "SLURM_LOCALID";
  } else {
    return env;
  }
  const auto rank_text = get(rank_var), world_text = get(world_var);
  if (!rank_text || !world_text) {
    return std::unexpected((rank_text ? world_var : rank_var) + " is not set (" + (rank_text ? rank_var : world_var) +
                           " is)");
  }
  auto rank = parse_int(rank_var, *rank_text);
  auto world = parse_int(world_var, *world_text);
  if (!rank || !world) {
    return std::unexpected(rank ? world.error() : rank.error());
  }
  if (*world < 1 || *world > (1 << 20)) {
    return std::unexpected(world_var + "=" + *world_text + " is not a world size (1 or more)");
  }
  if (*rank < 0 || *rank >= *world) {
    return std::unexpected(rank_var + "=" + *rank_text + " is outside 0.." + std::to_string(*world - 1));
  }
  env.rank = static_cast<int>(*rank);
  env.world_size = static_cast<int>(*world);
  if (auto local_text = get(local_var)) {
    auto local = parse_int(local_var, *local_text);
    if (!local) {
      return std::unexpected(local.error());
    }
    if (*local < 0 || *local > *rank) {
      return std::unexpected(local_var + "=" + *local_text + " is outside 0.." + *rank_text);
    }
    env.local_rank = static_cast<int>(*local);
  }
  if (env.world_size == 1) {
    return env;
  }
  const auto addr = get("MASTER_ADDR"), port_text = get("MASTER_PORT");
  if (!addr || addr->empty() || !port_text) {
    return std::unexpected(std::string(!addr || addr->empty() ? "MASTER_ADDR" : "MASTER_PORT") +
                           " is not set (world size " + std::to_string(env.world_size) +
                           "; the rendezvous store's host and port)");
  }
  auto port = parse_int("MASTER_PORT", *port_text);
  if (!port) {
    return std::unexpected(port.error());
  }
  if (*port < 1 || *port > 65535) {
    return std::unexpected("MASTER_PORT=" + *port_text + " is outside 1..65535");
  }
  env.master_addr = *addr;
  env.master_port = static_cast<uint16_t>(*port);
  env.agent_store = get("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  return env;
}

std::expected<DistEnv, std::string> read_dist_env() {
  return read_dist_env([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
}

const std::vector<std::pair<std::string, std::string>>& nvlink_multicast_off_env() {
  static const std::vector<std::pair<std::string, std::string>> vars = {
      {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
  return vars;
}

void disable_nvlink_multicast() {
  for (const auto& [name, value] : nvlink_multicast_off_env()) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

struct DataParallel::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  at::Device device = at::kCPU;
  std::string name;
};

DataParallel::DataParallel() = default;
DataParallel::~DataParallel() = default;
DataParallel::DataParallel(DataParallel&&) noexcept = default;
DataParallel& DataParallel::operator=(DataParallel&&) noexcept = default;

bool DataParallel::active() const {
  return m_group != nullptr;
}

std::string DataParallel::backend() const {
  return m_group ? m_group->name : "none";
}

std::expected<DataParallel, std::string> DataParallel::init(const DistEnv& env, const DistOptions& options) {
  DataParallel dp;
  dp.m_rank = env.rank;
  dp.m_world = env.world_size;
  dp.m_bucket_bytes = options.bucket_bytes;
  if (env.world_size == 1 && !options.group_at_world_size_1) {
    return dp;
  }
  disable_nvlink_multicast();
  const std::string who = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size);
  auto group = std::make_unique<Group>();
  try {
    if (!options.file_store.empty()) {
      group->store = c10::make_intrusive<c10d::FileStore>(options.file_store.string(), env.world_size);
      group->store->setTimeout(options.rendezvous_timeout);
    } else {
      c10d::TCPStoreOptions tcp;
      tcp.port = env.master_port;
      tcp.isServer = env.rank == 0 && !env.agent_store;
      tcp.numWorkers = static_cast<size_t>(env.world_size);
      tcp.waitWorkers = true;
      tcp.timeout = options.rendezvous_timeout;
      tcp.multiTenant = !env.agent_store;
      group->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, tcp);
    }
  } catch (const std::exception& e) {
    const std::string where = options.file_store.empty() ? env.master_addr + ":" + std::to_string(env.master_port)
                                                         : options.file_store.string();
    return std::unexpected(who + ": no rendezvous at the store " + where + " within " +
                           std::to_string(options.rendezvous_timeout.count()) + " ms: " + describe(e));
  }
  try {
    if (options.device.is_cpu()) {
#ifdef CA_WITH_GLOO
      auto gloo = c10d::ProcessGroupGloo::Options::create_default(options.collective_timeout);
      group->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(group->store, env.rank, env.world_size, gloo);
      group->name = "gloo";
#else
      return std::unexpected("this build has no gloo (configure with libgloo-dev's headers: scripts/setup-deps.sh)");
#endif
    } else if (options.device.is_cuda()) {
#ifdef CA_WITH_NCCL
      if (!at::hasCUDA() || env.local_rank >= static_cast<int>(c10::cuda::device_count())) {
        return std::unexpected(who + ": no cuda:" + std::to_string(env.local_rank) + " (" +
                               std::to_string(at::hasCUDA() ? c10::cuda::device_count() : 0) +
                               " CUDA devices visible)");
      }
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
      auto nccl = c10d::ProcessGroupNCCL::Options::create();
      nccl->timeout = options.collective_timeout;
      group->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(group->store, env.rank, env.world_size, nccl);
      group->name = "nccl";
#else
      return std::unexpected("this build has no NCCL (nccl.h was not found at configure time)");
#endif
    } else {
      return std::unexpected("data parallel on " + options.device.str() + ": only cpu (gloo) and cuda (NCCL)");
    }
  } catch (const std::exception& e) {
    return std::unexpected(who + ": " + (options.device.is_cpu() ? "gloo" : "NCCL") + " process group: " + describe(e));
  }
  group->device = options.device.is_cuda() ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank))
                                           : at::Device(at::kCPU);
  dp.m_group = std::move(group);
  return dp;
}

namespace {

// Tensors of one dtype, flattened into one buffer for a collective, then copied back.
struct Bucket {
  std::vector<at::Tensor> members;
  std::vector<at::Tensor> flat;  // one tensor: the collectives take a vector
  c10::intrusive_ptr<c10d::Work> work;
};

std::vector<Bucket> make_buckets(const std::vector<at::Tensor>& tensors, size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  std::map<at::ScalarType, std::pair<size_t, size_t>> open;  // dtype -> (bucket index, bytes so far)
  for (const at::Tensor& t : tensors) {
    auto it = open.find(t.scalar_type());
    const size_t bytes = t.nbytes();
    if (it == open.end() || it->second.second + bytes > bucket_bytes) {
      buckets.emplace_back();
      it = open.insert_or_assign(t.scalar_type(), std::pair<size_t, size_t>{buckets.size() - 1, 0}).first;
    }
    buckets[it->second.first].members.push_back(t);
    it->second.second += bytes;
  }
  for (Bucket& b : buckets) {
    std::vector<at::Tensor> flat;
    flat.reserve(b.members.size());
    for (const at::Tensor& t : b.members) {
      flat.push_back(t.reshape(-1));
    }
    b.flat = {at::cat(flat)};
  }
  return buckets;
}

void unflatten(const Bucket& b, double scale) {
  at::Tensor flat = scale == 1.0 ? b.flat[0] : b.flat[0] * scale;
  int64_t offset = 0;
  for (const at::Tensor& t : b.members) {
    const int64_t n = t.numel();
    t.copy_(flat.slice(0, offset, offset + n).view_as(t));
    offset += n;
  }
}

}  // namespace

std::expected<void, std::string> DataParallel::broadcast_parameters(
    const std::map<std::string, at::Tensor>& params) const {
  if (!m_group) {
    return {};
  }
  try {
    at::NoGradGuard no_grad;  // parameters are leaves that require grad; copying into them is no step of a graph
    std::vector<at::Tensor> tensors;
    for (const auto& [name, p] : params) {
      tensors.push_back(p);
    }
    std::vector<Bucket> buckets = make_buckets(tensors, m_bucket_bytes);
    c10d::BroadcastOptions opts;
    opts.rootRank = 0;
    for (Bucket& b : buckets) {
      b.work = m_group->backend->broadcast(b.flat, opts);
    }
    for (Bucket& b : buckets) {
      b.work->wait();
      if (m_rank != 0) {
        unflatten(b, 1.0);
      }
    }
  } catch (const std::exception& e) {
    return std::unexpected("broadcast of the parameters from rank 0: " + describe(e));
  }
  return {};
}

std::expected<void, std::string> DataParallel::all_reduce_gradients(const std::map<std::string, at::Tensor>& params,
                                                                    Reduce reduce) const {
  if (!m_group) {
    return {};
  }
  std::vector<at::Tensor> grads;
  try {
    at::NoGradGuard no_grad;
    for (const auto& [name, p] : params) {
      if (!p.grad().defined()) {
        p.mutable_grad() = at::zeros_like(p);
      }
      grads.push_back(p.grad());
    }
  } catch (const std::exception& e) {
    return std::unexpected("all-reduce of the gradients: " + describe(e));
  }
  if (auto r = all_reduce(grads, reduce == Reduce::mean ? 1.0 / m_world : 1.0); !r) {
    return std::unexpected("all-reduce of the gradients: " + r.error());
  }
  return {};
}

std::expected<void, std::string> DataParallel::sum_tensors(const std::vector<at::Tensor>& tensors) const {
  if (!m_group || tensors.empty()) {
    return {};
  }
  if (auto r = all_reduce(tensors, 1.0); !r) {
    return std::unexpected("all-reduce of the batch's values: " + r.error());
  }
  return {};
}

std::expected<void, std::string> DataParallel::all_reduce(const std::vector<at::Tensor>& tensors, double scale) const {
  try {
    at::NoGradGuard no_grad;
    std::vector<Bucket> buckets = make_buckets(tensors, m_bucket_bytes);
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    for (Bucket& b : buckets) {
      b.work = m_group->backend->allreduce(b.flat, opts);
    }
    for (Bucket& b : buckets) {
      b.work->wait();
      unflatten(b, scale);
    }
  } catch (const std::exception& e) {
    return std::unexpected(describe(e));
  }
  return {};
}

std::expected<std::vector<double>, std::string> DataParallel::sum(std::vector<double> values) const {
  if (!m_group || values.empty()) {
    return values;
  }
  try {
    std::vector<at::Tensor> t = {at::tensor(values, at::kDouble).to(m_group->device)};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    m_group->backend->allreduce(t, opts)->wait();
    const at::Tensor host = t[0].cpu();
    return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
  } catch (const std::exception& e) {
    return std::unexpected("all-reduce of the step's totals: " + describe(e));
  }
}

std::expected<void, std::string> DataParallel::barrier() const {
  if (!m_group) {
    return {};
  }
  try {
    m_group->backend->barrier()->wait();
  } catch (const std::exception& e) {
    return std::unexpected("barrier: " + describe(e));
  }
  return {};
}

std::vector<size_t> shard_indices(const std::vector<size_t>& global, int rank, int world_size) {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(rank); i < global.size(); i += static_cast<size_t>(world_size)) {
    out.push_back(global[i]);
  }
  return out;
}

}  // namespace ca::train
