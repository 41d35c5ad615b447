// Candidate builds: sources into a fresh directory, the compiler, the static
// checks, and a content-addressed cache of the resulting libraries.
#include "kernel/builder.h"

#include <unistd.h>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernel/static_check.h"
#include "util/atomic_file.h"
#include "util/jsonl.h"
#include "util/remove_tree.h"
#include "util/sha256.h"
#include "util/subprocess.h"

namespace ca {
namespace {

namespace fs = std::filesystem;

// Part of every key; bump it when the recipe changes in a way the flags do not show.
constexpr std::string_view k_recipe_version = "ca-build-1";
constexpr size_t k_max_message_lines = 30;
constexpr size_t k_max_line_length = 240;

// A compiler, and the text that identifies what it produces.
struct Toolchain {
  std::string program;
  std::string identity;
};

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view first_line(std::string_view text) {
  return text.substr(0, text.find('\n'));
}

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin));
}

std::expected<std::string, std::string> output_of(const std::vector<std::string>& argv) {
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = {"LC_ALL=C"};
  auto result = run_subprocess(argv, options);
  if (!result) return std::unexpected(result.error());
  if (!result->ok()) return std::unexpected(argv[0] + " " + argv[1] + ": " + result->describe());
  return result->out;
}

std::expected<Toolchain, std::string> probe_gxx() {
  auto version = output_of({"g++", "--version"});
  if (!version) return std::unexpected("the cpu backend is unavailable on this machine: " + version.error());
  // -march=native means this CPU; a cache shared with another machine must not hand its builds out here.
  auto target = output_of({"g++", "-march=native", "-Q", "--help=target"});
  if (!target) return std::unexpected("the cpu backend is unavailable on this machine: " + target.error());
  std::string march;
  for (std::string_view line : lines_of(*target)) {
    std::string trimmed = trim(line);
    if (trimmed.starts_with("-march=")) march = trim(trimmed.substr(7));
  }
  return Toolchain{"g++", trim(first_line(*version)) + "\nmarch=" + march};
}

const std::expected<Toolchain, std::string>& gxx() {
  static const auto toolchain = probe_gxx();
  return toolchain;
}

std::string find_nvcc() {
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path == nullptr ? "" : path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string candidate = std::string(dirs.substr(start, end - start)) + "/nvcc";
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

std::expected<Toolchain, std::string> probe_nvcc() {
  const std::string unavailable = "the cuda backend is unavailable on this machine: ";
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) return std::unexpected(unavailable + "nvcc is neither in /usr/local/cuda/bin nor on PATH");
  auto version = output_of({nvcc, "--version"});
  if (!version) return std::unexpected(unavailable + version.error());
  // nvcc's first line names no version; the whole text does. Host code goes through g++.
  std::string identity = *version;
  if (gxx()) identity += gxx()->identity;
  return Toolchain{nvcc, identity};
}

const std::expected<Toolchain, std::string>& nvcc() {
  static const auto toolchain = probe_nvcc();
  return toolchain;
}

// The first GPU's architecture ("sm_90"), so that flags and key name it;
// "native" (left to nvcc) when no driver answers.
std::string native_cuda_arch() {
  static const std::string arch = [] {
    auto out = output_of({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"});
    if (!out) return std::string("native");
    std::string digits;
    for (char c : first_line(*out)) {
      if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
    }
    return digits.empty() ? std::string("native") : "sm_" + digits;
  }();
  return arch;
}

bool is_valid_arch(std::string_view arch) {
  if (arch == "native") return true;
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (!arch.starts_with(prefix)) continue;
    std::string_view rest = arch.substr(prefix.size());
    if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) rest.remove_suffix(1);
    return !rest.empty() && rest.find_first_not_of("0123456789") == std::string_view::npos;
  }
  return false;
}

