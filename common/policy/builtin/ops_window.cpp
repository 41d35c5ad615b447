// Sliding-window ops over [N, C, *spatial] tensors: convolutions (1-3 spatial dims, groups, stride, padding,
// dilation, bias), transposed convolutions (also output_padding), max/avg pooling and adaptive average pooling. Each
// is one window step: a unit per output element that reads its window of the (stored) input.
#include <algorithm>

#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

// Output extent of a window of `kernel` taps `dilation` apart over `length` padded by `pad` each side; ceil_mode as
// torch's pooling_output_shape (the last window must start inside the input or its left padding).
int64_t window_out(int64_t length, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  int64_t span = length + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (span < 0) return 0;
  if (ceil_mode && (out - 1) * stride >= length + pad) --out;
  return out;
}

// Reads an int list argument of `dims` entries (one int repeated), or an error.
std::expected<std::vector<int64_t>, std::string> spatial_list(const Json& args, const std::string& name, size_t dims) {
  auto list = int_list(args, name, dims);
  if (!list) return list;
  if (list->size() == 1 && dims > 1) list->assign(dims, list->front());
  if (list->size() != dims) return std::unexpected("argument '" + name + "' has the wrong length");
  return list;
}

// A window op's input as [N, C, *spatial]: `id` that value, `unbatched` when the op's own input lacks N (PyTorch
// takes [C, *spatial] as a batch of one), so the output drops it again.
struct WindowInput {
  int id = -1;
  bool unbatched = false;
};

// The input as [N, C, *spatial] with `dims` spatial dims (a [C, *spatial] input seen as a batch of one), or an error.
std::expected<WindowInput, std::string> batched_input(Lowering& lowering, const Json& arg, size_t dims) {
  auto x = lowering.tensor(arg);
  if (!x) return std::unexpected(x.error());
  const std::vector<int64_t> shape = lowering.val(*x).shape;
  if (shape.size() == dims + 1) {
    Val batch;
    batch.kind = ValKind::alias;
    batch.shape = shape;
    batch.shape.insert(batch.shape.begin(), 1);
    batch.args = {*x};
    return WindowInput{lowering.add(std::move(batch)), true};
  }
  if (shape.size() != dims + 2) {
    return std::unexpected("input of rank " + std::to_string(shape.size()) + ", the writer covers [N, C, " +
                           std::to_string(dims) + " spatial dims] or [C, " + std::to_string(dims) + " spatial dims]");
  }
  return WindowInput{*x, false};
}

Result add_window(Lowering& lowering, const Node& node, Step step, std::vector<int64_t> out_shape, bool unbatched) {
  for (int64_t size : out_shape) {
    if (size <= 0) return std::unexpected("the window leaves an empty output");
  }
  step.kind = StepKind::window;
  std::string pattern = step.op.starts_with("conv") ? "convolution" : "pooling";
  Val out;
  out.shape = std::move(out_shape);
  step.out = lowering.add(std::move(out));
  int result = step.out;
  if (unbatched) {
    Val unbatch;
    unbatch.kind = ValKind::alias;
    unbatch.shape.assign(lowering.val(step.out).shape.begin() + 1, lowering.val(step.out).shape.end());
    unbatch.args = {step.out};
    result = lowering.add(std::move(unbatch));
  }
  lowering.bind(node.outputs[0], result);
  lowering.add_step(std::move(step));
  lowering.note_pattern(pattern);
  return {};
}

