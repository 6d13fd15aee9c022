#include <nlohmann/json.hpp>

#include "oa/runtime/engine.hpp"

namespace oa {

std::string Profile::to_table() const {
  double total = 0;
  for (auto& e : entries) total += e.gpu_ms;
  std::string out = fmt::format("{:<48} {:>8} {:>10} {:>12} {:>7}\n", "op", "calls", "dispatches", "gpu ms", "share");
  for (auto& e : entries)
    out += fmt::format("{:<48} {:>8} {:>10} {:>12.3f} {:>6.1f}%\n", e.op, e.calls, e.dispatches, e.gpu_ms,
                       total > 0 ? 100.0 * e.gpu_ms / total : 0.0);
  out += fmt::format("{:<48} {:>8} {:>10} {:>12.3f}\n", "total", "", "", total);
  return out;
}

std::string Profile::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  for (auto& e : entries) j.push_back({{"op", e.op}, {"calls", e.calls}, {"dispatches", e.dispatches}, {"gpu_ms", e.gpu_ms}});
  return j.dump();
}

}  // namespace oa
