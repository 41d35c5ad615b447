// Tests of data parallelism: the launcher's environment, batch sharding, the collectives over gloo with two ranks in
// two threads (FileStore and TCPStore), a rank that cannot reach its store, and the result that matters: two ranks
// train a tiny model to the same losses and weights as one process with twice the gradient accumulation.
#include "train/distributed.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "train/losses.h"
#include "train/optimizer.h"
#include "train/refusing_port_test_util.h"

namespace ca::train {
namespace {

namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;

std::expected<DistEnv, std::string> env_of(const Vars& vars) {
  return read_dist_env([&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

TEST(ReadDistEnvTest, ReadsTorchrunsVariables) {
  auto env = env_of({{"RANK", "3"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "1"},
                     {"MASTER_ADDR", "node7"},
                     {"MASTER_PORT", "29512"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                     {"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "1"}});
  ASSERT_TRUE(env) << env.error();
  EXPECT_EQ(env->source, "torchrun");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "node7");
  EXPECT_EQ(env->master_port, 29512);
  EXPECT_TRUE(env->agent_store);
}

TEST(ReadDistEnvTest, FallsBackToSlurmsVariables) {
  auto env = env_of({{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "1"},
                     {"MASTER_ADDR", "gpu01"},
                     {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(env) << env.error();
  EXPECT_EQ(env->source, "slurm");
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_FALSE(env->agent_store);
}

TEST(ReadDistEnvTest, NothingSetIsWorldSizeOneAndOneTaskNeedsNoStore) {
  auto none = env_of({});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->source, "none");
  EXPECT_EQ(none->world_size, 1);
  auto alone = env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(alone) << alone.error();
  EXPECT_EQ(alone->world_size, 1);
  EXPECT_TRUE(alone->master_addr.empty());
}

TEST(ReadDistEnvTest, RefusesMalformedOrInconsistentVariablesNamingThem) {
  const Vars base = {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto with = [&](Vars extra) {
    extra.insert(base.begin(), base.end());
    auto env = env_of(extra);
    return env ? std::string("accepted") : env.error();
  };
  EXPECT_EQ(with({{"RANK", "0"}}), "WORLD_SIZE is not set (RANK is)");
  EXPECT_EQ(with({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK=2 is outside 0..1");
  EXPECT_EQ(with({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), "RANK=-1 is outside 0..1");
  EXPECT_EQ(with({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}), "RANK='1x' is not an integer");
  EXPECT_EQ(with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "WORLD_SIZE=0 is not a world size (1 or more)");
  EXPECT_EQ(with({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "x"}}),
            "SLURM_LOCALID='x' is not an integer");
  EXPECT_EQ(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
            "MASTER_PORT=70000 is outside 1..65535");
  EXPECT_EQ(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}}), "accepted");
  auto no_addr = env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}});
  ASSERT_FALSE(no_addr);
  EXPECT_EQ(no_addr.error(), "MASTER_ADDR is not set (world size 2; the rendezvous store's host and port)");
}

TEST(ShardIndicesTest, RanksGetDisjointPartsThatTogetherAreTheBatch) {
  const std::vector<size_t> global = {9, 4, 7, 1, 0, 3, 8};
  std::multiset<size_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    for (size_t i : shard_indices(global, rank, 3)) {
      seen.insert(i);
    }
  }
  EXPECT_EQ(seen, std::multiset<size_t>(global.begin(), global.end()));
  EXPECT_EQ(shard_indices(global, 0, 3), (std::vector<size_t>{9, 1, 8}));
  EXPECT_EQ(shard_indices(global, 2, 3), (std::vector<size_t>{7, 3}));
  EXPECT_EQ(shard_indices(global, 0, 1), global);
}

TEST(NvlinkMulticastTest, TheSwitchesAreSetInTheProcess) {
  ::setenv("NCCL_NVLS_ENABLE", "1", 1);
  disable_nvlink_multicast();
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  EXPECT_STREQ(std::getenv("TORCH_SYMM_MEM_DISABLE_MULTICAST"), "1");
  EXPECT_STREQ(std::getenv("NVSHMEM_DISABLE_NVLS"), "1");
}

TEST(DataParallelTest, WorldSizeOneIsANoOpWithoutAStore) {
  DistEnv env;  // nothing set: no MASTER_ADDR, no port
  auto dp = DataParallel::init(env, {});
  ASSERT_TRUE(dp) << dp.error();
  EXPECT_FALSE(dp->active());
  EXPECT_EQ(dp->backend(), "none");
  EXPECT_TRUE(dp->is_main());
  at::Tensor p = at::ones({3}).set_requires_grad(true);
  p.mutable_grad() = at::full({3}, 2.0);
  ASSERT_TRUE(dp->all_reduce_gradients({{"p", p}}, DataParallel::Reduce::mean));
  EXPECT_TRUE(at::equal(p.grad(), at::full({3}, 2.0)));
  EXPECT_EQ(*dp->sum({1.5, 2.0}), (std::vector<double>{1.5, 2.0}));
}

// A scratch directory for one test's stores.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "ca-dist-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// Runs body(rank, dp) on `world` threads, each a rank of one gloo group over `store`; failures of init fail the test.
void on_ranks(int world, const DistOptions& options, const std::function<DistEnv(int)>& env_of_rank,
              const std::function<void(int, DataParallel&)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      auto dp = DataParallel::init(env_of_rank(rank), options);
      ASSERT_TRUE(dp) << dp.error();
      body(rank, *dp);
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
}

void on_file_store_ranks(int world, DistOptions options, const std::function<void(int, DataParallel&)>& body) {
  TempDir dir;
  options.file_store = dir.path / "store";
  on_ranks(
      world, options,
      [&](int rank) {
        DistEnv env;
        env.rank = rank;
        env.world_size = world;
        return env;
      },
      body);
}

TEST(DataParallelTest, GlooBroadcastsRankZerosParametersAndReducesGradientsInBuckets) {
  DistOptions options;
  options.bucket_bytes = 16;  // several buckets of float and double tensors
  on_file_store_ranks(2, options, [](int rank, DataParallel& dp) {
    EXPECT_TRUE(dp.active());
    EXPECT_EQ(dp.backend(), "gloo");
    EXPECT_EQ(dp.is_main(), rank == 0);
    std::map<std::string, at::Tensor> params = {
        {"a", at::full({2, 3}, static_cast<double>(rank + 1), at::kFloat).set_requires_grad(true)},
        {"b", at::full({5}, static_cast<double>(10 * (rank + 1)), at::kDouble).set_requires_grad(true)},
        {"c", at::full({1}, 7.0).set_requires_grad(true)}};
    ASSERT_TRUE(dp.broadcast_parameters(params));
    EXPECT_TRUE(at::equal(params["a"], at::full({2, 3}, 1.0, at::kFloat)));
    EXPECT_TRUE(at::equal(params["b"], at::full({5}, 10.0, at::kDouble)));
    EXPECT_FALSE(params["a"].grad().defined());

    params["a"].mutable_grad() = at::arange(6, at::kFloat).reshape({2, 3}) * (rank + 1);
    params["b"].mutable_grad() = at::full({5}, static_cast<double>(rank + 1), at::kDouble);
    if (rank == 0) {  // "c" gets no gradient on rank 1: zeros there
      params["c"].mutable_grad() = at::full({1}, 4.0);
    }
    ASSERT_TRUE(dp.all_reduce_gradients(params, DataParallel::Reduce::sum));
    EXPECT_TRUE(at::equal(params["a"].grad(), at::arange(6, at::kFloat).reshape({2, 3}) * 3));
    EXPECT_TRUE(at::equal(params["b"].grad(), at::full({5}, 3.0, at::kDouble)));
    EXPECT_TRUE(at::equal(params["c"].grad(), at::full({1}, 4.0)));
    ASSERT_TRUE(dp.all_reduce_gradients(params, DataParallel::Reduce::mean));
    EXPECT_TRUE(at::equal(params["b"].grad(), at::full({5}, 3.0, at::kDouble)));  // equal on both ranks: mean = self
    auto total = dp.sum({static_cast<double>(rank), 0.5});
    ASSERT_TRUE(total) << total.error();
    EXPECT_EQ(*total, (std::vector<double>{1.0, 1.0}));
    EXPECT_TRUE(dp.barrier());
  });
}

TEST(DataParallelTest, ARankThatCannotReachTheStoreFailsWithinTheTimeoutSayingWhere) {
  RefusingPort refusing;
  ASSERT_NE(refusing.port, 0);
  DistEnv env = second_of_two_ranks_at(refusing.port);
  DistOptions options;
  options.rendezvous_timeout = std::chrono::milliseconds(300);
  auto dp = DataParallel::init(env, options);
  ASSERT_FALSE(dp);
  EXPECT_NE(dp.error().find("rank 1 of 2: no rendezvous at the store 127.0.0.1:" + std::to_string(refusing.port) +
                            " within 300 ms"),
            std::string::npos)
      << dp.error();
}

TEST(DataParallelTest, RankZeroAloneFailsWhenTheOtherRankNeverComes) {
  TempDir dir;
  DistEnv env;
  env.world_size = 2;
  DistOptions options;
  options.file_store = dir.path / "store";
  options.rendezvous_timeout = std::chrono::milliseconds(300);
  options.collective_timeout = std::chrono::milliseconds(300);
  auto dp = DataParallel::init(env, options);
  ASSERT_FALSE(dp);
  EXPECT_NE(dp.error().find("rank 0 of 2: gloo process group: "), std::string::npos) << dp.error();
}

TEST(DataParallelTest, TwoRanksMeetAtATcpStoreHostedByRankZero) {
  uint16_t port = 0;
  {  // a port free a moment ago; rank 0's store binds it again
    RefusingPort probe;
    port = probe.port;
  }
  ASSERT_NE(port, 0);
  on_ranks(
      2, {},
      [&](int rank) {
        DistEnv env;
        env.rank = rank;
        env.world_size = 2;
        env.master_addr = "127.0.0.1";
        env.master_port = port;
        return env;
      },
      [](int rank, DataParallel& dp) {
        auto total = dp.sum({static_cast<double>(rank + 1)});
        ASSERT_TRUE(total) << total.error();
        EXPECT_EQ(*total, std::vector<double>{3.0});
      });
}

TEST(DataParallelTest, CudaWithoutAGpuIsAnError) {
  if (at::hasCUDA()) {
    GTEST_SKIP() << "a GPU is here; NcclWorldSizeOne covers cuda";
  }
  TempDir dir;
  DistOptions options;
  options.device = at::kCUDA;
  options.file_store = dir.path / "store";
  options.group_at_world_size_1 = true;
  auto dp = DataParallel::init(DistEnv{}, options);
  ASSERT_FALSE(dp);
  EXPECT_NE(dp.error().find("cuda"), std::string::npos) << dp.error();
}

// The GPU machine's check (CA_TEST_DEVICE=cuda): an NCCL group of one rank on cuda:0 runs every collective.
TEST(DataParallelTest, NcclWorldSizeOne) {
  if (!at::hasCUDA()) {
    GTEST_SKIP() << "no GPU";
  }
  TempDir dir;
  DistOptions options;
  options.device = at::kCUDA;
  options.file_store = dir.path / "store";
  options.group_at_world_size_1 = true;
  auto dp = DataParallel::init(DistEnv{}, options);
  ASSERT_TRUE(dp) << dp.error();
  EXPECT_EQ(dp->backend(), "nccl");
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  std::map<std::string, at::Tensor> params = {
      {"w", at::full({1000}, 2.0, at::TensorOptions(at::kCUDA).dtype(at::kBFloat16)).set_requires_grad(true)},
      {"v", at::full({3}, 1.0, at::TensorOptions(at::kCUDA)).set_requires_grad(true)}};
  ASSERT_TRUE(dp->broadcast_parameters(params));
  params["w"].mutable_grad() = at::full_like(params["w"], 0.5);
  ASSERT_TRUE(dp->all_reduce_gradients(params, DataParallel::Reduce::mean));
  EXPECT_TRUE(at::equal(params["w"].grad().cpu(), at::full({1000}, 0.5, at::kBFloat16)));
  EXPECT_TRUE(at::equal(params["v"].grad().cpu(), at::zeros({3})));
  EXPECT_EQ(*dp->sum({2.5}), std::vector<double>{2.5});
  EXPECT_TRUE(dp->barrier());
}

// A tiny language model (embedding, tanh layer, output projection) on variable-length sequences with action masks,
// trained as ca-train's loop does: per update, the micro-batches' NLL summed over action tokens and divided by the
// update's action-token count, backward per micro-batch, clipping to a global norm, AdamW.
struct TinyTask {
  static constexpr int64_t vocab = 11, dim = 8;
  std::vector<at::Tensor> ids, masks;  // one [T] sequence each

  TinyTask() {
    std::mt19937 rng(5);
    for (int s = 0; s < 16; ++s) {
      const int64_t n = 4 + static_cast<int64_t>(rng() % 9);
      std::vector<int64_t> seq, mask;
      for (int64_t t = 0; t < n; ++t) {
        seq.push_back(static_cast<int64_t>(rng() % vocab));
        mask.push_back(t >= 2 && rng() % 4 != 0 ? 1 : 0);
      }
      ids.push_back(at::tensor(seq, at::kLong));
      masks.push_back(at::tensor(mask, at::kLong).to(at::kFloat));
    }
  }

  // A generator of its own: the ranks are threads of one process, and the global one would be shared between them.
  static std::map<std::string, at::Tensor> init_params(uint64_t seed) {
    at::Generator rng = at::make_generator<at::CPUGeneratorImpl>(seed);
    std::map<std::string, at::Tensor> p = {{"embed", at::randn({vocab, dim}, rng)},
                                           {"hidden", at::randn({dim, dim}, rng) * 0.5},
                                           {"out", at::randn({dim, vocab}, rng) * 0.5}};
    for (auto& [name, t] : p) {
      t.set_requires_grad(true);
    }
    return p;
  }

  // Sum over the sequences of `which` of -logprob on action tokens.
  at::Tensor nll_sum(const std::map<std::string, at::Tensor>& p, const std::vector<size_t>& which) const {
    at::Tensor total = at::zeros({});
    for (size_t i : which) {
      const at::Tensor h = at::tanh(p.at("embed").index_select(0, ids[i]).matmul(p.at("hidden")));
      const at::Tensor logits = h.matmul(p.at("out")).unsqueeze(0);
      total = total - (token_logprobs(logits, ids[i].unsqueeze(0)).squeeze(0) * masks[i]).sum();
    }
    return total;
  }

  double action_tokens(const std::vector<size_t>& which) const {
    double n = 0;
    for (size_t i : which) {
      n += masks[i].sum().item<double>();
    }
    return n;
  }
};

struct TinyRun {
  std::vector<double> losses;
  std::map<std::string, at::Tensor> params;
};

// `steps` updates of batch 8 in micro-batches of 2; with a group, this rank's shard of each batch.
TinyRun train_tiny(const TinyTask& task, DataParallel& dp, uint64_t init_seed) {
  TinyRun run;
  run.params = TinyTask::init_params(init_seed);
  EXPECT_TRUE(dp.broadcast_parameters(run.params));
  AdamW adam(run.params, AdamWOptions{});
  std::mt19937 order(11);
  for (int step = 0; step < 6; ++step) {
    std::vector<size_t> batch(task.ids.size());
    std::iota(batch.begin(), batch.end(), 0);
    std::shuffle(batch.begin(), batch.end(), order);
    batch.resize(8);
    const double tokens = task.action_tokens(batch);  // of the whole update, known to every rank
    const std::vector<size_t> mine = shard_indices(batch, dp.rank(), dp.world_size());
    double loss = 0;
    for (size_t first = 0; first < mine.size(); first += 2) {
      const at::Tensor l =
          task.nll_sum(run.params, {mine.begin() + first, mine.begin() + std::min(mine.size(), first + 2)}) / tokens;
      l.backward();
      loss += l.item<double>();
    }
    EXPECT_TRUE(dp.all_reduce_gradients(run.params, DataParallel::Reduce::sum));
    run.losses.push_back(dp.sum({loss})->at(0));
    clip_grad_norm(run.params, 1.0);
    adam.step(0.05);
    adam.zero_grad();
  }
  return run;
}

TEST(DataParallelTest, TwoGlooRanksTrainAsOneProcessWithTwiceTheAccumulation) {
  const TinyTask task;
  DataParallel alone;  // world size 1: 4 micro-batches per update
  const TinyRun reference = train_tiny(task, alone, 1);
  ASSERT_LT(reference.losses.back(), reference.losses.front());  // it learns

  std::vector<TinyRun> ranks(2);
  on_file_store_ranks(2, {}, [&](int rank, DataParallel& dp) {
    ranks[rank] = train_tiny(task, dp, 1 + rank);  // rank 1 starts elsewhere: the broadcast must fix that
  });
  // Float32 sums in another order: the losses agree to 1e-6 relative, the weights after 6 AdamW updates to 1e-5.
  for (const TinyRun& r : ranks) {
    ASSERT_EQ(r.losses.size(), reference.losses.size());
    for (size_t s = 0; s < r.losses.size(); ++s) {
      EXPECT_NEAR(r.losses[s], reference.losses[s], 1e-6 * std::abs(reference.losses[s])) << "step " << s + 1;
    }
    for (const auto& [name, w] : reference.params) {
      EXPECT_LE((r.params.at(name) - w).abs().max().item<double>(), 1e-5) << name;
    }
  }
  for (const auto& [name, w] : ranks[0].params) {  // the ranks hold identical weights
    EXPECT_TRUE(at::equal(w, ranks[1].params.at(name))) << name;
  }
}

}  // namespace
}  // namespace ca::train
