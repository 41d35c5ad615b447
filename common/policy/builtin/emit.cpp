// emit_kernel: a plan as one source file in the kernel ABI. Fused chains become inline functions evaluated at a
// linear index; each step becomes a unit function (one output element, row or group) that the cpu backend runs
// under OpenMP and the cuda backend runs one thread per unit (a block per unit for long reductions, and several
// blocks per unit, combined by a second kernel, for a few very long ones); products go to a blocked OpenMP GEMM
// (cpu) or to cuBLAS on ctx->stream (cuda), with the fused chains in their epilogue.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "policy/builtin/emit_util.h"
#include "policy/builtin/graph.h"
#include "policy/builtin/ops.h"

namespace ca::builtin {
namespace {

class Emitter {
 public:
  Emitter(const Plan& plan, Backend backend, const Variant& variant)
      : m_plan(plan), m_cuda(backend == Backend::cuda), m_variant(variant) {}

  std::string run() {
    prelude();
    for (size_t v = 0; v < m_plan.vals.size(); ++v) value_function(static_cast<int>(v));
    for (size_t s = 0; s < m_plan.steps.size(); ++s) step_function(m_plan.steps[s], static_cast<int>(s));
    entry();
    return m_out.str();
  }

 private:
  // The element type of a stored value: float, an integer or bool input's own (read only as an operand), long long
  // for argmax's indices, or a byte for a comparison's bools.
  static std::string c_type(const Val& val) {
    if (val.input < 0 && val.dtype == static_cast<int>(DType::boolean)) return "unsigned char";
    if (val.input < 0) return val.dtype == static_cast<int>(DType::int64) ? "long long" : "float";
    switch (static_cast<DType>(val.dtype)) {
      case DType::int64:
        return "const long long";
      case DType::int32:
        return "const int";
      case DType::int16:
        return "const short";
      case DType::int8:
        return "const signed char";
      case DType::uint8:
      case DType::boolean:
        return "const unsigned char";
      default:
        return "float";
    }
  }

  bool stored(int v) const { return m_plan.vals[v].kind == ValKind::buffer || m_plan.vals[v].needs_buffer; }
  static std::string id(int v) { return std::to_string(v); }
  std::string ptr(int v) const {
    while (m_plan.vals[v].kind == ValKind::alias && !stored(v)) v = m_plan.vals[v].args[0];
    return "B.p" + id(v);
  }

  // The element of value v at linear index `index`.
  std::string load(int v, const std::string& index) const {
    const Val& val = m_plan.vals[v];
    if (stored(v)) return "B.p" + id(v) + "[" + index + "]";
    if (val.kind == ValKind::alias) return load(val.args[0], index);
    return "ev" + id(v) + "(B, " + index + ")";
  }

  void prelude() {
    m_out << "// Written by the built-in policy's kernel writer (" << m_variant.describe << ").\n";
    m_out << "#include \"ca_kernel.h\"\n\n#include <math.h>\n#include <stdint.h>\n";
    if (m_cuda) {
      m_out << "#include <cublas_v2.h>\n#include <cuda_runtime.h>\n\n#define CA_FN __device__ __forceinline__\n";
    } else {
      m_out << "#include <omp.h>\n\n#define CA_FN static inline\n";
    }
    m_out << "typedef " << (m_variant.double_accumulators ? "double" : "float") << " acc_t;\n\n";
    m_out << "struct Bufs {\n";
    for (size_t v = 0; v < m_plan.vals.size(); ++v) {
      if (stored(static_cast<int>(v)))
        m_out << "  " << c_type(m_plan.vals[v]) << "* p" << v << ";  // " << shape_text(m_plan.vals[v].shape) << "\n";
    }
    for (size_t s = 0; s < m_plan.steps.size(); ++s) {
      if (split_of(m_plan.steps[s])) m_out << "  float* part" << s << ";  // a split reduction's partials, as acc_t\n";
    }
    m_out << "};\n\n";
    std::string expressions;
    for (const Val& val : m_plan.vals) expressions += val.expr;
    m_out << special_functions(expressions);
    if (m_cuda) {
      // The combine kinds are Emitter::Combine's.
      m_out << "template <typename T>\n__device__ T block_reduce(T v, T* red, int kind) {\n"
            << "  red[threadIdx.x] = v;\n  __syncthreads();\n"
            << "  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {\n"
            << "    if (threadIdx.x < half) {\n      T m = red[threadIdx.x];\n      const T o = red[threadIdx.x + "
               "half];\n"
            << "      switch (kind) {\n";
      for (Combine c : {sum, prod, max_nan, min_nan, max, min})
        m_out << "        case " << c << ": " << combine_statement(c, "m", "o") << " break;\n";
      m_out << "      }\n      red[threadIdx.x] = m;\n    }\n    __syncthreads();\n  }\n"
            << "  const T result = red[0];\n  __syncthreads();\n  return result;\n}\n\n";
    }
  }

  // ev<v>(B, i): a fused pointwise, permuted, concatenated or indexed value at linear index i.
  void value_function(int v) {
    const Val& val = m_plan.vals[v];
    if (val.kind == ValKind::buffer || val.kind == ValKind::alias) return;
    m_out << "CA_FN float ev" << v << "(const Bufs& B, int64_t i) {\n";
    m_out << coordinates(val.shape, "i", "c");
    if (val.kind == ValKind::concat) {
      concat_body(val);
      return;
    }
    if (val.kind == ValKind::indexed) {
      const std::vector<int64_t> strides = contiguous_strides(m_plan.vals[val.args[0]].shape);
      std::string index = "0LL";
      for (size_t d = 0; d < val.source.size(); ++d)
        index += " + (" + val.source[d] + ") * " + std::to_string(strides[d]) + "LL";
      m_out << "  return " << (val.inside.empty() ? "" : "!(" + val.inside + ") ? " + float_literal(val.fill) + " : ")
            << load(val.args[0], index) << ";\n}\n\n";
      return;
    }
    if (val.kind == ValKind::permute) {
      const std::vector<int64_t>& in_shape = m_plan.vals[val.args[0]].shape;
      std::vector<int64_t> strides = contiguous_strides(in_shape);
      std::string index = std::to_string(val.offset) + "LL";
      for (size_t d = 0; d < val.perm.size(); ++d) {
        const int64_t stride = strides[val.perm[d]] * (val.step.empty() ? 1 : val.step[d]);
        index += " + c" + std::to_string(d) + " * " + std::to_string(stride) + "LL";
      }
      m_out << "  return " << load(val.args[0], index) << ";\n}\n\n";
      return;
    }
    std::string expr = val.expr;
    for (size_t a = 0; a < val.args.size(); ++a) {
      const Val& arg = m_plan.vals[val.args[a]];
      m_out << "  const float a" << a << " = " << load(val.args[a], broadcast_index(arg.shape, val.shape, val.align[a]))
            << ";\n";
    }
    for (size_t a = val.args.size(); a-- > 0;)
      expr = replace_all(expr, "$" + std::to_string(a), "a" + std::to_string(a));
    m_out << "  return " << expr << ";\n}\n\n";
  }

