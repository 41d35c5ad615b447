// The server: HTTP through cpp-httplib, requests parsed and checked here, generation on one worker thread that
// batches what may be batched.
#include "model/serve.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace ca::model {
namespace {

const char* error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 404:
      return "not_found_error";
    case 405:
      return "method_not_allowed";
    case 413:
      return "request_too_large";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// The string at `key` of an object, "" when it is absent or not a string (Json::value would throw).
std::string string_at(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::unexpected<ServeReply> bad(const std::string& message, const std::string& param = "",
                                const std::string& code = "") {
  return std::unexpected(openai_error(400, message, param, code));
}

// A message's content as the template takes it: a string, or the text parts of an array joined.
std::expected<Json, std::string> message_content(const Json& content) {
  if (content.is_string() || content.is_null()) {
    return content;
  }
  if (!content.is_array()) {
    return std::unexpected("must be a string, null or an array of content parts");
  }
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object() || string_at(part, "type") != "text" || !part.contains("text") || !part["text"].is_string()) {
      return std::unexpected("only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

std::expected<Json, ServeReply> check_messages(const Json* messages) {
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return bad("'messages' must be a non-empty array of messages", "messages");
  }
  Json out = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad(where + ": a message is an object with a string 'role'", where);
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") {
      role = "system";  // OpenAI's newer name; chat templates know system
    }
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return bad(where + ".role: '" + role + "' is not one of system, developer, user, assistant, tool", where);
    }
    Json message = m;
    message["role"] = role;
    auto content = message_content(m.value("content", Json(nullptr)));
    if (!content) {
      return bad(where + ".content: " + content.error(), where + ".content");
    }
    message["content"] = *content;
    if (m.contains("tool_calls") && !m["tool_calls"].is_array() && !m["tool_calls"].is_null()) {
      return bad(where + ".tool_calls: must be an array", where + ".tool_calls");
    }
    out.push_back(std::move(message));
  }
  return out;
}

std::expected<Json, ServeReply> check_tools(const Json* tools) {
  if (tools == nullptr || tools->is_null()) {
    return Json::array();
  }
  if (!tools->is_array()) {
    return bad("'tools' must be an array of function tools", "tools");
  }
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& t = (*tools)[i];
    const bool named = t.is_object() && string_at(t, "type") == "function" && t.contains("function") &&
                       t["function"].is_object() && t["function"].contains("name") && t["function"]["name"].is_string();
    if (!named) {
      return bad("tools[" + std::to_string(i) + "]: expected {\"type\": \"function\", \"function\": {\"name\": ...}}",
                 "tools");
    }
  }
  return *tools;
}

// A number field: absent gives `fallback`; present must be a number in [lo, hi].
std::expected<double, ServeReply> number_field(const Json& body, const char* key, double fallback, double lo,
                                               double hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_number() || it->get<double>() < lo || it->get<double>() > hi) {
    return bad(std::string("'") + key + "' must be a number from " + python_json(lo) + " to " + python_json(hi), key);
  }
  return it->get<double>();
}

std::expected<int64_t, ServeReply> int_field(const Json& body, const char* key, int64_t fallback, int64_t lo,
                                             int64_t hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
    return bad(std::string("'") + key + "' must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi),
               key);
  }
  return it->get<int64_t>();
}

std::expected<bool, ServeReply> bool_field(const Json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return false;
  }
  if (!it->is_boolean()) {
    return bad(std::string("'") + key + "' must be true or false", key);
  }
  return it->get<bool>();
}

Json token_entry(const Tokenizer& tok, int32_t id, double logprob, bool as_id) {
  const std::string raw = tok.token_bytes(id);
  Json bytes = Json::array();
  for (unsigned char c : raw) {
    bytes.push_back(static_cast<int>(c));
  }
  const std::array<int32_t, 1> one = {id};
  return {{"token", as_id ? "token_id:" + std::to_string(id) : tok.decode(one)},
          {"logprob", logprob},
          {"bytes", std::move(bytes)}};
}

// Generation requests queued by the connection threads, served by one worker that batches compatible ones.
class Batcher {
 public:
  using Result = std::expected<std::vector<Completion>, std::string>;

  Batcher(const ChatModel& model, int64_t max_batch) : m_model(model), m_max_batch(max_batch) {
    m_worker = std::thread([this] { work(); });
  }
  ~Batcher() {
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_wake.notify_all();
    m_worker.join();
  }

  /// The request's n completions, when the worker gets to it.
  Result run(const ChatRequest& request) {
    Pending pending{&request, {}};
    std::future<Result> done = pending.promise.get_future();
    {
      std::lock_guard lock(m_mutex);
      m_queue.push_back(std::move(pending));
    }
    m_wake.notify_one();
    return done.get();
  }

