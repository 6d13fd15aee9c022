// 16-bit GEMM sweep: C [M, N] f32 = A [M, K] * B [K, N] with A and B f16 or
// bf16 (the tensor-core path where the device has cooperative matrices), next
// to the same shapes in f32, through the internal lowering (lower_gemm) that
// the matmul ops share. Square shapes, a wide one and LLaMA-3 8B's MLP-down
// shape with 512 tokens.
#include "bench.hpp"
#include "matrix/gemm.hpp"

namespace {
using oa::DType;
using oa::Matrix;
using oa_bench::Case;

struct Shape3 {
  std::int64_t m, n, k;
};
constexpr Shape3 kShapes[] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 8192, 2048}, {4096, 512, 14336}, {1024, 1024, 1024}};

const oa_bench::Register kGemm16Sweep{[](bool quick) {
  std::vector<Case> cases;
  for (const DType dt : {DType::F16, DType::BF16, DType::F32})
    for (const auto& s : kShapes) {
      const std::int64_t m = quick ? s.m / 32 : s.m, n = quick ? s.n / 32 : s.n, k = quick ? s.k / 32 : s.k;
      const double in = static_cast<double>(oa::size_of(dt));
      cases.push_back({fmt::format("gemm16_{}_{}x{}x{}", oa::to_string(dt), s.m, s.n, s.k), "gemm16", "matmul",
                       {{"m", m}, {"n", n}, {"k", k}, {"dtype", oa::to_string(dt)}},
                       2.0 * m * n * k,
                       in * (m * k + k * n) + 4.0 * m * n,
                       [=](const oa::Engine& e) {
                         const Matrix a = oa::matrix::cast(oa_bench::input({m, k}, 1, e), dt);
                         const Matrix b = oa::matrix::cast(oa_bench::input({k, n}, 2, e), dt);
                         return std::function<void()>([=] {
                           const Matrix c = Matrix::empty({m, n}, DType::F32, e);
                           const oa::detail::GemmProblem p{.m = m, .n = n, .k = k, .a = {&a}, .b = {&b}, .c = {&c}};
                           oa::SemanticOp op;
                           op.name = "bench::gemm16";
                           op.inputs = {a.shape(), b.shape()};
                           op.outputs = {c.shape()};
                           e.record(std::move(op), oa::detail::lower_gemm(e, p));
                         });
                       }});
    }
  return cases;
}};

const bool kContract = [] {
  oa::register_contract({"bench::gemm16", 2, 1, {}});
  return true;
}();

}  // namespace