  // The part that holds coordinate c<cat_dim>, read at that coordinate less the sizes of the parts before it.
  void concat_body(const Val& val) {
    const std::string at = "c" + std::to_string(val.cat_dim);
    int64_t begin = 0;
    for (size_t a = 0; a < val.args.size(); ++a) {
      const std::vector<int64_t>& part = m_plan.vals[val.args[a]].shape;
      std::vector<int64_t> strides = contiguous_strides(part);
      std::string index = "0LL";
      for (size_t d = 0; d < part.size(); ++d) {
        std::string c = "c" + std::to_string(d);
        if (static_cast<int>(d) == val.cat_dim) c = "(" + c + " - " + std::to_string(begin) + "LL)";
        index += " + " + c + " * " + std::to_string(strides[d]) + "LL";
      }
      begin += part[val.cat_dim];
      const bool last = a + 1 == val.args.size();
      m_out << (last ? "  " : "  if (" + at + " < " + std::to_string(begin) + "LL) ") << "return "
            << load(val.args[a], index) << ";\n";
    }
    m_out << "}\n\n";
  }

  // Writes out[index] = value, then the epilogue's chains at the same index.
  std::string store(const Step& step, const std::string& index, const std::string& value) const {
    std::string text = "B.p" + id(step.out) + "[" + index + "] = " + value + ";";
    for (int root : step.epilogue)
      text += " B.p" + id(root) + "[" + index + "] = ev" + id(root) + "(B, " + index + ");";
    return text;
  }

  void step_function(const Step& step, int s) {
    if (step.kind == StepKind::matmul) {
      if (m_cuda) {
        cuda_gemm(step, s);
        return;
      }
      cpu_gemm(step, s);
      return;
    }
    if (int64_t parts = split_of(step)) {
      std::string before = m_out.str();
      m_out.str("");
      split_reduction(step, s, parts);
      std::string body = m_out.str();
      m_out.str("");
      m_out << before << m_prefix << body;
      m_prefix.clear();
      return;
    }
    // The unit's body first: a reduction over scattered dims adds an index function the unit calls.
    std::string before = m_out.str();
    m_out.str("");
    if (step.kind == StepKind::pointwise) m_out << "  " << store(step, "u", "ev" + id(step.out) + "(B, u)") << "\n";
    if (step.kind == StepKind::reduce) reduce_unit(step, s);
    if (step.kind == StepKind::softmax) softmax_unit(step);
    if (step.kind == StepKind::norm) norm_unit(step);
    if (step.kind == StepKind::window) window_unit(step);
    if (step.kind == StepKind::scan) scan_unit(step);
    std::string unit = m_out.str();
    m_out.str("");
    const bool block = block_reduction(step);
    m_out << before << m_prefix << "CA_FN void unit" << s << "(const Bufs& B, int64_t u"
          << (block ? ", acc_t* ra, float* rf" : "") << ") {\n"
          << (block ? "  (void)ra; (void)rf;\n" : "") << unit << "}\n\n";
    m_prefix.clear();
    if (block) {
      block_runner(s, units_of(step));
      return;
    }
    units_runner(s, units_of(step));
  }

  // A block a unit (block_reduction), with its shared memory.
  void block_runner(int s, int64_t units) {
    const std::string block = std::to_string(m_variant.block);
    m_out << "__global__ void kernel" << s << "(Bufs B) {\n  __shared__ acc_t ra[" << block
          << "];\n  __shared__ float rf[" << block << "];\n"
          << "  for (int64_t u = blockIdx.x; u < " << units << "LL; u += gridDim.x) unit" << s
          << "(B, u, ra, rf);\n}\n\n";
    m_out << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
          << "  if (" << units << "LL > 0) kernel" << s << "<<<" << std::min<int64_t>(units, 1048576) << ", " << block
          << ", 0, (cudaStream_t)ctx->stream>>>(B);\n  return 0;\n}\n\n";
  }

  int64_t units_of(const Step& step) const {
    if (step.kind == StepKind::pointwise || step.kind == StepKind::window) return m_plan.vals[step.out].numel();
    if (step.kind == StepKind::reduce || step.kind == StepKind::softmax || step.kind == StepKind::scan)
      return step.outer * step.inner;
    return step.outer;
  }

  void units_runner(int s, int64_t units) {
    if (m_cuda) {
      m_out << "__global__ void kernel" << s << "(Bufs B) {\n"
            << "  for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < " << units
            << "LL; u += (int64_t)gridDim.x * blockDim.x) unit" << s << "(B, u);\n}\n\n";
      m_out << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
            << "  const int64_t blocks = (" << units << "LL + " << m_variant.block - 1 << ") / " << m_variant.block
            << ";\n"
            << "  if (blocks > 0) kernel" << s << "<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), "
            << m_variant.block << ", 0, (cudaStream_t)ctx->stream>>>(B);\n  return 0;\n}\n\n";
      return;
    }
    m_out << "static int step" << s << "(const Bufs& B, ca_context*, int threads) {\n"
          << "#pragma omp parallel for schedule(static) num_threads(threads)\n"
          << "  for (int64_t u = 0; u < " << units << "LL; ++u) unit" << s << "(B, u);\n  return 0;\n}\n\n";
  }

