#include "rollout/judge_child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "util/unix_socket.h"

extern char** environ;

namespace ca {

std::expected<JudgeChild, std::string> JudgeChild::start(const std::string& bin_dir, unsigned jobs, double wait_s) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "ca-judge-XXXXXX").string();
  if (!mkdtemp(dir.data())) return std::unexpected(dir + ": cannot make the judge's directory");
  std::string socket = dir + "/judge.sock";
  std::string program = bin_dir + "/ca-judge";
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    fs::remove_all(dir);
    return std::unexpected("cannot make a pipe for the judge");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = {program, "-j", std::to_string(std::max(1u, jobs)), "serve", "--socket", socket};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    fs::remove_all(dir);
    return std::unexpected("cannot start " + program + ": " + std::strerror(spawned));
  }
  JudgeChild child(pid, out[0], dir, socket);
  // Its one line on stdout says it listens; end of file first means it exited (its stderr says why).
  auto line = read_line(out[0], 4096, std::chrono::milliseconds(int64_t(wait_s * 1000)));
  if (!line || line->rfind("listening on", 0) != 0) {
    return std::unexpected(program + " serve did not start: " + (line ? *line : line.error()));
  }
  return child;
}

JudgeChild::JudgeChild(JudgeChild&& other) noexcept
    : m_pid(other.m_pid), m_out(other.m_out), m_dir(std::move(other.m_dir)), m_socket(std::move(other.m_socket)) {
  other.m_pid = -1;
  other.m_out = -1;
  other.m_dir.clear();
}

JudgeChild::~JudgeChild() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGTERM);
    int status = 0;
    // It ends once the request in flight stops at its next interrupt check; 10 s at most, then it is killed.
    for (int i = 0; i < 1000 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i) ::usleep(10000);
    if (::waitpid(m_pid, &status, WNOHANG) == 0) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, &status, 0);
    }
  }
  if (m_out >= 0) ::close(m_out);
  if (!m_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
}

}  // namespace ca
