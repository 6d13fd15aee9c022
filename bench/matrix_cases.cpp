// Matrix-level sweeps: transformer GEMMs (the projections and MLPs of GPT-2
// and LLaMA, x [M, K] times a weight [N, K] as nn.Linear stores it, M from one
// decoded token to 16 sequences of 1024; those of oa train text's small
// transformer at its defaults), elementwise bandwidth, and the
// host cost of recording a dispatch (chains of tiny elementwise ops) and of
// an op call (8 x 8 operands).
#include "bench.hpp"
#include "model_shapes.hpp"

namespace {
using oa::Matrix;
using oa_bench::Case;


const oa_bench::Register kGemmSweep{[](bool quick) {
  std::vector<Case> cases;
  for (const auto& g : oa_bench::kGemms) {
    // Quick: the same aspect at a tiny size (M, K, N over 64, at least 1).
    const std::int64_t m = quick ? std::max<std::int64_t>(1, g.m / 256) : g.m, k = quick ? g.k / 64 : g.k,
                       n = quick ? g.n / 64 : g.n;
    const bool bwd = g.backward;
    cases.push_back({fmt::format("gemm_{}{}", g.model, oa_bench::suffix(bwd)), "gemm", "linear",
                     {{"m", m}, {"k", k}, {"n", n}, {"backward", bwd}},
                     2.0 * m * n * k * (bwd ? 3 : 1),
                     4.0 * (m * k + n * k + m * n) * (bwd ? 3 : 1),
                     [=](const oa::Engine& e) {
                       auto x = oa_bench::input({m, k}, 1, e, bwd), w = oa_bench::input({n, k}, 2, e, bwd);
                       return oa_bench::step([=] { return oa::matrix::matmul_nt(x, w); }, bwd, e);
                     }});
  }
  return cases;
}};

// out = a + b over n floats; the bandwidth reference for the other families.
const oa_bench::Register kElementwiseSweep{[](bool quick) {
  std::vector<Case> cases;
  for (const int log2n : {20, 24, 26}) {
    const std::int64_t n = std::int64_t{1} << (quick ? log2n - 8 : log2n);
    cases.push_back({fmt::format("add_2^{}", log2n), "elementwise", "add", {{"n", n}}, 0, 12.0 * n,
                     [n](const oa::Engine& e) {
                       auto a = oa_bench::input({n}, 1, e), b = oa_bench::input({n}, 2, e);
                       return [a, b] { (void)(a + b); };
                     }});
  }
  return cases;
}};

// `ops` tiny elementwise dispatches per step, chained (y = y + b: each waits
// for the previous one, as a model's ops do) or independent (a + b, discarded).
// Their wall and host time per dispatch is the runtime's recording cost.
const oa_bench::Register kHostSweep{[](bool quick) {
  std::vector<Case> cases;
  const std::int64_t ops = quick ? 50 : 1000;
  for (const bool chained : {true, false})
    for (const std::int64_t n : {256, 65536}) {
      cases.push_back({fmt::format("host_add_{}_n{}", chained ? "chain" : "independent", n), "host", "add_loop",
                       {{"n", n}, {"ops", ops}, {"chained", chained}}, 0, 12.0 * n * ops,
                       [=](const oa::Engine& e) {
                         auto a = oa_bench::input({n}, 1, e), b = oa_bench::input({n}, 2, e);
                         return std::function<void()>([=] {
                           Matrix y = a;
                           for (std::int64_t i = 0; i < ops; ++i) y = chained ? y + b : a + b;
                         });
                       }});
    }
  // `ops` independent calls of one small op on 8 x 8 operands (a + b, a @ b,
  // a Linear(8, 8) layer's forward): the host cost of an op call, which
  // bench/python_overhead.py measures the same way from Python.
  for (const char* op : {"add", "matmul", "linear"}) {
    const std::string kind = op;
    cases.push_back({fmt::format("host_{}_8x8", op), "host", "op_loop", {{"op", op}, {"n", 8}, {"ops", ops}}, 0,
                     4.0 * 8 * 8 * 3 * ops, [=](const oa::Engine& e) {
                       auto a = oa_bench::input({8, 8}, 1, e), b = oa_bench::input({8, 8}, 2, e);
                       oa::ml::Generator g(0);
                       auto layer = std::make_shared<oa::ml::nn::Linear>(8, 8, g, true, e);
                       std::function<void()> call = [=] { (void)(a + b); };
                       if (kind == "matmul") call = [=] { (void)oa::matrix::matmul(a, b); };
                       if (kind == "linear") call = [=] { (void)(*layer)(a); };
                       return std::function<void()>([=] {
                         for (std::int64_t i = 0; i < ops; ++i) call();
                       });
                     }});
  }
  // An AdamW step over many tiny parameters (multi-tensor: 7 per dispatch):
  // the optimizer's recording cost where parameters, not elements, dominate.
  const std::int64_t parameters = quick ? 64 : 512, n = 256;
  cases.push_back({fmt::format("host_adamw_p{}_n{}", parameters, n), "host", "adamw",
                   {{"shapes", nlohmann::json(std::vector<std::vector<std::int64_t>>(parameters, {n}))},
                    {"parameters", parameters * n},
                    {"ops", parameters}},
                   0, 28.0 * double(parameters * n), [=](const oa::Engine& e) {
                     std::vector<oa::ml::Parameter> params;
                     for (std::int64_t i = 0; i < parameters; ++i) {
                       params.emplace_back(fmt::format("p{}", i), oa_bench::input({n}, 10 + i, e));
                       oa::backward(params.back().value() * 1.0f, oa_bench::input({n}, 1000 + i, e));
                     }
                     auto opt = std::make_shared<oa::ml::optim::AdamW>(params);
                     return std::function<void()>([opt] { opt->step(); });
                   }});
  return cases;
}};

}  // namespace