  // The input index of element r of unit u of a reduction.
  std::string reduce_index(const Step& step, int s) {
    if (!step.general_dims) return strided_index(step.extent, step.inner, "u", "r");
    const std::vector<int64_t>& shape = m_plan.vals[step.in].shape;
    std::vector<int64_t> strides = contiguous_strides(shape);
    std::vector<int64_t> kept_shape, reduced_shape, kept_strides, reduced_strides;
    for (size_t d = 0; d < shape.size(); ++d) {
      bool reduced = std::ranges::find(step.reduce_dims, static_cast<int>(d)) != step.reduce_dims.end();
      (reduced ? reduced_shape : kept_shape).push_back(shape[d]);
      (reduced ? reduced_strides : kept_strides).push_back(strides[d]);
    }
    std::ostringstream fn;
    fn << "CA_FN int64_t rindex" << s << "(int64_t u, int64_t r) {\n"
       << coordinates(kept_shape, "u", "k") << coordinates(reduced_shape, "r", "q") << "  return 0";
    for (size_t d = 0; d < kept_shape.size(); ++d) fn << " + k" << d << " * " << kept_strides[d] << "LL";
    for (size_t d = 0; d < reduced_shape.size(); ++d) fn << " + q" << d << " * " << reduced_strides[d] << "LL";
    fn << ";\n}\n\n";
    m_prefix += fn.str();
    return "rindex" + std::to_string(s) + "(u, r)";
  }

  // How a reduction's partial accumulators combine: block_reduce's kind (prelude) and combine_statement.
  enum Combine { sum = 0, prod = 1, max_nan = 2, min_nan = 3, max = 4, min = 5 };

  // One pass over a reduction's elements: an accumulator, its update by element x, how two partial accumulators
  // combine, and what follows once the pass is done.
  struct Pass {
    std::string type;  // acc_t or float
    std::string var, init, update;
    Combine combine;
    std::string after;
    std::string index;  // argmax/argmin: the accumulator's position, a long long updated with it ("" for none)
  };
  struct Reduction {
    std::vector<Pass> passes;
    std::string result;  // an expression of the accumulators
    std::string result_type = "float";
  };

  static Reduction reduction_of(const Step& step) {
    const std::string& op = step.op;
    const std::string n = std::to_string(step.extent) + "LL";
    auto acc = [](std::string update, Combine combine = sum, std::string init = "0") {
      return Pass{"acc_t", "s", std::move(init), std::move(update), combine, "", ""};
    };
    auto extreme = [](std::string init, std::string update, Combine combine) {
      return Pass{"float", "m", std::move(init), std::move(update), combine, "", ""};
    };
    if (op == "sum") return {{acc("s += x;")}, "(float)s"};
    if (op == "nansum") return {{acc("if (x == x) s += x;")}, "(float)s"};
    if (op == "mean") return {{acc("s += x;")}, "(float)(s / (acc_t)" + n + ")"};
    if (op == "prod") return {{acc("s *= x;", prod, "1")}, "(float)s"};
    if (op == "argmax" || op == "argmin") {  // the first extreme, NaN counting as one (as ATen's)
      const std::string cmp = op == "argmax" ? ">" : "<";
      Pass pass = extreme(op == "argmax" ? "-INFINITY" : "INFINITY",
                          "if (x " + cmp + " m || (x != x && m == m)) { m = x; i = r; }", max_nan);
      pass.index = "i";
      return {{pass}, "i", "long long"};
    }
    if (op == "amax") return {{extreme("-INFINITY", "if (x > m || x != x) m = x;", max_nan)}, "m"};
    if (op == "amin") return {{extreme("INFINITY", "if (x < m || x != x) m = x;", min_nan)}, "m"};
    if (op == "logsumexp") {
      return {{extreme("-INFINITY", "if (x > m) m = x;", max), acc("s += expf(x - m);")},
              "(isinf(m) ? m : m + (float)log((double)s))"};
    }
    if (op == "var" || op == "std") {
      Pass mean = acc("s += x;");
      mean.after = "  const acc_t mean = s / (acc_t)" + n + ";\n";
      Pass squares{"acc_t", "q", "0", "const acc_t d = x - mean; q += d * d;", sum, "", ""};
      squares.after = "  const double dof = (double)" + n + " - " + std::to_string(step.p) +
                      ";\n  const double var = (double)q / (dof > 0 ? dof : 0);\n";
      return {{mean, squares}, std::string("(float)") + (op == "std" ? "sqrt(var)" : "var")};
    }
    // norm of order p
    const double p = step.p;
    if (p == 2) return {{acc("s += (acc_t)x * x;")}, "(float)sqrt((double)s)"};
    if (std::isinf(p) && p > 0) return {{extreme("0.f", "if (fabsf(x) > m) m = fabsf(x);", max)}, "m"};
    if (std::isinf(p)) return {{extreme("INFINITY", "if (fabsf(x) < m) m = fabsf(x);", min)}, "m"};
    if (p == 0) return {{acc("s += (x != 0.f);")}, "(float)s"};
    if (p == 1) return {{acc("s += fabsf(x);")}, "(float)s"};
    return {{acc("s += pow((double)fabsf(x), " + std::to_string(p) + ");")},
            "(float)pow((double)s, 1.0 / " + std::to_string(p) + ")"};
  }

  static std::string combine_statement(Combine combine, const std::string& var, const std::string& other) {
    const std::string& m = var;
    const std::string& o = other;
    switch (combine) {
      case sum:
        return m + " += " + o + ";";
      case prod:
        return m + " *= " + o + ";";
      case max_nan:
        return "if (" + o + " > " + m + " || " + o + " != " + o + ") " + m + " = " + o + ";";
      case min_nan:
        return "if (" + o + " < " + m + " || " + o + " != " + o + ") " + m + " = " + o + ";";
      case max:
        return "if (" + o + " > " + m + ") " + m + " = " + o + ";";
      case min:
        return "if (" + o + " < " + m + ") " + m + " = " + o + ";";
    }
    return "";
  }

  // cuda: a reduction, softmax or norm whose rows are long gets a block of threads per unit (the threads read
  // along the row and combine through shared memory), unless its units are many and its rows strided, where a
  // thread per unit reads coalesced across units. A norm's rows are contiguous, or (batch norm's statistics) few.
  bool block_reduction(const Step& step) const {
    if (!m_cuda || step.extent < 256) return false;
    if (step.kind == StepKind::norm) return true;
    if (step.kind != StepKind::reduce && step.kind != StepKind::softmax) return false;
    if (step.kind == StepKind::reduce && !reduction_of(step).passes[0].index.empty())
      return false;  // block_reduce combines values, not positions
    return units_of(step) < 16384 || (step.inner == 1 && !step.general_dims);
  }

  // The loop over a unit's elements r: all of them (a thread a unit), or every blockDim.x-th from the thread's own.
  std::string row_loop(const Step& step) const {
    const std::string n = std::to_string(step.extent) + "LL";
    return block_reduction(step) ? "  for (int64_t r = threadIdx.x; r < " + n + "; r += blockDim.x) "
                                 : "  for (int64_t r = 0; r < " + n + "; ++r) ";
  }

