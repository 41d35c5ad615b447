#include "synth/cost.h"

#include <algorithm>
#include <functional>

#include "util/spell.h"

namespace ca {

std::expected<DeviceModel, std::string> device_model(std::string_view name) {
  static const std::vector<DeviceModel> k_devices = {
      {"h200", 4.8e12, 60e12, 5e-6},
      {"cpu", 20e9, 100e9, 2e-6},
  };
  std::vector<std::string> names;
  for (const auto& device : k_devices) {
    if (device.name == name) return device;
    names.push_back(device.name);
  }
  return std::unexpected("unknown device model '" + std::string(name) + "'" + did_you_mean(name, names) +
                         " (known: " + quoted_list(names) + ")");
}

int64_t ValueInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// Calls `f` on every value an argument refers to, lists included.
void for_each_ref(const Json& arg, const std::function<void(const std::string&)>& f) {
  if (arg.is_array()) {
    for (const auto& item : arg) for_each_ref(item, f);
    return;
  }
  if (auto ref = parse_ref(arg)) f(ref->name);
}

}  // namespace

Cost estimate_cost(const Program& program, const std::map<std::string, ValueInfo>& values,
                   const std::vector<std::string>& categories, const DeviceModel& device) {
  Cost total;
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    const Node& node = program.nodes[n];
    std::vector<const ValueInfo*> read;
    auto collect = [&](const std::string& name) {
      if (auto it = values.find(name); it != values.end()) read.push_back(&it->second);
    };
    for (const auto& arg : node.args) for_each_ref(arg, collect);
    for (const auto& [_, arg] : node.kwargs.items()) for_each_ref(arg, collect);

    double bytes = 0, elements_read = 0, out_elements = 0;
    for (const auto* value : read) {
      bytes += double(value->numel() * value->element_bytes);
      elements_read += double(value->numel());
    }
    for (const auto& name : node.outputs) {
      if (auto it = values.find(name); it != values.end()) {
        bytes += double(it->second.numel() * it->second.element_bytes);
        out_elements += double(it->second.numel());
      }
    }
    double flops = std::max(elements_read, out_elements);
    const std::string& category = n < categories.size() ? categories[n] : "";
    if (category == "matmul") {
      auto first = std::find_if(read.begin(), read.end(), [](const ValueInfo* v) { return v->shape.size() >= 2; });
      if (first != read.end()) flops = 2 * out_elements * double((*first)->shape.back());
    } else if (category == "convolution" && read.size() >= 2 && !read[1]->shape.empty() && read[1]->shape[0] > 0) {
      flops = 2 * out_elements * double(read[1]->numel() / read[1]->shape[0]);
    }
    total.bytes += bytes;
    total.flops += flops;
    total.ms += 1e3 * (std::max(bytes / device.bytes_per_s, flops / device.flops_per_s) + device.launch_s);
  }
  return total;
}

}  // namespace ca
