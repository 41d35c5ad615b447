#include "torch/compiled.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/cuda/CUDAContext.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include "ir/dtype.h"
#include "ir/fingerprint.h"
#include "torch/tensors.h"
#include "util/atomic_file.h"
#include "util/executable_dir.h"
#include "util/sha256.h"
#include "util/subprocess.h"

namespace ca {

// std::filesystem is not used here: the torch wheel's libtorch.so exports an
// older build of it, and where the executable does not load libstdc++ first
// (seen on the GPU machine) its remove_all crashed. POSIX calls instead.
namespace {

using Error = std::unexpected<std::string>;
using Clock = std::chrono::steady_clock;

// Version of the key text's layout; changing the layout must change it.
constexpr const char* k_key_header = "ca-compiled-key 3";
// Lines of the bridge's stderr kept in an error message, and their length cap.
constexpr size_t k_stderr_lines = 6;
constexpr size_t k_stderr_chars = 2000;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// mkdir -p.
std::expected<void, std::string> make_directories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Error(prefix + ": cannot create: " + std::strerror(errno));
    if (slash == std::string::npos) break;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return Error(path + ": not a directory");
  return {};
}

// rm -r, going on past entries it cannot remove.
void remove_tree(const std::string& path) {
  auto remove_one = [](const char* name, const struct stat*, int, FTW*) {
    ::remove(name);
    return 0;
  };
  ::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

std::string default_cache_dir() {
  if (std::string dir = env("CA_CACHE_DIR"); !dir.empty()) return dir + "/compiled";
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/cuda-agent/compiled";
  if (std::string dir = env("HOME"); !dir.empty()) return dir + "/.cache/cuda-agent/compiled";
  return "";
}

// The first candidate that exists; the error lists what was tried.
std::expected<std::string, std::string> first_existing(const std::string& what,
                                                       const std::vector<std::string>& candidates) {
  std::string tried;
  for (const auto& candidate : candidates) {
    if (exists(candidate)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  return Error("no " + what + " found (tried " + tried + ")");
}

std::expected<std::string, std::string> find_python(const CompiledOptions& options) {
  if (!options.python.empty()) return options.python;
  if (std::string python = env("CA_PYTHON"); !python.empty()) return python;
  auto found =
      first_existing("Python", {executable_dir() + "/../../.venv/bin/python", CA_BUILD_SOURCE_DIR "/.venv/bin/python"});
  if (!found) return Error(found.error() + "; set CA_PYTHON");
  return found;
}

std::expected<std::string, std::string> find_bridge(const CompiledOptions& options) {
  if (!options.bridge.empty()) return options.bridge;
  if (std::string dir = env("CA_BRIDGE_DIR"); !dir.empty()) return dir + "/compile_task.py";
  auto found = first_existing("compile_task.py", {executable_dir() + "/../../bridge/compile_task.py",
                                                  CA_BUILD_SOURCE_DIR "/bridge/compile_task.py",
                                                  CA_INSTALL_DATA_DIR "/bridge/compile_task.py"});
  if (!found) return Error(found.error() + "; set CA_BRIDGE_DIR");
  return found;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    auto colon = line.find(':');
    if (line.starts_with("model name") && colon != std::string::npos) {
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "unknown";
}

// The device as the key sees it: packages are specific to the GPU model or
// the CPU (Inductor compiles C++ for the host's instruction set).
std::expected<std::string, std::string> device_description(const at::Device& device) {
  if (device.is_cpu()) return "cpu " + cpu_model();
  if (!device.is_cuda()) return Error("device " + device.str() + ": only cpu and cuda are supported");
  try {
    auto* props =
        device.has_index() ? at::cuda::getDeviceProperties(device.index()) : at::cuda::getCurrentDeviceProperties();
    return "cuda " + std::string(props->name) + " sm_" + std::to_string(props->major) + std::to_string(props->minor);
  } catch (const std::exception& error) {
    std::string message = error.what();
    return Error("device " + device.str() + ": " + message.substr(0, message.find('\n')));
  }
}

// The last few non-empty lines of the bridge's stderr, "; "-joined.
std::string trimmed(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > k_stderr_lines ? lines.size() - k_stderr_lines : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : "; ") + lines[i];
  }
  return out.size() > k_stderr_chars ? "..." + out.substr(out.size() - k_stderr_chars) : out;
}

// An exclusive flock on <key>.lock, held while the package is checked and
// compiled; the lock file itself stays (removing it would race with waiters).
class FileLock {
 public:
  /// Nothing when another process still holds the lock after `timeout_s`
  /// (0: one try, no wait).
  static std::expected<std::optional<FileLock>, std::string> acquire(const std::string& path, double timeout_s) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Error(path + ": cannot open: " + std::strerror(errno));
    FileLock lock(fd);
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return Error(path + ": cannot lock: " + std::strerror(errno));
      if (Clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::optional<FileLock>(std::move(lock));
  }
  FileLock(FileLock&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() {
    if (m_fd >= 0) ::close(m_fd);  // closing releases the flock
  }

 private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

// A directory removed with everything in it when this goes out of scope.
class TempDir {
 public:
  static std::expected<TempDir, std::string> create(const std::string& pattern) {
    std::string name = pattern;
    if (::mkdtemp(name.data()) == nullptr) return Error(pattern + ": cannot create: " + std::strerror(errno));
    return TempDir(name);
  }
  TempDir(TempDir&& other) noexcept : m_path(std::exchange(other.m_path, "")) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (!m_path.empty()) remove_tree(m_path);
  }
  const std::string& path() const { return m_path; }

 private:
  explicit TempDir(std::string path) : m_path(std::move(path)) {}
  std::string m_path;
};

struct CachePaths {
  std::string package;  // <key>.pt2
  std::string record;   // <key>.json: the package's SHA-256 and how it was made
  std::string lock;     // <key>.lock
};

// A package counts only when its record exists and names its checksum; the
// record is written after the package is renamed into place, so a package
// without one (crash in between) or a damaged package is compiled again.
bool entry_valid(const CachePaths& paths) {
  auto record_text = read_file(paths.record);
  if (!record_text) return false;
  Json record = Json::parse(*record_text, nullptr, false);
  if (!record.is_object() || !record.contains("sha256") || !record["sha256"].is_string()) return false;
  auto package = read_file(paths.package);
  return package && sha256_hex(*package) == record["sha256"].get<std::string>();
}

void remove_entry(const CachePaths& paths) {
  ::unlink(paths.record.c_str());
  ::unlink(paths.package.c_str());
}

std::string base_version(const std::string& version) {
  return version.substr(0, version.find('+'));
}

// One program's cache entry, as compile_entries sees it.
struct Entry {
  const Program* program = nullptr;
  std::string key;
  CachePaths paths;
  std::optional<FileLock> lock;  // held from the check that finds it missing until it is compiled
  std::string error;             // why it has no package; "" when it has one
  bool compiled = false;         // by this call
  double seconds = 0;            // the bridge's seconds for it
};

// What every entry of one call shares.
struct CompileContext {
  const at::Device& device;
  const CompiledOptions& options;
  std::string cache_dir;
  std::string device_name;
};

std::expected<CompileContext, std::string> compile_context(const at::Device& device, const CompiledOptions& options) {
  auto device_name = device_description(device);
  if (!device_name) return Error(device_name.error());
  std::string cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  if (cache_dir.empty()) return Error("no cache directory: set CA_CACHE_DIR or HOME");
  if (auto made = make_directories(cache_dir); !made) return Error(made.error());
  return CompileContext{device, options, cache_dir, *device_name};
}

std::expected<Entry, std::string> make_entry(const Program& program, const CompileContext& context) {
  auto key_text = compiled_key_text(program, context.device, context.options);
  if (!key_text) return Error(key_text.error());
  Entry entry;
  entry.program = &program;
  entry.key = sha256_hex(*key_text);
  std::string stem = context.cache_dir + "/" + entry.key;
  entry.paths = {stem + ".pt2", stem + ".json", stem + ".lock"};
  return entry;
}

void fail(Entry& entry, const CompileContext& context, const std::string& message) {
  entry.error = "compiling " + fingerprint(*entry.program) + " for " + context.device.str() + ": " + message;
}

// Moves the package the bridge reported for `entry` into place and writes its
// record; sets entry.error when the report or the package is not right.
void install(Entry& entry, const Json& report, const std::string& package, double bridge_seconds, size_t batch,
             const CompileContext& context) {
  if (auto error = report.find("error"); error != report.end()) {
    return fail(entry, context,
                "the bridge: " + trimmed(error->is_string() ? error->get<std::string>() : error->dump()));
  }
  if (!report.contains("torch") || !report["torch"].is_string()) {
    return fail(entry, context, "the bridge's report has no \"torch\": " + trimmed(report.dump()));
  }
  std::string torch_version = report["torch"].get<std::string>();
  // The bridge echoes the torch.backends flags it compiled under: a package made under another mode than its key's
  // would time the wrong baseline from the cache for good.
  const Tf32Mode mode = context.options.tf32;
  const Json expected_flags = {{"matmul", mode == Tf32Mode::all}, {"cudnn", mode != Tf32Mode::none}};
  auto flags = report.find("tf32_flags");
  bool same_mode = report.contains("tf32") && report["tf32"] == tf32_mode_name(mode) && flags != report.end() &&
                   flags->is_object() && flags->contains("matmul") && (*flags)["matmul"] == expected_flags["matmul"] &&
                   flags->contains("cudnn") && (*flags)["cudnn"] == expected_flags["cudnn"];
  if (!same_mode) {
    return fail(entry, context,
                "the bridge compiled under another TF32 mode than " + tf32_mode_name(mode) + " (torch.backends flags " +
                    expected_flags.dump() + "): " + trimmed(report.dump()));
  }
  if (base_version(torch_version) != TORCH_VERSION) {
    return fail(entry, context,
                "the bridge's torch is " + torch_version + " but LibTorch is " + TORCH_VERSION +
                    ": a package must be loaded by the LibTorch of its torch version");
  }
  auto contents = read_file(package);
  if (!contents) return fail(entry, context, "the bridge reported success but wrote no package: " + contents.error());
  // Same filesystem, so the package appears whole or not at all.
  if (std::rename(package.c_str(), entry.paths.package.c_str()) != 0) {
    return fail(entry, context, entry.paths.package + ": cannot rename into place: " + std::strerror(errno));
  }
  auto seconds = report.find("seconds");
  entry.seconds = seconds != report.end() && seconds->is_number() ? seconds->get<double>() : bridge_seconds;
  Json record = {{"key", entry.key},
                 {"sha256", sha256_hex(*contents)},
                 {"fingerprint", fingerprint(*entry.program)},
                 {"device", context.device_name},
                 {"torch", torch_version},
                 {"tf32", tf32_mode_name(context.options.tf32)},
                 {"tf32_flags", expected_flags},
                 {"threads", context.device.is_cpu() ? Json(context.options.num_threads) : Json(nullptr)},
                 {"compile_seconds", entry.seconds},
                 {"bridge_seconds", bridge_seconds},
                 {"batch", batch}};
  if (auto saved = write_file_atomic(entry.paths.record, record.dump(2) + "\n"); !saved) {
    remove_entry(entry.paths);
    return fail(entry, context, saved.error());
  }
  entry.compiled = true;
}

// The bridge's report lines (one JSON object per package) by package path;
// other lines (a library's chatter) are ignored.
std::map<std::string, Json> reports_by_package(const std::string& out) {
  std::map<std::string, Json> reports;
  std::istringstream stream(out);
  for (std::string line; std::getline(stream, line);) {
    Json report = Json::parse(line, nullptr, false);
    if (report.is_object() && report.contains("package") && report["package"].is_string())
      reports[report["package"].get<std::string>()] = report;
  }
  return reports;
}

// Compiles `batch` (locked, missing entries) in one bridge process working in
// a temporary directory beside the cache, then installs each package it
// reported. Packages reported before the bridge died or timed out still count.
void run_batch(const std::vector<Entry*>& batch, const std::string& python, const std::string& bridge,
               const CompileContext& context) {
  auto fail_all = [&](const std::string& message) {
    for (Entry* entry : batch) fail(*entry, context, message);
  };
  auto temp = TempDir::create(context.cache_dir + "/.tmp-" + batch.front()->key + "-XXXXXX");
  if (!temp) return fail_all(temp.error());
  std::string list;
  std::vector<std::string> packages;
  for (size_t i = 0; i < batch.size(); ++i) {
    std::string task = temp->path() + "/" + std::to_string(i) + ".json";
    packages.push_back(temp->path() + "/" + std::to_string(i) + ".pt2");
    auto written = write_file_atomic(task, Json{{"program", to_json(*batch[i]->program)}}.dump() + "\n");
    if (!written) return fail_all(written.error());
    list += Json{{"task", task}, {"package", packages.back()}}.dump() + "\n";
  }
  std::string list_path = temp->path() + "/list.jsonl";
  if (auto written = write_file_atomic(list_path, list); !written) return fail_all(written.error());

  const CompiledOptions& options = context.options;
  std::vector<std::string> argv = {python,           bridge,       "--batch",
                                   list_path,        "--device",   context.device.is_cuda() ? "cuda" : "cpu",
                                   "--expect-torch", TORCH_VERSION};
  argv.insert(argv.end(), {"--tf32", tf32_mode_name(options.tf32)});
  if (context.device.is_cpu()) argv.insert(argv.end(), {"--threads", std::to_string(options.num_threads)});
  SubprocessOptions run_options;
  double timeout_s = options.timeout_s * double(batch.size());
  run_options.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000));
  auto started = Clock::now();
  auto ran = run_subprocess(argv, run_options);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (!ran) return fail_all("cannot run the bridge (" + python + " " + bridge + "): " + ran.error());

  auto reports = reports_by_package(ran->out);
  std::string stderr_tail = trimmed(ran->err);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (auto report = reports.find(packages[i]); report != reports.end()) {
      install(*batch[i], report->second, packages[i], seconds, batch.size(), context);
    } else if (ran->timed_out) {
      fail(*batch[i], context, "the bridge did not finish within " + std::to_string(int(timeout_s)) + " s");
    } else if (!ran->ok()) {
      fail(*batch[i], context, "the bridge " + ran->describe() + (stderr_tail.empty() ? "" : ": " + stderr_tail));
    } else {
      fail(*batch[i], context, "the bridge printed no report line for it (stdout: " + trimmed(ran->out) + ")");
    }
  }
}

// Splits locked, missing entries over up to `jobs` bridge processes running at once.
void compile_locked(const std::vector<Entry*>& entries, unsigned jobs, const CompileContext& context) {
  if (entries.empty()) return;
  auto python = find_python(context.options);
  auto bridge = find_bridge(context.options);
  if (!python || !bridge) {
    for (Entry* entry : entries) fail(*entry, context, python ? bridge.error() : python.error());
    return;
  }
  std::vector<std::vector<Entry*>> batches(std::clamp<size_t>(jobs, 1, entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) batches[i % batches.size()].push_back(entries[i]);
  std::vector<std::thread> others;
  for (size_t b = 1; b < batches.size(); ++b)
    others.emplace_back([&, b] { run_batch(batches[b], *python, *bridge, context); });
  run_batch(batches[0], *python, *bridge, context);
  for (auto& thread : others) thread.join();
}

// Gives every entry that is not valid a package, or an error. The first round
// locks what no other process holds and compiles those; the second waits (up
// to timeout_s each) for the locks other processes held, and compiles what
// they did not leave behind. An entry found valid once locked is not compiled:
// another process finished it.
void compile_entries(const std::vector<Entry*>& entries, unsigned jobs, const CompileContext& context) {
  std::vector<Entry*> round = entries;
  for (double wait_s : {0.0, context.options.timeout_s}) {
    std::vector<Entry*> mine, busy;
    for (Entry* entry : round) {
      if (!entry->error.empty() || entry_valid(entry->paths)) continue;
      auto lock = FileLock::acquire(entry->paths.lock, wait_s);
      if (!lock) {
        entry->error = lock.error();
      } else if (!*lock && wait_s == 0) {
        busy.push_back(entry);
      } else if (!*lock) {
        entry->error = entry->paths.lock +
                       ": another process held the lock (compiling the same package) for more than " +
                       std::to_string(int(wait_s)) + " s";
      } else if (!entry_valid(entry->paths)) {
        remove_entry(entry->paths);
        entry->lock.emplace(std::move(**lock));
        mine.push_back(entry);
      }
    }
    compile_locked(mine, jobs, context);
    for (Entry* entry : mine) entry->lock.reset();
    round = std::move(busy);
  }
}

// A package's library names libtorch.so as NEEDED, which executables linked
// --as-needed do not load, and dlopen does not search their RUNPATH for it.
// Loading it once from libtorch_cpu.so's directory lets the loader match it by
// soname; the handle is kept for the life of the process.
std::expected<void, std::string> ensure_libtorch_loaded() {
  static const std::string error = []() -> std::string {
    if (dlopen("libtorch.so", RTLD_NOW | RTLD_NOLOAD) != nullptr) return "";
    void* cpu = dlopen("libtorch_cpu.so", RTLD_NOW | RTLD_NOLOAD);
    link_map* map = nullptr;
    if (cpu == nullptr || dlinfo(cpu, RTLD_DI_LINKMAP, &map) != 0) return "libtorch_cpu.so is not loaded";
    std::string path = parent_dir(map->l_name) + "/libtorch.so";
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) return path + ": " + dlerror();
    return "";
  }();
  if (!error.empty()) return Error("cannot load LibTorch for packages: " + error);
  return {};
}

std::expected<std::unique_ptr<torch::inductor::AOTIModelPackageLoader>, std::string> load_package(
    const std::string& path, const at::Device& device) {
  if (auto loaded = ensure_libtorch_loaded(); !loaded) return Error(loaded.error());
  try {
    return std::make_unique<torch::inductor::AOTIModelPackageLoader>(path, "model", false, 1,
                                                                     device.has_index() ? device.index() : -1);
  } catch (const std::exception& error) {
    std::string message = error.what();
    return Error(path + ": cannot load the package: " + message.substr(0, message.find('\n')));
  }
}

}  // namespace