  // After a row's partial accumulation: the block's combined value in every thread (nothing for a thread a unit).
  std::string combined(const Step& step, const std::string& var, bool is_float, Combine combine) const {
    if (!block_reduction(step)) return "";
    return "  " + var + " = block_reduce(" + var + ", " + (is_float ? "rf" : "ra") + ", " + std::to_string(combine) +
           ");\n";
  }

  // cuda: a one-pass reduction of few, very long units is split over several blocks a unit, whose partial
  // accumulators a second kernel combines (one block a unit would leave most of the GPU idle). 0: not split.
  int64_t split_of(const Step& step) const {
    if (step.kind != StepKind::reduce || !block_reduction(step) || reduction_of(step).passes.size() != 1) return 0;
    const int64_t units = units_of(step);
    if (units >= 1024 || step.extent < (int64_t{1} << 16)) return 0;
    return std::clamp<int64_t>(step.extent / 32768, 2, std::max<int64_t>(2, 2048 / units));
  }

  void reduce_unit(const Step& step, int s) {
    const std::string x = load(step.in, reduce_index(step, s));
    const Reduction reduction = reduction_of(step);
    const bool block = block_reduction(step);
    for (const Pass& pass : reduction.passes) {
      m_out << "  " << pass.type << " " << pass.var << " = " << pass.init << ";\n"
            << (pass.index.empty() ? "" : "  long long " + pass.index + " = 0;\n") << row_loop(step)
            << "{ const float x = " << x << "; " << pass.update << " }\n"
            << combined(step, pass.var, pass.type == "float", pass.combine) << pass.after;
    }
    m_out << (block ? "  if (threadIdx.x == 0) {\n" : "") << "  const " << reduction.result_type
          << " result = " << reduction.result << ";\n  " << store(step, "u", "result") << "\n"
          << (block ? "  }\n" : "");
  }

  // A split reduction (split_of): part<s> writes each block's partial accumulator, kernel<s> combines a unit's.
  void split_reduction(const Step& step, int s, int64_t parts) {
    const Pass pass = reduction_of(step).passes[0];
    const int64_t units = units_of(step);
    const int64_t chunk = (step.extent + parts - 1) / parts;
    const std::string x = load(step.in, reduce_index(step, s));
    const std::string block = std::to_string(m_variant.block);
    m_out << "__global__ void part" << s << "(Bufs B) {\n  __shared__ acc_t ra[" << block
          << "];\n  __shared__ float rf[" << block << "];\n  (void)ra; (void)rf;\n"
          << "  const int64_t u = blockIdx.x / " << parts << "LL, begin = (blockIdx.x % " << parts << "LL) * " << chunk
          << "LL;\n  const int64_t end = begin + " << chunk << "LL < " << step.extent << "LL ? begin + " << chunk
          << "LL : " << step.extent << "LL;\n"
          << "  " << pass.type << " " << pass.var << " = " << pass.init << ";\n"
          << "  for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) { const float x = " << x << "; "
          << pass.update << " }\n"
          << "  " << pass.var << " = block_reduce(" << pass.var << ", " << (pass.type == "float" ? "rf" : "ra") << ", "
          << pass.combine << ");\n"
          << "  if (threadIdx.x == 0) ((acc_t*)B.part" << s << ")[blockIdx.x] = (acc_t)" << pass.var << ";\n}\n\n";
    m_out << "CA_FN void unit" << s << "(const Bufs& B, int64_t u) {\n"
          << "  " << pass.type << " " << pass.var << " = " << pass.init << ";\n"
          << "  for (int64_t g = 0; g < " << parts << "LL; ++g) { const " << pass.type << " o = (" << pass.type
          << ")((const acc_t*)B.part" << s << ")[u * " << parts << "LL + g]; "
          << combine_statement(pass.combine, pass.var, "o") << " }\n"
          << "  const float result = " << reduction_of(step).result << ";\n  " << store(step, "u", "result")
          << "\n}\n\n";
    m_out << "__global__ void kernel" << s << "(Bufs B) {\n"
          << "  for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < " << units
          << "LL; u += (int64_t)gridDim.x * blockDim.x) unit" << s << "(B, u);\n}\n\n";
    m_out << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
          << "  part" << s << "<<<" << units * parts << ", " << block << ", 0, (cudaStream_t)ctx->stream>>>(B);\n"
          << "  kernel" << s << "<<<" << (units + m_variant.block - 1) / m_variant.block << ", " << block
          << ", 0, (cudaStream_t)ctx->stream>>>(B);\n  return 0;\n}\n\n";
  }

  void softmax_unit(const Step& step) {
    std::string index = strided_index(step.extent, step.inner, "u", "r");
    std::string n = std::to_string(step.extent) + "LL";
    std::string x = load(step.in, index);
    const std::string loop = row_loop(step);
    m_out << "  float m = -INFINITY;\n"
          << loop << "{ const float x = " << x << "; if (x > m) m = x; }\n"
          << combined(step, "m", true, max) << "  acc_t s = 0;\n"
          << loop << "s += expf(" << x << " - m);\n"
          << combined(step, "s", false, sum);
    std::string value = step.op == "softmax" ? "expf(" + x + " - m) * inv" : "(" + x + " - m) - lse";
    m_out << "  const float inv = (float)(1.0 / (double)s);\n  const float lse = (float)log((double)s);\n  (void)inv; "
             "(void)lse;\n"
          << loop << "{ const int64_t idx = " << index << "; " << store(step, "idx", value) << " }\n";
  }

