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

}  // namespace ca::builtin
