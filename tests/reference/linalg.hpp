#pragma once
// f64 host references for GEMM, the matrix products and transpose, written
// from the definitions (plain loops; no tiling).
#include <cmath>
#include <cstdint>
#include <vector>

namespace oa::reference {

// One operand of a batched GEMM: item b starts at element offset + b * stride.
struct GemmSide {
  const std::vector<float>* data = nullptr;
  std::int64_t offset = 0;
  std::int64_t stride = 0;
};

// The result of gemm(): every element of C after the update, and for each a
// bound on the magnitude of the terms that produced it (for error tolerances).
struct GemmResult {
  std::vector<double> value;
  std::vector<double> magnitude;
};

// For b < batch: C_b = alpha * op(A_b) op(B_b) + beta * C_b (+ bias[n]), with
// op(A_b)[m][k] = A_b[m * K + k], or A_b[k * M + m] when trans_a, and
// op(B_b)[k][n] = B_b[k * N + n], or B_b[n * K + k] when trans_b. Elements of C
// outside every C_b keep their value; with beta == 0 the old C_b is ignored
// (even NaN).
inline GemmResult gemm(std::int64_t batch, std::int64_t M, std::int64_t N, std::int64_t K, bool trans_a, bool trans_b,
                       double alpha, double beta, GemmSide a, GemmSide b, const std::vector<float>& c0, std::int64_t c_offset,
                       std::int64_t c_stride, const std::vector<float>* bias = nullptr) {
  GemmResult r;
  r.value.assign(c0.begin(), c0.end());
  r.magnitude.assign(c0.size(), 0.0);
  for (std::int64_t bi = 0; bi < batch; ++bi)
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double sum = 0.0, mag = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
          const double x = (*a.data)[a.offset + bi * a.stride + (trans_a ? k * M + m : m * K + k)];
          const double y = (*b.data)[b.offset + bi * b.stride + (trans_b ? n * K + k : k * N + n)];
          sum += x * y;
          mag += std::abs(x * y);
        }
        const std::int64_t at = c_offset + bi * c_stride + m * N + n;
        double v = alpha * sum, vm = std::abs(alpha) * mag;
        if (beta != 0.0) {
          v += beta * c0[at];
          vm += std::abs(beta * c0[at]);
        }
        if (bias) {
          v += (*bias)[n];
          vm += std::abs((*bias)[n]);
        }
        r.value[at] = v;
        r.magnitude[at] = vm;
      }
  return r;
}

// x [batch, R, C] -> [batch, C, R] (float or double values).
template <typename T>
std::vector<double> transpose(const std::vector<T>& x, std::int64_t batch, std::int64_t R, std::int64_t C) {
  std::vector<double> y(x.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c) y[(b * C + c) * R + r] = x[(b * R + r) * C + c];
  return y;
}

}  // namespace oa::reference