  // Norms: statistics over the unit's elements, then (x - mean) * rstd * weight + bias per element.
  void norm_unit(const Step& step) {
    const std::string n = std::to_string(step.extent) + "LL";
    std::string index = "u * " + n + " + r";
    std::string channel = "r";
    if (step.op == "group") {
      int64_t per_group = step.extent / step.inner;
      channel = "(u % " + std::to_string(step.groups) + "LL) * " + std::to_string(per_group) + "LL + r / " +
                std::to_string(step.inner) + "LL";
    }
    if (step.op == "batch") {
      const int64_t channels = step.outer;
      index = "(r / " + std::to_string(step.inner) + "LL) * " + std::to_string(channels * step.inner) + "LL + u * " +
              std::to_string(step.inner) + "LL + r % " + std::to_string(step.inner) + "LL";
      channel = "u";
    }
    std::string x = load(step.in, "(" + index + ")");
    const std::string loop = row_loop(step);
    if (step.op == "rms") {
      m_out << "  acc_t q = 0;\n"
            << loop << "{ const float x = " << x << "; q += (acc_t)x * x; }\n"
            << combined(step, "q", false, sum)
            << "  const float mean = 0.f;\n  const float rstd = (float)(1.0 / sqrt((double)q / " << n << " + "
            << float_literal(step.eps) << "));\n";
    }
    if (step.op != "rms") {
      m_out << "  acc_t s = 0;\n"
            << loop << "s += " << x << ";\n"
            << combined(step, "s", false, sum) << "  const acc_t mean_acc = s / (acc_t)" << n << ";\n  acc_t q = 0;\n"
            << loop << "{ const acc_t d = " << x << " - mean_acc; q += d * d; }\n"
            << combined(step, "q", false, sum)
            << "  const float mean = (float)mean_acc;\n  const float rstd = (float)(1.0 / sqrt((double)q / " << n
            << " + " << float_literal(step.eps) << "));\n";
    }
    std::string value = "(" + x + " - mean) * rstd";
    if (step.weight >= 0) value += " * " + load(step.weight, "(" + channel + ")");
    if (step.bias >= 0) value += " + " + load(step.bias, "(" + channel + ")");
    m_out << loop << "{ const int64_t idx = " << index << "; " << store(step, "idx", value) << " }\n";
  }

  // One output element of a window step: coordinates o0 (sample), o1 (channel), o2... (spatial), then loops over
  // the window's taps (and for convolutions the group's input channels) that fall inside the input.
  void window_unit(const Step& step) {
    const std::vector<int64_t>& out = m_plan.vals[step.out].shape;
    const std::vector<int64_t>& in = m_plan.vals[step.a].shape;
    const size_t dims = out.size() - 2;
    auto l = [](int64_t v) { return std::to_string(v) + "LL"; };
    auto d_ = [](const char* name, size_t d) { return name + std::to_string(d); };
    m_out << coordinates(out, "u", "o");
    std::string x_index = "o0 * " + l(in[1]) + " + c";  // the input channel c, then each spatial dim's i<d>
    for (size_t d = 0; d < dims; ++d) x_index = "(" + x_index + ") * " + l(in[d + 2]) + " + " + d_("i", d);
    std::string loops, close;
    auto open_loop = [&](const std::string& var, const std::string& from, const std::string& to) {
      loops += "  for (int64_t " + var + " = " + from + "; " + var + " < " + to + "; ++" + var + ") {\n";
      close += "  }\n";
    };
    if (step.op == "conv" || step.op == "conv_transpose") {
      const bool transposed = step.op == "conv_transpose";
      const int64_t cin_g = in[1] / step.groups, cout_g = out[1] / step.groups;
      m_out << "  const int64_t g = o1 / " << l(cout_g) << ";\n  acc_t s = 0;\n";
      open_loop("ci", "0", l(cin_g));
      loops += "  const int64_t c = g * " + l(cin_g) + " + ci;\n";
      std::string w_index = transposed ? "c * " + l(cout_g) + " + o1 % " + l(cout_g) : "o1 * " + l(cin_g) + " + ci";
      for (size_t d = 0; d < dims; ++d) {
        std::string k = d_("k", d), i = d_("i", d), o = d_("o", d + 2);
        open_loop(k, "0", l(step.kernel[d]));
        w_index = "(" + w_index + ") * " + l(step.kernel[d]) + " + " + k;
        if (transposed) {
          loops += "  const int64_t t" + std::to_string(d) + " = " + o + " + " + l(step.padding[d]) + " - " + k +
                   " * " + l(step.dilation[d]) + ";\n  if (t" + std::to_string(d) + " < 0 || t" + std::to_string(d) +
                   " % " + l(step.stride[d]) + " != 0) continue;\n  const int64_t " + i + " = t" + std::to_string(d) +
                   " / " + l(step.stride[d]) + ";\n  if (" + i + " >= " + l(in[d + 2]) + ") continue;\n";
        } else {
          loops += "  const int64_t " + i + " = " + o + " * " + l(step.stride[d]) + " - " + l(step.padding[d]) + " + " +
                   k + " * " + l(step.dilation[d]) + ";\n  if (" + i + " < 0 || " + i + " >= " + l(in[d + 2]) +
                   ") continue;\n";
        }
      }
      m_out << loops << "  s += (acc_t)" << load(step.a, x_index) << " * " << load(step.b, w_index) << ";\n" << close;
      std::string value = "(float)s";
      if (step.bias >= 0) value += " + " + load(step.bias, "o1");
      m_out << "  " << store(step, "u", value) << "\n";
      return;
    }
    m_out << "  const int64_t c = o1;\n";
    if (step.op == "max") {
      m_out << "  float m = -INFINITY;\n";
      for (size_t d = 0; d < dims; ++d) {
        std::string k = d_("k", d), i = d_("i", d);
        open_loop(k, "0", l(step.kernel[d]));
        loops += "  const int64_t " + i + " = " + d_("o", d + 2) + " * " + l(step.stride[d]) + " - " +
                 l(step.padding[d]) + " + " + k + " * " + l(step.dilation[d]) + ";\n  if (" + i + " < 0 || " + i +
                 " >= " + l(in[d + 2]) + ") continue;\n";
      }
      m_out << loops << "  const float x = " << load(step.a, x_index) << ";\n  if (x > m || x != x) m = x;\n"
            << close << "  " << store(step, "u", "m") << "\n";
      return;
    }
    // avg, adaptive_avg: each dim's window [s<d>, e<d>) clipped to the input; avg divides by the padded window's
    // size when count_include_pad.
    std::string pooled = "1", counted = "1";
    for (size_t d = 0; d < dims; ++d) {
      std::string sd = d_("s", d), ed = d_("e", d), o = d_("o", d + 2), len = l(in[d + 2]);
      if (step.op == "adaptive_avg") {
        std::string size = l(out[d + 2]);
        m_out << "  const int64_t " << sd << " = " << o << " * " << len << " / " << size << ", " << ed << " = ((" << o
              << " + 1) * " << len << " + " << size << " - 1) / " << size << ";\n";
      } else {
        m_out << "  int64_t " << sd << " = " << o << " * " << l(step.stride[d]) << " - " << l(step.padding[d])
              << ";\n  int64_t " << ed << " = " << sd << " + " << l(step.kernel[d]) << " < " << len << " + "
              << l(step.padding[d]) << " ? " << sd << " + " << l(step.kernel[d]) << " : " << len << " + "
              << l(step.padding[d]) << ";\n  const int64_t p" << d << " = " << ed << " - " << sd << ";\n  (void)p" << d
              << ";\n  if (" << sd << " < 0) " << sd << " = 0;\n  if (" << ed << " > " << len << ") " << ed << " = "
              << len << ";\n";
        pooled += " * p" + std::to_string(d);
      }
      counted += " * (" + ed + " - " + sd + ")";
      open_loop(d_("i", d), sd, ed);
    }
    std::string divisor = step.divisor_override > 0                    ? l(step.divisor_override)
                          : step.op == "avg" && step.count_include_pad ? pooled
                                                                       : counted;
    m_out << "  acc_t s = 0;\n"
          << loops << "  s += " << load(step.a, x_index) << ";\n"
          << close << "  " << store(step, "u", "(float)(s / (acc_t)(" + divisor + "))") << "\n";
  }

