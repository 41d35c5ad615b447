// Source and ELF checks on candidates; the ELF reader needs no binutils, so
// it also works inside a bare sandbox.
#include "kernel/static_check.h"

#include <cxxabi.h>
#include <elf.h>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "util/atomic_file.h"

namespace ca {
namespace {

struct DynamicSymbol {
  std::string name;
  bool defined = false;
  bool exported = false;
};

struct DynamicInfo {
  std::vector<DynamicSymbol> symbols;
  std::vector<std::string> needed;
};

template <class T>
bool read_at(std::string_view data, uint64_t offset, T& out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, data.data() + offset, sizeof(T));
  return true;
}

std::optional<std::string> string_at(std::string_view data, const Elf64_Shdr& table, uint64_t index) {
  if (table.sh_offset > data.size() || index >= table.sh_size) return std::nullopt;
  std::string_view strings = data.substr(table.sh_offset, table.sh_size);
  size_t end = strings.find('\0', index);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(strings.substr(index, end - index));
}

// Reads .dynsym and .dynamic, the tables the dynamic loader itself uses.
std::expected<DynamicInfo, std::string> read_dynamic(const std::string& so) {
  auto data = read_file(so);
  if (!data) return std::unexpected(data.error());
  std::string_view bytes = *data;
  Elf64_Ehdr header;
  if (!read_at(bytes, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    return std::unexpected(so + ": not an ELF file");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return std::unexpected(so + ": not a 64-bit little-endian ELF file");
  }
  const std::string malformed = so + ": malformed ELF file";
  if (header.e_shentsize != sizeof(Elf64_Shdr)) return std::unexpected(malformed);
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!read_at(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return std::unexpected(malformed);
  }

  DynamicInfo info;
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM && section.sh_type != SHT_DYNAMIC) continue;
    if (section.sh_link >= sections.size()) return std::unexpected(malformed);
    const Elf64_Shdr& strings = sections[section.sh_link];
    if (section.sh_type == SHT_DYNSYM) {
      // Entry 0 is the reserved null symbol.
      for (uint64_t offset = sizeof(Elf64_Sym); offset + sizeof(Elf64_Sym) <= section.sh_size;
           offset += sizeof(Elf64_Sym)) {
        Elf64_Sym symbol;
        if (!read_at(bytes, section.sh_offset + offset, symbol)) return std::unexpected(malformed);
        auto name = string_at(bytes, strings, symbol.st_name);
        if (!name) return std::unexpected(malformed);
        if (name->empty()) continue;
        bool defined = symbol.st_shndx != SHN_UNDEF;
        int binding = ELF64_ST_BIND(symbol.st_info);
        int visibility = ELF64_ST_VISIBILITY(symbol.st_other);
        bool visible = (binding == STB_GLOBAL || binding == STB_WEAK || binding == STB_GNU_UNIQUE) &&
                       (visibility == STV_DEFAULT || visibility == STV_PROTECTED);
        info.symbols.push_back({std::move(*name), defined, defined && visible});
      }
      continue;
    }
    for (uint64_t offset = 0; offset + sizeof(Elf64_Dyn) <= section.sh_size; offset += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      if (!read_at(bytes, section.sh_offset + offset, entry)) return std::unexpected(malformed);
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag != DT_NEEDED) continue;
      auto name = string_at(bytes, strings, entry.d_un.d_val);
      if (!name) return std::unexpected(malformed);
      info.needed.push_back(std::move(*name));
    }
  }
  return info;
}

constexpr std::string_view k_load_code = "candidates may not load or look up code at run time";
constexpr std::string_view k_process = "candidates may not start processes";
constexpr std::string_view k_network = "candidates may not use sockets";
constexpr std::string_view k_other_process = "candidates may not touch other processes";
constexpr std::string_view k_thread =
    "candidates may not start threads; work must be finished when ca_forward returns (use OpenMP on cpu)";
constexpr std::string_view k_callback = "candidates may not run host code later from CUDA callbacks";
constexpr std::string_view k_signal = "candidates may not install signal handlers";
constexpr std::string_view k_syscall = "candidates may not make raw system calls";
constexpr std::string_view k_device_reset = "candidates may not reset the device the harness shares";
constexpr std::string_view k_ipc = "candidates may not share device memory with other processes";
// Events on ctx->stream time the call; work on a stream of the candidate's own runs outside them (EXPLOITS.md, C1).
constexpr std::string_view k_stream =
    "candidates may not make streams or contexts; queue the work on ctx->stream, where it is timed";
