// Views read at computed coordinates (ValKind::indexed): each dim of the input gets its coordinate as an expression
// of the output's c0, c1, ... (repeat and tile wrap around, nearest upsampling scales down, pixel shuffle moves
// channels into space, diagonal walks two dims at once; linear and cubic upsampling sum several such reads). Nothing
// is copied unless the result is stored.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "policy/builtin/ops_util.h"

namespace ca::builtin {
namespace {

using Result = std::expected<void, std::string>;

std::string c(size_t d) {
  return "c" + std::to_string(d);
}

Result bind_indexed(Lowering& lowering, const Node& node, int src, std::vector<int64_t> shape,
                    std::vector<std::string> source) {
  for (int64_t size : shape) {
    if (size <= 0) return std::unexpected("an empty result");
  }
  Val val;
  val.kind = ValKind::indexed;
  val.shape = std::move(shape);
  val.args = {src};
  val.source = std::move(source);
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

// repeat: `repeats` has at least the input's rank; the input lines up with the trailing dims and wraps around.
Result repeated(Lowering& lowering, const Node& node, int self, std::vector<int64_t> repeats) {
  const std::vector<int64_t> in = lowering.val(self).shape;
  if (repeats.size() < in.size()) return std::unexpected("repeat with fewer repeats than dims");
  const size_t lead = repeats.size() - in.size();
  std::vector<int64_t> out(repeats.size());
  std::vector<std::string> source;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) return std::unexpected("repeat by a negative count");
    out[d] = repeats[d] * (d < lead ? 1 : in[d - lead]);
    if (d >= lead) source.push_back("(" + c(d) + " % " + std::to_string(in[d - lead]) + "LL)");
  }
  return bind_indexed(lowering, node, self, out, source);
}

// Why an upsampling's input is not [N, C, dims spatial dims].
std::string not_spatial(const std::vector<int64_t>& in, size_t dims) {
  return "input of rank " + std::to_string(in.size()) + ", the writer covers [N, C, " + std::to_string(dims) +
         " spatial dims]";
}

// Nearest upsampling of the trailing `dims` dims as PyTorch computes it: source min(floor(dst * scale), size - 1) in
// float, scale being 1 / the given scale factor, or else input size / output size.
Result nearest(Lowering& lowering, const Node& node, int self, size_t dims, const std::vector<int64_t>& out_size,
               const std::vector<double>& scales) {
  const std::vector<int64_t> in = lowering.val(self).shape;
  if (in.size() != dims + 2) return std::unexpected(not_spatial(in, dims));
  std::vector<int64_t> out = {in[0], in[1]};
  std::vector<std::string> source = {c(0), c(1)};
  for (size_t d = 0; d < dims; ++d) {
    const int64_t size = in[d + 2];
    out.push_back(out_size[d]);
    const float scale = scales[d] > 0 ? static_cast<float>(1.0 / scales[d])
                                      : static_cast<float>(size) / static_cast<float>(out_size[d]);
    const std::string scaled = "(int64_t)floorf((float)" + c(d + 2) + " * " + float_literal(scale) + ")";
    const std::string last = std::to_string(size - 1) + "LL";
    source.push_back("(" + scaled + " < " + last + " ? " + scaled + " : " + last + ")");
  }
  return bind_indexed(lowering, node, self, out, source);
}

// A `float?` or `float[]?` scale argument as a list of `dims` values, 0 for none.
std::vector<double> scale_list(const Json& value, size_t dims) {
  std::vector<double> scales(dims, 0);
  if (value.is_number()) scales.assign(dims, value.get<double>());
  if (value.is_array()) {
    for (size_t d = 0; d < dims && d < value.size(); ++d) scales[d] = value[d].is_null() ? 0 : value[d].get<double>();
  }
  return scales;
}

// The schema's per-dim scales: "float? scales" in 1 dim, scales_h and scales_w in 2, scales_d, _h and _w in 3.
std::string scale_params(size_t dims) {
  static const char* const axes[] = {"d", "h", "w"};
  std::string scales;
  for (size_t d = 3 - dims; d < 3; ++d)
    scales += dims == 1 ? ", float? scales=None" : std::string(", float? scales_") + axes[d] + "=None";
  return scales;
}

// What an upsampling reads: its input, output size and per-dim scales (0: none).
struct Upsampling {
  int self = -1;
  std::vector<int64_t> size;
  std::vector<double> scales;
};

// The form with an output size and optional scales.
std::expected<Upsampling, std::string> sized_upsampling(Lowering& lowering, const Json& args, size_t dims) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  auto size = int_list(args, "output_size", dims);
  if (!size) return std::unexpected(size.error());
  if (size->size() != dims) return std::unexpected("output_size has the wrong length");
  Upsampling up{*self, *size, {}};
  for (const char* axis : {"scales", "scales_d", "scales_h", "scales_w"}) {
    if (args.contains(axis)) up.scales.push_back(args.at(axis).is_null() ? 0 : args.at(axis).get<double>());
  }
  return up;
}

