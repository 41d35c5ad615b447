// Trajectory records to ChatML token sequences with a response mask.
#include "train/sequence.h"

#include <algorithm>
#include <string>

namespace ca::train {

int64_t Sequence::action_tokens() const {
  return std::count(mask.begin(), mask.end(), uint8_t{1});
}

namespace {

std::string text_of(const Json& content) {
  if (content.is_string()) {
    return content.get<std::string>();
  }
  if (content.is_array()) {  // OpenAI content parts: the text ones, in order
    std::string out;
    for (const Json& part : content) {
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string()) {
        out += part["text"].get<std::string>();
      }
    }
    return out;
  }
  return "";
}

std::string tools_block(const Json& tools) {
  std::string out = "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>";
  for (const Json& tool : tools) {
    out += "\n" + tool.dump();
  }
  return out + "\n</tools>";
}

std::expected<std::string, std::string> calls_text(const Json& calls, size_t index) {
  std::string out;
  for (const Json& call : calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
      return std::unexpected("messages[" + std::to_string(index) + "]: a tool call without a function object");
    }
    const Json& fn = call["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) {
      return std::unexpected("messages[" + std::to_string(index) + "]: a tool call without a name");
    }
    const std::string args =
        fn.contains("arguments") && fn["arguments"].is_string() ? fn["arguments"].get<std::string>() : "{}";
    out += "\n<tool_call>\n{\"name\": " + fn["name"].dump() + ", \"arguments\": " + args + "}\n</tool_call>";
  }
  return out;
}

}  // namespace

std::expected<std::vector<Segment>, std::string> chatml_segments(const Json& trajectory) {
  if (!trajectory.contains("messages") || !trajectory["messages"].is_array()) {
    return std::unexpected("no messages array");
  }
  const Json& messages = trajectory["messages"];
  const Json tools =
      trajectory.contains("tools") && trajectory["tools"].is_array() ? trajectory["tools"] : Json::array();
  std::vector<Segment> out;
  auto prompt = [&](std::string text) {
    if (!out.empty() && !out.back().action) {
      out.back().text += text;
    } else {
      out.push_back({std::move(text), false});
    }
  };
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return std::unexpected("messages[" + std::to_string(i) + "]: no role");
    }
    const std::string role = m["role"].get<std::string>();
    const std::string content = m.contains("content") ? text_of(m["content"]) : "";
    if (role == "system" || role == "user") {
      const std::string extra = role == "system" && !tools.empty() ? tools_block(tools) : "";
      prompt("<|im_start|>" + role + "\n" + content + extra + "<|im_end|>\n");
    } else if (role == "assistant") {
      auto calls = m.contains("tool_calls") && m["tool_calls"].is_array() ? calls_text(m["tool_calls"], i)
                                                                          : std::expected<std::string, std::string>("");
      if (!calls) {
        return std::unexpected(calls.error());
      }
      prompt("<|im_start|>assistant\n");
      out.push_back({content + *calls + "<|im_end|>", true});
      prompt("\n");
    } else if (role == "tool") {
      prompt("<|im_start|>user\n<tool_response>\n" + content + "\n</tool_response><|im_end|>\n");
    } else {
      return std::unexpected("messages[" + std::to_string(i) + "]: unknown role '" + role +
                             "' (system, user, assistant, tool)");
    }
  }
  return out;
}

std::expected<Sequence, std::string> tokenize_trajectory(const Json& trajectory, const model::Tokenizer& tokenizer,
                                                         int64_t max_tokens) {
  if (!trajectory.contains("reward") || !trajectory["reward"].is_object() || !trajectory["reward"].contains("value") ||
      !trajectory["reward"]["value"].is_number()) {
    return std::unexpected("no reward.value");
  }
  auto segments = chatml_segments(trajectory);
  if (!segments) {
    return std::unexpected(segments.error());
  }
  Sequence seq;
  seq.id = trajectory.value("id", "");
  seq.task_id = trajectory.contains("task_id") && trajectory["task_id"].is_string()
                    ? trajectory["task_id"].get<std::string>()
                    : seq.id.substr(0, seq.id.rfind('#'));
  seq.reward = trajectory["reward"]["value"].get<double>();
  std::string whole;
  for (const Segment& s : *segments) {
    for (int32_t id : tokenizer.encode(s.text)) {
      seq.ids.push_back(id);
      seq.mask.push_back(s.action ? 1 : 0);
    }
    whole += s.text;
  }
  if (seq.action_tokens() == 0) {
    return std::unexpected("no assistant tokens");
  }
  const std::vector<int32_t> expected = tokenizer.encode(whole);
  const size_t common = std::min(expected.size(), seq.ids.size());
  const size_t first_diff =
      std::mismatch(expected.begin(), expected.begin() + common, seq.ids.begin()).first - expected.begin();
  if (first_diff < common || expected.size() != seq.ids.size()) {
    return std::unexpected("turn-by-turn tokens differ from the whole conversation's at token " +
                           std::to_string(first_diff) + " (" + std::to_string(seq.ids.size()) + " tokens against " +
                           std::to_string(expected.size()) + ")");
  }
  if (static_cast<int64_t>(seq.ids.size()) > max_tokens) {
    return std::unexpected(std::to_string(seq.ids.size()) + " tokens, over the maximum context of " +
                           std::to_string(max_tokens) + " (sequences are not truncated)");
  }
  return seq;
}

}  // namespace ca::train
