#pragma once
// Elementwise ops (oa::matrix::<name>). Dtypes: the unary ops and add, sub,
// mul, div, maximum and minimum take f32, f16 or bf16 (both operands of one
// dtype; the result has it; arithmetic in f32, each result rounded once to
// nearest even, as PyTorch's 16-bit CUDA kernels compute in f32); add, sub,
// mul, maximum and minimum of two Matrices also take i32 (int32 arithmetic,
// exact, add, sub and mul wrapping modulo 2^32 as int32 does; torch's int
// tensors, for oa's 32-bit ones; no gradient, as an i32 operand cannot require
// one), and div does not (torch's true division of integers gives a float:
// convert with oa::matrix::cast first); add, mul, maximum and minimum also
// take two Bool operands (torch's bool arithmetic: add and maximum are the
// logical or, mul and minimum the logical and; sub of bools is refused, as
// torch refuses it); neg, abs and sign also take i32 (wrapping: -INT32_MIN
// and abs(INT32_MIN) are INT32_MIN, as int32 does); pow is f32, f16 or bf16 (f32
// arithmetic, rounded once), or i32 with an i32 Matrix exponent (see pow); floor_divide, remainder and the bitwise ops
// below;
// the comparisons take f32 or i32 and give Bool (their broadcasting is
// NumPy's, see below). Under autocast (oa/matrix/autocast.hpp) operands of
// two float dtypes are widened to f32 first.
//
// Binary ops (add, sub, mul, div, maximum, minimum, pow) broadcast by NumPy's
// rules (torch broadcasting semantics): shapes right-aligned, each pair of
// extents equal or one of them 1 (an absent leading axis counts as 1); the
// result has the broadcast shape. Gradients of a broadcast operand are summed
// back to its shape.
// Cost model. The kernel reads both operands directly when they have the same
// shape or when one of them spans one contiguous run of the other's axes (a
// scalar, a trailing row [C] against [N, C], a per-channel vector [1, C, 1, 1]
// against NCHW): one pass over the result, the small operand indexed by
// (i / inner) % C, its gradient summed back by oa::matrix::sum_to. Any other
// pattern ([N, 1] against [1, M], [3, 1, 5] against [3, 4, 5]) first
// materialises each operand that the kernel cannot index into the result's
// shape with oa::matrix::expand (one strided copy of result size, recorded as
// such, whose backward sums the gradient back), then runs the same kernel: at
// most two extra result-sized copies forward and the matching reductions
// backward.
// Errors (InvalidArgument naming the op, the operands and their shapes;
// nothing recorded): undefined operands, dtypes other than those above or two
// dtypes in one binary op, operands on two engines, shapes that do not
// broadcast (a Bool pair that needs oa::matrix::expand is refused there:
// expand takes no Bool). Semantic op: "oa::matrix::<name>".
#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

Matrix add(const Matrix& a, const Matrix& b);
Matrix sub(const Matrix& a, const Matrix& b);
Matrix mul(const Matrix& a, const Matrix& b);
Matrix div(const Matrix& a, const Matrix& b);
Matrix maximum(const Matrix& a, const Matrix& b);
Matrix minimum(const Matrix& a, const Matrix& b);
// a^b elementwise (torch.pow(a, b)), b a Matrix broadcast with a, or a host
// float exponent. As C's pow: x^0 = 1 for every x (0^0 and NaN^0 included),
// 1^y = 1 (1^NaN included), a negative base with an integer exponent gives
// the sign of (-1)^b and with a fractional exponent NaN; (+-0)^b and
// (+-inf)^b are 0 or inf, negative for a negative base and an odd b;
// (-1)^(+-inf) = 1. Computed in f32: integer exponents up to 64 in magnitude
// by squaring (within a few ulps), b = 0.5 as sqrt (rounded once), others as
// exp2(b log2 |a|) (its error in ulps grows with |b log2 |a||).
// Gradients (torch's): d/da = b a^(b-1), taken as 0 where b = 0; d/db =
// a^b log(a), taken as 0 where a = 0 and b >= 0 (NaN for a negative base).
// Semantic op "oa::matrix::pow": inputs a and b (b absent in the scalar
// form), attribute exponent (0 when b is given).
// Two i32 operands (b a Matrix) compute in int32, as torch's integer pow:
// wrapping modulo 2^32 (by squaring), and a negative exponent gives 1 for a
// base of 1, +-1 for -1 and 0 for any other base; no gradient. The host
// exponent form takes a float x (f32, f16 or bf16), not i32.
Matrix pow(const Matrix& a, const Matrix& b);
Matrix pow(const Matrix& x, float exponent);

