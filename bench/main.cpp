// oa_bench: times the registered sweep and writes JSON for
// bench/torch_compare.py and bench/report.py. Per case:
//   gpu_ms   GPU time of one step, from the start of its first op to the end
//            of its last (Vulkan timestamps; the gaps between ops included, as
//            CUDA events around the step measure), median over --repeat steps
//            that each synchronize;
//   gpu_kernels_ms  the same steps' time inside the ops alone (per-op
//            timestamps, summed);
//   wall_ms  wall time per step of --steps steps back to back with one
//            synchronize at the end (what a user's loop sees), best of --loops;
//   record_ms, host_us_per_dispatch  host time spent recording those steps
//            (before the synchronize), per step and per dispatch;
//   peak_mib, reserved_mib  device memory in use at most during the loop and
//            held by the allocator after it;
//   pipelines  each pipeline the case dispatched (kernel, specialization
//            constants, dispatches) and, with OA_PIPELINE_STATS=1 on a device
//            that reports them, its driver's statistics (NVIDIA: "Register
//            Count" among them), then also printed under the case's line.
// All cases share one Engine; after each the engine returns its free memory
// to the driver (empty_cache) and restarts peak tracking, so each case's
// memory figures are its own.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <regex>

#include "bench.hpp"

namespace oa_bench {
std::vector<Sweep>& registry() {
  static std::vector<Sweep> sweeps;
  return sweeps;
}
}  // namespace oa_bench

namespace {
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

constexpr double kMaxWarmupSeconds = 5;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Timing {
  int warmup, repeat, steps, loops;
  double warmup_seconds;  // untimed steps go on this long at least: a GPU's clocks rise under load
  bool kernels;           // the ops list per op and kernel (timestamps around each dispatch)
};

// Seconds one case should take on an H200, from its FLOPs and bytes at
// rates below what PyTorch reaches (30 TFLOP/s FP32, 2 TB/s), a cost per
// step for launches and a fixed cost per case for setup and first use, times
// the steps Timing runs. It sizes the sweep to one device call; it is no measurement.
double h200_estimate_s(const oa_bench::Case& c, const Timing& t) {
  const double step_s = std::max(c.flops / 30e12, c.bytes / 2e12) + 20e-6;
  return 0.25 + t.warmup_seconds + step_s * (t.warmup + t.repeat + t.steps * t.loops + 1);
}

// The pipelines with more dispatches in `after` than in `before` (an earlier
// snapshot of Engine::pipelines), with their statistics.
nlohmann::json dispatched_pipelines(const std::vector<oa::PipelineInfo>& before, const std::vector<oa::PipelineInfo>& after) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : after) {
    std::uint64_t earlier = 0;
    for (const auto& q : before)
      if (q.kernel == p.kernel && q.specialization == p.specialization) earlier = q.dispatches;
    if (p.dispatches == earlier) continue;
    nlohmann::json executables = nlohmann::json::array();
    for (const auto& e : p.executables) {
      nlohmann::json stats = nlohmann::json::object();
      for (const auto& s : e.statistics) stats[s.name] = s.value;
      executables.push_back({{"name", e.name}, {"subgroup_size", e.subgroup_size}, {"statistics", stats}});
    }
    out.push_back({{"kernel", p.kernel}, {"specialization", p.specialization}, {"dispatches", p.dispatches - earlier},
                   {"executables", executables}});
  }
  return out;
}

