// oa_bench: times registered cases with GPU timestamps (Engine profiling) and
// wall clock, and writes JSON for bench/torch_compare.py.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <regex>

#include "bench.hpp"

namespace oa_bench {
std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}
}  // namespace oa_bench

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oa_bench: GPU-timestamp benchmarks, JSON out"};
  std::string filter = ".*", out;
  int repeat = 20, warmup = 3;
  bool list = false;
  app.add_option("--filter", filter, "regular expression over case names");
  app.add_option("--repeat", repeat, "timed repetitions (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions first")->check(CLI::NonNegativeNumber);
  app.add_option("--out", out, "write the results as JSON to this file");
  app.add_flag("--list", list, "list the cases and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::regex re(filter);
    if (list) {
      for (auto& c : oa_bench::registry()) std::cout << c.name << "\n";
      return 0;
    }
    oa::Engine engine(oa::EngineOptions{.profiling = true});
    nlohmann::json results = nlohmann::json::array();
    for (auto& c : oa_bench::registry()) {
      if (!std::regex_search(c.name, re)) continue;
      engine.synchronize();
      engine.reset_peak_memory();
      auto step = c.setup(engine);
      for (int i = 0; i < warmup; ++i) step();
      engine.synchronize();
      std::vector<double> gpu, wall;
      for (int i = 0; i < repeat; ++i) {
        engine.reset_profile();
        const auto t0 = std::chrono::steady_clock::now();
        step();
        engine.synchronize();
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        double total = 0;
        for (auto& e : engine.profile().entries) total += e.gpu_ms;
        gpu.push_back(total);
      }
      const double g = median(gpu), w = median(wall);
      nlohmann::json r = {{"name", c.name}, {"kind", c.kind},   {"params", c.params},
                          {"gpu_ms", g},    {"wall_ms", w},     {"device", engine.device().name},
                          {"peak_bytes", engine.memory_stats().peak_in_use_bytes}};
      std::string rate;
      if (c.flops > 0 && g > 0) {
        r["tflops"] = c.flops / (g * 1e-3) / 1e12;
        rate = fmt::format("{:8.2f} TFLOP/s", r["tflops"].get<double>());
      } else if (c.bytes > 0 && g > 0) {
        r["gbps"] = c.bytes / (g * 1e-3) / 1e9;
        rate = fmt::format("{:8.1f} GB/s", r["gbps"].get<double>());
      }
      fmt::print("{:<44} gpu {:9.3f} ms  wall {:9.3f} ms  {}\n", c.name, g, w, rate);
      std::fflush(stdout);
      results.push_back(r);
    }
    if (!out.empty()) std::ofstream(out) << results.dump(2) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "oa_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