// floor(a / b) (torch.floor_divide, torch.div(rounding_mode='floor'), Python's
// a // b) and a - b floor(a / b) with the divisor's sign (torch.remainder,
// Python's a % b), broadcast as the binary ops; f32, f16, bf16 or i32 (both of
// one dtype). Floats as ATen's div_floor_floating and remainder: from the
// truncated quotient and C's fmod, exact while the quotient is below 2^24 in
// magnitude; a zero b gives a / b (+-inf, NaN for 0 / 0) and a NaN remainder,
// as IEEE 754. i32 in int32 arithmetic, exact (INT32_MIN // -1 wraps to
// INT32_MIN); a zero b gives 0 for both: the caller checks, as the Python
// binding does (torch's CPU kernels raise ZeroDivisionError). floor_divide has
// no gradient (its result never requires one); remainder's is torch's: d/da =
// 1, d/db = -floor_divide(a, b). Errors and semantic ops as the binary ops.
Matrix floor_divide(const Matrix& a, const Matrix& b);
Matrix remainder(const Matrix& a, const Matrix& b);
// Bitwise and, or, xor of two i32 Matrices, or the logical ones of two Bool
// Matrices (torch.bitwise_and, bitwise_or, bitwise_xor; Python's &, |, ^),
// broadcast as the binary ops; no gradient. Errors as the binary ops (a float
// operand included).
Matrix bitwise_and(const Matrix& a, const Matrix& b);
Matrix bitwise_or(const Matrix& a, const Matrix& b);
Matrix bitwise_xor(const Matrix& a, const Matrix& b);
// ~x: bitwise not of an i32 x, logical not of a Bool x (torch.bitwise_not,
// Python's ~); same shape and dtype; no gradient. InvalidArgument naming the
// op for another dtype. Semantic op "oa::matrix::bitwise_not".
Matrix bitwise_not(const Matrix& x);

// With a host scalar: a (op) s, a f32, f16 or bf16 (for an i32 a, give s as
// a Matrix::from_i32 scalar []: it broadcasts).
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
// torch.sin, cos, exp2, log1p, expm1 and erf (log1p and expm1 keep their
// relative accuracy near 0; erf within 2e-7 absolute).
Matrix sin(const Matrix& x);
Matrix cos(const Matrix& x);
Matrix exp2(const Matrix& x);
Matrix log1p(const Matrix& x);
Matrix expm1(const Matrix& x);
Matrix erf(const Matrix& x);
// log(1 + exp(x)), x itself above 20 (torch.nn.functional.softplus, beta 1,
// threshold 20); mish x tanh(softplus(x)) (Misra 2019); hardswish
// x relu6(x + 3) / 6 (Howard et al. 2019, MobileNetV3), as the torch.nn.functional ones.
Matrix softplus(const Matrix& x);
Matrix mish(const Matrix& x);
Matrix hardswish(const Matrix& x);
// Piecewise constant, gradient 0 as in PyTorch: sign (-1, 0 or 1; NaN stays
// NaN; an i32 x gives i32), floor, ceil, round (half to even, as torch.round).
Matrix sign(const Matrix& x);
Matrix floor(const Matrix& x);
Matrix ceil(const Matrix& x);
Matrix round(const Matrix& x);
// x where x > 0, else negative_slope * x (torch.nn.functional.leaky_relu).
Matrix leaky_relu(const Matrix& x, float negative_slope = 0.01f);
// x where x > 0, else alpha (exp(x) - 1) (Clevert et al. 2015; torch.nn.functional.elu).
Matrix elu(const Matrix& x, float alpha = 1.0f);

// Comparisons (torch.eq, ne, lt, le, gt, ge): a (op) b elementwise as a Bool
// Matrix (1 where it holds, 0 where not), the masks where() and
// masked_fill() take. a and b are both f32 or both i32; unlike the arithmetic
// ops above they broadcast by NumPy's full rules (right aligned, extents equal
// or 1, any pattern; as where() does), each operand of another shape than the
// result first expanded by oa::matrix::expand (recorded as such). NaN compares
// false under every comparison but ne, where it compares true (IEEE 754, as
// PyTorch); -0 equals +0. Not differentiable: the result never requires a
// gradient (inputs that require one are fine; nothing is recorded for them).
// Errors (InvalidArgument naming the op, the argument and the shapes; nothing
// is recorded): undefined operands, operands on two engines, a dtype other
// than f32 or i32, a and b of two dtypes, shapes that do not broadcast.
// Semantic op "oa::matrix::<name>", inputs a and b, attribute value 0.
Matrix eq(const Matrix& a, const Matrix& b);
Matrix ne(const Matrix& a, const Matrix& b);
Matrix lt(const Matrix& a, const Matrix& b);
Matrix le(const Matrix& a, const Matrix& b);
Matrix gt(const Matrix& a, const Matrix& b);
Matrix ge(const Matrix& a, const Matrix& b);
// With a host scalar: a (op) s, a f32 (torch.gt(a, 0.5)); a NaN s makes every
// element false (true for ne). Semantic op "oa::matrix::<name>", input a
// alone, attribute value s.
Matrix eq(const Matrix& a, float s);
Matrix ne(const Matrix& a, float s);
Matrix lt(const Matrix& a, float s);
Matrix le(const Matrix& a, float s);
Matrix gt(const Matrix& a, float s);
Matrix ge(const Matrix& a, float s);

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