OpEntry upsample_nearest(size_t dims) {
  const std::string name = "aten::upsample_nearest" + std::to_string(dims) + "d";
  return {name + "(Tensor self, SymInt[" + std::to_string(dims) + "] output_size" + scale_params(dims) + ") -> Tensor",
          [dims](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto up = sized_upsampling(lowering, args, dims);
            if (!up) return std::unexpected(up.error());
            return nearest(lowering, node, up->self, dims, up->size, up->scales);
          }};
}

// The .vec form: the output size given (no scales), or scale factors and the size that follows from them
// (floor(size * factor)).
std::expected<Upsampling, std::string> vec_upsampling(Lowering& lowering, const Json& args, size_t dims) {
  auto self = lowering.tensor(args.at("input"));
  if (!self) return std::unexpected(self.error());
  const std::vector<int64_t> in = lowering.val(*self).shape;
  if (in.size() != dims + 2) return std::unexpected(not_spatial(in, dims));
  Upsampling up{*self, {}, scale_list(args.at("scale_factors"), dims)};
  if (!args.at("output_size").is_null()) {
    auto given = int_list(args, "output_size", dims);
    if (!given) return std::unexpected(given.error());
    up.size = *given;
    up.scales.assign(dims, 0);
  } else {
    for (size_t d = 0; d < dims; ++d) {
      if (up.scales[d] <= 0) return std::unexpected("upsampling without an output size or scale factors");
      up.size.push_back(static_cast<int64_t>(static_cast<double>(in[d + 2]) * up.scales[d]));
    }
  }
  if (up.size.size() != dims) return std::unexpected("output_size has the wrong length");
  return up;
}

OpEntry upsample_nearest_vec(size_t dims) {
  const std::string name = "aten::upsample_nearest" + std::to_string(dims) + "d.vec";
  return {name + "(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
          [dims](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto up = vec_upsampling(lowering, args, dims);
            if (!up) return std::unexpected(up.error());
            return nearest(lowering, node, up->self, dims, up->size, up->scales);
          }};
}

