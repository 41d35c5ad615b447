#include "policy/replay_policy.h"

namespace ca {
namespace {

class ReplayPolicy : public Policy {
 public:
  ReplayPolicy(std::shared_ptr<const std::vector<Json>> trajectories, std::string path)
      : m_trajectories(std::move(trajectories)), m_path(std::move(path)) {}

  void begin(const EpisodeInfo& info) override {
    m_turns.clear();
    m_next = 0;
    m_missing.clear();
    std::string task_id = info.task.is_object() && info.task.contains("id") && info.task["id"].is_string()
                              ? info.task["id"].get<std::string>()
                              : "";
    const Json* chosen = find(task_id, info.sample);
    if (!chosen) {
      m_missing = m_path + ": no recorded trajectory for task '" + task_id + "'";
      return;
    }
    for (const auto& message : (*chosen)["messages"]) {
      if (message.is_object() && message.value("role", Json()) == "assistant") m_turns.push_back(message);
    }
  }

  std::expected<AssistantTurn, PolicyError> next(const Json&, const Json&) override {
    if (!m_missing.empty()) return std::unexpected(PolicyError{m_missing});
    AssistantTurn turn;
    if (m_next >= m_turns.size()) {
      turn.finish_reason = "replay_end";
      return turn;
    }
    const Json& message = m_turns[m_next++];
    if (message.contains("content") && message["content"].is_string())
      turn.content = message["content"].get<std::string>();
    turn.finish_reason = "replay";
    auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array()) return turn;
    for (const auto& call : *calls) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      const Json& function = call["function"];
      ToolCall tool_call;
      if (call.contains("id") && call["id"].is_string()) tool_call.id = call["id"].get<std::string>();
      if (function.contains("name") && function["name"].is_string())
        tool_call.name = function["name"].get<std::string>();
      auto arguments = function.find("arguments");
      if (arguments != function.end()) {
        tool_call.arguments = arguments->is_string() ? arguments->get<std::string>()
                                                     : arguments->dump(-1, ' ', false, Json::error_handler_t::replace);
      }
      turn.tool_calls.push_back(std::move(tool_call));
    }
    return turn;
  }

  Json describe() const override {
    return {{"name", "replay"}, {"file", m_path}, {"model", nullptr}, {"sampling", nullptr}};
  }

 private:
  static std::string task_id_of(const Json& trajectory) {
    auto id = trajectory.find("task_id");
    return id != trajectory.end() && id->is_string() ? id->get<std::string>() : "";
  }

  const Json* find(const std::string& task_id, int sample) const {
    const Json* same_task = nullptr;
    const Json* any_task = nullptr;
    for (const auto& trajectory : *m_trajectories) {
      std::string recorded = task_id_of(trajectory);
      if (recorded == task_id && trajectory.value("sample", Json()) == sample) return &trajectory;
      if (recorded == task_id && !same_task) same_task = &trajectory;
      if (recorded.empty() && !any_task) any_task = &trajectory;
    }
    return same_task ? same_task : any_task;
  }

  std::shared_ptr<const std::vector<Json>> m_trajectories;  // shared by the episodes of a run
  std::string m_path;
  std::vector<Json> m_turns;
  size_t m_next = 0;
  std::string m_missing;
};

}  // namespace

std::expected<std::vector<Json>, std::string> load_trajectories(const std::string& path) {
  auto reader = JsonlReader::open(path);
  if (!reader) return std::unexpected(reader.error());
  std::vector<Json> trajectories;
  Record record;
  std::string message;
  for (;;) {
    auto status = reader->next(record, message);
    if (status == JsonlReader::Status::end) break;
    if (status == JsonlReader::Status::io_error || status == JsonlReader::Status::interrupted)
      return std::unexpected(path + ": " + message);
    if (status == JsonlReader::Status::bad_record) return std::unexpected(record.where() + ": " + message);
    auto messages = record.value.find("messages");
    if (messages != record.value.end() && messages->is_array()) trajectories.push_back(std::move(record.value));
  }
  if (trajectories.empty()) return std::unexpected(path + ": no trajectory records (records with messages)");
  return trajectories;
}

std::unique_ptr<Policy> make_replay_policy(std::shared_ptr<const std::vector<Json>> trajectories, std::string path) {
  return std::make_unique<ReplayPolicy>(std::move(trajectories), std::move(path));
}

}  // namespace ca
