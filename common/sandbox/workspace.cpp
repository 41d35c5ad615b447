// Writes an agent's workspace: the reference it must match, the ABI it must
// implement, and the instructions (SKILL.md) that tie the two together.
#include "sandbox/workspace.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ir/model_py.h"
#include "util/atomic_file.h"
#include "util/json_field.h"
#include "util/remove_tree.h"

namespace ca {

namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// The output table's rows: shapes from meta.output_shapes, which ca-crawl
// tasks fills in (shape inference needs LibTorch, which this library lacks).
std::string output_rows(const Json& task_record, const Program& program) {
  const Json* shapes = nullptr;
  if (task_record.contains("meta") && task_record["meta"].is_object() &&
      task_record["meta"].contains("output_shapes")) {
    shapes = &task_record["meta"]["output_shapes"];
  }
  std::string rows;
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    std::string dtype = "see model.py", shape = "see model.py";
    if (shapes != nullptr && shapes->is_array() && i < shapes->size() && (*shapes)[i].is_object()) {
      const Json& entry = (*shapes)[i];
      if (entry.contains("dtype") && entry["dtype"].is_string()) dtype = entry["dtype"].get<std::string>();
      if (auto dims = as_int_list(entry.value("shape", Json()), "shape")) shape = shape_text(*dims);
    }
    rows += "| " + std::to_string(i) + " | `" + program.outputs[i] + "` | " + dtype + " | " + shape + " |\n";
  }
  return rows;
}

std::string input_rows(const Program& program) {
  std::string rows;
  size_t index = 0;
  auto add = [&](const std::vector<TensorSpec>& specs, std::string_view kind) {
    for (const auto& spec : specs) {
      rows += "| " + std::to_string(index++) + " | `" + spec.name + "` | " + std::string(kind) + " | " +
              std::string(dtype_name(spec.dtype)) + " | " + shape_text(spec.shape) + " |\n";
    }
  };
  add(program.inputs, "input");
  add(program.params, "param");
  return rows;
}