 private:
  struct Pending {
    const ChatRequest* request;
    std::promise<Result> promise;
  };

  // Whether two requests may share one generation: greedy ones (no draws), or unseeded sampled ones with the same
  // distribution settings. A seeded request is generated alone, so that its seed alone decides its draws.
  static bool compatible(const ChatRequest& a, const ChatRequest& b) {
    const SamplingParams &x = a.sampling, &y = b.sampling;
    if (x.temperature <= 0 || y.temperature <= 0) {
      return x.temperature <= 0 && y.temperature <= 0;
    }
    return !a.seeded && !b.seeded && x.temperature == y.temperature && x.top_p == y.top_p && x.top_k == y.top_k;
  }

  void work() {
    for (;;) {
      std::vector<Pending> batch;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
        if (m_queue.empty()) {
          return;
        }
        batch.push_back(std::move(m_queue.front()));
        m_queue.pop_front();
        int64_t sequences = batch[0].request->n;
        size_t longest = batch[0].request->prompt.size();
        int64_t most = batch[0].request->sampling.max_tokens;
        for (auto it = m_queue.begin(); it != m_queue.end();) {
          const ChatRequest& r = *it->request;
          const size_t l = std::max(longest, r.prompt.size());
          const int64_t m = std::max(most, r.sampling.max_tokens);
          const bool fits = static_cast<int64_t>(l) + m <= m_model.context_length();
          if (compatible(*batch[0].request, r) && sequences + r.n <= m_max_batch && fits) {
            sequences += r.n;
            longest = l;
            most = m;
            batch.push_back(std::move(*it));
            it = m_queue.erase(it);
          } else {
            ++it;
          }
        }
      }
      generate(batch);
    }
  }

  void generate(std::vector<Pending>& batch) {
    const ChatRequest& first = *batch[0].request;
    SamplingParams params = first.sampling;
    std::vector<std::vector<int32_t>> prompts;
    for (const Pending& p : batch) {
      params.max_tokens = std::max(params.max_tokens, p.request->sampling.max_tokens);
      params.top_logprobs = std::max(params.top_logprobs, p.request->sampling.top_logprobs);
      prompts.insert(prompts.end(), static_cast<size_t>(p.request->n), p.request->prompt);
    }
    if (batch.size() > 1 && params.temperature > 0) {
      params.seed = std::random_device{}();  // unseeded requests: any draw will do
    }
    Result all = m_model.generate(prompts, params);
    size_t next = 0;
    for (Pending& p : batch) {
      if (!all) {
        p.promise.set_value(std::unexpected(all.error()));
        continue;
      }
      std::vector<Completion> mine;
      for (int64_t i = 0; i < p.request->n; ++i) {
        Completion c = std::move((*all)[next++]);
        // A batch-mate's larger budget let this sequence run on; what it asked for is its prefix.
        const auto limit = static_cast<size_t>(p.request->sampling.max_tokens);
        if (c.ids.size() > limit) {
          c.ids.resize(limit);
          c.logprobs.resize(limit);
          c.finish_reason = "length";
        }
        c.top_logprobs.resize(std::min(c.top_logprobs.size(), limit));
        for (auto& alternatives : c.top_logprobs) {
          alternatives.resize(std::min(alternatives.size(), static_cast<size_t>(p.request->sampling.top_logprobs)));
        }
        mine.push_back(std::move(c));
      }
      p.promise.set_value(std::move(mine));
    }
  }

  const ChatModel& m_model;
  const int64_t m_max_batch;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<Pending> m_queue;
  bool m_stopping = false;
  std::thread m_worker;
};

std::string response_id() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char text[40];
  std::snprintf(text, sizeof text, "chatcmpl-%08llx%08llx", static_cast<unsigned long long>(salt & 0xffffffff),
                static_cast<unsigned long long>(counter++));
  return text;
}

// SIGINT and SIGTERM reach whichever thread does not block them (LibTorch's pool started before us), so the
// handler only writes to a pipe that the stopping thread reads.
int g_stop_pipe[2] = {-1, -1};
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signal) {
  g_stop_signal = signal;
  const char byte = 1;
  [[maybe_unused]] ssize_t written = write(g_stop_pipe[1], &byte, 1);
}

