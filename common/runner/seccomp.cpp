// Classic BPF programs for seccomp, assembled here (no libseccomp): small, x86_64 only (another architecture is
// killed: its system call numbers differ).
#include "runner/seccomp.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace ca {
namespace {

constexpr uint32_t k_arg0 = offsetof(seccomp_data, args[0]);
constexpr uint32_t k_arg1 = offsetof(seccomp_data, args[1]);
constexpr uint32_t k_arg2 = offsetof(seccomp_data, args[2]);
// open's flags that make a file: O_CREAT, and O_TMPFILE's own bit (its O_DIRECTORY half alone opens a directory).
constexpr uint32_t k_creating_flags = O_CREAT | (O_TMPFILE & ~O_DIRECTORY);

struct Program {
  std::vector<sock_filter> code;
  void add(sock_filter f) { code.push_back(f); }
  void load(uint32_t offset) { add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void ret(uint32_t action) { add(BPF_STMT(BPF_RET | BPF_K, action)); }
  // if (A == value) return action; else fall through.
  void on(uint32_t value, uint32_t action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1));
    ret(action);
  }
  void arch_check() {
    load(offsetof(seccomp_data, arch));
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    ret(SECCOMP_RET_KILL_PROCESS);
    load(offsetof(seccomp_data, nr));
  }
};

// What a refused call was after, so that the verdict names the share or rule it broke.
const char* forbidden_class(int nr) {
  switch (nr) {
    case __NR_open:
    case __NR_openat:
    case __NR_creat:
    case __NR_mkdir:
    case __NR_mkdirat:
    case __NR_mknod:
    case __NR_mknodat:
    case __NR_link:
    case __NR_linkat:
    case __NR_symlink:
    case __NR_symlinkat:
    case __NR_rename:
    case __NR_renameat:
    case __NR_renameat2:
    case __NR_truncate:
    case __NR_ftruncate:
    case __NR_fallocate:
      return "disk share: making or growing files; the run may write only the regions it was given";
    case __NR_memfd_create:
    case __NR_memfd_secret:
    case __NR_pipe:
    case __NR_pipe2:
    case __NR_socket:
    case __NR_socketpair:
    case __NR_shmget:
    case __NR_mq_open:
      return "memory share: memory outside the address-space limit (memfd, pipes, sockets, shared memory)";
    case __NR_mmap:
    case __NR_mprotect:
    case __NR_pkey_mprotect:
      return "loading code after the start";
    case __NR_sched_setaffinity:
      return "CPU share: core affinity";
    default:
      return "new processes, exec, signals to other processes or tracing";
  }
}

// Names the refused call and ends the process: the only handler for SIGSYS, which the filter keeps.
void on_forbidden(int, siginfo_t* info, void*) {
  char line[224];
  int n = std::snprintf(line, sizeof line, "ca-runner: forbidden system call %d (%s)\n", info->si_syscall,
                        forbidden_class(info->si_syscall));
  if (n > 0) (void)!::write(2, line, size_t(n));
  ::_exit(int(k_exit_forbidden));
}

std::expected<void, std::string> install(Program& program, unsigned flags) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::unexpected(std::string("no_new_privs: ") + std::strerror(errno));
  sock_fprog fprog{static_cast<unsigned short>(program.code.size()), program.code.data()};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog) != 0) {
    return std::unexpected(std::string("seccomp: ") + std::strerror(errno));
  }
  return {};
}

}  // namespace

std::expected<void, std::string> forbid_processes_and_signals() {
  struct sigaction action {};
  action.sa_sigaction = on_forbidden;
  action.sa_flags = SA_SIGINFO;
  if (::sigaction(SIGSYS, &action, nullptr) != 0)
    return std::unexpected(std::string("sigaction: ") + std::strerror(errno));
  const uint32_t self = uint32_t(::getpid());
  const uint32_t trap = SECCOMP_RET_TRAP, allow = SECCOMP_RET_ALLOW;
  Program p;
  p.arch_check();
  p.on(__NR_clone3, SECCOMP_RET_ERRNO | ENOSYS);
  for (int nr : {__NR_fork, __NR_vfork, __NR_execve, __NR_execveat, __NR_ptrace, __NR_process_vm_readv,
                 __NR_process_vm_writev, __NR_io_uring_setup, __NR_userfaultfd, __NR_tkill, __NR_pidfd_send_signal,
                 __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo, __NR_setpgid, __NR_setsid, __NR_sched_setaffinity}) {
    p.on(uint32_t(nr), trap);
  }
  // clone: a thread (CLONE_THREAD) may be made, a process may not.
  p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
  p.load(k_arg0);
  p.add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  p.ret(allow);
  p.ret(trap);
  // kill(pid, ...) and tgkill(pid, ...): this process, or kill's 0 (its own process group: a session of its own).
  for (int nr : {__NR_kill, __NR_tgkill}) {
    const bool zero_too = nr == __NR_kill;
    p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, uint8_t(zero_too ? 8 : 7)));
    p.load(k_arg0 + 4);  // the high half: a negative pid (another process group, or every process) is refused
    p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    p.ret(trap);
    p.load(k_arg0);
    p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, uint8_t(zero_too ? 2 : 1), 0));
    if (zero_too) p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    p.ret(trap);
    p.ret(allow);
  }
  // rt_sigaction(SIGSYS, ...) would take the handler that names a refused call.
  p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigaction, 0, 4));
  p.load(k_arg0);
  p.on(SIGSYS, trap);
  p.ret(allow);
  p.ret(allow);
  return install(p, SECCOMP_FILTER_FLAG_TSYNC);
}

std::expected<void, std::string> forbid_new_storage() {
  Program p;
  p.arch_check();
  // openat2's flags are in memory a filter cannot read; ENOSYS, as glibc's open never needs it.
  p.on(__NR_openat2, SECCOMP_RET_ERRNO | ENOSYS);
  for (int nr : {__NR_creat,    __NR_mkdir,     __NR_mkdirat,    __NR_mknod,        __NR_mknodat,      __NR_link,
                 __NR_linkat,   __NR_symlink,   __NR_symlinkat,  __NR_rename,       __NR_renameat,     __NR_renameat2,
                 __NR_truncate, __NR_ftruncate, __NR_fallocate,  __NR_memfd_create, __NR_memfd_secret, __NR_pipe,
                 __NR_pipe2,    __NR_socket,    __NR_socketpair, __NR_shmget,       __NR_mq_open}) {
    p.on(uint32_t(nr), SECCOMP_RET_TRAP);
  }
  // open(path, flags) and openat(dir, path, flags): any file may be opened as it is, none made.
  for (auto [nr, flags] : {std::pair{__NR_open, k_arg1}, std::pair{__NR_openat, k_arg2}}) {
    p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 4));
    p.load(flags);
    p.add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, k_creating_flags, 0, 1));
    p.ret(SECCOMP_RET_TRAP);
    p.ret(SECCOMP_RET_ALLOW);
  }
  p.ret(SECCOMP_RET_ALLOW);
  return install(p, SECCOMP_FILTER_FLAG_TSYNC);
}

std::expected<void, std::string> forbid_new_code() {
  Program p;
  p.arch_check();
  for (int nr : {__NR_mmap, __NR_mprotect, __NR_pkey_mprotect}) {
    p.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 4));
    p.load(k_arg2);  // prot is the third argument of all three
    p.add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1));
    p.ret(SECCOMP_RET_TRAP);
    p.ret(SECCOMP_RET_ALLOW);
  }
  p.ret(SECCOMP_RET_ALLOW);
  return install(p, SECCOMP_FILTER_FLAG_TSYNC);
}

}  // namespace ca