const std::expected<std::string, std::string>& kernel_header() {
  static const auto header = read_file(std::string(CA_KERNEL_INCLUDE_DIR) + "/ca_kernel.h");
  return header;
}

std::vector<std::string> link_libraries(const BuildOptions& options) {
  if (options.backend != Backend::cuda) return {};
  std::vector<std::string> libraries;
  if (options.allow_cublas) libraries.insert(libraries.end(), {"-lcublas", "-lcublasLt"});
  if (options.allow_cudnn) libraries.push_back("-lcudnn");
  return libraries;
}

// The files under kernels/ that the backend compiles, in path order.
std::vector<std::string> compiled_sources(const std::map<std::string, std::string>& files, Backend backend) {
  std::vector<std::string_view> extensions = {".cpp", ".cc", ".cxx"};
  extensions.push_back(backend == Backend::cuda ? ".cu" : ".c");
  std::vector<std::string> sources;
  for (const auto& [path, contents] : files) {
    if (!path.starts_with("kernels/")) continue;
    if (std::ranges::any_of(extensions, [&](std::string_view ext) { return path.ends_with(ext); }))
      sources.push_back(path);
  }
  return sources;
}

std::string build_key(const std::map<std::string, std::string>& files, const BuildOptions& options,
                      const Toolchain& toolchain, const std::vector<std::string>& flags,
                      const std::vector<std::string>& libraries) {
  // Length-prefixed fields, so no two different inputs share a text.
  std::string material;
  auto add = [&](std::string_view field) {
    material += std::to_string(field.size()) + ':';
    material += field;
  };
  add(k_recipe_version);
  add(backend_name(options.backend));
  add(toolchain.identity);
  add(kernel_header().value_or(""));
  add(std::to_string(flags.size()));
  for (const std::string& flag : flags) add(flag);
  add(std::to_string(libraries.size()));
  for (const std::string& library : libraries) add(library);
  for (const auto& [path, contents] : files) {
    add(path);
    add(contents);
  }
  return sha256_hex(material);
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

// gcc "error:", nvcc "error :", ptxas "error   :", and the linker's complaints.
bool is_error_line(std::string_view line) {
  if (line.find("undefined reference") != std::string_view::npos) return true;
  if (line.find("multiple definition") != std::string_view::npos) return true;
  for (size_t pos = line.find("error"); pos != std::string_view::npos; pos = line.find("error", pos + 1)) {
    size_t next = line.find_first_not_of(' ', pos + 5);
    if (next != std::string_view::npos && line[next] == ':') return true;
  }
  return false;
}

// One diagnostic: a line that starts at column 0 and the indented source
// and caret lines under it.
struct Diagnostic {
  std::string head;
  std::vector<std::string> body;
};

// At most k_max_message_lines lines with paths relative to the candidate:
// errors first, then notes about the candidate's own files; notes inside
// system headers (template spew) are left out, long lines cut.
std::string summarize_compiler_output(const std::string& output, const std::string& build_dir) {
  std::string text = replace_all(output, build_dir + "/src/", "");
  text = replace_all(std::move(text), build_dir + "/", "");
  std::vector<Diagnostic> diagnostics;
  size_t total = 0;
  for (std::string_view line : lines_of(text)) {
    if (trim(line).empty()) continue;
    ++total;
    std::string cut =
        line.size() > k_max_line_length ? std::string(line.substr(0, k_max_line_length)) + " ..." : std::string(line);
    bool continuation = line.front() == ' ' && !diagnostics.empty();
    if (continuation) diagnostics.back().body.push_back(std::move(cut));
    if (!continuation) diagnostics.push_back({std::move(cut), {}});
  }
  constexpr size_t k_max_body_lines = 3;
  std::vector<std::string> picked;
  std::vector<std::string_view> heads;
  for (bool errors : {true, false}) {
    for (const Diagnostic& diagnostic : diagnostics) {
      if (is_error_line(diagnostic.head) != errors || std::ranges::find(heads, diagnostic.head) != heads.end())
        continue;
      if (!errors && (diagnostic.head.starts_with('/') || diagnostic.head.starts_with("In file included from")))
        continue;
      if (picked.size() >= k_max_message_lines) break;
      heads.push_back(diagnostic.head);
      picked.push_back(diagnostic.head);
      for (size_t i = 0; i < diagnostic.body.size() && i < k_max_body_lines && picked.size() < k_max_message_lines;
           ++i) {
        picked.push_back(diagnostic.body[i]);
      }
    }
  }
  std::string message;
  for (const std::string& line : picked) message += (message.empty() ? "" : "\n") + line;
  if (total > picked.size()) message += "\n(" + std::to_string(total - picked.size()) + " more lines)";
  return message;
}

// Deletes a build directory on scope exit.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (!path.empty()) remove_tree(path);
  }
};

