#include "ir/fingerprint.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "util/sha256.h"

namespace ca {
namespace {

using NameMap = std::unordered_map<std::string, std::string>;

// Shortest text that reads back as the same double; non-finite values are
// spelled "inf", "-inf" and "nan" by to_chars.
std::string format_double(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// Length-prefixed, so no string content can imitate the surrounding syntax
// and no escaping (which could fail on invalid UTF-8) is needed.
void write_string(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

void write_ref(std::string& out, const Ref& ref, const NameMap& names) {
  out += 'R';
  auto it = names.find(ref.name);
  // A parsed program has no dangling refs; keep the name so a broken one
  // still hashes deterministically.
  out += it != names.end() ? it->second : "?" + ref.name;
  if (ref.index) out += "[" + std::to_string(*ref.index) + "]";
}

// One literal or reference, tagged by kind: N null, B bool, I integer,
// D float, S string, R reference, [..] list, {..} object with sorted keys.
void write_value(std::string& out, const Json& value, const NameMap& names) {
  switch (value.type()) {
    case Json::value_t::null:
      out += 'N';
      return;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "BT" : "BF";
      return;
    // Signed and unsigned are one kind: JSON parsing picks unsigned for
    // non-negative numbers, C++ code builds signed ones.
    case Json::value_t::number_integer:
      out += "I" + std::to_string(value.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      out += "I" + std::to_string(value.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      out += "D" + format_double(value.get<double>());
      return;
    case Json::value_t::string: {
      if (auto ref = parse_ref(value)) {
        write_ref(out, *ref, names);
        return;
      }
      out += 'S';
      write_string(out, value.get_ref<const std::string&>());
      return;
    }
    case Json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ',';
        write_value(out, value[i], names);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      std::vector<std::string> keys;
      for (auto it = value.begin(); it != value.end(); ++it) keys.push_back(it.key());
      std::sort(keys.begin(), keys.end());
      out += '{';
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) out += ',';
        write_string(out, keys[i]);
        out += '=';
        write_value(out, value.find(keys[i]).value(), names);
      }
      out += '}';
      return;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      out += '?';
      return;
  }
}

std::string_view dist_name(Dist dist) {
  switch (dist) {
    case Dist::rand:
      return "rand";
    case Dist::randn:
      return "randn";
    case Dist::uniform:
      return "uniform";
    case Dist::normal:
      return "normal";
    case Dist::kaiming_uniform:
      return "kaiming_uniform";
    case Dist::ones:
      return "ones";
    case Dist::zeros:
      return "zeros";
    case Dist::randint:
      return "randint";
    case Dist::constant:
      return "constant";
    // Neither path nor key: weights are data, like the values a seed draws, so
    // moving or renaming the file keeps the fingerprint.
    case Dist::file:
      return "file";
  }
  return "?";
}

// How many of Init's numbers a distribution uses; the others are ignored so
// that leftovers in unused fields do not change the fingerprint.
int dist_params(Dist dist) {
  switch (dist) {
    case Dist::uniform:
    case Dist::normal:
    case Dist::randint:
      return 2;
    case Dist::constant:
      return 1;
    default:
      return 0;
  }
}

void write_tensor(std::string& out, std::string_view kind, const TensorSpec& spec) {
  out += kind;
  out += ' ';
  out += dtype_name(spec.dtype);
  out += " [";
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(spec.shape[i]);
  }
  out += "] ";
  out += dist_name(spec.init.dist);
  int params = dist_params(spec.init.dist);
  if (params > 0) out += "(" + format_double(spec.init.a);
  if (params > 1) out += "," + format_double(spec.init.b);
  if (params > 0) out += ")";
  out += '\n';
}

}  // namespace

std::string canonical_text(const Program& program) {
  NameMap names;
  std::string out = "ca-program-canonical 1\n";
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    names[program.inputs[i].name] = "i" + std::to_string(i);
    write_tensor(out, "input", program.inputs[i]);
  }
  for (size_t i = 0; i < program.params.size(); ++i) {
    names[program.params[i].name] = "p" + std::to_string(i);
    write_tensor(out, "param", program.params[i]);
  }
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    const Node& node = program.nodes[n];
    // Arguments are written before this node's outputs get their names, so a
    // (malformed) self-reference reads as dangling rather than as a cycle.
    out += "node ";
    write_string(out, node.qualified_name());
    out += ' ';
    write_value(out, node.args, names);
    out += ' ';
    write_value(out, node.kwargs, names);
    out += " -> " + std::to_string(node.outputs.size()) + "\n";
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      names[node.outputs[k]] = "n" + std::to_string(n) + "_" + std::to_string(k);
    }
  }
  out += "outputs";
  for (const auto& name : program.outputs) {
    out += ' ';
    // Outputs are bare names, possibly with an element index ("xs[1]").
    auto ref = parse_ref(Json("%" + name));
    if (ref) write_ref(out, *ref, names);
  }
  out += '\n';
  return out;
}

std::string fingerprint(const Program& program) {
  return "sha256:" + sha256_hex(canonical_text(program));
}

}  // namespace ca