// Linear (1 to 3 dims) and bicubic (2 dims) upsampling as PyTorch computes it: per dim a source coordinate in float
// from the output's (half-pixel centres, or align_corners), its taps (2, or 4 for cubic, clamped to the input) and
// their weights (the fraction past the lower tap; Keys' cubic with A = -0.75). Each combination of taps is an indexed
// value, and the result a pointwise sum of them whose weights read the output's coordinates.
Result interpolated(Lowering& lowering, const Node& node, int self, size_t dims, const std::vector<int64_t>& out_size,
                    const std::vector<double>& scales, bool align_corners, bool cubic) {
  const std::vector<int64_t> in = lowering.val(self).shape;
  if (in.size() != dims + 2) return std::unexpected(not_spatial(in, dims));
  std::vector<int64_t> out = {in[0], in[1]};
  std::vector<std::vector<std::string>> taps(dims), weights(dims);
  for (size_t d = 0; d < dims; ++d) {
    const int64_t size = in[d + 2], to = out_size[d];
    if (to <= 0) return std::unexpected("an empty result");
    out.push_back(to);
    const float scale = align_corners   ? (to > 1 ? static_cast<float>(size - 1) / static_cast<float>(to - 1) : 0.f)
                        : scales[d] > 0 ? static_cast<float>(1.0 / scales[d])
                                        : static_cast<float>(size) / static_cast<float>(to);
    const std::string at = "(float)" + c(d + 2), last = std::to_string(size - 1) + "LL";
    std::string src = align_corners ? "(" + float_literal(scale) + " * " + at + ")"
                                    : "(" + float_literal(scale) + " * (" + at + " + 0.5f) - 0.5f)";
    auto clamped = [&](const std::string& index) {
      const std::string low = "(" + index + " > 0LL ? " + index + " : 0LL)";
      return "(" + low + " < " + last + " ? " + low + " : " + last + ")";
    };
    if (!cubic) {
      if (!align_corners) src = "fmaxf(" + src + ", 0.f)";
      const std::string lower = clamped("(int64_t)floorf(" + src + ")");
      const std::string past = "fminf(fmaxf(" + src + " - (float)" + lower + ", 0.f), 1.f)";
      taps[d] = {lower, "(" + lower + " < " + last + " ? " + lower + " + 1LL : " + lower + ")"};
      weights[d] = {"(1.f - " + past + ")", past};
      continue;
    }
    const std::string t = "(" + src + " - floorf(" + src + "))";
    // Keys' kernel: near (|x| <= 1) and far (1 < |x| < 2) pieces, at the four taps' distances.
    auto near = [](const std::string& x) { return "((1.25f * " + x + " - 2.25f) * " + x + " * " + x + " + 1.f)"; };
    auto far = [](const std::string& x) {
      return "(((-0.75f * " + x + " + 3.75f) * " + x + " - 6.f) * " + x + " + 3.f)";
    };
    weights[d] = {far("(" + t + " + 1.f)"), near(t), near("(1.f - " + t + ")"), far("(2.f - " + t + ")")};
    for (int k = -1; k <= 2; ++k)
      taps[d].push_back(clamped("((int64_t)floorf(" + src + ") + " + std::to_string(k) + "LL)"));
  }
  const size_t per_dim = cubic ? 4 : 2;
  size_t combinations = 1;
  for (size_t d = 0; d < dims; ++d) combinations *= per_dim;
  std::vector<int> reads;
  std::string sum;
  for (size_t combination = 0; combination < combinations; ++combination) {
    Val val;
    val.kind = ValKind::indexed;
    val.shape = out;
    val.args = {self};
    val.source = {c(0), c(1)};
    std::string term;
    for (size_t d = 0, rest = combination; d < dims; ++d, rest /= per_dim) {
      val.source.push_back(taps[d][rest % per_dim]);
      term += weights[d][rest % per_dim] + " * ";
    }
    reads.push_back(lowering.add(std::move(val)));
    sum += (sum.empty() ? "" : " + ") + term + "$" + std::to_string(combination);
  }
  auto result = lowering.pointwise(sum, reads);
  if (!result) return std::unexpected(result.error());
  lowering.bind(node.outputs[0], *result);
  return {};
}

// The interpolating upsamplings by name (linear dims 1 to 3, bicubic 2), in their two forms: an output size with
// optional per-dim scales, or (.vec) an output size or scale factors, as upsample_nearest*.
void register_interpolations(std::map<std::string, OpEntry>& t) {
  const std::tuple<std::string, size_t, bool> kinds[] = {
      {"linear1d", 1, false}, {"bilinear2d", 2, false}, {"trilinear3d", 3, false}, {"bicubic2d", 2, true}};
  for (const auto& [kind, dims, cubic] : kinds) {
    t["aten::upsample_" + kind] = {"aten::upsample_" + kind + "(Tensor self, SymInt[" + std::to_string(dims) +
                                       "] output_size, bool align_corners" + scale_params(dims) + ") -> Tensor",
                                   [dims, cubic](Lowering& lowering, const Json& args, const Node& node) -> Result {
                                     auto up = sized_upsampling(lowering, args, dims);
                                     if (!up) return std::unexpected(up.error());
                                     return interpolated(lowering, node, up->self, dims, up->size, up->scales,
                                                         args.at("align_corners").get<bool>(), cubic);
                                   }};
    t["aten::upsample_" + kind + ".vec"] = {
        "aten::upsample_" + kind + ".vec(Tensor input, SymInt[]? output_size, bool align_corners, " +
            "float[]? scale_factors) -> Tensor",
        [dims, cubic](Lowering& lowering, const Json& args, const Node& node) -> Result {
          auto up = vec_upsampling(lowering, args, dims);
          if (!up) return std::unexpected(up.error());
          return interpolated(lowering, node, up->self, dims, up->size, up->scales,
                              args.at("align_corners").get<bool>(), cubic);
        }};
  }
}