  // One line of a scan: the running sum or product along the middle dim, stored at every element.
  void scan_unit(const Step& step) {
    std::string index = strided_index(step.extent, step.inner, "u", "r");
    // logcumsumexp: s = log(exp(s) + exp(x)) as hi + log1p(exp(lo - hi)); equal infinities stay, NaN spreads
    const std::string update =
        step.op == "cumsum"    ? "s += x;"
        : step.op == "cumprod" ? "s *= x;"
                               : "if (x != x || s != s) s = NAN; else { const acc_t hi = s > x ? s : x, lo = s > x ? "
                                 "x : s; s = (lo == -INFINITY || (lo == hi && isinf(hi))) ? hi : hi + log1p(exp(lo - "
                                 "hi)); }";
    const std::string init = step.op == "cumsum" ? "0" : step.op == "cumprod" ? "1" : "-INFINITY";
    m_out << "  acc_t s = " << init << ";\n  for (int64_t r = 0; r < " << step.extent
          << "LL; ++r) {\n    const int64_t idx = " << index << ";\n    const acc_t x = " << load(step.in, "idx")
          << ";\n    " << update << "\n    " << store(step, "idx", "(float)s") << "\n  }\n";
  }

  void cpu_gemm(const Step& step, int s) {
    const int64_t tm = std::min(m_variant.tile_m, round_up(step.m, 4));
    const int64_t tn = std::min(m_variant.tile_n, round_up(step.n, 8));
    const int64_t tk = std::min(m_variant.tile_k, step.k);
    const int64_t mt = (step.m + tm - 1) / tm, nt = (step.n + tn - 1) / tn;
    auto l = [](int64_t v) { return std::to_string(v) + "LL"; };
    std::string b_index =
        step.b_transposed ? "(j0 + j) * " + l(step.k) + " + k0 + k" : "(k0 + k) * " + l(step.n) + " + j0 + j";
    m_out << "static int step" << s << "(const Bufs& B, ca_context*, int threads) {\n"
          << "#pragma omp parallel num_threads(threads)\n  {\n"
          << "    static float bt_[" << tk << "][" << tn << "] __attribute__((aligned(64)));\n"
          << "#pragma omp threadprivate(bt_)\n"
          << "    float acc[" << tm << "][" << tn << "] __attribute__((aligned(64)));\n"
          << "#pragma omp for schedule(static)\n"
          << "    for (int64_t tile = 0; tile < " << l(step.batch * mt * nt) << "; ++tile) {\n"
          << "      const int64_t b = tile / " << l(mt * nt) << ", i0 = (tile / " << l(nt) << ") % " << l(mt) << " * "
          << l(tm) << ", j0 = tile % " << l(nt) << " * " << l(tn) << ";\n"
          << "      const int64_t in = " << l(step.m) << " - i0 < " << l(tm) << " ? " << l(step.m)
          << " - i0 : " << l(tm) << ";\n"
          << "      const int64_t jn = " << l(step.n) << " - j0 < " << l(tn) << " ? " << l(step.n)
          << " - j0 : " << l(tn) << ";\n"
          << "      const float* A = " << ptr(step.a) << " + b * " << l(step.a_batch_stride) << ";\n"
          << "      const float* W = " << ptr(step.b) << " + b * " << l(step.b_batch_stride) << ";\n"
          << "      for (int64_t i = 0; i < " << l(tm) << "; ++i)\n        for (int64_t j = 0; j < " << l(tn)
          << "; ++j) acc[i][j] = 0.f;\n"
          << "      for (int64_t k0 = 0; k0 < " << l(step.k) << "; k0 += " << l(tk) << ") {\n"
          << "        const int64_t kn = " << l(step.k) << " - k0 < " << l(tk) << " ? " << l(step.k)
          << " - k0 : " << l(tk) << ";\n"
          << "        for (int64_t k = 0; k < kn; ++k)\n          for (int64_t j = 0; j < " << l(tn)
          << "; ++j) bt_[k][j] = j < jn ? W[" << b_index << "] : 0.f;\n"
          << "        for (int64_t i = 0; i < in; ++i) {\n"
          << "          const float* ar = A + (i0 + i) * " << l(step.k) << " + k0;\n"
          << "          float* a = acc[i];\n"
          << "          for (int64_t k = 0; k < kn; ++k) {\n            const float xv = ar[k];\n            const "
             "float* wr = bt_[k];\n"
          << "#pragma omp simd\n            for (int64_t j = 0; j < " << l(tn)
          << "; ++j) a[j] += xv * wr[j];\n          }\n        }\n      }\n"
          << "      for (int64_t i = 0; i < in; ++i)\n        for (int64_t j = 0; j < jn; ++j) {\n"
          << "          const int64_t idx = b * " << l(step.m * step.n) << " + (i0 + i) * " << l(step.n)
          << " + j0 + j;\n"
          << "          " << store(step, "idx", float_literal(step.alpha) + " * acc[i][j]")
          << "\n        }\n    }\n  }\n  return 0;\n}\n\n";
  }

  // Whether a product runs in the candidate's own kernel rather than cuBLAS: always when nothing else in the plan
  // launches a kernel of its own (a cuBLAS-only candidate computes nothing itself: the harness rejects it, and
  // rightly), and in the variants that try fusing the epilogue into the product's own store loop.
  bool own_gemm() const {
    if (m_variant.own_gemm) return true;
    return std::ranges::all_of(m_plan.steps,
                               [](const Step& step) { return step.kind == StepKind::matmul && step.epilogue.empty(); });
  }