constexpr std::string_view k_cuda_example = R"(```cuda
// kernels/relu.cu: output 0 = relu(input 0), float32.
#include "ca_kernel.h"
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs,
                          ca_tensor* outputs, int n_outputs) {
  if (n_inputs < 1 || n_outputs < 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < outputs[0].ndim; ++d) n *= outputs[0].shape[d];
  cudaStream_t stream = (cudaStream_t)ctx->stream;
  unsigned blocks = (unsigned)((n + 255) / 256);
  relu_kernel<<<blocks, 256, 0, stream>>>((const float*)inputs[0].data, (float*)outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
```
)";

constexpr std::string_view k_cpu_example = R"(```cpp
// kernels/relu.cpp: output 0 = relu(input 0), float32.
#include "ca_kernel.h"

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs,
                          ca_tensor* outputs, int n_outputs) {
  if (n_inputs < 1 || n_outputs < 1) return 1;
  int64_t n = 1;
  for (int d = 0; d < outputs[0].ndim; ++d) n *= outputs[0].shape[d];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
#pragma omp parallel for num_threads(ctx->num_threads)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return 0;
}
```
)";

std::expected<void, std::string> write_text(const fs::path& path, std::string_view text) {
  if (auto written = write_file_atomic(path.string(), text); !written) return written;
  std::error_code ec;
  fs::permissions(path, fs::perms(0644), ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  return {};
}

std::expected<void, std::string> make_dir(const fs::path& path) {
  std::error_code ec;
  fs::create_directory(path, ec);
  if (!ec) fs::permissions(path, fs::perms(0755), ec);
  if (ec) return std::unexpected(path.string() + ": " + ec.message());
  return {};
}

// Everything but the final rename, inside `root`.
std::expected<void, std::string> fill(const fs::path& root, const Json& task_record, const Program& program,
                                      const std::string& id, std::string_view backend) {
  auto header = read_file(std::string(CA_KERNEL_INCLUDE_DIR) + "/ca_kernel.h");
  if (!header) return std::unexpected(header.error());
  for (const char* sub : {"include", "kernels"}) {
    if (auto made = make_dir(root / sub); !made) return made;
  }
  std::pair<const char*, std::string> files[] = {
      {"SKILL.md", render_skill_md(task_record, program, backend)},
      {"model.py", render_model_py(program, id)},
      {"task.json", task_record.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"},
      {"workspace.json", Json{{"backend", std::string(backend)}}.dump(2) + "\n"},
      {"include/ca_kernel.h", *header},
  };
  for (const auto& [name, text] : files) {
    if (auto written = write_text(root / name, text); !written) return written;
  }
  return {};
}

}  // namespace

std::string sanitize_id(std::string_view id) {
  std::string name;
  for (char c : id) {
    bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    name += keep ? c : '_';
  }
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name;
}

std::expected<std::string, std::string> workspace_backend(const std::string& dir) {
  std::string path = (fs::path(dir) / "workspace.json").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::string();
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  auto json = parse_json(*text);
  if (!json) return std::unexpected(path + ": " + json.error());
  if (!json->is_object()) return std::unexpected(path + ": expected a JSON object");
  auto backend = string_field(*json, "backend", "");
  if (!backend) return std::unexpected(path + ": " + backend.error());
  if (std::find(std::begin(k_workspace_backends), std::end(k_workspace_backends), *backend) ==
      std::end(k_workspace_backends)) {
    return std::unexpected(path + ": backend: must be one of 'cuda', 'cpu', got '" + *backend + "'");
  }
  return *backend;
}

std::string render_skill_md(const Json& task_record, const Program& program, std::string_view backend) {
  bool cuda = backend == "cuda";
  std::string id =
      task_record.contains("id") && task_record["id"].is_string() ? task_record["id"].get<std::string>() : "task";
  std::string s;
  s += "# Task " + id + "\n\n";
  s += "Write " + std::string(cuda ? "CUDA" : "C++") +
       " code in `kernels/` that computes exactly what `model.py` computes, "
       "and make it as fast as you can.\n\n";
  s += "## The reference\n\n"
       "`model.py` is the reference: `Model.forward` is the function to implement; `get_inputs()` shows the inputs' "
       "shapes and how they are drawn. `task.json` holds the same program as the harness runs it. Both are "
       "read-only: only `kernels/` (and `/tmp`) can be written.\n\n";
  s += "## Inputs and outputs\n\n"
       "`ca_forward` gets the task's inputs, then its params, in this order:\n\n"
       "| # | name | kind | dtype | shape |\n|---|---|---|---|---|\n" +
       input_rows(program) +
       "\nand must fill these outputs, allocated by the harness:\n\n"
       "| # | name | dtype | shape |\n|---|---|---|---|\n" +
       output_rows(task_record, program) +
       "\nTensors are contiguous (row-major); `shape` and `strides` (in elements) are given on every call. "
       "Outputs are filled with NaN before each call, so write every element.\n\n";
  s += "## Writing kernels\n\n";
  if (cuda) {
    s += "Put `.cu` files in `kernels/`; they are compiled with nvcc for this GPU's architecture and linked into one "
         "shared library. Include `\"ca_kernel.h\"` (a copy is in `include/ca_kernel.h`) and export `ca_forward`. "
         "Data pointers are device pointers. Enqueue all work on `(cudaStream_t)ctx->stream`; take scratch memory "
         "from `ctx->workspace(ctx, bytes)`; `ctx->cublas` and `ctx->cudnn` are handles bound to that stream "
         "(cuBLAS and cuDNN may be used). Return 0 on success, anything else on failure.\n\n";
    s += std::string(k_cuda_example);
  } else {
    s += "Put `.cpp` files in `kernels/`; they are compiled with g++ (C++17, OpenMP allowed) and linked into one "
         "shared library. Include `\"ca_kernel.h\"` (a copy is in `include/ca_kernel.h`) and export `ca_forward`. "
         "Data pointers are host pointers; use at most `ctx->num_threads` threads (through OpenMP); take scratch "
         "memory from `ctx->workspace(ctx, bytes)`. Return 0 on success, anything else on failure.\n\n";
    s += std::string(k_cpu_example);
  }
  s += "\n## Correctness\n\n"
       "Each check runs your kernel on fresh random inputs (several trials, seeds you cannot predict, some with "
       "signed values) and compares every output element with the reference: |out - ref| <= atol + rtol * |ref| "
       "with atol = rtol = 1e-2 unless the harness is told otherwise. Shapes and dtypes must match exactly; "
       "NaN or Inf where the reference is finite fails.\n\n";
  s += "## Forbidden (fails verification)\n\n"
       "- PyTorch, ATen, c10, pybind11 or Python: no headers, no symbols. Only the CUDA runtime, cuBLAS, cuDNN and "
       "the C/C++ standard libraries may be linked.\n"
       "- `dlopen`/`dlsym`, starting processes (`fork`, `exec*`, `system`, `popen`), sockets, and threads of your "
       "own (`std::thread`, `pthread_create`; OpenMP on the cpu backend is fine).\n"
       "- Caching results across calls: every call gets fresh inputs at fresh addresses, and timed calls are "
       "checked too.\n"
       "- Modifying the inputs: they are hashed before and after each call.\n"
       "- Work on other streams than `ctx->stream`, or left running after `ca_forward` returns.\n"
       "- Reading any file, or the reference's outputs: the kernel runs in a separate, sandboxed process.\n\n";
  s += "## Commands\n\n"
       "- `ca-verify`: builds `kernels/` and checks it against the reference. Prints `[PASS] ...`, or "
       "`[FAIL] <stage>: <message>` where the stage is static, compile, load, run, compare or timeout.\n"
       "- `ca-profile`: times your kernel against PyTorch eager and torch.compile with the same method. Prints "
       "`[PASS]` with the times and speedups, or `[FAIL]` with the reason.\n\n"
       "Reward: -1 if verification fails; 1 if correct; 2 if also more than 5% faster than eager; 3 if also more "
       "than 5% faster than torch.compile. Shell commands run in a sandbox without network" +
       std::string(cuda ? " or GPU (use `ca-verify`/`ca-profile` to run on the GPU)" : "") + ".\n";
  return s;
}