// pixel_shuffle (r): [..., C r^2, H, W] -> [..., C, H r, W r]; pixel_unshuffle the inverse.
OpHandler pixel_shuffle(bool unshuffle) {
  return [unshuffle](Lowering& lowering, const Json& args, const Node& node) -> Result {
    auto self = lowering.tensor(args.at("self"));
    if (!self) return std::unexpected(self.error());
    const int64_t r = args.at(unshuffle ? "downscale_factor" : "upscale_factor").get<int64_t>();
    std::vector<int64_t> shape = lowering.val(*self).shape;
    const size_t n = shape.size();
    if (n < 3 || r <= 0) return std::unexpected("pixel shuffle of fewer than 3 dims or a factor below 1");
    const std::string rr = std::to_string(r) + "LL", r2 = std::to_string(r * r) + "LL";
    std::vector<std::string> source;
    for (size_t d = 0; d + 3 < n; ++d) source.push_back(c(d));
    const std::string ch = c(n - 3), h = c(n - 2), w = c(n - 1);
    if (!unshuffle) {
      if (shape[n - 3] % (r * r) != 0) return std::unexpected("pixel_shuffle of channels not divisible by r^2");
      shape[n - 3] /= r * r;
      shape[n - 2] *= r;
      shape[n - 1] *= r;
      source.push_back(ch + " * " + r2 + " + (" + h + " % " + rr + ") * " + rr + " + " + w + " % " + rr);
      source.push_back(h + " / " + rr);
      source.push_back(w + " / " + rr);
    } else {
      if (shape[n - 2] % r != 0 || shape[n - 1] % r != 0)
        return std::unexpected("pixel_unshuffle of a size not divisible by r");
      shape[n - 3] *= r * r;
      shape[n - 2] /= r;
      shape[n - 1] /= r;
      source.push_back(ch + " / " + r2);
      source.push_back(h + " * " + rr + " + (" + ch + " % " + r2 + ") / " + rr);
      source.push_back(w + " * " + rr + " + " + ch + " % " + rr);
    }
    return bind_indexed(lowering, node, *self, shape, source);
  };
}

// diagonal: dims dim1 and dim2 dropped, the diagonal (shifted by offset) appended as the last dim.
Result diagonal(Lowering& lowering, const Json& args, const Node& node) {
  auto self = lowering.tensor(args.at("self"));
  if (!self) return std::unexpected(self.error());
  const std::vector<int64_t> in = lowering.val(*self).shape;
  auto d1 = wrap_dim(args.at("dim1").get<int64_t>(), in.size());
  auto d2 = wrap_dim(args.at("dim2").get<int64_t>(), in.size());
  if (!d1 || !d2) return std::unexpected(!d1 ? d1.error() : d2.error());
  if (*d1 == *d2) return std::unexpected("diagonal of one dim with itself");
  const int64_t offset = args.at("offset").get<int64_t>();
  const int64_t length = offset >= 0 ? std::min(in[*d1], in[*d2] - offset) : std::min(in[*d1] + offset, in[*d2]);
  std::vector<int64_t> out;
  std::vector<std::string> source(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int>(d) == *d1 || static_cast<int>(d) == *d2) continue;
    source[d] = c(out.size());
    out.push_back(in[d]);
  }
  const std::string last = c(out.size());
  source[*d1] = last + " + " + std::to_string(std::max<int64_t>(-offset, 0)) + "LL";
  source[*d2] = last + " + " + std::to_string(std::max<int64_t>(offset, 0)) + "LL";
  out.push_back(length);
  return bind_indexed(lowering, node, *self, out, source);
}