void send(httplib::Response& res, const ServeReply& reply) {
  res.status = reply.status;
  res.set_content(reply.body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

}  // namespace

ServeReply openai_error(int status, const std::string& message, const std::string& param, const std::string& code) {
  return {status,
          {{"error",
            {{"message", message},
             {"type", error_type(status)},
             {"param", param.empty() ? Json(nullptr) : Json(param)},
             {"code", code.empty() ? Json(nullptr) : Json(code)}}}}};
}

std::expected<ChatRequest, ServeReply> parse_chat_request(const ChatModel& model, const ServeOptions& options,
                                                          const std::string& body) {
  Json request = Json::parse(body, nullptr, false);
  if (request.is_discarded()) {
    return bad("the body is not JSON: " + json_parse_error(body));
  }
  if (!request.is_object()) {
    return bad("the body must be a JSON object");
  }
  if (auto it = request.find("model"); it != request.end() && !it->is_null()) {
    if (!it->is_string()) {
      return bad("'model' must be a string", "model");
    }
    const std::string name = it->get<std::string>();
    if (!name.empty() && name != options.model_name) {
      return std::unexpected(
          openai_error(404, "The model `" + name + "` does not exist; this server serves `" + options.model_name + "`.",
                       "model", "model_not_found"));
    }
  }
  if (auto it = request.find("stream"); it != request.end() && *it != false && !it->is_null()) {
    return bad("'stream': streaming is not supported by this server; send stream false", "stream");
  }
  auto messages = check_messages(request.contains("messages") ? &request["messages"] : nullptr);
  if (!messages) {
    return std::unexpected(messages.error());
  }
  auto tools = check_tools(request.contains("tools") ? &request["tools"] : nullptr);
  if (!tools) {
    return std::unexpected(tools.error());
  }
  ChatRequest out;
  const Json choice = request.value("tool_choice", Json("auto"));
  if (choice == "none") {
    out.parse_tool_calls = false;
  } else if (choice != "auto" && !choice.is_null()) {
    return bad("'tool_choice': only \"auto\" and \"none\" are supported", "tool_choice");
  }
  out.parse_tool_calls = out.parse_tool_calls && !tools->empty();

  auto temperature = number_field(request, "temperature", 1.0, 0.0, 2.0);
  auto top_p = number_field(request, "top_p", 1.0, 0.0, 1.0);
  auto top_k = int_field(request, "top_k", 0, -1, 1 << 30);
  auto n = int_field(request, "n", 1, 1, options.max_n);
  auto top_logprobs = int_field(request, "top_logprobs", 0, 0, 20);
  auto logprobs = bool_field(request, "logprobs");
  auto as_ids = bool_field(request, "return_tokens_as_token_ids");
  auto token_ids = bool_field(request, "return_token_ids");
  const char* budget = request.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  auto max_tokens = int_field(request, budget, options.default_max_tokens, 1, int64_t{1} << 40);
  for (const auto* failed : {&temperature, &top_p}) {
    if (!*failed) {
      return std::unexpected(failed->error());
    }
  }
  for (const auto* failed : {&top_k, &n, &top_logprobs, &max_tokens}) {
    if (!*failed) {
      return std::unexpected(failed->error());
    }
  }
  for (const auto* failed : {&logprobs, &as_ids, &token_ids}) {
    if (!*failed) {
      return std::unexpected(failed->error());
    }
  }
  if (*top_p == 0) {
    return bad("'top_p' must be greater than 0", "top_p");
  }
  if (*top_logprobs > 0 && !*logprobs) {
    return bad("'top_logprobs' needs 'logprobs' true", "top_logprobs");
  }
  if (auto it = request.find("seed"); it != request.end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      return bad("'seed' must be an integer", "seed");
    }
    out.seeded = true;
    out.sampling.seed = static_cast<uint64_t>(it->get<int64_t>());
  } else {
    out.sampling.seed = std::random_device{}();
  }
  out.sampling.temperature = *temperature;
  out.sampling.top_p = *top_p;
  out.sampling.top_k = std::max<int64_t>(*top_k, 0);
  out.sampling.top_logprobs = *top_logprobs;
  out.n = *n;
  out.logprobs = *logprobs;
  out.tokens_as_ids = *as_ids;
  out.return_token_ids = *token_ids;

  auto prompt = model.prompt_ids(*messages, *tools);
  if (!prompt) {
    return bad(prompt.error(), "messages");
  }
  const int64_t left = model.context_length() - static_cast<int64_t>(prompt->size());
  if (left <= 0) {
    return bad("the prompt is " + std::to_string(prompt->size()) + " tokens; this model's context is " +
                   std::to_string(model.context_length()) + " tokens",
               "messages", "context_length_exceeded");
  }
  out.sampling.max_tokens = std::min(*max_tokens, left);  // as llama.cpp's server: the budget is what is left
  out.prompt = std::move(*prompt);
  return out;
}