OpHandler convolution(size_t dims, bool transposed) {
  return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto x = batched_input(lowering, args.at("input"), dims);
    auto w = lowering.tensor(args.at("weight"));
    auto bias = lowering.optional_tensor(args.at("bias"));
    if (!x || !w || !bias) return std::unexpected(!x ? x.error() : !w ? w.error() : bias.error());
    Step step;
    step.op = transposed ? "conv_transpose" : "conv";
    step.a = x->id;
    step.b = *w;
    step.bias = *bias;
    auto stride = spatial_list(args, "stride", dims);
    auto dilation = spatial_list(args, "dilation", dims);
    if (!stride || !dilation) return std::unexpected(!stride ? stride.error() : dilation.error());
    step.stride = *stride;
    step.dilation = *dilation;
    step.groups = args.at("groups").get<int64_t>();
    const std::vector<int64_t>& in = lowering.val(x->id).shape;
    const std::vector<int64_t>& ws = lowering.val(*w).shape;
    if (ws.size() != dims + 2) return std::unexpected("weight of another rank than the input");
    step.kernel.assign(ws.begin() + 2, ws.end());
    if (args.at("padding").is_string()) {  // conv*d.padding: "valid" is none, "same" keeps the size at stride 1
      step.padding.assign(dims, 0);
      if (args.at("padding") == "same") {
        for (size_t d = 0; d < dims; ++d) {
          int64_t total = step.dilation[d] * (step.kernel[d] - 1);
          if (total % 2 != 0 || step.stride[d] != 1) return std::unexpected("padding 'same' that is not symmetric");
          step.padding[d] = total / 2;
        }
      }
    } else {
      auto padding = spatial_list(args, "padding", dims);
      if (!padding) return std::unexpected(padding.error());
      step.padding = *padding;
    }
    const int64_t groups = step.groups;
    if (groups <= 0 || in[1] % groups != 0) return std::unexpected("input channels do not divide into the groups");
    int64_t out_channels = transposed ? ws[1] * groups : ws[0];
    if ((transposed ? ws[0] : ws[1] * groups) != in[1] || out_channels % groups != 0)
      return std::unexpected("weight shape does not match the input channels and groups");
    if (*bias >= 0 && lowering.val(*bias).numel() != out_channels) return std::unexpected("bias size");
    std::vector<int64_t> out = {in[0], out_channels};
    std::vector<int64_t> output_padding(dims, 0);
    if (transposed) {
      auto given = spatial_list(args, "output_padding", dims);
      if (!given) return std::unexpected(given.error());
      output_padding = *given;
    }
    for (size_t d = 0; d < dims; ++d) {
      int64_t s = step.stride[d], p = step.padding[d], dl = step.dilation[d], k = step.kernel[d];
      if (s <= 0 || dl <= 0 || p < 0) return std::unexpected("stride, dilation or padding out of range");
      out.push_back(transposed ? (in[d + 2] - 1) * s - 2 * p + dl * (k - 1) + output_padding[d] + 1
                               : window_out(in[d + 2], k, s, p, dl, false));
    }
    return add_window(lowering, node, std::move(step), std::move(out), x->unbatched);
  };
}

// max_pool / avg_pool: `max` selects; the avg arguments are read only when present in the schema.
OpHandler pooling(size_t dims, bool max) {
  return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto x = batched_input(lowering, args.at("self"), dims);
    if (!x) return std::unexpected(x.error());
    auto kernel = spatial_list(args, "kernel_size", dims);
    auto padding = spatial_list(args, "padding", dims);
    if (!kernel || !padding) return std::unexpected(!kernel ? kernel.error() : padding.error());
    std::vector<int64_t> stride = *kernel;  // stride=[] means the kernel size
    if (!(args.at("stride").is_array() && args.at("stride").empty())) {
      auto given = spatial_list(args, "stride", dims);
      if (!given) return std::unexpected(given.error());
      stride = *given;
    }
    std::vector<int64_t> dilation(dims, 1);
    if (max) {
      auto given = spatial_list(args, "dilation", dims);
      if (!given) return std::unexpected(given.error());
      dilation = *given;
    }
    Step step;
    step.op = max ? "max" : "avg";
    step.a = x->id;
    step.kernel = *kernel;
    step.stride = stride;
    step.padding = *padding;
    step.dilation = dilation;
    bool ceil_mode = args.at("ceil_mode").get<bool>();
    if (!max) {
      step.count_include_pad = args.at("count_include_pad").get<bool>();
      if (args.contains("divisor_override") && !args.at("divisor_override").is_null())
        step.divisor_override = args.at("divisor_override").get<int64_t>();
    }
    const std::vector<int64_t>& in = lowering.val(x->id).shape;
    std::vector<int64_t> out = {in[0], in[1]};
    for (size_t d = 0; d < dims; ++d) {
      if (stride[d] <= 0 || dilation[d] <= 0 || step.padding[d] < 0 || 2 * step.padding[d] > step.kernel[d])
        return std::unexpected("kernel, stride or padding out of range");
      out.push_back(window_out(in[d + 2], step.kernel[d], stride[d], step.padding[d], dilation[d], ceil_mode));
    }
    return add_window(lowering, node, std::move(step), std::move(out), x->unbatched);
  };
}

OpHandler adaptive_avg(size_t dims) {
  return [=](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto x = batched_input(lowering, args.at("self"), dims);
    if (!x) return std::unexpected(x.error());
    auto size = spatial_list(args, "output_size", dims);
    if (!size) return std::unexpected(size.error());
    Step step;
    step.op = "adaptive_avg";
    step.a = x->id;
    const std::vector<int64_t>& in = lowering.val(x->id).shape;
    std::vector<int64_t> out = {in[0], in[1]};
    out.insert(out.end(), size->begin(), size->end());
    return add_window(lowering, node, std::move(step), std::move(out), x->unbatched);
  };
}

