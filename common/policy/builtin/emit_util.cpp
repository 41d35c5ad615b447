// Text helpers of the kernel emitter.
#include "policy/builtin/emit_util.h"

namespace ca::builtin {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string coordinates(const std::vector<int64_t>& shape, const std::string& index, const std::string& prefix) {
  if (shape.empty()) return "";
  std::string text = "  int64_t " + prefix + "_rest = " + index + ";\n";
  for (size_t d = shape.size(); d-- > 1;) {
    std::string size = std::to_string(shape[d]) + "LL";
    text += "  const int64_t " + prefix + std::to_string(d) + " = " + prefix + "_rest % " + size + "; " + prefix +
            "_rest /= " + size + ";\n";
  }
  text += "  const int64_t " + prefix + "0 = " + prefix + "_rest;\n";
  text += "  (void)" + prefix + "0;\n";
  for (size_t d = 1; d < shape.size(); ++d) text += "  (void)" + prefix + std::to_string(d) + ";\n";
  return text;
}

std::string broadcast_index(const std::vector<int64_t>& arg, const std::vector<int64_t>& out, int align) {
  int64_t arg_numel = product_of(arg);
  if (arg_numel == 1) return "0";
  if (align < 0 && arg_numel == product_of(out)) return "i";
  size_t offset = align < 0 ? out.size() - arg.size() : static_cast<size_t>(align);
  std::vector<int64_t> strides = contiguous_strides(arg);
  std::string index = "0";
  for (size_t j = 0; j < arg.size(); ++j) {
    if (arg[j] == 1) continue;
    index += " + c" + std::to_string(offset + j) + " * " + std::to_string(strides[j]) + "LL";
  }
  return index;
}

std::string strided_index(int64_t extent, int64_t inner, const std::string& u, const std::string& r) {
  std::string e = std::to_string(extent) + "LL";
  if (inner == 1) return "(" + u + " * " + e + " + " + r + ")";
  std::string in = std::to_string(inner) + "LL";
  return "((" + u + " / " + in + ") * " + std::to_string(extent * inner) + "LL + " + r + " * " + in + " + " + u +
         " % " + in + ")";
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int64_t product_of(const std::vector<int64_t>& shape) {
  int64_t result = 1;
  for (int64_t size : shape) result *= size;
  return result;
}

std::string special_functions(const std::string& used) {
  // Bessel I0 and I1: Abramowitz and Stegun 9.8.1-9.8.4 (relative error under 2e-7), t = |x| / 3.75, the large
  // branch scaled by exp(-|x|) so that i0e and i1e need no exp of their own. digamma: the reflection for x < 0, the
  // recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic series; ATen's values at 0 (-inf, signed)
  // and at the negative integers (NaN).
  static const char* const i0_scaled =
      "CA_FN float ca_i0s(float x, int scaled) {\n"
      "  const float a = fabsf(x);\n"
      "  if (a < 3.75f) {\n"
      "    const float t = (a / 3.75f) * (a / 3.75f);\n"
      "    const float v = 1.f + t * (3.5156229f + t * (3.0899424f + t * (1.2067492f + t * (0.2659732f + t * "
      "(0.0360768f + t * 0.0045813f)))));\n"
      "    return scaled ? v * expf(-a) : v;\n"
      "  }\n"
      "  const float t = 3.75f / a;\n"
      "  const float v = (0.39894228f + t * (0.01328592f + t * (0.00225319f + t * (-0.00157565f + t * (0.00916281f + "
      "t * (-0.02057706f + t * (0.02635537f + t * (-0.01647633f + t * 0.00392377f)))))))) / sqrtf(a);\n"
      "  return scaled ? v : v * expf(a);\n"
      "}\n";
  static const char* const i1_scaled =
      "CA_FN float ca_i1s(float x, int scaled) {\n"
      "  const float a = fabsf(x);\n"
      "  float v;\n"
      "  if (a < 3.75f) {\n"
      "    const float t = (a / 3.75f) * (a / 3.75f);\n"
      "    v = a * (0.5f + t * (0.87890594f + t * (0.51498869f + t * (0.15084934f + t * (0.02658733f + t * "
      "(0.00301532f + t * 0.00032411f))))));\n"
      "    if (scaled) v *= expf(-a);\n"
      "  } else {\n"
      "    const float t = 3.75f / a;\n"
      "    v = (0.39894228f + t * (-0.03988024f + t * (-0.00362018f + t * (0.00163801f + t * (-0.01031555f + t * "
      "(0.02282967f + t * (-0.02895312f + t * (0.01787654f + t * -0.00420059f)))))))) / sqrtf(a);\n"
      "    if (!scaled) v *= expf(a);\n"
      "  }\n"
      "  return x < 0.f ? -v : v;\n"
      "}\n";
  static const char* const digamma =
      "CA_FN float ca_digamma(float xf) {\n"
      "  double x = xf, result = 0.0;\n"
      "  if (x != x) return xf;\n"
      "  if (x == 0.0) return copysignf(INFINITY, -xf);\n"
      "  if (x < 0.0) {\n"
      "    if (x == trunc(x)) return NAN;\n"
      "    result = -3.14159265358979323846 / tan(3.14159265358979323846 * (x - trunc(x)));\n"
      "    x = 1.0 - x;\n"
      "  }\n"
      "  while (x < 10.0) { result -= 1.0 / x; x += 1.0; }\n"
      "  const double z = 1.0 / (x * x);\n"
      "  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z / 132))));\n"
      "  return (float)(result + log(x) - 0.5 / x - series);\n"
      "}\n";
  std::string out;
  auto uses = [&](const char* name) { return used.find(name) != std::string::npos; };
  if (uses("ca_i0")) {
    out += std::string(i0_scaled) + "CA_FN float ca_i0(float x) { return ca_i0s(x, 0); }\n" +
           "CA_FN float ca_i0e(float x) { return ca_i0s(x, 1); }\n";
  }
  if (uses("ca_i1")) {
    out += std::string(i1_scaled) + "CA_FN float ca_i1(float x) { return ca_i1s(x, 0); }\n" +
           "CA_FN float ca_i1e(float x) { return ca_i1s(x, 1); }\n";
  }
  if (uses("ca_digamma")) out += digamma;
  return out.empty() ? out : out + "\n";
}

}  // namespace ca::builtin
