// "A tiny model learns on the CPU": a random tiny Llama samples completions with model/generate.h, the reward is
// the share of generated tokens equal to a target token, and ppo_iteration (what ca-train ppo runs) raises the
// mean reward over iterations. Also the reward statistics of the step log.
#include "train/ppo.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "model/generate.h"
#include "util/atomic_file.h"

namespace ca::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 16;
constexpr int32_t kTarget = 7;

// A random 1-layer Llama with a 16-token vocabulary written as a checkpoint directory Generator::load reads.
fs::path write_tiny_checkpoint() {
  const fs::path dir = fs::temp_directory_path() / ("ca_ppo_test_" + std::to_string(::getpid()));
  Json config = Json::parse(R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 16,
      "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4,
      "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
      "max_position_embeddings": 64})");
  auto parsed = model::parse_config(config);
  EXPECT_TRUE(parsed) << parsed.error();
  at::manual_seed(1);
  const int64_t h = 32, f = 48, kv = 2 * 8;
  std::map<std::string, at::Tensor> w{{"model.embed_tokens.weight", at::randn({kVocab, h})},
                                      {"model.norm.weight", at::ones({h})},
                                      {"lm_head.weight", at::randn({kVocab, h}) * 0.1}};
  const std::string p = "model.layers.0.";
  w[p + "input_layernorm.weight"] = at::ones({h});
  w[p + "post_attention_layernorm.weight"] = at::ones({h});
  w[p + "self_attn.q_proj.weight"] = at::randn({h, h}) * 0.2;
  w[p + "self_attn.k_proj.weight"] = at::randn({kv, h}) * 0.2;
  w[p + "self_attn.v_proj.weight"] = at::randn({kv, h}) * 0.2;
  w[p + "self_attn.o_proj.weight"] = at::randn({h, h}) * 0.2;
  w[p + "mlp.gate_proj.weight"] = at::randn({f, h}) * 0.2;
  w[p + "mlp.up_proj.weight"] = at::randn({f, h}) * 0.2;
  w[p + "mlp.down_proj.weight"] = at::randn({h, f}) * 0.2;
  auto m = model::Transformer::from_weights(*parsed, w);
  EXPECT_TRUE(m) << m.error();
  EXPECT_TRUE(m->save(dir));
  Json vocab = Json::object();
  for (int64_t i = 0; i < kVocab; ++i) {
    vocab[std::string(1, static_cast<char>('a' + i))] = i;
  }
  const Json tokenizer = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}}};
  EXPECT_TRUE(write_file_atomic((dir / "tokenizer.json").string(), tokenizer.dump()));
  return dir;
}

TEST(PpoIterationTest, ATinyModelLearnsToEmitTheRewardedToken) {
  const fs::path dir = write_tiny_checkpoint();
  auto generator = model::Generator::load(dir);
  ASSERT_TRUE(generator) << generator.error();
  auto critic_backbone = model::Transformer::load(dir);
  ASSERT_TRUE(critic_backbone) << critic_backbone.error();
  auto critic = Critic::from_backbone(*critic_backbone);
  ASSERT_TRUE(critic) << critic.error();
  fs::remove_all(dir);

  TrainOptions o;
  o.warmup = 0;
  o.max_grad_norm = 1.0;
  // The actor's weights are the generator's (shared storage): each update changes what the next rollout samples.
  const model::Transformer& actor = generator->model();
  Optimized actor_optimized(actor.weights(), 1e-2, o);
  Optimized critic_optimized(critic->weights(), 1e-2, o);
  const PpoModels models{&actor, &actor_optimized, &*critic, &critic_optimized, nullptr};
  PpoConfig config;
  config.epochs = 2;
  config.minibatches = 2;
  config.micro_batch = 8;

  const std::vector<int32_t> prompt{1, 2, 3};
  std::vector<double> mean_reward;
  for (uint64_t iteration = 0; iteration < 12; ++iteration) {
    auto completions = generator->generate(
        std::vector<std::vector<int32_t>>(16, prompt),
        {.temperature = 1.0, .top_p = 1.0, .top_k = 0, .seed = 100 + iteration, .max_tokens = 8, .stop_ids = {}});
    ASSERT_TRUE(completions) << completions.error();
    std::vector<Sequence> data;
    for (const model::Completion& c : *completions) {
      Sequence s;
      s.task_id = "toy";
      s.ids.assign(prompt.begin(), prompt.end());
      s.ids.insert(s.ids.end(), c.ids.begin(), c.ids.end());
      s.mask.assign(prompt.size(), 0);
      s.mask.resize(s.ids.size(), 1);
      s.reward =
          static_cast<double>(std::count(c.ids.begin(), c.ids.end(), kTarget)) / static_cast<double>(c.ids.size());
      data.push_back(std::move(s));
    }
    std::vector<size_t> all(data.size());
    std::iota(all.begin(), all.end(), 0);
    auto log = ppo_iteration(models, data, all, config, iteration);
    ASSERT_TRUE(log) << log.error();
    mean_reward.push_back((*log)["reward_mean"].get<double>());
    EXPECT_EQ((*log)["updates"], 4);
    EXPECT_GE((*log)["clip_fraction"].get<double>(), 0.0);
  }
  const double first = (mean_reward[0] + mean_reward[1] + mean_reward[2]) / 3;
  const double last = (mean_reward[9] + mean_reward[10] + mean_reward[11]) / 3;
  std::string trace;
  for (double r : mean_reward) {
    trace += std::to_string(r) + " ";
  }
  // From about 1/16 (a random choice among 16 tokens) to a clear majority of the target token.
  EXPECT_LT(first, 0.2) << trace;
  EXPECT_GT(last, first + 0.3) << trace;
  std::cout << "mean reward per iteration: " << trace << "\n";
}

TEST(RewardStatsTest, CountsDistinctValuesOrBinsManyOnes) {
  const Json few = reward_stats({-1, 1, 1, 3});
  EXPECT_DOUBLE_EQ(few["reward_mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(few["pass_rate"].get<double>(), 0.75);
  EXPECT_EQ(few["reward_histogram"], Json::parse(R"({"-1": 1, "1": 2, "3": 1})"));
  std::vector<double> many;
  for (int i = 0; i < 20; ++i) {
    many.push_back(i);
  }
  const Json bins = reward_stats(many)["reward_histogram"];
  EXPECT_EQ(bins.size(), 10u);
  EXPECT_EQ(bins["0..1.9"], 2);
  EXPECT_EQ(bins["17.1..19"], 2);  // 18 and the maximum, 19, which falls into the last bin
}

}  // namespace
}  // namespace ca::train
