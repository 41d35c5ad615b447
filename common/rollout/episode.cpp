#include "rollout/episode.h"

#include <chrono>
#include <filesystem>

#include "sandbox/workspace.h"
#include "util/atomic_file.h"
#include "util/remove_tree.h"
#include "util/signals.h"

namespace ca {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t estimate_tokens(const std::string& text) {
  return int64_t(text.size() / 4);
}

// The first user message: the workspace's SKILL.md, model.py and task.json, as the agent would read them.
std::expected<std::string, std::string> task_message(const std::string& workspace) {
  auto skill = read_file(workspace + "/SKILL.md");
  auto model = read_file(workspace + "/model.py");
  auto task = read_file(workspace + "/task.json");
  if (!skill) return std::unexpected(skill.error());
  if (!model) return std::unexpected(model.error());
  if (!task) return std::unexpected(task.error());
  return "Your workspace is the current directory. Its SKILL.md:\n\n" + *skill +
         "\n\nThe reference, model.py:\n\n```python\n" + *model + "```\n\nThe task record, task.json:\n\n```json\n" +
         *task +
         "\n```\n\nWrite your kernel under kernels/, check it with verify and profile, and call finish when done.";
}

Json assistant_message(const AssistantTurn& turn) {
  Json message = {{"role", "assistant"}, {"content", turn.content.empty() ? Json(nullptr) : Json(turn.content)}};
  if (turn.tool_calls.empty()) return message;
  Json calls = Json::array();
  for (const auto& call : turn.tool_calls) {
    calls.push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  message["tool_calls"] = std::move(calls);
  return message;
}

Json turn_record(const AssistantTurn& turn, double wall_s) {
  Json record = {{"wall_s", wall_s},
                 {"finish_reason", turn.finish_reason},
                 {"prompt_tokens", turn.prompt_tokens < 0 ? Json(nullptr) : Json(turn.prompt_tokens)},
                 {"completion_tokens", turn.completion_tokens < 0 ? Json(nullptr) : Json(turn.completion_tokens)}};
  if (!turn.token_ids.empty()) record["token_ids"] = turn.token_ids;
  if (!turn.logprobs.empty()) record["logprobs"] = turn.logprobs;
  if (!turn.extra.empty()) record["extra"] = turn.extra;
  record["tools"] = Json::array();
  return record;
}

}  // namespace

std::string system_prompt(const std::string& backend) {
  std::string device =
      backend == "cuda" ? "a CUDA kernel (.cu, built with nvcc)" : "a C++ kernel (.cpp, built with g++)";
  return "You are an expert performance engineer. Your job: replace a PyTorch reference program with " + device +
         " that computes the same outputs, faster than both PyTorch eager and torch.compile. The workspace's SKILL.md "
         "states the kernel ABI, the inputs and outputs, the tolerances and what is forbidden.\n\n"
         "Tools: bash (runs in a sandbox: no GPU, no network, only kernels/ and /tmp writable), str_replace_editor "
         "(view any workspace file, write only under kernels/), glob, verify (builds kernels/ and checks it against "
         "the "
         "reference), profile (times it against eager and torch.compile), finish (ends the episode). Call one or more "
         "tools in each turn. After finish, the harness verifies and profiles kernels/ itself: the reward is -1 if it "
         "is "
         "wrong, 1 if correct, 2 if more than 5% faster than eager, 3 if more than 5% faster than torch.compile too.";
}

Json run_episode(const Json& task, int sample, uint64_t seed, Policy& policy, const EpisodeOptions& options) {
  auto start = Clock::now();
  std::string task_id = task.contains("id") && task["id"].is_string() ? task["id"].get<std::string>() : "";
  std::string name = sanitize_id(task_id) + "-s" + std::to_string(sample);
  std::string workspace = (fs::path(options.work_dir) / name).string();
  std::string scratch = workspace + ".judge";
  Json tools = tool_schemas();
  Json record = {{"kind", "trajectory"},
                 {"id", task_id + "#" + std::to_string(sample)},
                 {"task_id", task_id},
                 {"sample", sample},
                 {"seed", seed},
                 {"backend", options.tools.backend},
                 {"policy", policy.describe()},
                 {"limits",
                  {{"max_turns", options.limits.max_turns},
                   {"max_context_tokens", options.limits.max_context_tokens},
                   {"max_wall_s", options.limits.max_wall_s}}},
                 {"tools", tools},
                 {"messages", Json::array()},
                 {"turns", Json::array()},
                 {"end", nullptr},
                 {"error", nullptr}};
  Json& messages = record["messages"];
  auto end = [&](const std::string& reason, const std::string& detail = "") {
    record["end"] = {{"reason", reason}, {"turns", record["turns"].size()}, {"wall_s", seconds_since(start)}};
    if (!detail.empty()) record["end"]["detail"] = detail;
  };

  // A workspace left by a run that was killed is replaced: the episode starts afresh.
  (void)remove_tree(workspace);
  (void)remove_tree(scratch);
  std::error_code ec;
  fs::create_directories(scratch, ec);
  auto created = create_workspace(task, workspace, options.tools.backend);
  auto prompt = created ? task_message(workspace) : std::unexpected(created.error());
  if (!prompt) {
    record["error"] = "workspace: " + prompt.error();
    end("harness_error");
    return record;
  }
  messages.push_back({{"role", "system"}, {"content", system_prompt(options.tools.backend)}});
  messages.push_back({{"role", "user"}, {"content", *prompt}});

  Toolbox toolbox(workspace, options.tools);
  policy.begin({task, options.tools.backend, seed, sample});
  int64_t context_tokens = estimate_tokens(messages.dump(-1, ' ', false, Json::error_handler_t::replace));
  for (;;) {
    if (interrupted()) {
      end("interrupted");
      return record;
    }
    if (int(record["turns"].size()) >= options.limits.max_turns) {
      end("max_turns");
      break;
    }
    if (context_tokens >= options.limits.max_context_tokens) {
      end("max_context_tokens", std::to_string(context_tokens) + " tokens");
      break;
    }
    if (seconds_since(start) >= options.limits.max_wall_s) {
      end("max_wall");
      break;
    }
    auto turn_start = Clock::now();
    auto turn = policy.next(messages, tools);
    if (!turn) {
      if (interrupted()) {
        end("interrupted");
        return record;
      }
      record["error"] = "policy: " + turn.error().message;
      end("policy_error", turn.error().message);
      break;
    }
    int index = int(record["turns"].size());
    for (size_t i = 0; i < turn->tool_calls.size(); ++i) {
      ToolCall& call = turn->tool_calls[i];
      // Ids must be unique in the conversation; text-parsed calls and some servers give none.
      if (call.id.empty() || call.id.starts_with("text_call_"))
        call.id = "call_" + std::to_string(index) + "_" + std::to_string(i);
    }
    messages.push_back(assistant_message(*turn));
    record["turns"].push_back(turn_record(*turn, seconds_since(turn_start)));
    Json& tool_log = record["turns"].back()["tools"];
    std::string added;
    bool finished = false;
    for (const auto& call : turn->tool_calls) {
      auto call_start = Clock::now();
      ToolResult result = toolbox.call(call);
      tool_log.push_back({{"name", call.name}, {"ok", result.ok}, {"wall_s", seconds_since(call_start)}});
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", call.id}, {"name", call.name}, {"content", result.content}});
      added += result.content;
      finished = finished || result.finish;
      if (interrupted()) {
        end("interrupted");
        return record;
      }
    }
    bool reported = turn->prompt_tokens >= 0 && turn->completion_tokens >= 0;
    context_tokens = reported ? turn->prompt_tokens + turn->completion_tokens + estimate_tokens(added)
                              : estimate_tokens(messages.dump(-1, ' ', false, Json::error_handler_t::replace));
    if (finished) {
      end("finish");
      break;
    }
    if (turn->tool_calls.empty()) {
      end("no_tool_calls", turn->finish_reason);
      break;
    }
  }

  auto judge_start = Clock::now();
  auto candidate = workspace_kernels_candidate(task, workspace, record["id"].get<std::string>(), options.tools.backend);
  auto judged = candidate ? judge_candidate(*candidate, scratch, options.judge) : std::unexpected(candidate.error());
  if (judged) {
    for (const char* field : {"verify", "profile", "reward"}) record[field] = judged->value(field, Json());
  } else {
    if (judged.error() == "interrupted") {
      end("interrupted");
      return record;
    }
    std::string message = "judge: " + judged.error();
    record["error"] =
        record["error"].is_null() ? Json(message) : Json(record["error"].get<std::string>() + "; " + message);
  }
  record["judge_wall_s"] = seconds_since(judge_start);
  auto packed = pack_base64(workspace + "/kernels", scratch);
  record["kernels"] = packed ? Json{{"format", "tar.gz+base64"}, {"data", *packed}} : Json{{"error", packed.error()}};
  record["wall_s"] = seconds_since(start);
  if (!options.keep_workspace) {
    (void)remove_tree(workspace);
    (void)remove_tree(scratch);
  }
  return record;
}

}  // namespace ca