  void cuda_gemm(const Step& step, int s) {
    if (own_gemm()) {
      if (step.n == 1) {
        cuda_gemv(step, s);
        return;
      }
      cuda_tiled_gemm(step, s);
      return;
    }
    auto l = [](int64_t v) { return std::to_string(v) + "LL"; };
    int64_t total = step.batch * step.m * step.n;
    if (!step.epilogue.empty()) {
      m_out << "__global__ void epilogue" << s << "(Bufs B) {\n"
            << "  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < " << l(total)
            << "; idx += (int64_t)gridDim.x * blockDim.x) {";
      for (int root : step.epilogue) m_out << " B.p" << root << "[idx] = ev" << root << "(B, idx);";
      m_out << " }\n}\n\n";
    }
    // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: cuBLAS gets B first.
    m_out << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
          << "  if (ctx->cublas == NULL) return 10;\n"
          << "  const float alpha = " << float_literal(step.alpha) << ", beta = 0.f;\n"
          << "  cublasStatus_t status = cublasSgemmStridedBatched((cublasHandle_t)ctx->cublas, "
          << (step.b_transposed ? "CUBLAS_OP_T" : "CUBLAS_OP_N") << ", CUBLAS_OP_N, " << step.n << ", " << step.m
          << ", " << step.k << ", &alpha, " << ptr(step.b) << ", " << (step.b_transposed ? step.k : step.n) << ", "
          << l(step.b_batch_stride) << ", " << ptr(step.a) << ", " << step.k << ", " << l(step.a_batch_stride)
          << ", &beta, B.p" << step.out << ", " << step.n << ", " << l(step.m * step.n) << ", " << step.batch << ");\n"
          << "  if (status != CUBLAS_STATUS_SUCCESS) return 11;\n";
    if (!step.epilogue.empty()) {
      m_out << "  const int64_t blocks = (" << l(total) << " + " << m_variant.block - 1 << ") / " << m_variant.block
            << ";\n"
            << "  epilogue" << s << "<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), " << m_variant.block
            << ", 0, (cudaStream_t)ctx->stream>>>(B);\n";
    }
    m_out << "  return 0;\n}\n\n";
  }

  // The product in shared-memory tiles of BM x BN (k in slices of BK), each of the 256 threads accumulating TM x TN
  // outputs in registers at rows ty + i * (BM / TM) and columns tx + j * (BN / TN), so that the threads of a warp
  // read consecutive shared-memory words and store consecutive columns. Out-of-range loads read 0.
  void cuda_tiled_gemm(const Step& step, int s) {
    const bool large = m_variant.gemm_tile >= 128 && step.m >= 128 && step.n >= 128;
    const int bm = large ? 128 : 64, bn = bm, bk = large ? 8 : 16, tm = large ? 8 : 4, tn = tm;
    const int rows = bm / tm, cols = bn / tn, threads = rows * cols;
    auto l = [](int64_t v) { return std::to_string(v) + "LL"; };
    const int64_t mt = (step.m + bm - 1) / bm, nt = (step.n + bn - 1) / bn, tiles = step.batch * mt * nt;
    std::string w_load = step.b_transposed ? "W[c * " + l(step.k) + " + r]" : "W[r * " + l(step.n) + " + c]";
    m_out << "__global__ void __launch_bounds__(" << threads << ") gemm" << s << "(Bufs B) {\n"
          << "  __shared__ float As[" << bk << "][" << bm + 4 << "];\n"
          << "  __shared__ float Ws[" << bk << "][" << bn << "];\n"
          << "  const int tid = threadIdx.x, ty = tid / " << cols << ", tx = tid % " << cols << ";\n"
          << "  for (int64_t tile = blockIdx.x; tile < " << l(tiles) << "; tile += gridDim.x) {\n"
          << "    const int64_t b = tile / " << l(mt * nt) << ", i0 = (tile / " << l(nt) << ") % " << l(mt) << " * "
          << bm << ", j0 = tile % " << l(nt) << " * " << bn << ";\n"
          << "    const float* A = " << ptr(step.a) << " + b * " << l(step.a_batch_stride) << ";\n"
          << "    const float* W = " << ptr(step.b) << " + b * " << l(step.b_batch_stride) << ";\n"
          << "    float acc[" << tm << "][" << tn << "];\n"
          << "#pragma unroll\n    for (int i = 0; i < " << tm << "; ++i)\n#pragma unroll\n"
          << "      for (int j = 0; j < " << tn << "; ++j) acc[i][j] = 0.f;\n"
          << "    for (int64_t k0 = 0; k0 < " << l(step.k) << "; k0 += " << bk << ") {\n"
          << "      for (int e = tid; e < " << bm * bk << "; e += " << threads << ") {\n"
          << "        const int m = e / " << bk << ", k = e % " << bk << ";\n"
          << "        const int64_t r = i0 + m, c = k0 + k;\n"
          << "        As[k][m] = r < " << l(step.m) << " && c < " << l(step.k) << " ? A[r * " << l(step.k)
          << " + c] : 0.f;\n      }\n"
          << "      for (int e = tid; e < " << bk * bn << "; e += " << threads << ") {\n"
          << (step.b_transposed ? "        const int n = e / " + std::to_string(bk) + ", k = e % " + std::to_string(bk)
                                : "        const int k = e / " + std::to_string(bn) + ", n = e % " + std::to_string(bn))
          << ";\n        const int64_t r = k0 + k, c = j0 + n;\n"
          << "        Ws[k][n] = r < " << l(step.k) << " && c < " << l(step.n) << " ? " << w_load << " : 0.f;\n"
          << "      }\n      __syncthreads();\n"
          << "#pragma unroll\n      for (int k = 0; k < " << bk << "; ++k) {\n"
          << "        float a[" << tm << "], w[" << tn << "];\n"
          << "#pragma unroll\n        for (int i = 0; i < " << tm << "; ++i) a[i] = As[k][ty + i * " << rows << "];\n"
          << "#pragma unroll\n        for (int j = 0; j < " << tn << "; ++j) w[j] = Ws[k][tx + j * " << cols << "];\n"
          << "#pragma unroll\n        for (int i = 0; i < " << tm << "; ++i)\n#pragma unroll\n"
          << "          for (int j = 0; j < " << tn << "; ++j) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);\n"
          << "      }\n      __syncthreads();\n    }\n"
          << "#pragma unroll\n    for (int i = 0; i < " << tm << "; ++i)\n#pragma unroll\n"
          << "      for (int j = 0; j < " << tn << "; ++j) {\n"
          << "        const int64_t r = i0 + ty + i * " << rows << ", c = j0 + tx + j * " << cols << ";\n"
          << "        if (r >= " << l(step.m) << " || c >= " << l(step.n) << ") continue;\n"
          << "        const int64_t idx = b * " << l(step.m * step.n) << " + r * " << l(step.n) << " + c;\n"
          << "        " << store(step, "idx", float_literal(step.alpha) + " * acc[i][j]") << "\n      }\n  }\n}\n\n"
          << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
          << "  gemm" << s << "<<<(unsigned)(" << tiles << "LL < 1048576 ? " << tiles << "LL : 1048576), " << threads
          << ", 0, (cudaStream_t)ctx->stream>>>(B);\n  return 0;\n}\n\n";
  }