constexpr std::string_view k_per_thread_stream =
    "candidates may not use the per-thread default stream; queue the work on ctx->stream, where it is timed";
constexpr std::string_view k_torch = "candidates may not call PyTorch (at::, c10::, torch::); write the kernel";
constexpr std::string_view k_python = "candidates may not call Python";

struct SymbolRule {
  std::string_view reason;
  std::vector<std::string_view> names;
};

const std::vector<SymbolRule>& exact_rules() {
  static const std::vector<SymbolRule> rules = {
      {k_load_code,
       {"dlopen", "dlmopen", "dlsym", "dlvsym", "__libc_dlopen_mode", "__libc_dlsym", "_dl_sym", "dl_iterate_phdr",
        "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"}},
      {k_process,
       {"fork", "vfork", "_Fork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl", "execlp",
        "execle", "fexecve", "execveat", "system", "popen", "posix_spawn", "posix_spawnp", "daemon"}},
      {k_network,
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "recvfrom", "sendmsg",
        "recvmsg", "getaddrinfo"}},
      {k_other_process, {"ptrace", "process_vm_readv", "process_vm_writev", "kill", "tgkill", "tkill", "pidfd_open"}},
      {k_thread, {"pthread_create", "thrd_create", "timer_create"}},
      {k_callback, {"cudaLaunchHostFunc", "cudaStreamAddCallback", "cuLaunchHostFunc", "cuStreamAddCallback"}},
      {k_signal, {"signal", "sigaction", "sigset", "bsd_signal", "__sysv_signal"}},
      {k_syscall, {"syscall"}},
      {k_device_reset, {"cudaDeviceReset", "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2"}},
  };
  return rules;
}

struct PrefixRule {
  std::string_view prefix;
  std::string_view reason;
};

constexpr PrefixRule k_prefix_rules[] = {
    // std::thread, std::async and std::jthread start threads through this one member; the others
    // (hardware_concurrency, join, detach) start none.
    {"_ZNSt6thread15_M_start_thread", k_thread},
    {"cuGetProcAddress", k_load_code},
    {"cudaIpc", k_ipc},
    {"cuIpc", k_ipc},
    {"cudaStreamCreate", k_stream},
    {"cuStreamCreate", k_stream},
    {"cuCtxCreate", k_stream},
    {"cuGreenCtx", k_stream},
};

// What --default-stream per-thread (or CUDA_API_PER_THREAD_DEFAULT_STREAM) makes of every stream-taking call.
constexpr std::string_view k_per_thread_suffixes[] = {"_ptsz", "_ptds"};

// True when the mangled `symbol` names something in a PyTorch namespace: a
// nested name N[rVKRO]* followed by one of those namespaces.
bool in_torch_namespace(std::string_view symbol) {
  if (!symbol.starts_with("_Z")) return false;
  static constexpr std::string_view k_namespaces[] = {"2at", "3c10", "5torch", "6caffe2", "8pybind11"};
  for (size_t pos = symbol.find('N'); pos != std::string_view::npos; pos = symbol.find('N', pos + 1)) {
    size_t start = symbol.find_first_not_of("rVKRO", pos + 1);
    if (start == std::string_view::npos) return false;
    std::string_view rest = symbol.substr(start);
    if (std::ranges::any_of(k_namespaces, [&](std::string_view ns) { return rest.starts_with(ns); })) return true;
  }
  return false;
}

bool is_python_api(std::string_view symbol) {
  std::string_view name = symbol.starts_with('_') ? symbol.substr(1) : symbol;
  return name.size() > 2 && name.starts_with("Py") &&
         (std::isupper(static_cast<unsigned char>(name[2])) || name[2] == '_');
}

// The symbol as an agent wrote it: demangled C++ names, plain C names.
std::string display_name(const std::string& symbol) {
  if (!symbol.starts_with("_Z")) return symbol;  // short C names would demangle as types ("f" -> "float")
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (demangled == nullptr) return symbol;
  std::string result = demangled;
  std::free(demangled);
  return result;
}

std::string_view stem_of(std::string_view library) {
  return library.substr(0, library.find(".so"));
}

