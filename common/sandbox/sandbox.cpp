// Runs commands under bubblewrap: the argument list, the resource limits, and
// a parent that feeds stdin, collects output and enforces the wall clock, for
// one-shot runs and sessions alike (supervise).
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "util/signals.h"

namespace ca {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t k_max_output = size_t{32} << 20;        // per stream; the rest is read and dropped
constexpr auto k_drain_grace = std::chrono::seconds(5);  // after exit or kill, for the pipes to close
constexpr int k_max_depth = 256;                         // of a writable tree given to the sandbox user
constexpr int k_status_fd = 3;                           // bwrap --json-status-fd in the child
constexpr int k_exec_error_fd = 4;                       // the child reports a failed exec here
// What programs need from /etc to start (the dynamic linker's cache, user
// names, alternatives symlinks); the rest of /etc holds host secrets.
const char* const k_etc_files[] = {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",  "/etc/alternatives",
                                   "/etc/passwd",      "/etc/group",      "/etc/nsswitch.conf", "/etc/localtime"};
// Devices named in CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: one node's GPUs.
constexpr int k_mps_devices = 8;
// How often, at most, the parent walks the writable paths for SandboxLimits::disk_bytes.
constexpr auto k_disk_check_interval = std::chrono::milliseconds(10);
const char* const k_system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

void add(std::vector<std::string>& args, std::initializer_list<std::string> words) {
  args.insert(args.end(), words);
}

bool contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-caps, /dev/dri.
std::vector<std::string> gpu_devices() {
  std::vector<std::string> devices;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("nvidia") || name == "dri") devices.push_back(entry.path().string());
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

// Gives a writable tree to k_sandbox_uid. Walks with openat(O_NOFOLLOW) and
// fchownat(AT_SYMLINK_NOFOLLOW) so that a symlink the sandbox left there (or
// swapped in for a directory) is never followed out of the tree.
std::expected<void, std::string> chown_tree(int parent_fd, const char* name, const std::string& path, int depth) {
  if (depth > k_max_depth) return std::unexpected(path + ": nested deeper than " + std::to_string(k_max_depth));
  if (::fchownat(parent_fd, name, k_sandbox_uid, k_sandbox_uid, AT_SYMLINK_NOFOLLOW) != 0) {
    return std::unexpected(path + ": cannot give it to the sandbox user: " + std::strerror(errno));
  }
  int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {};  // a file or a symlink: nothing below it
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return std::unexpected(path + ": " + std::strerror(errno));
  }
  std::expected<void, std::string> result;
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    result = chown_tree(::dirfd(dir), entry->d_name, path + "/" + entry->d_name, depth + 1);
    if (!result) break;
  }
  ::closedir(dir);
  return result;
}

// Whether k_sandbox_uid may read `path` (and enter it, for a directory). Only
// the mounted path's own mode matters: bwrap makes its parents.
bool sandbox_user_can_read(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return false;
  int shift = info.st_uid == k_sandbox_uid ? 6 : info.st_gid == k_sandbox_uid ? 3 : 0;
  unsigned bits = (info.st_mode >> shift) & 7u;
  return (bits & 4u) != 0 && (!S_ISDIR(info.st_mode) || (bits & 1u) != 0);
}

// Absolute, symlink-free paths, so that each is mounted where the command sees it.
std::expected<SandboxSpec, std::string> resolve(const SandboxSpec& spec) {
  if (spec.argv.empty()) return std::unexpected("no command to run");
  SandboxSpec resolved = spec;
  std::vector<std::pair<std::string*, std::string_view>> paths = {{&resolved.workdir, "workdir"}};
  for (auto& path : resolved.writable) paths.emplace_back(&path, "writable path");
  for (auto& path : resolved.readable) paths.emplace_back(&path, "readable path");
  for (auto [path, what] : paths) {
    std::error_code ec;
    fs::path real = fs::canonical(*path, ec);
    if (ec) return std::unexpected(std::string(what) + " " + *path + ": " + ec.message());
    *path = real.string();
  }
  return resolved;
}

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : m_fd(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.m_fd, -1));
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return m_fd; }
  void reset(int fd = -1) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = fd;
  }

 private:
  int m_fd;
};