// Padding of the trailing dims, `pad` as torch.nn.functional.pad gives it (left, right of the last dim, then of the
// one before, ...; negative crops). constant: `value` outside the input; reflect, replicate and circular: the
// input read at the reflected, clamped or wrapped coordinate.
Result padded(Lowering& lowering, const Node& node, int self, const std::vector<int64_t>& pad, const std::string& mode,
              double value) {
  const std::vector<int64_t> in = lowering.val(self).shape;
  if (pad.size() % 2 != 0 || pad.size() / 2 > in.size()) return std::unexpected("padding of odd length or too long");
  std::vector<int64_t> out = in;
  std::vector<std::string> source, inside;
  for (size_t d = 0; d < in.size(); ++d) source.push_back(c(d));
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const size_t d = in.size() - 1 - k;
    const int64_t left = pad[2 * k], right = pad[2 * k + 1], size = in[d];
    out[d] = size + left + right;
    if (out[d] <= 0) return std::unexpected("padding leaves nothing");
    const std::string n = std::to_string(size) + "LL", j = "(" + c(d) + " - " + std::to_string(left) + "LL)";
    if (mode == "constant") {
      source[d] = j;
      if (left > 0 || right > 0) inside.push_back(j + " >= 0 && " + j + " < " + n);
      continue;
    }
    if (left < 0 || right < 0) return std::unexpected("negative " + mode + " padding");
    if (mode == "replicate") {
      source[d] = "(" + j + " < 0 ? 0LL : " + j + " >= " + n + " ? " + n + " - 1 : " + j + ")";
    } else if (mode == "reflect") {
      if (left >= size || right >= size) return std::unexpected("reflect padding as large as the input");
      source[d] = "(" + j + " < 0 ? -" + j + " : " + j + " >= " + n + " ? 2 * (" + n + " - 1) - " + j + " : " + j + ")";
    } else if (mode == "circular") {
      if (left > size || right > size) return std::unexpected("circular padding larger than the input");
      source[d] = "((" + j + " + " + n + ") % " + n + ")";
    } else {
      return std::unexpected("padding mode '" + mode + "'");
    }
  }
  Val val;
  val.kind = ValKind::indexed;
  val.shape = std::move(out);
  val.args = {self};
  val.source = std::move(source);
  for (const std::string& condition : inside) val.inside += (val.inside.empty() ? "" : " && ") + condition;
  val.fill = value;
  lowering.bind(node.outputs[0], lowering.add(std::move(val)));
  return {};
}

OpEntry pad_op(const std::string& schema, const std::string& pad_name, const std::string& mode) {
  return {schema, [pad_name, mode](Lowering& lowering, const Json& args, const Node& node) -> Result {
            auto self = lowering.tensor(args.at("self"));
            auto pad = int_list(args, pad_name);
            if (!self || !pad) return std::unexpected(!self ? self.error() : pad.error());
            std::string how = mode;
            double value = 0;
            if (args.contains("mode")) how = args.at("mode").get<std::string>();
            if (args.contains("value") && !args.at("value").is_null()) {
              auto given = number(args, "value");
              if (!given) return std::unexpected(given.error());
              value = *given;
            }
            return padded(lowering, node, *self, *pad, how, value);
          }};
}

