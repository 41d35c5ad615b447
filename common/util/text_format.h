// A small stand-in for std::format (absent from this project's GCC 12 library): "{}" and "{:spec}" placeholders,
// spec as printf's without the conversion letter ("{:.3f}", "{:+.1f}", "{:.2g}"), for strings, integers and doubles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace ca {

using FormatArg = std::variant<std::string, int64_t, double>;

/// Replaces each placeholder of `pattern` by the next argument. "{}" prints a double as %g, an integer in decimal and a
/// string as is; "{:spec}" is printf's %spec with the conversion of the argument's type (f/g/e given in spec are
/// kept). Placeholders beyond the arguments print nothing; "{{" and "}}" are not supported.
std::string format_args(std::string_view pattern, const std::vector<FormatArg>& args);

template <typename T>
FormatArg to_format_arg(const T& value) {
  if constexpr (std::is_floating_point_v<T>)
    return double(value);
  else if constexpr (std::is_integral_v<T>)
    return int64_t(value);
  else
    return std::string(value);
}

/// format_args with the arguments listed in place.
template <typename... Args>
std::string format_text(std::string_view pattern, const Args&... args) {
  return format_args(pattern, {to_format_arg(args)...});
}

}  // namespace ca