// A pipe whose ends sit at fd 10 or above, so that the child's dup2 onto 0-4
// never overwrites one of them even when the harness runs with 0-2 closed.
std::expected<std::pair<UniqueFd, UniqueFd>, std::string> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  UniqueFd read_end(::fcntl(fds[0], F_DUPFD_CLOEXEC, 10)), write_end(::fcntl(fds[1], F_DUPFD_CLOEXEC, 10));
  ::close(fds[0]);
  ::close(fds[1]);
  if (read_end.get() < 0 || write_end.get() < 0) return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  return std::pair{std::move(read_end), std::move(write_end)};
}

struct Limit {
  int resource;
  rlim_t soft, hard;
};

std::vector<Limit> rlimits(const SandboxSpec& spec) {
  const SandboxLimits& limits = spec.limits;
  auto cpu = static_cast<rlim_t>(std::max(1.0, std::ceil(limits.cpu_s)));
  auto memory = static_cast<rlim_t>(limits.memory_bytes);
  auto processes = static_cast<rlim_t>(std::max(1, limits.processes));
  auto file =
      static_cast<rlim_t>(limits.disk_bytes > 0 ? std::min(limits.file_bytes, limits.disk_bytes) : limits.file_bytes);
  // The CUDA driver reserves far more address space than it uses, so a GPU
  // run limits data segments (what malloc and cudaMallocHost grow) instead.
  int memory_resource = spec.gpu ? RLIMIT_DATA : RLIMIT_AS;
  // SIGXCPU at the soft limit, SIGKILL a second later for one that ignores it.
  return {{RLIMIT_CPU, cpu, cpu + 1},
          {memory_resource, memory, memory},
          {RLIMIT_NPROC, processes, processes},
          {RLIMIT_FSIZE, file, file},
          {RLIMIT_CORE, 0, 0}};
}

struct Stream {
  UniqueFd fd;
  std::string* text;
  bool truncated = false;
};

// Reads once (so that a flood cannot keep the caller from its clock);
// returns false at end of file or on an error.
bool drain(Stream& stream) {
  char buffer[65536];
  ssize_t n = ::read(stream.fd.get(), buffer, sizeof buffer);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  size_t room = k_max_output - std::min(k_max_output, stream.text->size());
  stream.text->append(buffer, std::min(room, static_cast<size_t>(n)));
  stream.truncated = stream.truncated || static_cast<size_t>(n) > room;
  return n > 0;
}

// What most likely ended a failed command, from its signal and what it said.
std::string limit_hit(const SandboxResult& result, const SandboxLimits& limits, double cpu_used, bool truncated) {
  if (result.exit_code == 0 && !result.timed_out) return truncated ? "output" : "";
  if (result.signal == SIGXCPU || (result.signal == SIGKILL && !result.timed_out && cpu_used >= limits.cpu_s))
    return "cpu";
  if (result.signal == SIGXFSZ || contains(result.err, "File too large")) return "file size";
  for (std::string_view sign :
       {"MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory", "memory exhausted"}) {
    if (contains(result.err, sign)) return "memory";
  }
  if (contains(result.err, "Resource temporarily unavailable")) return "processes";  // EAGAIN from fork or clone
  if (result.timed_out) return "wall";
  return truncated ? "output" : "";
}

struct Child {
  pid_t pid = -1;
  int wait_status = 0;
  rusage usage{};
  bool reaped = false;
};

