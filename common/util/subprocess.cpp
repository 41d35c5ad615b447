// Subprocesses through posix_spawn, two pipes and poll (see subprocess.h).
#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <utility>

#include "util/signals.h"

extern char** environ;

namespace ca {
namespace {

using Clock = std::chrono::steady_clock;

// How long to keep reading after the program exited, for output still in the
// pipes; a process that escaped the group could otherwise hold them open for ever.
constexpr auto k_drain_time = std::chrono::seconds(1);

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return m_fd; }
  void reset() {
    if (m_fd >= 0) close(m_fd);
    m_fd = -1;
  }

 private:
  int m_fd;
};

// One pipe being read into one string.
struct Stream {
  Fd* fd;
  std::string* text;
};

// posix_spawn's attribute and file-action objects, destroyed on scope exit.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

std::string_view name_of(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

// The caller's environment with `overrides` applied.
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view value = *entry;
    bool overridden =
        std::ranges::any_of(overrides, [&](const std::string& o) { return name_of(o) == name_of(value); });
    if (!overridden) result.emplace_back(value);
  }
  result.insert(result.end(), overrides.begin(), overrides.end());
  return result;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

std::expected<pid_t, std::string> spawn(const std::vector<std::string>& argv, const SubprocessOptions& options,
                                        int out_fd, int err_fd) {
  SpawnSetup setup;
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&setup.attr, &empty);
  // Our tools ignore SIGPIPE; a child that inherited that would not die on a closed pipe.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  // A group of its own, so a timeout also kills whatever the program started.
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&setup.actions, err_fd, 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, options.cwd.c_str());

  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(options.env);
  std::vector<char*> arg_ptrs = c_strings(args);
  std::vector<char*> env_ptrs = c_strings(env);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0].c_str(), &setup.actions, &setup.attr, arg_ptrs.data(), env_ptrs.data());
  if (rc != 0) {
    std::string where = options.cwd.empty() ? "" : " in " + options.cwd;
    return std::unexpected(argv[0] + ": cannot run" + where + ": " + std::strerror(rc));
  }
  return pid;
}

// True once the program has exited; it stays a zombie (WNOWAIT), which keeps
// its pid, and so its process-group id, from being reused while we kill the group.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

// Hands the whole lines of `text` to `on_line` and keeps the rest; at end of file, the rest too.
void pass_lines(std::string& text, const std::function<void(std::string)>& on_line, bool at_end) {
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    on_line(text.substr(start, end - start));
  text.erase(0, start);
  if (at_end && !text.empty()) on_line(std::exchange(text, std::string()));
}

// Waits up to `wait_ms` for output and appends what arrived; closes streams at end of file. Stdout's lines go to
// `on_line` when one is given.
void pump(Stream (&streams)[2], int wait_ms, size_t max_output, const std::function<void(std::string)>& on_line) {
  pollfd fds[2];
  Stream* owners[2];
  nfds_t count = 0;
  for (Stream& stream : streams) {
    if (stream.fd->get() < 0) continue;
    fds[count] = {stream.fd->get(), POLLIN, 0};
    owners[count++] = &stream;
  }
  if (poll(fds, count, wait_ms) <= 0) return;
  for (nfds_t i = 0; i < count; ++i) {
    if (fds[i].revents == 0) continue;
    char buffer[65536];
    ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    const bool lines = on_line && owners[i] == &streams[0];
    if (got <= 0) {
      owners[i]->fd->reset();
      if (lines) pass_lines(*owners[i]->text, on_line, true);
      continue;
    }
    std::string& text = *owners[i]->text;
    // A line handed on is not kept, so only one line's worth counts against max_output.
    size_t room = max_output - std::min(max_output, text.size());
    text.append(buffer, std::min(room, static_cast<size_t>(got)));
    if (lines) pass_lines(text, on_line, false);
  }
}

}  // namespace

std::string SubprocessResult::describe() const {
  if (timed_out) return "timed out";
  if (interrupted) return "interrupted";
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exited with status " + std::to_string(exit_code);
}

std::expected<SubprocessResult, std::string> run_subprocess(const std::vector<std::string>& argv,
                                                            const SubprocessOptions& options) {
  if (argv.empty()) return std::unexpected("run_subprocess: no program given");
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    return std::unexpected(std::string("cannot create pipe: ") + std::strerror(errno));
  Fd out_read(out_pipe[0]);
  Fd out_write(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0)
    return std::unexpected(std::string("cannot create pipe: ") + std::strerror(errno));
  Fd err_read(err_pipe[0]);
  Fd err_write(err_pipe[1]);

  auto pid = spawn(argv, options, out_write.get(), err_write.get());
  // Only the child may hold the write ends, or the pipes never reach end of file.
  out_write.reset();
  err_write.reset();
  if (!pid) return std::unexpected(pid.error());

  SubprocessResult result;
  Stream streams[2] = {{&out_read, &result.out}, {&err_read, &result.err}};
  std::optional<Clock::time_point> deadline;
  if (options.timeout.count() > 0) deadline = Clock::now() + options.timeout;
  std::optional<Clock::time_point> drain_deadline;
  while (true) {
    if (!drain_deadline && has_exited(*pid)) {
      kill(-*pid, SIGKILL);  // whatever it left running in its group
      drain_deadline = Clock::now() + k_drain_time;
    }
    bool reading = out_read.get() >= 0 || err_read.get() >= 0;
    if (drain_deadline && (!reading || Clock::now() >= *drain_deadline)) break;
    if (!drain_deadline && !result.timed_out && !result.interrupted) {
      if (deadline && Clock::now() >= *deadline) {
        result.timed_out = true;
        kill(-*pid, SIGKILL);
      } else if (interrupted()) {
        result.interrupted = true;
        kill(-*pid, SIGKILL);
      }
    }
    // With the pipes closed only the exit is left to notice, so look often.
    pump(streams, reading ? 50 : 2, options.max_output, options.on_output_line);
  }

  if (options.on_output_line) pass_lines(result.out, options.on_output_line, true);  // cut off by the drain time
  int status = 0;
  pid_t waited = -1;
  do {
    waited = waitpid(*pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) return result;  // reaped elsewhere (SIGCHLD ignored): status unknown
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace ca
