#pragma once
// Elementwise ops (oa::matrix::<name>). F32 only.
//
// Binary ops accept operands of the same shape, or one operand broadcast
// against the other (NumPy rules, right-aligned) when its non-unit extents form
// one contiguous run of the other's axes: a scalar ([] or [1]), a trailing row
// ([C] against [N, C]), or a per-channel vector ([C] or [1, C, 1, 1] against
// NCHW). Other broadcast patterns throw InvalidArgument naming both shapes.
// Mixed engines throw InvalidArgument. Semantic op: "oa::matrix::<name>".
#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

Matrix add(const Matrix& a, const Matrix& b);
Matrix sub(const Matrix& a, const Matrix& b);
Matrix mul(const Matrix& a, const Matrix& b);
Matrix div(const Matrix& a, const Matrix& b);
Matrix maximum(const Matrix& a, const Matrix& b);
Matrix minimum(const Matrix& a, const Matrix& b);

// With a host scalar: a (op) s.
Matrix add(const Matrix& a, float s);
Matrix sub(const Matrix& a, float s);
Matrix mul(const Matrix& a, float s);
Matrix div(const Matrix& a, float s);

Matrix neg(const Matrix& x);
Matrix exp(const Matrix& x);
Matrix log(const Matrix& x);
Matrix sqrt(const Matrix& x);
Matrix rsqrt(const Matrix& x);
Matrix reciprocal(const Matrix& x);
Matrix abs(const Matrix& x);
Matrix square(const Matrix& x);
Matrix relu(const Matrix& x);
// Exact GELU, x * Phi(x) (torch.nn.functional.gelu, approximate='none').
Matrix gelu(const Matrix& x);
// SiLU (swish), x * sigmoid(x) (Hendrycks & Gimpel 2016, Ramachandran et al.
// 2017; torch.nn.functional.silu), the gate of SwiGLU MLPs.
Matrix silu(const Matrix& x);
Matrix tanh(const Matrix& x);
Matrix sigmoid(const Matrix& x);
// min(max(x, low), high); throws InvalidArgument when low > high.
Matrix clamp(const Matrix& x, float low, float high);
// alpha * x + beta.
Matrix affine(const Matrix& x, float alpha, float beta);

}  // namespace oa::matrix

namespace oa {
inline Matrix operator+(const Matrix& a, const Matrix& b) { return matrix::add(a, b); }
inline Matrix operator-(const Matrix& a, const Matrix& b) { return matrix::sub(a, b); }
inline Matrix operator*(const Matrix& a, const Matrix& b) { return matrix::mul(a, b); }
inline Matrix operator/(const Matrix& a, const Matrix& b) { return matrix::div(a, b); }
inline Matrix operator+(const Matrix& a, float s) { return matrix::add(a, s); }
inline Matrix operator-(const Matrix& a, float s) { return matrix::sub(a, s); }
inline Matrix operator*(const Matrix& a, float s) { return matrix::mul(a, s); }
inline Matrix operator/(const Matrix& a, float s) { return matrix::div(a, s); }
inline Matrix operator*(float s, const Matrix& a) { return matrix::mul(a, s); }
inline Matrix operator-(const Matrix& a) { return matrix::neg(a); }
}  // namespace oa