  // A product with one output column (matrix @ vector): one warp per output row, lanes striding over k, then a
  // shuffle reduction.
  void cuda_gemv(const Step& step, int s) {
    auto l = [](int64_t v) { return std::to_string(v) + "LL"; };
    const int64_t rows = step.batch * step.m;
    m_out << "__global__ void gemv" << s << "(Bufs B) {\n"
          << "  const int lane = threadIdx.x % 32;\n"
          << "  for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; row < " << l(rows)
          << "; row += (int64_t)gridDim.x * blockDim.x / 32) {\n"
          << "    const int64_t b = row / " << l(step.m) << ";\n"
          << "    const float* a = " << ptr(step.a) << " + b * " << l(step.a_batch_stride) << " + (row % " << l(step.m)
          << ") * " << l(step.k) << ";\n"
          << "    const float* w = " << ptr(step.b) << " + b * " << l(step.b_batch_stride) << ";\n"
          << "    acc_t sum = 0;\n"
          << "    for (int64_t k = lane; k < " << l(step.k) << "; k += 32) sum += (acc_t)a[k] * w[k];\n"
          << "    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);\n"
          << "    if (lane == 0) {\n      const int64_t idx = row;\n      "
          << store(step, "idx", float_literal(step.alpha) + " * (float)sum") << "\n    }\n  }\n}\n\n"
          << "static int step" << s << "(const Bufs& B, ca_context* ctx) {\n"
          << "  const int64_t blocks = (" << l(rows) << " * 32 + " << m_variant.block - 1 << ") / " << m_variant.block
          << ";\n  gemv" << s << "<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), " << m_variant.block
          << ", 0, (cudaStream_t)ctx->stream>>>(B);\n  return 0;\n}\n\n";
  }

  void entry() {
    std::ostringstream body;
    int n_outputs = static_cast<int>(m_plan.outputs.size());
    body << "extern \"C\" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, "
            "int n_outputs) {\n"
         << "  if (ctx == NULL || outputs == NULL || n_inputs != " << m_plan.n_inputs
         << " || n_outputs != " << n_outputs << ") return 1;\n  if (n_inputs > 0 && inputs == NULL) return 1;\n";
    for (size_t v = 0; v < m_plan.vals.size(); ++v) {
      const Val& val = m_plan.vals[v];
      if (val.input >= 0) body << check("inputs[" + std::to_string(val.input) + "]", val.shape, val.dtype);
      if (val.output >= 0) body << check("outputs[" + std::to_string(val.output) + "]", val.shape, val.dtype);
    }
    body << "  Bufs B;\n";
    int64_t scratch = 0;
    std::ostringstream scratch_ptrs;
    for (size_t v = 0; v < m_plan.vals.size(); ++v) {
      const Val& val = m_plan.vals[v];
      if (!stored(static_cast<int>(v))) continue;
      if (val.input >= 0) body << "  B.p" << v << " = (" << c_type(val) << "*)inputs[" << val.input << "].data;\n";
      if (val.output >= 0) body << "  B.p" << v << " = (" << c_type(val) << "*)outputs[" << val.output << "].data;\n";
      if (val.input >= 0 || val.output >= 0) continue;
      scratch_ptrs << "  B.p" << v << " = (" << c_type(val) << "*)(scratch + " << scratch << "LL);\n";
      const int64_t floats_each = c_type(val) == "long long" ? 2 : 1;
      scratch += round_up(std::max<int64_t>(val.numel(), 1) * floats_each, 16);
    }
    for (size_t s = 0; s < m_plan.steps.size(); ++s) {
      const int64_t parts = split_of(m_plan.steps[s]);
      if (parts == 0) continue;
      scratch_ptrs << "  B.part" << s << " = scratch + " << scratch << "LL;\n";
      scratch += round_up(2 * units_of(m_plan.steps[s]) * parts, 16);  // acc_t may be a double: two floats each
    }
    if (scratch > 0) {
      body << "  float* scratch = (float*)ctx->workspace(ctx, " << scratch * 4
           << "ULL);\n  if (scratch == NULL) return 3;\n"
           << scratch_ptrs.str();
    }
    if (!m_cuda) body << "  const int threads = ctx->num_threads > 0 ? ctx->num_threads : omp_get_max_threads();\n";
    body << "  int status = 0;\n";
    for (size_t s = 0; s < m_plan.steps.size(); ++s) {
      body << "  if ((status = step" << s << "(B, ctx" << (m_cuda ? "" : ", threads") << ")) != 0) return status;\n";
    }
    if (m_cuda) body << "  return cudaGetLastError() == cudaSuccess ? 0 : 5;\n}\n";
    if (!m_cuda) body << "  return 0;\n}\n";
    m_out << body.str();
  }

  // Fails the call (2) unless the tensor has this dtype (an unread input may be of another than float32) and shape,
  // contiguous.
  static std::string check(const std::string& t, const std::vector<int64_t>& shape, int dtype) {
    std::ostringstream out;
    out << "  if (" << t << ".dtype != " << (dtype == 0 ? std::string("CA_FLOAT32") : std::to_string(dtype)) << " || "
        << t << ".ndim != " << shape.size() << ") return 2;\n";
    std::vector<int64_t> strides = contiguous_strides(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      out << "  if (" << t << ".shape[" << d << "] != " << shape[d] << " || (" << shape[d] << " > 1 && " << t
          << ".strides[" << d << "] != " << strides[d] << ")) return 2;\n";
    }
    out << "  if (" << t << ".data == NULL && " << product_of(shape) << " > 0) return 2;\n";
    return out.str();
  }

  const Plan& m_plan;
  bool m_cuda;
  Variant m_variant;
  std::ostringstream m_out;
  std::string m_prefix;
};

}  // namespace

std::string emit_kernel(const Plan& plan, Backend backend, const Variant& variant) {
  return Emitter(plan, backend, variant).run();
}

}  // namespace ca::builtin