std::expected<std::string, std::string> compiled_key_text(const Program& program, const at::Device& device,
                                                          const CompiledOptions& options) {
  auto described = device_description(device);
  if (!described) return Error(described.error());
  // The generated C++ fixes its OpenMP threads; cuda kernels have none.
  std::string threads = device.is_cpu() ? "threads " + std::to_string(options.num_threads) + "\n" : "";
  return std::string(k_key_header) + "\ndevice " + *described + "\ntorch " + TORCH_VERSION + "\ntf32 " +
         tf32_mode_name(options.tf32) + "\n" + threads + canonical_text(program);
}

std::vector<std::expected<PackageState, std::string>> compile_missing(std::span<const Program* const> programs,
                                                                      const at::Device& device,
                                                                      const CompiledOptions& options, unsigned jobs) {
  std::vector<std::expected<PackageState, std::string>> results(programs.size());
  auto context = compile_context(device, options);
  if (!context) {
    std::ranges::fill(results, Error(context.error()));
    return results;
  }
  std::vector<Entry> entries;
  entries.reserve(programs.size());
  for (const Program* program : programs) {
    auto entry = make_entry(*program, *context);
    if (entry) {
      entries.push_back(std::move(*entry));
      continue;
    }
    entries.emplace_back().program = program;
    entries.back().error = entry.error();
  }
  // Programs with one key (the same program under other names) compile once and share the outcome; a second
  // entry would wait for the first's lock and, when that compile failed, run the bridge again.
  std::map<std::string, size_t> first_of_key;
  std::vector<Entry*> pointers;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].error.empty() && !first_of_key.emplace(entries[i].key, i).second) continue;
    pointers.push_back(&entries[i]);
  }
  compile_entries(pointers, jobs, *context);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& entry = entries[i].error.empty() ? entries[first_of_key.at(entries[i].key)] : entries[i];
    if (!entry.error.empty()) {
      results[i] = Error(entry.error);
      continue;
    }
    results[i] = entry.compiled && &entry == &entries[i] ? PackageState::compiled : PackageState::cached;
  }
  return results;
}