struct CompileJob {
  const Toolchain& toolchain;
  std::vector<std::string> flags;
  std::vector<std::string> libraries;
  std::vector<std::string> sources;
};

// Compiles in a fresh directory under `cache` and renames the library into
// `<cache>/<key>/`. Returns "" on success, the trimmed compiler output when
// the candidate does not compile, or an error message for machine problems.
std::expected<std::string, std::string> compile(const std::map<std::string, std::string>& files, const CompileJob& job,
                                                const std::string& cache, const std::string& key, int timeout_s) {
  std::error_code error;
  fs::create_directories(cache + "/tmp", error);
  if (error) return std::unexpected(cache + "/tmp: cannot create: " + error.message());
  TempDir build;
  std::string pattern = cache + "/tmp/build-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return std::unexpected(pattern + ": cannot create: " + std::strerror(errno));
  build.path = pattern;
  for (const auto& [path, contents] : files) {
    fs::path target = fs::path(build.path) / "src" / path;
    fs::create_directories(target.parent_path(), error);
    std::ofstream out(target, std::ios::binary);
    out << contents;
    if (error || !out.flush()) return std::unexpected(target.string() + ": cannot write candidate file");
  }
  fs::create_directories(build.path + "/tmp", error);  // the compiler's scratch files, so their paths get trimmed too
  if (error) return std::unexpected(build.path + "/tmp: cannot create: " + error.message());

  std::vector<std::string> argv = {job.toolchain.program};
  argv.insert(argv.end(), job.flags.begin(), job.flags.end());
  argv.push_back(std::string("-I") + CA_KERNEL_INCLUDE_DIR);
  argv.insert(argv.end(), job.sources.begin(), job.sources.end());
  argv.insert(argv.end(), {"-o", build.path + "/candidate.so"});
  argv.insert(argv.end(), job.libraries.begin(), job.libraries.end());
  SubprocessOptions run;
  run.cwd = build.path + "/src";
  run.env = {"TMPDIR=" + build.path + "/tmp", "LC_ALL=C"};  // LC_ALL=C: plain ASCII quotes in messages
  run.timeout = std::chrono::seconds(timeout_s);
  auto ran = run_subprocess(argv, run);
  if (!ran) return std::unexpected(ran.error());
  if (ran->interrupted) return std::unexpected("build interrupted");
  if (ran->timed_out) return "the compiler did not finish within " + std::to_string(timeout_s) + " s";
  if (!ran->ok()) {
    std::string message = summarize_compiler_output(ran->err + ran->out, build.path);
    return message.empty() ? "the compiler " + ran->describe() : message;
  }

  std::string dir = cache + "/" + key;
  fs::create_directories(dir, error);
  if (error) return std::unexpected(dir + ": cannot create: " + error.message());
  Json record = {{"key", key},
                 {"compiler", job.toolchain.identity},
                 {"flags", job.flags},
                 {"libraries", job.libraries},
                 {"sources", job.sources}};
  auto written = write_file_atomic(dir + "/build.json", record.dump(2) + "\n");
  if (!written) return std::unexpected(written.error());
  // Same filesystem, so the library appears whole or not at all.
  if (std::rename((build.path + "/candidate.so").c_str(), (dir + "/candidate.so").c_str()) != 0) {
    return std::unexpected(dir + "/candidate.so: cannot rename into place: " + std::strerror(errno));
  }
  return "";
}

}  // namespace

