// Foundation cases: GEMM (mat_mul_nt) and elementwise bandwidth.
#include "bench.hpp"

namespace {
using oa::Matrix;

oa_bench::Case gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return {fmt::format("mat_mul_nt_{}x{}x{}", m, n, k), "mat_mul_nt", {{"m", m}, {"n", n}, {"k", k}}, 2.0 * m * n * k, 0,
          [=](const oa::Engine& e) {
            auto a = Matrix::uniform({m, k}, -1, 1, 1, e), b = Matrix::uniform({n, k}, -1, 1, 2, e);
            return [a, b] { (void)oa::matrix::mat_mul_nt(a, b); };
          }};
}
const oa_bench::Register kGemmBig{gemm(4096, 4096, 4096)};
const oa_bench::Register kGemmWide{gemm(4096, 512, 14336)};
const oa_bench::Register kGemmSmall{gemm(512, 512, 512)};

const oa_bench::Register kAdd{{"add_2^26", "add", {{"n", 1 << 26}}, 0, 3.0 * 4 * (1 << 26), [](const oa::Engine& e) {
                                 auto a = Matrix::uniform({1 << 26}, -1, 1, 1, e);
                                 auto b = Matrix::uniform({1 << 26}, -1, 1, 2, e);
                                 return [a, b] { (void)(a + b); };
                               }}};
}  // namespace