CompiledProgram::CompiledProgram(CompiledProgram&&) noexcept = default;
CompiledProgram& CompiledProgram::operator=(CompiledProgram&&) noexcept = default;
CompiledProgram::~CompiledProgram() = default;

std::expected<CompiledProgram, std::string> CompiledProgram::load_or_compile(const Program& program,
                                                                             const at::Device& device,
                                                                             const CompiledOptions& options) {
  auto context = compile_context(device, options);
  if (!context) return Error(context.error());
  auto entry = make_entry(program, *context);
  if (!entry) return Error(entry.error());
  // Entries are only ever renamed into place, so a valid one needs no lock.
  compile_entries({&*entry}, 1, *context);
  if (!entry->error.empty()) return Error(entry->error);

  CompiledProgram compiled;
  compiled.m_key = entry->key;
  compiled.m_path = entry->paths.package;
  compiled.m_device = device;
  compiled.m_tensors = program.inputs;
  compiled.m_tensors.insert(compiled.m_tensors.end(), program.params.begin(), program.params.end());
  compiled.m_num_outputs = program.outputs.size();
  compiled.m_cached = !entry->compiled;
  compiled.m_compile_seconds = entry->seconds;
  auto loader = load_package(entry->paths.package, device);
  if (!loader) {
    // A package just compiled that does not load is removed, so that the next
    // attempt compiles again; a verified cached one is left for inspection.
    if (entry->compiled) remove_entry(entry->paths);
    return Error(loader.error());
  }
  compiled.m_loader = std::move(*loader);
  return compiled;
}