// The convolution ops that name their input `self` and take no groups (thnn_conv2d, slow_conv3d and the dilated
// ones): conv*d's arguments, after a check that kernel_size is the weight's.
OpHandler slow_convolution(size_t dims) {
  return [dims](Lowering& lowering, const Json& args, const Node& node) -> Result {
    Json conv = {{"input", args.at("self")},
                 {"weight", args.at("weight")},
                 {"bias", args.at("bias")},
                 {"stride", args.at("stride")},
                 {"padding", args.at("padding")},
                 {"dilation", args.contains("dilation") ? args.at("dilation") : Json(std::vector<int64_t>(dims, 1))},
                 {"groups", 1}};
    auto w = lowering.tensor(args.at("weight"));
    auto kernel = spatial_list(args, "kernel_size", dims);
    if (!w || !kernel) return std::unexpected(!w ? w.error() : kernel.error());
    const std::vector<int64_t>& ws = lowering.val(*w).shape;
    if (ws.size() != dims + 2 || !std::equal(kernel->begin(), kernel->end(), ws.begin() + 2))
      return std::unexpected("kernel_size other than the weight's");
    return convolution(dims, false)(lowering, conv, node);
  };
}

// aten::convolution: conv*d or conv_transpose*d by the weight's rank and `transposed`.
Result any_convolution(Lowering& lowering, const Json& args, const Node& node) {
  auto w = lowering.tensor(args.at("weight"));
  if (!w) return std::unexpected(w.error());
  const size_t rank = lowering.val(*w).shape.size();
  if (rank < 3 || rank > 5) return std::unexpected("a convolution of other than 1 to 3 spatial dims");
  return convolution(rank - 2, args.at("transposed").get<bool>())(lowering, args, node);
}

}  // namespace

void register_window_ops(std::map<std::string, OpEntry>& t) {
  t["aten::convolution"] = {
      "aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] "
      "padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> "
      "Tensor",
      any_convolution};
  t["aten::thnn_conv2d"] = {
      "aten::thnn_conv2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias=None, "
      "SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0]) -> Tensor",
      slow_convolution(2)};
  t["aten::slow_conv3d"] = {
      "aten::slow_conv3d(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias=None, "
      "SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0]) -> Tensor",
      slow_convolution(3)};
  t["aten::slow_conv3d_forward"] = {
      "aten::slow_conv3d_forward(Tensor self, Tensor weight, SymInt[3] kernel_size, "
      "Tensor? bias, SymInt[3] stride, SymInt[3] padding) -> Tensor",
      slow_convolution(3)};
  t["aten::slow_conv_dilated2d"] = {
      "aten::slow_conv_dilated2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias=None, SymInt[2] "
      "stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1]) -> Tensor",
      slow_convolution(2)};
  t["aten::slow_conv_dilated3d"] = {
      "aten::slow_conv_dilated3d(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias=None, SymInt[3] "
      "stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1]) -> Tensor",
      slow_convolution(3)};
  for (size_t dims = 1; dims <= 3; ++dims) {
    std::string n = std::to_string(dims);
    t["aten::conv" + n + "d"] = {"aten::conv" + n + "d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[" + n +
                                     "] stride=1, SymInt[" + n + "] padding=0, SymInt[" + n +
                                     "] dilation=1, SymInt groups=1) -> Tensor",
                                 convolution(dims, false)};
    t["aten::conv" + n + "d.padding"] = {
        "aten::conv" + n + "d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[" + n +
            "] stride=1, str padding=\"valid\", SymInt[" + n + "] dilation=1, SymInt groups=1) -> Tensor",
        convolution(dims, false)};
    // conv_transpose1d has no overload name; the 2-d and 3-d ones are ".input".
    std::string transpose = "aten::conv_transpose" + n + "d" + (dims == 1 ? "" : ".input");
    t[transpose] = {transpose + "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[" + n + "] stride=1, SymInt[" +
                        n + "] padding=0, SymInt[" + n + "] output_padding=0, SymInt groups=1, SymInt[" + n +
                        "] dilation=1) -> Tensor",
                    convolution(dims, true)};
    t["aten::max_pool" + n + "d"] = {"aten::max_pool" + n + "d(Tensor self, int[" + n + "] kernel_size, int[" + n +
                                         "] stride=[], int[" + n + "] padding=0, int[" + n +
                                         "] dilation=1, bool ceil_mode=False) -> Tensor",
                                     pooling(dims, true)};
    t["aten::avg_pool" + n + "d"] = {
        "aten::avg_pool" + n + "d(Tensor self, int[" + n + "] kernel_size, int[" + n + "] stride=[], int[" + n +
            "] padding=0, bool ceil_mode=False, bool count_include_pad=True" +
            (dims == 1 ? std::string(") -> Tensor") : std::string(", int? divisor_override=None) -> Tensor")),
        pooling(dims, false)};
    t["aten::adaptive_avg_pool" + n + "d"] = {
        "aten::adaptive_avg_pool" + n + "d(Tensor self, SymInt[" + n + "] output_size) -> Tensor", adaptive_avg(dims)};
  }
}

}  // namespace ca::builtin
