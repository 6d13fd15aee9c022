#include <algorithm>

#include <nlohmann/json.hpp>

#include "oa/runtime/engine.hpp"

namespace oa {

std::string Profile::to_table(std::uint64_t steps) const {
  const double n = static_cast<double>(std::max<std::uint64_t>(steps, 1));
  const char* per = steps > 1 ? "/step" : "";
  double total = 0;
  for (auto& e : entries) total += e.gpu_ms;
  std::string out = fmt::format("{:<48} {:>10} {:>15} {:>12} {:>7}\n", "op", fmt::format("calls{}", per),
                                fmt::format("dispatches{}", per), fmt::format("gpu ms{}", per), "share");
  for (auto& e : entries)
    out += fmt::format("{:<48} {:>10.4g} {:>15.4g} {:>12.4f} {:>6.1f}%\n", e.op, static_cast<double>(e.calls) / n,
                       static_cast<double>(e.dispatches) / n, e.gpu_ms / n, total > 0 ? 100.0 * e.gpu_ms / total : 0.0);
  out += fmt::format("{:<48} {:>10} {:>15} {:>12.4f}\n", "total", "", "", total / n);
  return out;
}

std::string Profile::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  for (auto& e : entries) j.push_back({{"op", e.op}, {"calls", e.calls}, {"dispatches", e.dispatches}, {"gpu_ms", e.gpu_ms}});
  return j.dump();
}

}  // namespace oa