// Forks and execs bwrap with the limits set; fails when exec fails.
std::expected<Child, std::string> start(const std::vector<std::string>& args, const SandboxSpec& spec, int stdin_fd,
                                        int out_fd, int err_fd, int status_fd) {
  auto exec_error = make_pipe();
  if (!exec_error) return std::unexpected(exec_error.error());
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<Limit> limits = rlimits(spec);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  // The command's share of the cores (SandboxSpec::cpus), chosen here: the child may only make system calls.
  cpu_set_t share;
  CPU_ZERO(&share);
  cpu_set_t own;
  bool narrow = spec.cpus > 0 && ::sched_getaffinity(0, sizeof own, &own) == 0 && spec.cpus < CPU_COUNT(&own);
  for (int cpu = 0, taken = 0; narrow && cpu < CPU_SETSIZE && taken < spec.cpus; ++cpu) {
    if (CPU_ISSET(cpu, &own)) {
      CPU_SET(cpu, &share);
      ++taken;
    }
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return std::unexpected(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a harness killed outright takes bwrap, and so the sandbox, with it
    if (::getppid() != parent) ::_exit(127);
    ::dup2(stdin_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::dup2(status_fd, k_status_fd);
    ::dup2(exec_error->second.get(), k_exec_error_fd);
    ::fcntl(k_exec_error_fd, F_SETFD, FD_CLOEXEC);
    ::close_range(k_exec_error_fd + 1, ~0U, 0);
    for (const Limit& limit : limits) {
      rlimit value{limit.soft, limit.hard};
      ::setrlimit(limit.resource, &value);
    }
    if (narrow && ::sched_setaffinity(0, sizeof share, &share) != 0) ::_exit(127);
    // The harness may ignore SIGPIPE or block signals; the command should not inherit that.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &default_action, nullptr);
    ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
    ::execv(argv[0], argv.data());
    int error = errno;
    ssize_t ignored = ::write(k_exec_error_fd, &error, sizeof error);
    (void)ignored;
    ::_exit(127);
  }
  exec_error->second.reset();
  int error = 0;
  ssize_t n;
  while ((n = ::read(exec_error->first.get(), &error, sizeof error)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof error)) {
    ::waitpid(pid, nullptr, 0);
    return std::unexpected("cannot run " + args[0] + ": " + std::strerror(error));
  }
  return Child{.pid = pid};
}

void kill_sandbox(const Child& child) {
  // bwrap's own children are in its process group; everything in the sandbox's
  // PID namespace dies with bwrap (--die-with-parent and the namespace's init).
  ::kill(-child.pid, SIGKILL);
  ::kill(child.pid, SIGKILL);
}

}  // namespace

// A started sandbox and what its parent watches; run_sandboxed and SandboxSession both supervise one. The streams
// point into `result` and `status_text`, so it stays where it was made (a unique_ptr).
struct SandboxProcess {
  SandboxSpec spec;  // resolved
  Child child;
  UniqueFd stdin_fd;         // -1 once closed (or when stdin is /dev/null)
  std::string pending;       // bytes not yet written to the command's stdin
  bool close_stdin = false;  // close stdin once `pending` is written
  std::string status_text;   // bwrap's --json-status-fd
  SandboxResult result;
  Stream out{UniqueFd(), &result.out}, err{UniqueFd(), &result.err}, status{UniqueFd(), &status_text};
  std::optional<Clock::time_point> give_up;  // set once bwrap exited or was killed: how long to drain the pipes
  bool gone = false;                         // reaped, and its pipes drained or given up on
  bool was_interrupted = false;
  bool paused = false;  // SandboxSession::pause stopped it
  pid_t command = -1;   // the command's own process (host pid), once found; SandboxSession::freeze stops it
  bool frozen = false;
  int64_t disk_at_start = 0;   // the writable paths' usage when it started (limits.disk_bytes)
  bool disk_exceeded = false;  // killed for passing limits.disk_bytes
  Clock::time_point disk_checked{};
};

namespace {

// Blocks SIGPIPE in this thread while the parent writes to the command's stdin, so that a command that closed it
// cannot kill the harness; takes the signals that arrived meanwhile before the old mask returns.
class PipeSignalBlock {
 public:
  PipeSignalBlock() {
    sigemptyset(&m_pipe_signal);
    sigaddset(&m_pipe_signal, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &m_pipe_signal, &m_old_mask);
  }
  ~PipeSignalBlock() {
    timespec no_wait{};
    while (::sigtimedwait(&m_pipe_signal, nullptr, &no_wait) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
  }
  PipeSignalBlock(const PipeSignalBlock&) = delete;
  PipeSignalBlock& operator=(const PipeSignalBlock&) = delete;

 private:
  sigset_t m_pipe_signal, m_old_mask;
};

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Walks one tree for disk_usage: lstat, never following a link; each inode once.
void add_usage(const fs::path& path, std::set<std::pair<dev_t, ino_t>>& seen, int64_t& total, int64_t stop_after,
               int depth) {
  struct stat info;
  if ((stop_after > 0 && total > stop_after) || depth > k_max_depth || ::lstat(path.c_str(), &info) != 0) return;
  if (!seen.insert({info.st_dev, info.st_ino}).second) return;
  total += int64_t(info.st_blocks) * 512 + k_disk_entry_bytes;
  if (!S_ISDIR(info.st_mode)) return;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    add_usage(it->path(), seen, total, stop_after, depth + 1);
  }
}

// Whether the writable paths passed limits.disk_bytes and grew since the start (a tree already over it when the
// command started may still be cleaned by it).
bool over_disk_quota(SandboxProcess& p) {
  const int64_t quota = p.spec.limits.disk_bytes;
  if (quota <= 0 || p.spec.writable.empty()) return false;
  // Once per poll interval at most, however fast output wakes the loop.
  const auto now = Clock::now();
  if (now - p.disk_checked < k_disk_check_interval) return false;
  p.disk_checked = now;
  int64_t used = disk_usage(p.spec.writable, std::max(quota, p.disk_at_start));
  return used > quota && used > p.disk_at_start;
}

// Feeds stdin, collects output and status until bwrap is gone or, while it runs, `enough()` holds; kills the sandbox
// at `deadline` (result.timed_out) or on an interrupt (then fails with "interrupted" once it is gone).
std::expected<void, std::string> supervise(SandboxProcess& p, Clock::time_point deadline,
                                           const std::function<bool()>& enough) {
  PipeSignalBlock block;
  Stream* streams[] = {&p.out, &p.err, &p.status};
  for (;;) {
    if (!p.child.reaped && ::wait4(p.child.pid, &p.child.wait_status, WNOHANG, &p.child.usage) == p.child.pid) {
      p.child.reaped = true;
      p.give_up = Clock::now() + k_drain_grace;
    }
    bool open = std::any_of(std::begin(streams), std::end(streams), [](Stream* s) { return s->fd.get() >= 0; });
    if ((p.child.reaped && !open) || (p.give_up && Clock::now() > *p.give_up)) break;
    bool stop = false;
    if (interrupted() && !p.was_interrupted) {
      stop = p.was_interrupted = true;
    } else if (!p.give_up && enough()) {
      return {};
    } else if (!p.give_up && over_disk_quota(p)) {
      // Checked while it writes, on every wake (at most 20 ms apart): what passes the quota is what one wake's
      // interval of writing holds (docs/EXPLOITS.md, disk share).
      kill_sandbox(p.child);
      p.disk_exceeded = true;
      p.give_up = Clock::now() + k_drain_grace;
    } else {
      stop = !p.result.timed_out && Clock::now() >= deadline;
    }
    if (stop && !p.give_up) {
      kill_sandbox(p.child);
      p.result.timed_out = !p.was_interrupted;
      p.give_up = Clock::now() + k_drain_grace;
    }
    if (p.close_stdin && p.pending.empty()) p.stdin_fd.reset();
    std::vector<pollfd> fds;
    for (Stream* s : streams) fds.push_back({s->fd.get(), POLLIN, 0});
    fds.push_back({p.pending.empty() ? -1 : p.stdin_fd.get(), POLLOUT, 0});
    ::poll(fds.data(), fds.size(), 20);
    for (size_t i = 0; i < 3; ++i) {
      if (fds[i].fd >= 0 && fds[i].revents != 0 && !drain(*streams[i])) streams[i]->fd.reset();
    }
    if (fds[3].fd >= 0 && fds[3].revents != 0) {
      ssize_t n = ::write(p.stdin_fd.get(), p.pending.data(), p.pending.size());
      if (n > 0) p.pending.erase(0, static_cast<size_t>(n));
      if (n < 0 && errno != EAGAIN && errno != EINTR) {  // the command closed its stdin: nothing more goes in
        p.stdin_fd.reset();
        p.pending.clear();
      }
    }
  }
  p.gone = true;
  if (!p.child.reaped) {
    kill_sandbox(p.child);
    ::wait4(p.child.pid, &p.child.wait_status, 0, &p.child.usage);
    p.child.reaped = true;
  }
  if (p.was_interrupted) return std::unexpected("interrupted");
  return {};
}

// The processes whose parent is `pid` (a thread group): from each thread's /proc children list, or, on a kernel
// without those (CONFIG_PROC_CHILDREN), from every process's parent in /proc/N/stat.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code ec;
  fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  if (fs::exists(tasks / std::to_string(pid) / "children", ec)) {
    for (const auto& task : fs::directory_iterator(tasks, ec)) {
      std::ifstream list(task.path() / "children");
      for (pid_t child; list >> child;) children.push_back(child);
    }
    return children;
  }
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat_file(entry.path() / "stat");
    std::string stat_text;
    std::getline(stat_file, stat_text);
    size_t close = stat_text.rfind(')');  // the command name may hold spaces and parentheses
    char state = 0;
    int ppid = 0;
    if (close != std::string::npos && std::sscanf(stat_text.c_str() + close + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == pid) {
      children.push_back(std::stoi(name));
    }
  }
  return children;
}

// Every process in the sandbox: bwrap and its descendants (orphans are reparented to the namespace's init, bwrap's
// child, so nothing inside escapes the walk).
std::vector<pid_t> sandbox_processes(pid_t bwrap) {
  std::vector<pid_t> found = {bwrap};
  for (size_t i = 0; i < found.size(); ++i) {
    for (pid_t child : children_of(found[i])) {
      if (std::find(found.begin(), found.end(), child) == found.end()) found.push_back(child);
    }
  }
  return found;
}

// Sends `signal` to every process in the sandbox, walking again until a walk finds none it has not signalled, so
// that a process forked during a walk is not missed (with SIGSTOP, a stopped process forks no more).
void signal_sandbox(pid_t bwrap, int signal) {
  std::set<pid_t> signalled;
  for (bool more = true; more;) {
    more = false;
    for (pid_t pid : sandbox_processes(bwrap)) {
      if (signalled.insert(pid).second) {
        ::kill(pid, signal);
        more = true;
      }
    }
  }
}

// Whether every thread of `pid` is stopped (or gone): its /proc/PID/task/*/stat states.
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  fs::directory_iterator tasks("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return true;  // gone
  for (const auto& task : tasks) {
    std::ifstream stat_file(task.path() / "stat");
    std::string stat_text;
    std::getline(stat_file, stat_text);
    size_t close = stat_text.rfind(')');
    if (close == std::string::npos || close + 2 >= stat_text.size()) continue;  // gone meanwhile
    char state = stat_text[close + 2];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') return false;
  }
  return true;
}

// Waits until SIGSTOP has taken effect in every process of the sandbox: kill() returns before the target stops, and
// the caller is about to write what the sandbox must not see yet. Gives up after `limit` (a thread in uninterruptible
// sleep stops only when it wakes); the caller's next wait then still has its own timeout.
void wait_stopped(pid_t bwrap, Clock::duration limit) {
  const auto give_up = Clock::now() + limit;
  for (;;) {
    auto processes = sandbox_processes(bwrap);
    if (std::all_of(processes.begin(), processes.end(), all_threads_stopped) || Clock::now() > give_up) return;
    ::sched_yield();
  }
}

// The command's process: pid 2 of the sandbox's PID namespace (bwrap is its init), found by its NSpid line.
pid_t command_process(pid_t bwrap) {
  for (pid_t pid : sandbox_processes(bwrap)) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (!line.starts_with("NSpid:")) continue;
      if (line.size() > 2 && line.ends_with("\t2")) return pid;
      break;
    }
  }
  return -1;
}