// rot90: k quarter turns from dims[0] towards dims[1] (torch.rot90), read at the turned coordinates.
Result rotated(Lowering& lowering, const Json& args, const Node& node) {
  auto self = lowering.tensor(args.at("self"));
  auto dims = int_list(args, "dims");
  if (!self || !dims) return std::unexpected(!self ? self.error() : dims.error());
  const std::vector<int64_t> in = lowering.val(*self).shape;
  if (dims->size() != 2) return std::unexpected("rot90 dims of other than two");
  auto a = wrap_dim((*dims)[0], in.size());
  auto b = wrap_dim((*dims)[1], in.size());
  if (!a || !b || *a == *b) return std::unexpected("rot90 dims out of range or equal");
  const int64_t k = ((args.at("k").get<int64_t>() % 4) + 4) % 4;
  std::vector<int64_t> out = in;
  std::vector<std::string> source;
  for (size_t d = 0; d < in.size(); ++d) source.push_back(c(d));
  auto last = [&](int d) { return std::to_string(in[d] - 1) + "LL - "; };
  if (k == 1) {  // x.flip(b).transpose(a, b)
    source[*a] = c(*b);
    source[*b] = "(" + last(*b) + c(*a) + ")";
  } else if (k == 2) {
    source[*a] = "(" + last(*a) + c(*a) + ")";
    source[*b] = "(" + last(*b) + c(*b) + ")";
  } else if (k == 3) {  // x.flip(a).transpose(a, b)
    source[*a] = "(" + last(*a) + c(*b) + ")";
    source[*b] = c(*a);
  }
  if (k % 2 == 1) std::swap(out[*a], out[*b]);
  return bind_indexed(lowering, node, *self, out, source);
}

}  // namespace

void register_gather_ops(std::map<std::string, OpEntry>& t) {
  t["aten::constant_pad_nd"] =
      pad_op("aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", "pad", "constant");
  t["aten::pad"] = pad_op("aten::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
                          "pad", "constant");
  for (const std::string n : {"1", "2", "3"}) {
    const std::string length = std::to_string(2 * std::stoi(n));
    for (const auto& [name, mode] :
         {std::pair<std::string, std::string>{"replication", "replicate"}, {"reflection", "reflect"}}) {
      const std::string op = "aten::" + name + "_pad" + n + "d";
      t[op] = pad_op(op + "(Tensor self, SymInt[" + length + "] padding) -> Tensor", "padding", mode);
    }
  }
  t["aten::_pad_circular"] = pad_op("aten::_pad_circular(Tensor self, SymInt[] pad) -> Tensor", "pad", "circular");
  t["aten::rot90"] = {"aten::rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", rotated};
  t["aten::repeat"] = {"aten::repeat(Tensor self, SymInt[] repeats) -> Tensor",
                       [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                         auto self = lowering.tensor(args.at("self"));
                         auto repeats = int_list(args, "repeats");
                         if (!self) return std::unexpected(self.error());
                         if (!repeats) return std::unexpected(repeats.error());
                         return repeated(lowering, node, *self, *repeats);
                       }};
  // tile: repeat with missing leading counts taken as 1.
  t["aten::tile"] = {"aten::tile(Tensor self, SymInt[] dims) -> Tensor",
                     [](Lowering& lowering, const Json& args, const Node& node) -> Result {
                       auto self = lowering.tensor(args.at("self"));
                       auto dims = int_list(args, "dims");
                       if (!self) return std::unexpected(self.error());
                       if (!dims) return std::unexpected(dims.error());
                       const size_t rank = lowering.val(*self).shape.size();
                       if (dims->size() < rank) dims->insert(dims->begin(), rank - dims->size(), 1);
                       return repeated(lowering, node, *self, *dims);
                     }};
  for (size_t dims : {1, 2, 3}) {
    t["aten::upsample_nearest" + std::to_string(dims) + "d"] = upsample_nearest(dims);
    t["aten::upsample_nearest" + std::to_string(dims) + "d.vec"] = upsample_nearest_vec(dims);
  }
  register_interpolations(t);
  t["aten::pixel_shuffle"] = {"aten::pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", pixel_shuffle(false)};
  t["aten::pixel_unshuffle"] = {"aten::pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor",
                                pixel_shuffle(true)};
  t["aten::diagonal"] = {"aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", diagonal};
  t["aten::diagonal_copy"] = {"aten::diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
                              diagonal};
}

}  // namespace ca::builtin
