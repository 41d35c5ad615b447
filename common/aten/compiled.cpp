#include "aten/compiled.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

#include "aten/tensors.h"
#include "ir/dtype.h"
#include "ir/fingerprint.h"
#include "util/atomic_file.h"
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
constexpr const char* k_key_header = "ca-compiled-key 1";
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

std::string self_dir() {
  char buffer[4096];
  ssize_t size = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return size <= 0 ? "." : parent_dir(std::string(buffer, size_t(size)));
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
      first_existing("Python", {self_dir() + "/../../.venv/bin/python", CA_BUILD_SOURCE_DIR "/.venv/bin/python"});
  if (!found) return Error(found.error() + "; set CA_PYTHON");
  return found;
}

std::expected<std::string, std::string> find_bridge(const CompiledOptions& options) {
  if (!options.bridge.empty()) return options.bridge;
  if (std::string dir = env("CA_BRIDGE_DIR"); !dir.empty()) return dir + "/compile_task.py";
  auto found = first_existing(
      "compile_task.py", {self_dir() + "/../../bridge/compile_task.py", CA_BUILD_SOURCE_DIR "/bridge/compile_task.py",
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
  static std::expected<FileLock, std::string> acquire(const std::string& path, double timeout_s) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Error(path + ": cannot open: " + std::strerror(errno));
    FileLock lock(fd);
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return Error(path + ": cannot lock: " + std::strerror(errno));
      if (Clock::now() > deadline) {
        return Error(path + ": another process held the lock (compiling the same package) for more than " +
                     std::to_string(int(timeout_s)) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return lock;
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

// Runs the bridge into a temporary directory beside the cache entry, then
// renames the package into place and writes its record. Returns the bridge's
// wall-clock seconds.
std::expected<double, std::string> compile_package(const Program& program, const at::Device& device,
                                                   const std::string& device_name, const CompiledOptions& options,
                                                   const std::string& cache_dir, const std::string& key,
                                                   const CachePaths& paths) {
  auto python = find_python(options);
  if (!python) return Error(python.error());
  auto bridge = find_bridge(options);
  if (!bridge) return Error(bridge.error());
  auto temp = TempDir::create(cache_dir + "/.tmp-" + key + "-XXXXXX");
  if (!temp) return Error(temp.error());
  std::string task = temp->path() + "/task.json";
  std::string package = temp->path() + "/package.pt2";
  auto written = write_file_atomic(task, Json{{"program", to_json(program)}}.dump() + "\n");
  if (!written) return Error(written.error());

  std::vector<std::string> argv = {
      *python, *bridge, task, package, "--device", device.is_cuda() ? "cuda" : "cpu", "--expect-torch", TORCH_VERSION};
  if (options.allow_tf32) argv.push_back("--allow-tf32");
  SubprocessOptions run_options;
  run_options.timeout = std::chrono::milliseconds(int64_t(options.timeout_s * 1000));
  auto started = Clock::now();
  auto ran = run_subprocess(argv, run_options);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (!ran) return Error("cannot run the bridge (" + *python + " " + *bridge + "): " + ran.error());
  if (ran->timed_out) {
    return Error("the bridge did not finish within " + std::to_string(int(options.timeout_s)) + " s");
  }
  if (!ran->ok()) {
    std::string message = trimmed(ran->err);
    return Error("the bridge " + ran->describe() + (message.empty() ? "" : ": " + message));
  }

  // The bridge's report is its last line of stdout.
  std::string out = ran->out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  Json report = Json::parse(out.substr(out.rfind('\n') + 1), nullptr, false);
  if (!report.is_object() || !report.contains("torch") || !report["torch"].is_string()) {
    return Error("the bridge printed no report line with \"torch\" (stdout: " + trimmed(ran->out) + ")");
  }
  std::string torch_version = report["torch"].get<std::string>();
  if (base_version(torch_version) != TORCH_VERSION) {
    return Error("the bridge's torch is " + torch_version + " but LibTorch is " + TORCH_VERSION +
                 ": a package must be loaded by the LibTorch of its torch version");
  }
  auto contents = read_file(package);
  if (!contents) return Error("the bridge reported success but wrote no package: " + contents.error());

  // Same filesystem, so the package appears whole or not at all.
  if (std::rename(package.c_str(), paths.package.c_str()) != 0) {
    return Error(paths.package + ": cannot rename into place: " + std::strerror(errno));
  }
  Json record = {{"key", key},
                 {"sha256", sha256_hex(*contents)},
                 {"fingerprint", fingerprint(program)},
                 {"device", device_name},
                 {"torch", torch_version},
                 {"allow_tf32", options.allow_tf32},
                 {"compile_seconds", seconds}};
  if (auto saved = write_file_atomic(paths.record, record.dump(2) + "\n"); !saved) {
    remove_entry(paths);
    return Error(saved.error());
  }
  return seconds;
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
                                                          bool allow_tf32) {
  auto described = device_description(device);
  if (!described) return Error(described.error());
  return std::string(k_key_header) + "\ndevice " + *described + "\ntorch " + TORCH_VERSION + "\ntf32 " +
         (allow_tf32 ? "1" : "0") + "\n" + canonical_text(program);
}

CompiledProgram::CompiledProgram(CompiledProgram&&) noexcept = default;
CompiledProgram& CompiledProgram::operator=(CompiledProgram&&) noexcept = default;
CompiledProgram::~CompiledProgram() = default;

std::expected<CompiledProgram, std::string> CompiledProgram::load_or_compile(const Program& program,
                                                                             const at::Device& device,
                                                                             const CompiledOptions& options) {
  auto device_name = device_description(device);
  if (!device_name) return Error(device_name.error());
  auto key_text = compiled_key_text(program, device, options.allow_tf32);
  if (!key_text) return Error(key_text.error());
  std::string cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  if (cache_dir.empty()) return Error("no cache directory: set CA_CACHE_DIR or HOME");
  if (auto made = make_directories(cache_dir); !made) return Error(made.error());

  CompiledProgram compiled;
  compiled.m_key = sha256_hex(*key_text);
  compiled.m_device = device;
  compiled.m_tensors = program.inputs;
  compiled.m_tensors.insert(compiled.m_tensors.end(), program.params.begin(), program.params.end());
  compiled.m_num_outputs = program.outputs.size();
  std::string stem = cache_dir + "/" + compiled.m_key;
  CachePaths paths{stem + ".pt2", stem + ".json", stem + ".lock"};
  compiled.m_path = paths.package;
  compiled.m_cached = true;

  // Entries are only ever renamed into place, so a valid one needs no lock.
  if (!entry_valid(paths)) {
    auto lock = FileLock::acquire(paths.lock, options.timeout_s);
    if (!lock) return Error(lock.error());
    if (!entry_valid(paths)) {
      remove_entry(paths);
      auto seconds = compile_package(program, device, *device_name, options, cache_dir, compiled.m_key, paths);
      if (!seconds) return Error("compiling " + fingerprint(program) + " for " + device.str() + ": " + seconds.error());
      compiled.m_cached = false;
      compiled.m_compile_seconds = *seconds;
    }
  }
  auto loader = load_package(paths.package, device);
  if (!loader) {
    // A package just compiled that does not load is removed, so that the next
    // attempt compiles again; a verified cached one is left for inspection.
    if (!compiled.m_cached) remove_entry(paths);
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
