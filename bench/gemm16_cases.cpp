// 16-bit GEMM sweep: C [M, N] = A [M, K] * B [K, N] with A, B and C f16 or
// bf16 (the tensor-core path where the device has cooperative matrices; C in
// A's dtype, as torch.matmul gives it), next
// to the same shapes in f32, through the internal lowering (lower_gemm) that
// the matmul ops share. Square shapes, a wide one and LLaMA-3 8B's MLP-down
// shape with 512 tokens; then f16 only, the layouts of training: nn.Linear's
// forward (x [M, K] times W [N, K] transposed, "nt") and weight gradient
// (dY [K, M] transposed times x [K, N], "tn") at LLaMA and GPT-2 shapes, and
// a few rows (M = 128) against a large weight.
#include "bench.hpp"
#include "matrix/gemm.hpp"

namespace {
using oa::DType;
using oa::Matrix;
using oa_bench::Case;

struct Shape3 {
  std::int64_t m, n, k;
  bool trans_a = false, trans_b = false;
};
constexpr Shape3 kShapes[] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 8192, 2048}, {4096, 512, 14336}, {1024, 1024, 1024}};
constexpr Shape3 kTrainingShapes[] = {
    {2048, 12288, 4096, false, true},  // LLaMA-7B QKV, 2048 tokens
    {4096, 14336, 4096, false, true},  // LLaMA-3 8B MLP up, 4096 tokens
    {8192, 3072, 768, false, true},    // GPT-2 MLP up, 8 x 1024 tokens
    {128, 4096, 4096, false, true},    // 128 rows
    {4096, 4096, 4096, true, false},   // LLaMA-7B projection weight gradient, 4096 tokens
    {3072, 768, 8192, true, false},    // GPT-2 MLP-up weight gradient, 8192 tokens
};

Case gemm16_case(DType dt, const Shape3& s, bool quick) {
  const std::int64_t m = quick ? s.m / 32 : s.m, n = quick ? s.n / 32 : s.n, k = quick ? s.k / 32 : s.k;
  const double in = static_cast<double>(oa::size_of(dt));
  const bool ta = s.trans_a, tb = s.trans_b;
  const std::string layout = ta ? "tn_" : tb ? "nt_" : "";
  return {fmt::format("gemm16_{}_{}{}x{}x{}", oa::to_string(dt), layout, s.m, s.n, s.k), "gemm16", "matmul",
          {{"m", m}, {"n", n}, {"k", k}, {"dtype", oa::to_string(dt)}, {"trans_a", ta}, {"trans_b", tb}},
          2.0 * m * n * k,
          in * (m * k + k * n + m * n),
          [=](const oa::Engine& e) {
            const Matrix a = oa::matrix::cast(oa_bench::input(ta ? oa::Shape{k, m} : oa::Shape{m, k}, 1, e), dt);
            const Matrix b = oa::matrix::cast(oa_bench::input(tb ? oa::Shape{n, k} : oa::Shape{k, n}, 2, e), dt);
            return std::function<void()>([=] {
              const Matrix c = Matrix::empty({m, n}, dt, e);
              const oa::detail::GemmProblem p{
                  .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .a = {&a}, .b = {&b}, .c = {&c}};
              oa::SemanticOp op;
              op.name = "bench::gemm16";
              op.inputs = {a.shape(), b.shape()};
              op.outputs = {c.shape()};
              e.record(std::move(op), oa::detail::lower_gemm(e, p));
            });
          }};
}

const oa_bench::Register kGemm16Sweep{[](bool quick) {
  std::vector<Case> cases;
  for (const DType dt : {DType::F16, DType::BF16, DType::F32})
    for (const auto& s : kShapes) cases.push_back(gemm16_case(dt, s, quick));
  for (const auto& s : kTrainingShapes) cases.push_back(gemm16_case(DType::F16, s, quick));
  return cases;
}};

const bool kContract = [] {
  oa::register_contract({"bench::gemm16", 2, 1, {}});
  return true;
}();

}  // namespace