Json chat_completion_body(const ChatModel& model, const ServeOptions& options, const ChatRequest& request,
                          const std::vector<Completion>& completions, const std::string& id) {
  const Tokenizer& tok = model.generator().tokenizer();
  Json choices = Json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < completions.size(); ++i) {
    const Completion& c = completions[i];
    completion_tokens += static_cast<int64_t>(c.ids.size());
    ChatReply reply = ChatModel::reply(model.text(c), request.parse_tool_calls);
    Json message = {{"role", "assistant"}, {"content", reply.content}};
    if (!reply.tool_calls.empty()) {
      Json calls = Json::array();
      for (size_t k = 0; k < reply.tool_calls.size(); ++k) {
        const ToolCall& call = reply.tool_calls[k];
        calls.push_back({{"id", "call_" + id.substr(9) + "_" + std::to_string(i) + "_" + std::to_string(k)},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
      if (reply.content.empty()) {
        message["content"] = nullptr;
      }
    }
    Json choice = {{"index", i},
                   {"message", std::move(message)},
                   {"logprobs", nullptr},
                   {"finish_reason", reply.tool_calls.empty() ? c.finish_reason : "tool_calls"}};
    if (request.logprobs) {
      Json content = Json::array();
      for (size_t t = 0; t < c.ids.size(); ++t) {
        Json entry = token_entry(tok, c.ids[t], c.logprobs[t], request.tokens_as_ids);
        entry["top_logprobs"] = Json::array();
        if (t < c.top_logprobs.size()) {
          for (const auto& [alt, lp] : c.top_logprobs[t]) {
            entry["top_logprobs"].push_back(token_entry(tok, alt, lp, request.tokens_as_ids));
          }
        }
        content.push_back(std::move(entry));
      }
      choice["logprobs"] = {{"content", std::move(content)}};
    }
    if (request.return_token_ids) {
      choice["token_ids"] = c.ids;
    }
    choices.push_back(std::move(choice));
  }
  const auto prompt_tokens = static_cast<int64_t>(request.prompt.size());
  Json body = {{"id", id},
               {"object", "chat.completion"},
               {"created", static_cast<int64_t>(std::time(nullptr))},
               {"model", options.model_name},
               {"choices", std::move(choices)},
               {"usage",
                {{"prompt_tokens", prompt_tokens},
                 {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  if (request.return_token_ids) {
    body["prompt_token_ids"] = request.prompt;
  }
  return body;
}

std::expected<bool, std::string> serve(std::shared_ptr<const ChatModel> model, const ServeOptions& options,
                                       const std::function<void(int port)>& on_listening) {
  if (g_stop_pipe[0] < 0 && pipe2(g_stop_pipe, O_CLOEXEC) != 0) {
    return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  }
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGINT, SIGTERM}) {
    sigaction(s, &action, nullptr);
  }
  std::signal(SIGPIPE, SIG_IGN);

  httplib::Server server;
  const int threads = std::max(1, options.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_payload_max_length(size_t{64} << 20);
  Batcher batcher(*model, options.max_batch);

  server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    auto request = parse_chat_request(*model, options, req.body);
    if (!request) {
      send(res, request.error());
      return;
    }
    auto completions = batcher.run(*request);
    if (!completions) {
      send(res, openai_error(500, "generation failed: " + completions.error()));
      return;
    }
    send(res, {200, chat_completion_body(*model, options, *request, *completions, response_id())});
  });
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    Json entry = {{"id", options.model_name},
                  {"object", "model"},
                  {"created", static_cast<int64_t>(std::time(nullptr))},
                  {"owned_by", "cuda-agent"},
                  {"max_model_len", model->context_length()}};
    send(res, {200, {{"object", "list"}, {"data", Json::array({entry})}}});
  });
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) { send(res, {200, Json::object()}); });
  server.Get("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    send(res, openai_error(405, "use POST for /v1/chat/completions"));
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) {  // httplib's own answers (no route, a body past the limit) as OpenAI errors
      send(res, openai_error(res.status, res.status == 404
                                             ? "no route " + req.method + " " + req.path
                                             : "the request was refused (HTTP " + std::to_string(res.status) + ")"));
    }
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr failure) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send(res, openai_error(500, "internal error: " + what));
  });

  const int port = options.port == 0 ? server.bind_to_any_port(options.host)
                                     : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0) {
    return std::unexpected("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                           std::strerror(errno));
  }
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    char byte = 0;
    while (read(g_stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    // stop() acts on a running server only: a signal that comes before listen_after_bind has begun waits for that.
    while (!finished && !server.is_running()) {
      std::this_thread::yield();
    }
    server.stop();
  });
  on_listening(port);
  const bool listened = server.listen_after_bind();
  finished = true;
  const char byte = 0;  // when the server ended by itself, the stopper still waits
  [[maybe_unused]] ssize_t written = write(g_stop_pipe[1], &byte, 1);
  stopper.join();
  const bool by_signal = g_stop_signal != 0;
  if (!listened && !by_signal) {
    return std::unexpected("the server stopped: " + std::string(std::strerror(errno)));
  }
  return by_signal;
}

}  // namespace ca::model