std::string default_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value == nullptr ? "" : value;
  };
  if (std::string dir = env("CA_CACHE_DIR"); !dir.empty()) return dir + "/builds";
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/cuda-agent/builds";
  if (std::string dir = env("HOME"); !dir.empty()) return dir + "/.cache/cuda-agent/builds";
  return "";
}

std::vector<std::string> compile_flags(const BuildOptions& options) {
  // -z defs: every symbol must come from a library we link, so the NEEDED
  // allow-list also bounds what the candidate can call.
  if (options.backend == Backend::cpu) {
    std::vector<std::string> flags = {"-std=c++17", "-O3",     "-march=native", "-fopenmp",
                                      "-fPIC",      "-shared", "-Wl,-z,defs"};
    if (options.fast_math) flags.push_back("-ffast-math");
    return flags;
  }
  std::string arch = options.cuda_arch.empty() ? "native" : options.cuda_arch;
  // A shared cudart: the static one would bring dlopen into the candidate.
  std::vector<std::string> flags = {"-O3",      "-std=c++17", "-shared",  "-Xcompiler",     "-fPIC",    "-arch=" + arch,
                                    "--cudart", "shared",     "-Xlinker", "--no-undefined", "-Xlinker", "--as-needed"};
  if (options.fast_math) flags.push_back("--use_fast_math");
  return flags;
}

std::expected<BuildResult, std::string> build_candidate(const std::map<std::string, std::string>& files,
                                                        const BuildOptions& requested) {
  BuildResult result;
  auto fail = [&](std::string_view stage, std::string message) {
    result.stage = stage;
    result.message = std::move(message);
    return result;
  };
  if (std::string finding = check_sources(files); !finding.empty()) return fail("static", finding);

  BuildOptions options = requested;
  bool cuda = options.backend == Backend::cuda;
  const auto& toolchain = cuda ? nvcc() : gxx();
  if (!toolchain) return std::unexpected(toolchain.error());
  if (cuda && options.cuda_arch.empty()) options.cuda_arch = native_cuda_arch();
  if (cuda && !is_valid_arch(options.cuda_arch)) {
    return std::unexpected("invalid cuda arch '" + options.cuda_arch + "': expected a name such as sm_90");
  }
  if (!kernel_header()) return std::unexpected(kernel_header().error());
  std::string cache = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  if (cache.empty()) return std::unexpected("no build cache directory: set CA_CACHE_DIR or HOME");

  CompileJob job{*toolchain, compile_flags(options), link_libraries(options), compiled_sources(files, options.backend)};
  if (job.sources.empty()) {
    std::string kinds = cuda ? ".cu, .cpp or .cc" : ".cpp, .cc or .c";
    return fail("compile", "nothing to compile: the " + std::string(backend_name(options.backend)) +
                               " backend builds " + kinds + " files under kernels/");
  }
  result.key = build_key(files, options, *toolchain, job.flags, job.libraries);
  std::string library = cache + "/" + result.key + "/candidate.so";
  std::error_code error;
  result.cached = fs::exists(library, error);
  if (!result.cached) {
    auto compiled = compile(files, job, cache, result.key, options.timeout_s);
    if (!compiled) return std::unexpected(compiled.error());
    if (!compiled->empty()) return fail("compile", *compiled);
  }
  // Checked on every call, cached or not, so stricter rules apply to old builds too.
  if (std::string finding = check_library(library, options); !finding.empty()) return fail("static", finding);
  result.ok = true;
  result.library = library;
  return result;
}

}  // namespace ca