std::expected<void, std::string> create_workspace(const Json& task_record, const std::string& dir,
                                                  std::string_view backend) {
  if (std::find(std::begin(k_workspace_backends), std::end(k_workspace_backends), backend) ==
      std::end(k_workspace_backends)) {
    return std::unexpected("backend: must be one of 'cuda', 'cpu', got '" + std::string(backend) + "'");
  }
  auto id = string_field(task_record, "id", "");
  if (!id) return std::unexpected(id.error());
  auto program_json = require_field(task_record, "program", "");
  if (!program_json) return std::unexpected(program_json.error());
  auto program = parse_program(**program_json, "program");
  if (!program) return std::unexpected(program.error());

  fs::path target = fs::path(dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  std::error_code ec;
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), ec);
  if (ec) return std::unexpected(target.parent_path().string() + ": " + ec.message());
  std::string pattern = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return std::unexpected(pattern + ": " + std::strerror(errno));
  fs::path temp = pattern;
  fs::permissions(temp, fs::perms(0755), ec);
  auto filled = fill(temp, task_record, *program, *id, backend);
  // rename(2) replaces an empty directory but never a non-empty one.
  if (filled && std::rename(temp.c_str(), target.c_str()) != 0) {
    filled = std::unexpected(
        target.string() + ": " +
        (errno == ENOTEMPTY || errno == EEXIST ? "already exists and is not empty" : std::strerror(errno)));
  }
  if (!filled) remove_tree(temp.string());
  return filled;
}

}  // namespace ca