std::expected<std::vector<at::Tensor>, std::string> CompiledProgram::run(
    const std::vector<at::Tensor>& inputs_then_params) {
  if (inputs_then_params.size() != m_tensors.size()) {
    return Error("compiled program: expected " + std::to_string(m_tensors.size()) +
                 " tensors (inputs then params), got " + std::to_string(inputs_then_params.size()));
  }
  for (size_t i = 0; i < m_tensors.size(); ++i) {
    const auto& tensor = inputs_then_params[i];
    const auto& spec = m_tensors[i];
    std::string where = "compiled program: tensor " + std::to_string(i) + " (" + spec.name + ")";
    if (!tensor.defined()) return Error(where + ": undefined");
    if (tensor.device().type() != m_device.type() || (m_device.has_index() && tensor.device() != m_device)) {
      return Error(where + ": on " + tensor.device().str() + ", the package is for " + m_device.str());
    }
    if (tensor.scalar_type() != to_scalar_type(spec.dtype)) {
      return Error(where + ": dtype " + std::string(c10::toString(tensor.scalar_type())) + ", expected " +
                   std::string(dtype_name(spec.dtype)));
    }
    if (tensor.sizes() != at::IntArrayRef(spec.shape)) {
      return Error(where + ": shape " + c10::str(tensor.sizes()) + ", expected " +
                   c10::str(at::IntArrayRef(spec.shape)));
    }
    if (!tensor.is_contiguous())
      return Error(where + ": not contiguous (the package is specialised to contiguous strides)");
  }
  std::vector<at::Tensor> outputs;
  try {
    outputs = m_loader->run(inputs_then_params);
  } catch (const std::exception& error) {
    std::string message = error.what();
    return Error("compiled program: " + message.substr(0, message.find('\n')));
  }
  if (outputs.size() != m_num_outputs) {
    return Error("compiled program: the package returned " + std::to_string(outputs.size()) +
                 " outputs, the program has " + std::to_string(m_num_outputs));
  }
  return outputs;
}

}  // namespace ca
