#pragma once
// Reductions and scans (oa::matrix). Row-major, contiguous input.
//
// Dtypes. The reductions (sum, mean, max, min, prod, var, std, logsumexp,
// norm), argmax and argmin take f32, f16 or bf16 x; a 16-bit x is widened
// into an f32 temporary (one more read and write of x), reduced in f32, and
// each result rounded once to x's dtype, which the result has (torch's
// accumulate-in-f32, return-the-input-dtype); its gradient has x's dtype too,
// computed in f32 from widened operands and rounded once (sum and mean: gy
// broadcast in x's dtype). Under autocast the policy table decides
// (oa/matrix/autocast.hpp): sum, mean, prod, var, std, logsumexp and norm
// run in f32 and give f32. cumsum takes f32 x. sum and prod also take i32
// and bool x and give i32 (torch gives int64; oa has no 64-bit integers): an
// exact int32 sum or product, wrapping modulo 2^32 past the int32 range as
// int32 arithmetic does (where torch's int64 would not yet overflow, the
// results differ), a bool x counted as 1 and 0 (the kernel reads its bytes;
// no int32 copy of x; its prod is 1 where every element holds). max
// and min take i32 x and give exact i32 (no f32 round trip), and bool x,
// giving bool (any and all, as torch.amax / amin on bool); argmax and argmin
// take i32 x (bool x throws InvalidArgument, as torch implements no bool
// argmax). Integer and bool results have no gradient, as in torch: a non-f32
// leaf cannot require grad (oa::set_requires_grad), so none is recorded.
//
// Axes. `dim` lists the axes to reduce, as torch.sum(x, dim, keepdim) takes
// them: any set of x's axes, negative ones counting from the end, in any
// order; an empty list reduces every axis (as PyTorch does for dim=[]). The
// result drops the reduced axes, or keeps each as an extent of 1 with
// keepdim. A rank-0 x takes dim {} , {0} or {-1} and gives itself. The
// last-axis forms (sum(x), sum(x, true), ...) reduce dim {-1}, the *_all
// forms dim {}; they record the same ops.
//
// Cost model. x's axes are merged into runs (neighbouring axes that are all
// reduced or all kept; extents of 1 dropped). When the reduced run is last
// (a last-axis reduction, every axis, a leading kept block) the kernel reads
// x in place as [rows, length] rows; otherwise (a reduced run followed by
// kept axes, or several reduced runs: NCHW over {0, 2, 3}) x is first
// copied with the reduced runs moved last by one strided copy (one read and
// one write of x, as x.permute(...).contiguous() in PyTorch), then reduced.
// Each row is a cooperative tree reduction inside a workgroup; rows longer
// than one workgroup's share are reduced in several passes over fixed
// segments, so results are bitwise reproducible on one device (no atomics).
// var and std take two passes (the mean, then the mean squared deviation
// from it), logsumexp shifts by the row's maximum, norm squares or takes
// absolute values in an elementwise pass before the tree: each such pass is
// one more read and write of x. Any number of rows and any row length.
//
// NaN: max, min, and the inf-norm propagate NaN (torch.amax, torch.amin).
// Empty reductions: sum and norm give 0, prod 1, mean and var NaN, logsumexp
// -inf (as PyTorch); max, min and norm with p = inf throw InvalidArgument.
// Errors (oa::Error, kind InvalidArgument, naming the op, the argument and
// the shape; nothing recorded): undefined x, x of a dtype the op does not
// take (above), an axis out of range, an axis listed twice, an empty
// reduction where no identity exists, an unsupported norm order, element
// counts past 2^32 - 1.
#include <concepts>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// Sum over `dim` (torch.sum). Gradient: gy broadcast back. Semantic op
// "oa::matrix::sum", attributes dims (sorted, non-negative) and keepdim.
Matrix sum(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
// Mean over `dim` (torch.mean). Gradient: gy / n broadcast back. Semantic op
// "oa::matrix::mean" (attributes as sum).
Matrix mean(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
// Maximum and minimum over `dim` (torch.amax, torch.amin); NaN propagates.
// x f32, f16, bf16 (its dtype), i32 (exact i32) or bool (bool: any, all).
// Gradient (float x) as torch.amax / amin: gy split evenly among the
// elements equal to the extreme. Semantic ops "oa::matrix::max", "oa::matrix::min".
Matrix max(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
Matrix min(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
// Product over `dim` (torch.prod); of i32 or bool x an exact i32 product,
// wrapping modulo 2^32 on overflow (see Dtypes above). Gradient (float x;
// torch.prod's): prod / x where
// the reduced group holds no zero; where it holds one zero, the product of
// the others at the zero and 0 elsewhere; where it holds more, 0.
// Semantic op "oa::matrix::prod".
Matrix prod(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
// Variance and standard deviation over `dim` (torch.var, torch.std): the sum
// of squared deviations from the mean over max(0, n - correction), n the
// number of reduced elements (correction 1: Bessel's unbiased estimate; 0:
// the population variance); n - correction <= 0 gives inf or NaN, as PyTorch.
// The corrected two-pass algorithm (Chan, Golub & LeVeque 1983: the mean,
// then the sums of squared deviations and of deviations, the latter taking
// out the mean's rounding error), f32 tree sums: a mean of 1e6 costs no
// accuracy (torch's Welford pass is as exact). Gradients:
// 2 (x - mean) gy / (n - correction), and that over 2 std for std. Semantic
// ops "oa::matrix::var", "oa::matrix::std", attributes dims, correction, keepdim.
Matrix var(const Matrix& x, const std::vector<int>& dim, float correction = 1.0f, bool keepdim = false);
Matrix std(const Matrix& x, const std::vector<int>& dim, float correction = 1.0f, bool keepdim = false);
// log(sum(exp(x))) over `dim` (torch.logsumexp), computed as m + log(sum
// exp(x - m)) with m the maximum (finite rows never overflow; a group of
// -inf gives -inf, one holding +inf gives +inf). Gradient: gy exp(x - y),
// the softmax. Semantic op "oa::matrix::logsumexp".
Matrix logsumexp(const Matrix& x, const std::vector<int>& dim, bool keepdim = false);
// Vector norm of order p over `dim` (torch.linalg.vector_norm(x, ord=p, dim,
// keepdim); torch.norm): p = 2 (sqrt of the sum of squares), 1 (sum of
// absolute values) or +inf (the largest absolute value, NaN propagating); any
// other p throws InvalidArgument. An empty dim reduces every axis. Gradients
// (torch's): x gy / y for p = 2 (0 where y is 0), sign(x) gy for p = 1, and
// for p = inf sign(x) gy split evenly among the elements of largest |x|.
// Semantic op "oa::matrix::norm", attributes p, dims, keepdim.
Matrix norm(const Matrix& x, float p = 2.0f, const std::vector<int>& dim = {}, bool keepdim = false);

// The last-axis forms: dim {-1} (torch.sum(x, -1, keepdim), ...). keepdim
// must be a bool itself (a template), so that sum(x, {1}) names axis 1.
inline Matrix sum(const Matrix& x) { return sum(x, std::vector<int>{-1}); }
inline Matrix mean(const Matrix& x) { return mean(x, std::vector<int>{-1}); }
inline Matrix max(const Matrix& x) { return max(x, std::vector<int>{-1}); }
template <std::same_as<bool> B>
Matrix sum(const Matrix& x, B keepdim) {
  return sum(x, std::vector<int>{-1}, keepdim);
}
template <std::same_as<bool> B>
Matrix mean(const Matrix& x, B keepdim) {
  return mean(x, std::vector<int>{-1}, keepdim);
}
template <std::same_as<bool> B>
Matrix max(const Matrix& x, B keepdim) {
  return max(x, std::vector<int>{-1}, keepdim);
}

// Sum, mean and maximum of all elements -> [] (dim {}).
Matrix sum_all(const Matrix& x);
Matrix mean_all(const Matrix& x);
Matrix max_all(const Matrix& x);

// Index of the maximum along axis `dim` (negative counts from the end) as
// I32 (torch.argmax(x, dim, keepdim)) of f32, f16, bf16 or i32 x (bool
// throws, as torch): the first index of the maximum; a NaN counts as the maximum. The result drops dim, or keeps it as an extent of 1
// with keepdim. A dim other than the last costs one permuted copy of x (see
// the cost model above). Throws InvalidArgument for a rank-0 x, dim out of
// range, an empty dim, or its extent past INT32_MAX. Semantic op
// "oa::matrix::argmax", attributes dim (non-negative) and keepdim.
Matrix argmax(const Matrix& x, int dim, bool keepdim = false);
// Index of the minimum along axis `dim` as I32 (torch.argmin(x, dim,
// keepdim)): the first index of the minimum; a NaN counts as the minimum (as
// PyTorch, NaN propagates); -0 and +0 tie. Errors as argmax. Semantic op
// "oa::matrix::argmin".
Matrix argmin(const Matrix& x, int dim, bool keepdim = false);
// The last-axis forms: dim -1 (torch.argmax(x, -1, keepdim)).
inline Matrix argmax(const Matrix& x) { return argmax(x, -1); }
inline Matrix argmin(const Matrix& x) { return argmin(x, -1); }
template <std::same_as<bool> B>
Matrix argmax(const Matrix& x, B keepdim) {
  return argmax(x, -1, keepdim);
}
template <std::same_as<bool> B>
Matrix argmin(const Matrix& x, B keepdim) {
  return argmin(x, -1, keepdim);
}

// Sums x down to `target`, the inverse of the broadcasting of oa::matrix's
// binary ops (oa/matrix/elementwise.hpp): target broadcasts to x by NumPy's
// rules (right aligned, each extent equal to x's or 1). Gives a Matrix of
// shape `target` whose element c is the sum of x over every element that c
// was broadcast to. Used for the gradients of broadcast operands. A target
// whose non-unit extents are one contiguous run of x's axes ([C] against
// [N, C], [1, C, 1, 1] against NCHW) is summed in place; others reduce as
// sum over the broadcast axes (see the cost model above). Throws
// InvalidArgument naming both shapes for a target that does not broadcast to x.
// x is f32, f16 or bf16 and the result has its dtype (16-bit x is summed in
// f32 and each sum rounded once). Semantic op "oa::matrix::sum_to".
Matrix sum_to(const Matrix& x, const Shape& target);

// Inclusive prefix sums along axis `dim` (torch.cumsum(x, dim)): y has x's
// shape and y[..., i, ...] = sum of x[..., k, ...] for k <= i. One invocation
// scans one line along the axis serially with compensated (Kahan) f32
// summation, neighbouring invocations reading neighbouring addresses (lines
// = numel / extent of dim; a line's latency is its length). A rank-0 x takes
// dim 0 or -1. Gradient: the reverse cumulative sum of gy. Errors: undefined
// or non-f32 x, dim out of range, element counts past 2^32 - 1. Semantic op
// "oa::matrix::cumsum", attribute dim (non-negative).
Matrix cumsum(const Matrix& x, int dim);

}  // namespace oa::matrix