// Kills a sandbox that is still running and reaps bwrap, without waiting for its pipes.
void stop(SandboxProcess& p) {
  if (p.child.reaped) return;
  kill_sandbox(p.child);
  ::wait4(p.child.pid, &p.child.wait_status, 0, &p.child.usage);
  p.child.reaped = true;
  p.gone = true;
}

}  // namespace

int64_t host_memory_share(int64_t limit, int jobs) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return limit;
  const int64_t usable = int64_t(pages) * page / 4 * 3;
  return std::min(limit, std::max(k_min_memory_share, usable / std::max(1, jobs)));
}

std::string mps_pipe_directory() {
  const char* given = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::string dir = given != nullptr && *given != '\0' ? given : "/tmp/nvidia-mps";
  std::error_code ec;
  return fs::exists(fs::path(dir) / "control", ec) ? dir : "";
}

int64_t disk_usage(const std::vector<std::string>& paths, int64_t stop_after) {
  std::set<std::pair<dev_t, ino_t>> seen;
  int64_t total = 0;
  for (const auto& path : paths) add_usage(path, seen, total, stop_after, 0);
  return total;
}

std::vector<std::string> bwrap_arguments(const SandboxSpec& spec, HostUser host_user, const std::string& setpriv) {
  std::vector<std::string> args;
  if (host_user == HostUser::root) {
    // No user namespace: bwrap mounts as root; setpriv needs these three
    // capabilities to drop to k_sandbox_uid, then drops them all.
    add(args, {"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop",
               "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"});
  } else {
    add(args, {"--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"});
  }
  add(args, {"--die-with-parent", "--new-session"});
  std::error_code ec;
  for (const char* dir : k_system_dirs) {
    if (fs::is_symlink(dir, ec)) {
      add(args, {"--symlink", fs::read_symlink(dir, ec).string(), dir});
    } else if (fs::is_directory(dir, ec)) {
      add(args, {"--ro-bind", dir, dir});
    }
  }
  // Made 0755 before the files go in: as a mount point's parent bwrap would make it 0700, and the sandbox user
  // could then reach neither ld.so.cache nor /etc/alternatives (where /usr/local/cuda may point).
  add(args, {"--perms", "0755", "--dir", "/etc"});
  for (const char* file : k_etc_files) add(args, {"--ro-bind-try", file, file});
  // /usr/local/cuda usually lies under /usr already; a toolkit linked from elsewhere is bound where it really is.
  fs::path cuda = fs::canonical("/usr/local/cuda", ec);
  if (!ec && !cuda.string().starts_with("/usr/")) add(args, {"--ro-bind", cuda.string(), cuda.string()});
  // /tmp is the sandbox's own, sized so that files there cannot fill the host's memory.
  int64_t tmp_bytes = std::max<int64_t>(spec.limits.file_bytes, int64_t{64} << 20) * 4;
  add(args,
      {"--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size", std::to_string(tmp_bytes), "--tmpfs", "/tmp"});
  if (spec.gpu) {
    for (const auto& device : gpu_devices()) add(args, {"--dev-bind", device, device});
    add(args, {"--ro-bind-try", "/sys", "/sys"});  // the CUDA driver reads PCI and NUMA topology there
  }
  // bwrap makes the missing parents of a mount point mode 0700, which the
  // unprivileged sandbox user could not enter; make them 0755 first.
  std::set<std::string> made = {"/", "/tmp", "/dev", "/proc", "/usr", "/etc"};
  auto add_parents = [&](const std::string& target) {
    std::vector<std::string> chain;
    for (fs::path p = fs::path(target).parent_path(); p.has_relative_path(); p = p.parent_path())
      chain.push_back(p.string());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (it->starts_with("/usr/") || !made.insert(*it).second) continue;
      add(args, {"--perms", "0755", "--dir", *it});
    }
  };
  add_parents(spec.workdir);
  for (const auto& path : spec.readable) add_parents(path);
  // Read-only first, so that writable paths inside the workdir are mounted over it.
  add(args, {"--ro-bind", spec.workdir, spec.workdir});
  for (const auto& path : spec.readable) add(args, {"--ro-bind", path, path});
  for (const auto& path : spec.writable) add(args, {"--bind", path, path});
  add(args, {"--chdir", spec.workdir, "--clearenv"});
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  if (fs::is_directory("/usr/local/cuda/bin", ec)) path += ":/usr/local/cuda/bin";
  add(args, {"--setenv", "PATH", path, "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG",
             "C.UTF-8"});
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (spec.gpu && visible != nullptr) add(args, {"--setenv", "CUDA_VISIBLE_DEVICES", visible});
  if (spec.gpu && spec.limits.device_memory_bytes > 0) {
    // The device-memory share: MPS's server holds it, outside the command's process, for every device it sees
    // (ordinals after CUDA_VISIBLE_DEVICES). Whole MiB, rounded down, at least one.
    std::string mib = std::to_string(std::max<int64_t>(1, spec.limits.device_memory_bytes >> 20)) + "M";
    std::string per_device;
    for (int device = 0; device < k_mps_devices; ++device)
      per_device += (device > 0 ? "," : "") + std::to_string(device) + "=" + mib;
    add(args, {"--setenv", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", per_device});
    if (std::string pipes = mps_pipe_directory(); !pipes.empty()) {
      add(args, {"--bind", pipes, pipes, "--setenv", "CUDA_MPS_PIPE_DIRECTORY", pipes});
    }
  }
  args.push_back("--");
  if (host_user == HostUser::root) {
    std::string uid = std::to_string(k_sandbox_uid);
    add(args,
        {setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"});
  }
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  return args;
}

namespace {

// Sets up and starts the sandbox: stdin is a pipe when `interactive` or when spec.stdin_data has bytes to feed,
// /dev/null otherwise. Fails as run_sandboxed does when the sandbox cannot be set up.
std::expected<std::unique_ptr<SandboxProcess>, std::string> launch(const SandboxSpec& given, bool interactive) {
  auto spec = resolve(given);
  if (!spec) return std::unexpected(spec.error());
  std::string bwrap = find_on_path("bwrap");
  if (bwrap.empty()) return std::unexpected("bwrap not found on PATH (install bubblewrap)");
  HostUser host_user = ::geteuid() == 0 ? HostUser::root : HostUser::regular;
  std::string setpriv;
  if (host_user == HostUser::root) {
    setpriv = find_on_path("setpriv");
    if (setpriv.empty())
      return std::unexpected("setpriv not found on PATH (install util-linux); root needs it to drop privileges");
    for (const auto& path : spec->writable) {
      if (auto given_away = chown_tree(AT_FDCWD, path.c_str(), path, 0); !given_away)
        return std::unexpected(given_away.error());
    }
    std::vector<std::string> to_read = spec->readable;
    to_read.push_back(spec->workdir);
    for (const auto& path : to_read) {
      if (!sandbox_user_can_read(path)) {
        return std::unexpected(path + ": the sandbox user (uid " + std::to_string(k_sandbox_uid) +
                               ") cannot read it; make it world-readable (chmod o+rX)");
      }
    }
  }
  std::vector<std::string> args = {bwrap, "--json-status-fd", std::to_string(k_status_fd)};
  for (auto& arg : bwrap_arguments(*spec, host_user, setpriv)) args.push_back(std::move(arg));

  auto out_pipe = make_pipe(), err_pipe = make_pipe(), status_pipe = make_pipe(), in_pipe = make_pipe();
  for (auto* pipe : {&out_pipe, &err_pipe, &status_pipe, &in_pipe}) {
    if (!*pipe) return std::unexpected(pipe->error());
  }
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  bool feed = interactive || !spec->stdin_data.empty();
  const int64_t disk_at_start = spec->limits.disk_bytes > 0 ? disk_usage(spec->writable) : 0;
  auto child = start(args, *spec, feed ? in_pipe->first.get() : null_fd.get(), out_pipe->second.get(),
                     err_pipe->second.get(), status_pipe->second.get());
  if (!child) return std::unexpected(child.error());
  auto p = std::make_unique<SandboxProcess>();
  p->child = *child;
  if (feed) p->stdin_fd = std::move(in_pipe->second);
  p->out.fd = std::move(out_pipe->first);
  p->err.fd = std::move(err_pipe->first);
  p->status.fd = std::move(status_pipe->first);
  for (int fd : {p->stdin_fd.get(), p->out.fd.get(), p->err.fd.get(), p->status.fd.get()}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  p->disk_at_start = disk_at_start;
  p->pending = interactive ? "" : spec->stdin_data;
  p->close_stdin = !interactive;
  p->spec = std::move(*spec);
  return p;
}

// The result of a sandbox that is gone: its exit code or signal, and the limit that most likely ended it.
std::expected<SandboxResult, std::string> conclude(SandboxProcess& p) {
  if (p.was_interrupted) return std::unexpected("interrupted");
  SandboxResult result = std::move(p.result);
  // bwrap writes {"exit-code": N} only for a command it started; N is 128+S
  // when signal S ended the command.
  size_t at = p.status_text.rfind("\"exit-code\":");
  int wait_status = p.child.wait_status;
  if (at != std::string::npos) {
    result.exit_code = std::atoi(p.status_text.c_str() + at + 12);
  } else if (result.timed_out) {
    result.exit_code = 128 + SIGKILL;
  } else if (WIFSIGNALED(wait_status) && p.status_text.find("\"child-pid\"") == std::string::npos) {
    // bwrap itself died before it started the command: the limits apply to it too (RLIMIT_AS of 1 KiB kills
    // it in its dynamic loader), so this is the sandbox's failure, not the command's.
    std::string why = "sandbox setup failed: bwrap ended by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
                      strsignal(WTERMSIG(wait_status)) + ") before it started the command";
    if (p.spec.limits.memory_bytes < (int64_t{64} << 20))
      why += "; the memory limit (" + std::to_string(p.spec.limits.memory_bytes) + " bytes) is likely too small";
    return std::unexpected(why);
  } else if (WIFSIGNALED(wait_status)) {
    result.exit_code = 128 + WTERMSIG(wait_status);
  } else if (contains(result.err, "bwrap: execvp")) {
    result.exit_code = 127;  // no such command: the command's failure, as in a shell
  } else {
    std::string message = result.err.substr(0, result.err.find('\n'));
    return std::unexpected("sandbox setup failed: " +
                           (message.empty() ? "bwrap exited without starting the command" : message));
  }
  if (result.exit_code > 128 && result.exit_code < 128 + 65) result.signal = result.exit_code - 128;
  const rusage& usage = p.child.usage;
  double cpu_used = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  result.limit_hit =
      p.disk_exceeded ? "disk" : limit_hit(result, p.spec.limits, cpu_used, p.out.truncated || p.err.truncated);
  return result;
}

}  // namespace

std::expected<SandboxResult, std::string> run_sandboxed(const SandboxSpec& spec) {
  auto p = launch(spec, false);
  if (!p) return std::unexpected(p.error());
  if (auto done = supervise(**p, deadline_after(spec.limits.wall_s), [] { return false; }); !done)
    return std::unexpected(done.error());
  return conclude(**p);
}

SandboxSession::SandboxSession(std::unique_ptr<SandboxProcess> process) : m_process(std::move(process)) {}
SandboxSession::SandboxSession(SandboxSession&&) noexcept = default;
SandboxSession& SandboxSession::operator=(SandboxSession&& other) noexcept {
  if (this != &other) {
    if (m_process) stop(*m_process);
    m_process = std::move(other.m_process);
  }
  return *this;
}
SandboxSession::~SandboxSession() {
  if (m_process) stop(*m_process);
}

std::expected<SandboxSession, std::string> SandboxSession::start(const SandboxSpec& spec) {
  auto p = launch(spec, true);
  if (!p) return std::unexpected(p.error());
  return SandboxSession(std::move(*p));
}

bool SandboxSession::running() const {
  return m_process && !m_process->gone;
}

void SandboxSession::send_line(std::string_view line) {
  if (!m_process || m_process->stdin_fd.get() < 0) return;
  m_process->pending.append(line);
  m_process->pending.push_back('\n');
}

std::expected<std::optional<std::string>, std::string> SandboxSession::wait_line(double timeout_s) {
  if (!m_process) return std::unexpected("the sandbox session is finished");
  std::string& out = m_process->result.out;
  auto take = [&]() -> std::optional<std::string> {
    size_t end = out.find('\n');
    if (end == std::string::npos) return std::nullopt;
    std::string line = out.substr(0, end);
    out.erase(0, end + 1);
    return line;
  };
  if (auto line = take()) return line;
  if (m_process->gone) {
    if (m_process->was_interrupted) return std::unexpected("interrupted");
    return std::nullopt;
  }
  auto done = supervise(*m_process, deadline_after(timeout_s), [&] { return out.find('\n') != std::string::npos; });
  if (!done) return std::unexpected(done.error());
  return take();
}

void SandboxSession::pause() {
  if (!running() || m_process->paused) return;
  signal_sandbox(m_process->child.pid, SIGSTOP);
  wait_stopped(m_process->child.pid, std::chrono::seconds(5));
  m_process->paused = true;
}

bool SandboxSession::freeze() {
  if (!running()) return false;
  if (m_process->frozen) return true;
  if (m_process->command < 0) m_process->command = command_process(m_process->child.pid);
  if (m_process->command < 0 || ::kill(m_process->command, SIGSTOP) != 0) return false;
  return await_stop();
}

bool SandboxSession::await_stop() {
  if (!running()) return false;
  if (m_process->command < 0) m_process->command = command_process(m_process->child.pid);
  if (m_process->command < 0) return false;
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (!all_threads_stopped(m_process->command) && Clock::now() < give_up) ::sched_yield();
  m_process->frozen = true;
  return true;
}

std::optional<double> SandboxSession::command_cpu_us() const {
  if (!running() || m_process->command < 0) return std::nullopt;
  clockid_t clock;
  timespec now{};
  if (::clock_getcpuclockid(m_process->command, &clock) != 0 || ::clock_gettime(clock, &now) != 0) return std::nullopt;
  return double(now.tv_sec) * 1e6 + double(now.tv_nsec) / 1e3;
}

void SandboxSession::thaw() {
  if (!running() || !m_process->frozen) return;
  ::kill(m_process->command, SIGCONT);
  m_process->frozen = false;
}

void SandboxSession::resume() {
  if (!running() || !m_process->paused) return;
  signal_sandbox(m_process->child.pid, SIGCONT);
  m_process->paused = false;
  m_process->frozen = false;  // the command got its SIGCONT too
}

std::expected<SandboxResult, std::string> SandboxSession::finish(double timeout_s) {
  if (!m_process) return std::unexpected("the sandbox session is finished");
  thaw();
  resume();  // a paused command would never see its stdin close
  std::unique_ptr<SandboxProcess> p = std::move(m_process);
  p->close_stdin = true;
  if (!p->gone) {
    if (auto done = supervise(*p, deadline_after(timeout_s), [] { return false; }); !done)
      return std::unexpected(done.error());
  }
  return conclude(*p);
}

}  // namespace ca
