#include "tune.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model_shapes.hpp"
#include "oa/oa.hpp"
#include "oa/runtime/tuning.hpp"

namespace oa_cli {

namespace {

using Json = nlohmann::ordered_json;
using Step = std::function<void()>;

// Variants of other tuning points, pinned: (point, variant).
using Pins = std::vector<std::pair<std::string, std::string>>;

// One timed problem of one tuning point; `fixed` pins other points' variants
// while it runs (so that the point measured is the one that decides).
struct TuneCase {
  std::string point, name;
  std::vector<std::int64_t> keys;
  Pins fixed;
  std::function<Step(const oa::Engine&)> setup;
};

oa::Matrix input(const oa::Shape& s, std::uint64_t seed, const oa::Engine& e, bool grad) {
  oa::Matrix m = oa::Matrix::uniform(s, -1, 1, seed, e);
  if (grad) oa::set_requires_grad(m);
  return m;
}

// Each GEMM of the bench's transformer layers in its own layout: x [M, K] @
// W[N, K]^T (matmul_nt), and for the layers that train, the input gradient
// dy [M, N] @ W [N, K] (matmul) and the weight gradient dy^T x, N x K by
// depth M (bmm_tn of one item): for gemm.skinny (M <= 16) or gemm.tile, for
// gemm.split_k, and where M > 16 with f16 operands for gemm.coopmat_tile and
// under High float32 matmul precision for gemm.f32_high.
std::vector<TuneCase> gemm_cases(bool quick) {
  std::vector<TuneCase> cases;
  std::set<std::pair<std::string, std::vector<std::int64_t>>> seen;
  for (const oa_bench::Gemm& g : oa_bench::kGemms) {
    const std::int64_t m = quick ? std::max<std::int64_t>(1, g.m / 256) : g.m, k = quick ? g.k / 64 : g.k,
                       n = quick ? g.n / 64 : g.n;
    enum class Layout { Nt, Nn, Tn };
    std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, Layout>> products{{"", m, n, k, Layout::Nt}};
    if (g.backward) {
      products.emplace_back("_dx", m, k, n, Layout::Nn);
      products.emplace_back("_dw", n, k, m, Layout::Tn);
    }
    for (const auto& [suffix, pm, pn, pk, layout] : products) {
      const std::vector<std::int64_t> keys{1, pm, pn, pk};
      std::vector<const char*> points{pm <= 16 ? "gemm.skinny" : "gemm.tile", "gemm.split_k"};
      if (pm > 16) points.insert(points.end(), {"gemm.coopmat_tile", "gemm.f32_high"});
      for (const char* point : points) {
        if (!seen.insert({point, keys}).second) continue;
        // Copies of the bindings: lambdas capture variables, not structured bindings (clang 14).
        auto step = [rows = pm, cols = pn, depth = pk, form = layout, half = std::string_view(point) == "gemm.coopmat_tile",
                     high = std::string_view(point) == "gemm.f32_high"](const oa::Engine& e) -> Step {
          // rows x cols by depth: a [rows, depth] @ b [cols, depth]^T, a [rows, depth] @ b [depth, cols], or
          // a [1, depth, rows]^T @ b [1, depth, cols].
          const oa::Shape sa = form == Layout::Tn ? oa::Shape{1, depth, rows} : oa::Shape{rows, depth};
          const oa::Shape sb = form == Layout::Nt ? oa::Shape{cols, depth} : form == Layout::Nn ? oa::Shape{depth, cols} : oa::Shape{1, depth, cols};
          oa::Matrix a = input(sa, 1, e, false), b = input(sb, 2, e, false);
          if (half) {
            a = oa::matrix::cast(a, oa::DType::F16);
            b = oa::matrix::cast(b, oa::DType::F16);
          }
          auto product = [a, b, form] {
            (void)(form == Layout::Nt ? oa::matrix::matmul_nt(a, b) : form == Layout::Nn ? oa::matrix::matmul(a, b) : oa::ml::bmm_tn(a, b));
          };
          if (!high) return product;
          // gemm.f32_high is asked only under High precision, set while the step records.
          return [a, product] {
            a.engine().set_float32_matmul_precision(oa::MatmulPrecision::High);
            product();
            a.engine().set_float32_matmul_precision(oa::MatmulPrecision::Highest);
          };
        };
        cases.push_back({point, fmt::format("{}{}", g.model, suffix), keys, {}, step});
      }
    }
  }
  return cases;
}

// The bench's attention heads ([B*H, S, D]): the forward for
// attention.forward_lowering and (through the fused kernels)
// attention.flash_plan, forward + backward for attention.backward_lowering
// where the model trains them; the forward of f16 heads for
// attention.coopmat_forward and (through the tensor-core kernel)
// attention.coopmat_tile, and their forward + backward for
// attention.coopmat_backward where the model trains them.
std::vector<TuneCase> attention_cases(bool quick) {
  std::vector<TuneCase> cases;
  for (oa_bench::Heads a : oa_bench::kAttention) {
    if (quick) {
      a = oa_bench::quick_form(a, 8);
      a.sq = std::min(a.sq, a.sk);
    }
    const std::int64_t bh = a.b * a.h;
    const std::vector<std::int64_t> keys{bh, a.sq, a.sk, a.d, a.d, a.causal ? 1 : 0};
    auto setup = [a, bh](bool backward, bool half = false) {
      return [a, bh, backward, half](const oa::Engine& e) -> Step {
        const oa::Matrix q = input({bh, a.sq, a.d}, 1, e, backward), k = input({bh, a.sk, a.d}, 2, e, backward),
                         v = input({bh, a.sk, a.d}, 3, e, backward);
        // 16-bit heads are cast in each step, so that each backward has a graph of its own.
        const auto in = [half](const oa::Matrix& x) { return half ? oa::matrix::cast(x, oa::DType::F16) : x; };
        auto forward = [=] { return oa::ml::scaled_dot_product_attention(in(q), in(k), in(v), oa::Matrix(), std::nullopt, a.causal); };
        if (!backward) return [forward] { (void)forward(); };
        const oa::Matrix dy = oa::Matrix::ones({bh, a.sq, a.d}, e);
        // The gradient reaches a 16-bit output through its cast to f32.
        return [forward, dy] { oa::backward(oa::matrix::cast(forward(), oa::DType::F32), dy); };
      };
    };
    const std::string name = fmt::format("{}_{}", a.causal ? "causal" : "full", a.model);
    cases.push_back({"attention.forward_lowering", name, keys, {}, setup(false)});
    cases.push_back({"attention.flash_plan", name, keys, {{"attention.forward_lowering", "fused"}}, setup(false)});
    if (a.backward) cases.push_back({"attention.backward_lowering", name + "_fwd_bwd", keys, {}, setup(true)});
    cases.push_back({"attention.coopmat_forward", name + "_f16", keys, {}, setup(false, true)});
    cases.push_back({"attention.coopmat_tile", name + "_f16", keys, {{"attention.coopmat_forward", "on"}}, setup(false, true)});
    if (a.backward) cases.push_back({"attention.coopmat_backward", name + "_f16_fwd_bwd", keys, {}, setup(true, true)});
  }
  return cases;
}

// The bench's convolutions (CNN layers, depthwise 2-D and 1-D, audio front
// ends, transposed convolutions of decoders and GANs), forward: for
// conv.igemm_tile (the depthwise ones with conv.kernel pinned to the implicit
// GEMM), and for conv.kernel where they are grouped or where Winograd serves
// them (ungrouped 2-D 3x3 of stride 1); for conv.patch where the stride
// equals the kernel without padding or groups (conv.igemm_tile then pins it
// to general). The keys are those of lower_conv:
// batch, output channels per group, groups, output positions per image and
// channel, taps, transposed. Forward and weight gradient (of the weight
// alone) for conv.wgrad_tile where the tiled kernel serves it: not depthwise,
// more than 16 weights per output channel. The f16 forward of the ungrouped
// convolutions (not transposed) for conv.half_forward; the f16 forward and
// weight gradient of the ungrouped ones for conv.half_wgrad (keyed by the
// narrow side: output channels and positions, a transposed one's input).
std::vector<TuneCase> conv_cases(bool quick) {
  std::vector<TuneCase> cases;
  for (const oa_bench::Conv& full : oa_bench::kLayers) {
    const oa_bench::Conv c = quick ? oa_bench::quick_conv(full) : full;
    const std::int64_t out = oa_bench::out_extent(c);
    const std::vector<std::int64_t> keys{c.n, c.c_out / c.groups, c.groups, c.dims == 2 ? out * out : out,
                                         c.dims == 2 ? c.k * c.k : c.k, oa_bench::transposed(c) ? 1 : 0};
    auto setup = [c](const oa::Engine& e) -> Step {
      const oa::Matrix x = input(oa_bench::conv_input_shape(c), 1, e, false), w = input(oa_bench::conv_weight_shape(c), 2, e, false),
                       b = input({c.c_out}, 3, e, false);
      return [=] { (void)oa_bench::conv_forward(c, x, w, b); };
    };
    const bool depthwise = c.groups == c.c_in && c.groups > 1;
    const bool patch = c.groups == 1 && c.k == c.stride && c.padding == 0;
    Pins igemm_pins;
    if (depthwise) igemm_pins.push_back({"conv.kernel", "igemm"});
    if (patch) {
      igemm_pins.push_back({"conv.patch", "general"});
      cases.push_back({"conv.patch", c.model, keys, {}, setup});
    }
    cases.push_back({"conv.igemm_tile", c.model, keys, igemm_pins, setup});
    if (c.groups == 1 && !oa_bench::transposed(c)) {
      auto half_setup = [c](const oa::Engine& e) -> Step {
        const auto f16 = [&](const oa::Shape& s, std::uint64_t seed) { return oa::matrix::cast(input(s, seed, e, false), oa::DType::F16); };
        const oa::Matrix x = f16(oa_bench::conv_input_shape(c), 1), w = f16(oa_bench::conv_weight_shape(c), 2), b = f16({c.c_out}, 3);
        return [=] { (void)oa_bench::conv_forward(c, x, w, b); };
      };
      cases.push_back({"conv.half_forward", c.model + std::string("_f16"), keys, {}, half_setup});
    }
    // The weight gradient's GEMM: narrow channels per group x (wide channels per group x taps), over narrow positions.
    const std::int64_t taps = c.dims == 2 ? c.k * c.k : c.k, in_positions = c.dims == 2 ? c.size * c.size : c.size;
    const std::vector<std::int64_t> wgrad_keys{
        oa_bench::transposed(c) ? c.c_in / c.groups : c.c_out / c.groups, (oa_bench::transposed(c) ? c.c_out : c.c_in) / c.groups * taps,
        c.n * (oa_bench::transposed(c) ? in_positions : keys[3])};
    auto wgrad_setup = [c](const oa::Engine& e) -> Step {
      const oa::Matrix x = input(oa_bench::conv_input_shape(c), 1, e, false), w = input(oa_bench::conv_weight_shape(c), 2, e, true);
      return [=] {
        const oa::Matrix y = oa_bench::conv_forward(c, x, w, oa::Matrix());
        oa::backward(y, oa::Matrix::ones(y.shape(), e));
      };
    };
    if (!depthwise && wgrad_keys[1] > 16) cases.push_back({"conv.wgrad_tile", c.model + std::string("_wgrad"), wgrad_keys, {}, wgrad_setup});
    if (c.groups == 1) {
      const std::vector<std::int64_t> half_wgrad_keys{c.n, oa_bench::transposed(c) ? c.c_in : c.c_out, 1,
                                                      oa_bench::transposed(c) ? in_positions : keys[3], taps, 0};
      auto half_wgrad_setup = [c](const oa::Engine& e) -> Step {
        const oa::Matrix x = oa::matrix::cast(input(oa_bench::conv_input_shape(c), 1, e, false), oa::DType::F16);
        const oa::Matrix w = input(oa_bench::conv_weight_shape(c), 2, e, true);
        return [=] {
          const oa::Matrix y = oa_bench::conv_forward(c, x, oa::matrix::cast(w, oa::DType::F16), oa::Matrix());
          oa::backward(oa::matrix::cast(y, oa::DType::F32), oa::Matrix::ones(y.shape(), e));
        };
      };
      cases.push_back({"conv.half_wgrad", c.model + std::string("_f16_wgrad"), half_wgrad_keys, {}, half_wgrad_setup});
    }
    const bool winograd = c.dims == 2 && c.groups == 1 && c.k == 3 && c.stride == 1;
    if (c.groups > 1 || winograd) cases.push_back({"conv.kernel", c.model, keys, {}, setup});
  }
  return cases;
}

// A table that sends every problem of each `fixed` point to its variant.
oa::TuningTable forcing(const Pins& fixed) {
  oa::TuningTable t;
  for (const auto& [point, variant] : fixed) {
    oa::TuningRule r;
    r.when.resize(oa::tuning_point(point).keys.size());
    r.variant = variant;
    t.add_rule(point, std::move(r));
  }
  return t;
}

// The median time of `step` over `repetitions` runs after one untimed run (which
// compiles the pipelines): GPU ms from the profiler's timestamps, else wall ms.
double median_ms(const oa::Engine& e, const Step& step, int repetitions) {
  step();
  e.synchronize();
  std::vector<double> times;
  for (int r = 0; r < repetitions; ++r) {
    e.reset_profile();
    const auto start = std::chrono::steady_clock::now();
    step();
    const oa::Profile p = e.profile();  // synchronizes
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    double gpu = 0;
    for (const oa::ProfileEntry& entry : p.entries) gpu += entry.gpu_ms;
    times.push_back(gpu > 0 ? gpu : wall);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The power-of-two bucket [2^i, 2^(i+1) - 1] holding v (v itself below 1).
std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>> bucket(std::int64_t v) {
  if (v < 1) return {v, v};
  std::int64_t low = 1;
  while (low <= v / 2) low *= 2;
  return {low, 2 * low - 1};
}

}  // namespace

int tune(const TuneArgs& args) {
  oa::EngineOptions options;
  options.device = args.device;
  options.profiling = true;
  const oa::Engine engine(options);
  const oa::DeviceInfo& device = engine.device();
  const std::shared_ptr<const oa::Tuning> base = oa::tuning_of(engine);
  // --quick alone is a check that every variant runs: its tiny shapes are no
  // basis for the user table that later engines load, so it writes none.
  const bool write = !args.quick || !args.out.empty();
  const std::filesystem::path out =
      !args.out.empty() ? std::filesystem::path(args.out) : oa::cache_folder() / "tuning" / oa::tuning_file_name(device);
  if (write && out.empty()) throw oa::Error(oa::ErrorKind::InvalidArgument, "oa tune: no --out and neither XDG_CACHE_HOME nor HOME is set");
  const int repetitions = args.quick ? 1 : args.repetitions;
  std::cout << fmt::format("oa tune on {} ({}, {}): {} repetition(s) per variant, median {} time\n", device.name,
                           device.driver_name, device.driver_info, repetitions, device.timestamps ? "GPU" : "wall");

  // Quick: the first kQuickShapes shapes of each point and its last (the
  // sweeps' other end: the transposed convolutions for the conv points).
  constexpr std::size_t kQuickShapes = 2;
  std::vector<TuneCase> all, cases;
  for (auto& list : {gemm_cases(args.quick), conv_cases(args.quick), attention_cases(args.quick)})
    for (const TuneCase& c : list)
      if (args.points.empty() || std::find(args.points.begin(), args.points.end(), c.point) != args.points.end()) all.push_back(c);
  std::map<std::string, std::size_t> per_point, seen;
  for (const TuneCase& c : all) per_point[c.point]++;
  for (const TuneCase& c : all) {
    const std::size_t i = seen[c.point]++;
    if (!args.quick || i < kQuickShapes || i + 1 == per_point[c.point]) cases.push_back(c);
  }

  oa::TuningTable table = oa::TuningTable::parse(R"({"oa_tuning": 1})", out.string());
  Json measurements = Json::array();
  const auto start = std::chrono::steady_clock::now();
  std::size_t skipped = 0;
  for (const TuneCase& c : cases) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (args.max_seconds > 0 && elapsed > args.max_seconds) {
      ++skipped;
      continue;
    }
    const oa::TuningPoint& point = oa::tuning_point(c.point);
    const std::string in_effect(base->choose(c.point, c.keys));
    Json ms = Json::object();
    std::string fastest;
    double best = 0;
    for (std::string_view variant : point.variants) {
      Pins fixed = c.fixed;
      fixed.emplace_back(c.point, std::string(variant));
      std::vector<oa::TuningTable> layers{forcing(fixed)};
      layers.insert(layers.end(), base->layers().begin(), base->layers().end());
      oa::set_tuning(engine, oa::Tuning(std::move(layers)));
      const double t = median_ms(engine, c.setup(engine), repetitions);
      ms[std::string(variant)] = t;
      if (fastest.empty() || t < best) {
        fastest = variant;
        best = t;
      }
    }
    oa::set_tuning(engine, *base);
    const double current = ms[in_effect].get<double>();
    const std::string chosen = current > best * args.min_gain ? fastest : in_effect;
    oa::TuningRule rule;
    for (std::size_t i = 0; i < c.keys.size(); ++i)
      rule.when.push_back(point.keys[i] == "causal" ? std::pair{std::optional(c.keys[i]), std::optional(c.keys[i])} : bucket(c.keys[i]));
    rule.variant = chosen;
    // Shapes of one bucket: the first measured decides.
    const auto& rules = table.rules(c.point);
    if (std::none_of(rules.begin(), rules.end(), [&](const oa::TuningRule& r) { return r.when == rule.when; }))
      table.add_rule(c.point, std::move(rule));
    Json keys = Json::object();
    for (std::size_t i = 0; i < c.keys.size(); ++i) keys[std::string(point.keys[i])] = c.keys[i];
    measurements.push_back({{"point", c.point}, {"case", c.name}, {"keys", keys}, {"ms", ms}, {"in_effect", in_effect},
                            {"fastest", fastest}, {"chosen", chosen}});
    std::string times;
    for (const auto& [v, t] : ms.items()) times += fmt::format(" {}={:.4f}", v, t.get<double>());
    std::cout << fmt::format("{:<28} {:<44} in effect {:<12} fastest {:<12} {:.2f}x |{}\n", c.point, c.name, in_effect, fastest,
                             current / best, times)
              << std::flush;
  }
  if (skipped > 0) std::cout << fmt::format("{} of {} shapes skipped: past --max-seconds {}\n", skipped, cases.size(), args.max_seconds);
  if (!write) {
    std::cout << "--quick: no table written (its tiny shapes are no basis for rules; --out FILE keeps one)\n";
    return 0;
  }
  table.set_measurements(
      Json({{"device", device.name}, {"driver", device.driver_name + " " + device.driver_info}, {"cases", measurements}}).dump());
  std::error_code ec;
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
  {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!f) throw oa::Error(oa::ErrorKind::InvalidArgument, fmt::format("oa tune: cannot write {}", out.string()));
    f << table.to_json(device.name);
    if (!f.flush()) throw oa::Error(oa::ErrorKind::InvalidArgument, fmt::format("oa tune: cannot write {}", out.string()));
  }
  (void)oa::TuningTable::load(out);  // reads back as engines will
  std::size_t rules = 0;
  for (const oa::TuningPoint& p : oa::tuning_points()) rules += table.rules(p.name).size();
  std::cout << fmt::format("wrote {} ({} rules from {} shapes)\n", out.string(), rules, measurements.size());
  return 0;
}

}  // namespace oa_cli
