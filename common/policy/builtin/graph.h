// The kernel writer's plan of a program: every value with its shape and how it is had (a buffer, an expression
// evaluated where it is read, a permuted or reshaped view), and the steps that fill buffers, in program order.
// lower_program builds it (graph.cpp); emit_kernel writes it as source (emit.cpp).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "ir/backend.h"
#include "ir/program.h"
#include "policy/builtin/kernel_writer.h"

namespace ca::builtin {

enum class ValKind {
  buffer,     // memory: an input or param, a program output, or scratch from ctx->workspace
  pointwise,  // expr over args, evaluated per element where it is read (fused)
  permute,    // args[0] with its dims permuted (transpose, permute), sliced (glu, slice, select) or reversed (flip),
              // read through index math
  alias,      // args[0] under another shape, same elements in the same order (view, reshape, flatten, ...)
  concat,     // args joined along dim cat_dim (cat, stack), each read through index math where its part is read
  indexed,    // args[0] read at coordinates computed from the output's (repeat, nearest upsampling, pixel shuffle)
};

struct Val {
  std::vector<int64_t> shape;
  ValKind kind = ValKind::buffer;
  int input = -1;   // position among inputs then params
  int dtype = 0;    // its ca_dtype (the IR's DType order): an input's, or int64 for argmax's indices; 0 is float32
  int output = -1;  // position among the program's outputs, when this buffer is one
  int node = -1;    // the node that makes it; -1 for inputs and params
  // pointwise: C expression over $0, $1, ... (the args, as float), and per arg the output dim its dim 0 lines up
  // with (-1: right-aligned, numpy broadcasting)
  std::string expr;
  std::vector<int> args;
  std::vector<int> align;
  std::vector<int> perm;      // permute: output dim d is input dim perm[d] (an input dim not named is selected)
  std::vector<int64_t> step;  // permute: output dim d moves perm[d] by step[d] (-1: flip; k: every k-th); empty: 1
  int64_t offset = 0;         // permute: where element 0 sits in args[0] (a slice, a select, a flip's far end)
  int cat_dim = 0;            // concat: the dim along which the args follow one another
  // indexed: per dim of args[0], its coordinate as a C expression of the output's coordinates c0, c1, ...; where
  // `inside` (a C condition over them) is not empty and false, the value is `fill` (constant padding)
  std::vector<std::string> source;
  std::string inside;
  double fill = 0;
  bool needs_buffer = false;
  int64_t numel() const;
};

enum class StepKind { pointwise, reduce, softmax, norm, matmul, window, scan };

struct Step {
  StepKind kind = StepKind::pointwise;
  int node = -1;
  int out = -1;    // the value this step writes
  int in = -1;     // reduce/softmax/norm: the value read
  std::string op;  // reduce: sum mean prod amax amin logsumexp norm var std; softmax: softmax log_softmax;
                   // norm: rows rms group batch
  // reduce/softmax/norm rows: the input as [outer, extent, inner]; general_dims for a reduction over dims that are
  // not one contiguous block
  int64_t outer = 1, extent = 1, inner = 1;
  std::vector<int> reduce_dims;
  bool general_dims = false;
  double p = 2;  // norm's order; var/std's correction
  double eps = 0;
  int weight = -1, bias = -1;  // norm affine params; matmul bias (indexed by the output column)
  int64_t groups = 1;          // group norm; window: the convolution's groups
  // matmul: out[b] = alpha * A[b] @ op(B[b]) (+ bias) (+ beta * addend), B stored [K,N] or, transposed, [N,K]
  int a = -1, b = -1, addend = -1;
  int64_t batch = 1, m = 1, n = 1, k = 1, a_batch_stride = 0, b_batch_stride = 0;
  bool b_transposed = false;
  double alpha = 1, beta = 1;
  // window (one unit per output element of [N, C, *spatial]): op conv, conv_transpose (input a, weight b, bias),
  // max, avg, adaptive_avg (input a); per spatial dim the kernel taps, stride, padding each side and dilation.
  // scan: op cumsum or cumprod along the [outer, extent, inner] middle dim of `in`.
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // avg: 0 for none
  std::vector<int> epilogue;     // pointwise values of out's shape computed where out is written
};

struct Plan {
  std::vector<Val> vals;
  std::vector<Step> steps;
  std::vector<int> outputs;  // the value of each program output (a buffer whose output field is its position)
  int n_inputs = 0;          // inputs then params
  std::vector<std::string> patterns;
};

/// Infers shapes, fuses pointwise chains into their readers, and orders the steps. Returns one Uncovered per
/// node outside the patterns.
std::expected<Plan, std::vector<Uncovered>> lower_program(const Program& program);

/// What one variant of a backend changes.
struct Variant {
  int64_t tile_m = 64, tile_n = 64, tile_k = 256;  // cpu matmul tiles
  int block = 256;                                 // cuda threads per block
  bool double_accumulators = true;                 // reductions, norms and softmax sums
  bool own_gemm = false;  // cuda: products in the writer's own tiled kernel with the epilogue fused, not cuBLAS
  int gemm_tile = 128;    // cuda: the own kernel's output tile (128 or 64 square)
  std::string describe;
};

/// The variant `index` of `backend`, modulo their count.
Variant variant_of(Backend backend, int index);
int variant_count(Backend backend);

/// The kernel's source for `plan`.
std::string emit_kernel(const Plan& plan, Backend backend, const Variant& variant);

}  // namespace ca::builtin