bool is_one_of(std::string_view stem, std::initializer_list<std::string_view> names) {
  return std::ranges::find(names, stem) != names.end();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool is_source_file(std::string_view path) {
  size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return false;
  return is_one_of(path.substr(dot),
                   {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".tpp"});
}

std::string check_path(const std::string& path) {
  if (path.empty() || path.back() == '/') return "\"" + path + "\": not a file name";
  if (path.front() == '/') return path + ": file paths must be relative";
  if (path.find('\0') != std::string::npos) return "file path contains a NUL byte";
  // The build writes each file under its own folder: a name the filesystem refuses (NAME_MAX, 255 bytes on
  // Linux) is the candidate's failure, with a verdict, not a machine error that loses the record.
  constexpr size_t k_max_name = 255, k_max_path = 1024;
  auto shown = [&] { return path.size() > 60 ? path.substr(0, 40) + "..." + path.substr(path.size() - 12) : path; };
  if (path.size() > k_max_path) return shown() + ": file path longer than " + std::to_string(k_max_path) + " bytes";
  for (std::string_view part : split(path, '/')) {
    if (part == "..") return path + ": file paths may not contain \"..\"";
    if (part.size() > k_max_name) {
      return shown() + ": a file or folder name of " + std::to_string(part.size()) + " bytes (at most " +
             std::to_string(k_max_name) + ")";
    }
  }
  return "";
}

// True when `header`, included from `file` ('"' or '<' form), may name a file
// outside the candidate: absolute, or climbing above the candidate's root.
bool escapes_candidate(std::string_view file, std::string_view header, char form) {
  if (header.starts_with('/')) return true;
  std::vector<std::string_view> stack;
  if (form == '"') {
    stack = split(file, '/');
    stack.pop_back();
  }
  for (std::string_view part : split(header, '/')) {
    if (part != "..") {
      stack.push_back(part);
      continue;
    }
    if (stack.empty()) return true;
    stack.pop_back();
  }
  return false;
}

// Why `file` may not include `header`, or "".
std::string include_finding(std::string_view file, std::string_view header, char form) {
  std::vector<std::string_view> parts = split(header, '/');
  for (std::string_view part : parts) {
    if (is_one_of(part, {"torch", "ATen", "c10", "caffe2", "pybind11", "THC"})) {
      return "candidates may not use PyTorch headers; build against ca_kernel.h";
    }
  }
  if (parts.back() == "Python.h") return std::string(k_python);
  if (escapes_candidate(file, header, form)) return "candidates may not include files from outside the candidate";
  return "";
}

// The header named by a preprocessor include line, and its form ('"' or '<'),
// or nullopt when `line` is no include.
std::optional<std::pair<std::string_view, char>> included_header(std::string_view line) {
  auto skip_blanks = [&] { line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t"))); };
  skip_blanks();
  if (!line.starts_with('#')) return std::nullopt;
  line.remove_prefix(1);
  skip_blanks();
  bool include = false;
  for (std::string_view directive : {"include_next", "include", "import"}) {
    if (!include && line.starts_with(directive)) {
      line.remove_prefix(directive.size());
      include = true;
    }
  }
  if (!include) return std::nullopt;
  skip_blanks();
  if (line.empty() || (line.front() != '<' && line.front() != '"')) return std::nullopt;
  char form = line.front();
  size_t end = line.find(form == '<' ? '>' : '"', 1);
  if (end == std::string_view::npos) return std::nullopt;
  return std::pair{line.substr(1, end - 1), form};
}

}  // namespace

std::expected<std::vector<std::string>, std::string> undefined_symbols(const std::string& so) {
  auto info = read_dynamic(so);
  if (!info) return std::unexpected(info.error());
  std::vector<std::string> result;
  for (const DynamicSymbol& symbol : info->symbols) {
    if (!symbol.defined) result.push_back(symbol.name);
  }
  return result;
}

std::expected<std::vector<std::string>, std::string> defined_symbols(const std::string& so) {
  auto info = read_dynamic(so);
  if (!info) return std::unexpected(info.error());
  std::vector<std::string> result;
  for (const DynamicSymbol& symbol : info->symbols) {
    if (symbol.exported) result.push_back(symbol.name);
  }
  return result;
}

std::expected<std::vector<std::string>, std::string> needed_libraries(const std::string& so) {
  auto info = read_dynamic(so);
  if (!info) return std::unexpected(info.error());
  return info->needed;
}

std::string forbidden_symbol_reason(std::string_view symbol) {
  for (const SymbolRule& rule : exact_rules()) {
    if (std::ranges::find(rule.names, symbol) != rule.names.end()) return std::string(rule.reason);
  }
  for (const PrefixRule& rule : k_prefix_rules) {
    if (symbol.starts_with(rule.prefix)) return std::string(rule.reason);
  }
  if (std::ranges::any_of(k_per_thread_suffixes, [&](std::string_view suffix) { return symbol.ends_with(suffix); }))
    return std::string(k_per_thread_stream);
  if (in_torch_namespace(symbol)) return std::string(k_torch);
  if (is_python_api(symbol)) return std::string(k_python);
  return "";
}

std::string forbidden_library_reason(std::string_view library, const BuildOptions& options) {
  std::string_view stem = stem_of(library);
  if (is_one_of(stem, {"libc", "libm", "libmvec", "libstdc++", "libgcc_s", "libgomp", "libpthread", "librt"}))
    return "";
  if (stem.starts_with("ld-linux")) return "";
  if (stem == "libdl") return std::string(k_load_code);
  for (std::string_view prefix : {"libtorch", "libc10", "libcaffe2", "libshm", "libpython"}) {
    if (stem.starts_with(prefix)) return "candidates may not link PyTorch or Python";
  }
  bool cublas = is_one_of(stem, {"libcublas", "libcublasLt"});
  bool cudnn = stem == "libcudnn" || stem.starts_with("libcudnn_");
  bool cuda = cublas || cudnn || is_one_of(stem, {"libcudart", "libcuda"});
  if (cuda && options.backend != Backend::cuda) return "CUDA libraries are not available to the cpu backend";
  if (cublas && !options.allow_cublas) return "cuBLAS is not allowed in this build";
  if (cudnn && !options.allow_cudnn) return "cuDNN is not allowed in this build";
  if (cuda) return "";
  return "only the C and C++ runtimes, OpenMP, the CUDA runtime, cuBLAS and cuDNN may be linked";
}

std::string check_library(const std::string& so, const BuildOptions& options) {
  auto info = read_dynamic(so);
  if (!info) return "cannot inspect the built library: " + info.error();
  std::vector<std::string> findings;
  auto exported = [&](auto&& predicate) {
    return std::ranges::find_if(info->symbols, [&](const DynamicSymbol& s) { return s.exported && predicate(s.name); });
  };
  if (exported([](const std::string& name) { return name == "ca_forward"; }) == info->symbols.end()) {
    auto mangled = exported([](const std::string& name) { return name.starts_with("_Z10ca_forward"); });
    if (mangled != info->symbols.end()) {
      findings.push_back("ca_forward has C++ linkage (" + display_name(mangled->name) +
                         "): include ca_kernel.h or declare it extern \"C\"");
    } else {
      findings.push_back("does not export ca_forward: define it with the signature declared in ca_kernel.h");
    }
  }
  for (const std::string& library : info->needed) {
    std::string reason = forbidden_library_reason(library, options);
    if (!reason.empty()) findings.push_back("links " + library + ": " + reason);
  }
  // One line per reason: std::thread alone imports four symbols.
  std::vector<std::pair<std::string, std::vector<std::string>>> calls;
  for (const DynamicSymbol& symbol : info->symbols) {
    if (symbol.defined) continue;
    std::string reason = forbidden_symbol_reason(symbol.name);
    if (reason.empty()) continue;
    auto same = std::ranges::find_if(calls, [&](const auto& call) { return call.first == reason; });
    if (same == calls.end()) same = calls.insert(calls.end(), {reason, {}});
    same->second.push_back(display_name(symbol.name));
  }
  for (const auto& [reason, names] : calls) {
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    findings.push_back("calls " + list + ": " + reason);
  }
  constexpr size_t k_max_findings = 20;
  std::string message;
  for (size_t i = 0; i < findings.size() && i < k_max_findings; ++i) message += (i > 0 ? "\n" : "") + findings[i];
  if (findings.size() > k_max_findings) message += "\n(" + std::to_string(findings.size() - k_max_findings) + " more)";
  return message;
}

std::string check_sources(const std::map<std::string, std::string>& files) {
  for (const auto& [path, contents] : files) {
    std::string finding = check_path(path);
    if (!finding.empty()) return finding;
  }
  for (const auto& [path, contents] : files) {
    if (!is_source_file(path)) continue;
    size_t line_number = 0;
    for (std::string_view line : split(contents, '\n')) {
      ++line_number;
      auto header = included_header(line);
      if (!header) continue;
      std::string finding = include_finding(path, header->first, header->second);
      if (finding.empty()) continue;
      char close = header->second == '<' ? '>' : '"';
      return path + ":" + std::to_string(line_number) + ": includes " + header->second + std::string(header->first) +
             close + ": " + finding;
    }
  }
  return "";
}

}  // namespace ca