nlohmann::json run_case(const oa::Engine& engine, const oa_bench::Case& c, const Timing& t) {
  nlohmann::json r = {{"name", c.name}, {"family", c.family}, {"kind", c.kind}, {"params", c.params}};
  const auto start = Clock::now();
  const std::vector<oa::PipelineInfo> pipelines_before = engine.pipelines();
  try {
    auto step = c.setup(engine);
    engine.set_profiling(true, t.kernels ? oa::ProfileDetail::Kernels : oa::ProfileDetail::Ops);
    // The first step builds the case's pipelines while the GPU idles, and an idle GPU lowers its clocks for
    // seconds (an H100 ran a case 4x slow after such a pause). So the warm-up counts from that step's end and
    // goes on, in rounds of 8 steps (or 0.1 s), while a round's steps still run more than 5% faster than the
    // previous round's (the clocks are still rising; at most kMaxWarmupSeconds).
    step();
    engine.synchronize();
    const auto warm_start = Clock::now();
    double last_per_step = 0;
    for (int steps = 1;;) {
      const auto round_start = Clock::now();
      int n = 0;
      while (n < 8 && (n == 0 || ms_since(round_start) < 100)) {
        step();
        if (++n % 4 == 0) engine.synchronize();  // the host waits for the GPU, so the time measured is the GPU's
      }
      engine.synchronize();
      steps += n;
      const double per_step = ms_since(round_start) / n, elapsed = ms_since(warm_start);
      const bool rising = last_per_step > 0 && per_step < 0.95 * last_per_step;
      last_per_step = per_step;
      if (elapsed >= kMaxWarmupSeconds * 1e3 || (steps >= t.warmup && elapsed >= t.warmup_seconds * 1e3 && !rising)) break;
    }
    engine.synchronize();
    std::vector<double> gpu, kernels;
    oa::Profile last;
    for (int i = 0; i < t.repeat; ++i) {
      engine.reset_profile();
      step();
      last = engine.profile();
      double total = 0;
      for (auto& e : last.entries) total += e.gpu_ms;
      kernels.push_back(total);
      gpu.push_back(last.span_ms);
    }
    // The last timed step's ops, slowest first: where its GPU time goes.
    r["ops"] = nlohmann::json::array();
    for (const auto& e : last.entries)
      r["ops"].push_back({{"op", e.op}, {"calls", e.calls}, {"dispatches", e.dispatches}, {"gpu_ms", e.gpu_ms}});
    engine.set_profiling(false);
    double wall = 0, record = 0, dispatches = 0;
    engine.reset_peak_memory();
    for (int l = 0; l < t.loops; ++l) {
      const auto before = engine.stats().dispatches;
      const auto t0 = Clock::now();
      for (int i = 0; i < t.steps; ++i) step();
      const double rec = ms_since(t0);
      engine.synchronize();
      const double w = ms_since(t0);
      if (l == 0 || w < wall * t.steps) {
        wall = w / t.steps;
        record = rec / t.steps;
        dispatches = double(engine.stats().dispatches - before) / t.steps;
      }
    }
    const auto mem = engine.memory_stats();
    r["gpu_ms"] = median(gpu);
    r["gpu_kernels_ms"] = median(kernels);
    r["wall_ms"] = wall;
    r["record_ms"] = record;
    r["dispatches_per_step"] = dispatches;
    r["host_us_per_dispatch"] = dispatches > 0 ? record * 1e3 / dispatches : 0.0;
    r["peak_mib"] = double(mem.peak_in_use_bytes) / (1 << 20);
    r["reserved_mib"] = double(mem.reserved_bytes) / (1 << 20);
    if (c.flops > 0) r["tflops_wall"] = c.flops / (wall * 1e-3) / 1e12;
    if (c.bytes > 0) r["gbps_wall"] = c.bytes / (wall * 1e-3) / 1e9;
  } catch (const std::exception& e) {  // report and go on: one failing case must not hide the rest
    r["error"] = e.what();
  }
  engine.set_profiling(false);
  engine.synchronize();
  engine.empty_cache();
  r["pipelines"] = dispatched_pipelines(pipelines_before, engine.pipelines());
  r["seconds"] = ms_since(start) / 1e3;
  return r;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return buf;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oa_bench: the benchmark sweep (GPU time, wall time of a back-to-back loop, memory), JSON out"};
  std::string filter = ".*", family = ".*", out;
  Timing t{2, 5, 20, 2, 0.5, false};
  double max_seconds = 0;
  bool list = false, quick = false, estimate = false;
  std::string precision = "highest";
  app.add_option("--filter", filter, "regular expression over case names");
  app.add_option("--family", family, "regular expression over family names (conv2d, attention, ...)");
  app.add_flag("--quick", quick, "tiny shapes under the same names, for checks on lavapipe or a CPU");
  app.add_option("--warmup", t.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-seconds", t.warmup_seconds, "untimed steps go on at least this long after the first (the GPU's clocks rise under load)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", t.repeat, "synchronized steps timed on the GPU (median)")->check(CLI::PositiveNumber);
  app.add_option("--steps", t.steps, "steps per back-to-back loop")->check(CLI::PositiveNumber);
  app.add_option("--loops", t.loops, "back-to-back loops (the fastest is reported)")->check(CLI::PositiveNumber);
  app.add_flag("--kernels", t.kernels, "list each case's GPU time per op and kernel, not per op (a timestamp pair around each dispatch)");
  app.add_option("--max-seconds", max_seconds, "start no case after this many seconds (0 = no limit)");
  app.add_option("--out", out, "write the results as JSON to this file (rewritten after every case)");
  app.add_flag("--list", list, "list the cases (name, family) and exit");
  app.add_option("--float32-matmul-precision", precision,
                 "f32 GEMMs in every case: highest (FP32) or high (split F16 on tensor cores where the device has them), "
                 "as torch.set_float32_matmul_precision")
      ->check(CLI::IsMember({"highest", "high"}));
  app.add_flag("--estimate", estimate, "print the estimated H200 time of the selection and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::regex name_re(filter), family_re(family);
    std::vector<oa_bench::Case> cases;
    for (auto& sweep : oa_bench::registry())
      for (auto& c : sweep(quick))
        if (std::regex_search(c.name, name_re) && std::regex_search(c.family, family_re)) cases.push_back(std::move(c));
    std::stable_sort(cases.begin(), cases.end(), [](auto& a, auto& b) { return a.family < b.family; });
    double estimate_s = 0;
    for (auto& c : cases) estimate_s += h200_estimate_s(c, t);
    if (list) {
      for (auto& c : cases) fmt::print("{:<48} {}\n", c.name, c.family);
      return 0;
    }
    fmt::print("{} cases; estimated on an H200: {:.0f} s for oa_bench, about {:.0f} s with torch_compare.py\n",
               cases.size(), estimate_s, 2 * estimate_s);
    if (estimate) return 0;
    const oa::Engine engine;
    engine.set_float32_matmul_precision(precision == "high" ? oa::MatmulPrecision::High : oa::MatmulPrecision::Highest);
    const oa::DeviceInfo& d = engine.device();
    nlohmann::json doc = {{"tool", "oa_bench"},
                          {"date", utc_now()},
                          {"device", d.name},
                          {"driver", fmt::format("{} {}", d.driver_name, d.driver_info)},
                          {"vulkan", d.api_version},
                          {"quick", quick},
                          {"pipeline_statistics", *engine.options().pipeline_statistics},
                          {"float32_matmul_precision", precision},
                          {"timing", {{"warmup", t.warmup}, {"warmup_seconds", t.warmup_seconds}, {"repeat", t.repeat}, {"steps", t.steps}, {"loops", t.loops}}},
                          {"estimate_h200_s", estimate_s},
                          {"cases", nlohmann::json::array()}};
    fmt::print("{:<48} {:>10} {:>10} {:>9} {:>8} {:>9} {:>9}\n", "case", "gpu ms", "wall ms", "wall/gpu", "host us",
               "peak MiB", "rsrv MiB");
    const auto start = Clock::now();
    int failed = 0, skipped = 0;
    for (auto& c : cases) {
      if (max_seconds > 0 && ms_since(start) > max_seconds * 1e3) {
        doc["cases"].push_back({{"name", c.name}, {"family", c.family}, {"kind", c.kind}, {"params", c.params},
                                {"error", "skipped: --max-seconds reached"}});
        ++skipped;
        continue;
      }
      auto r = run_case(engine, c, t);
      if (r.contains("error")) {
        ++failed;
        fmt::print("{:<48} FAILED: {}\n", c.name, r["error"].get<std::string>());
      } else {
        const double g = r["gpu_ms"], w = r["wall_ms"];
        fmt::print("{:<48} {:>10.3f} {:>10.3f} {:>9.2f} {:>8.2f} {:>9.1f} {:>9.1f}\n", c.name, g, w, g > 0 ? w / g : 0.0,
                   r["host_us_per_dispatch"].get<double>(), r["peak_mib"].get<double>(), r["reserved_mib"].get<double>());
      }
      if (*engine.options().pipeline_statistics)
        for (const auto& p : r["pipelines"]) {
          std::string line = fmt::format("  {} {}", p["kernel"].get<std::string>(), p["specialization"].dump());
          for (const auto& e : p["executables"])
            for (const auto& [name, value] : e["statistics"].items()) line += fmt::format(", {} {}", name, value.dump());
          fmt::print("{}\n", line);
        }
      std::fflush(stdout);
      doc["cases"].push_back(std::move(r));
      if (!out.empty()) std::ofstream(out) << doc.dump(1) << "\n";
    }
    if (!out.empty()) std::ofstream(out) << doc.dump(1) << "\n";  // with the cases --max-seconds skipped
    const auto messages = oa::validation_message_count();  // nonzero only under OA_VALIDATION=1
    fmt::print("{} cases in {:.1f} s, {} failed, {} skipped by --max-seconds, {} validation messages\n", cases.size() - skipped,
               ms_since(start) / 1e3, failed, skipped, messages);
    return failed || messages ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "oa_bench: " << e.what() << "\n";
    return 1;
  }
}
