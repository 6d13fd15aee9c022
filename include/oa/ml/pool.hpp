#pragma once
// Pooling over NCHW activations (oa::ml): max_pool_2d, avg_pool_2d, global_avg_pool_2d.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <array>
#include <cstdint>
#include <optional>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Per-axis options {height, width}. stride defaults to kernel_size (PyTorch's
// default); padding is applied on both sides of each axis and may be at most
// half the kernel. ceil_mode false and dilation 1, as PyTorch's defaults:
//   out = floor((in + 2 padding - kernel) / stride) + 1.
// max_pool_2d and avg_pool_2d take a batch of N = 0 (an empty output and
// gradient, no dispatch), as PyTorch; C, H and W must be nonzero.
struct Pool2dOptions {
  std::array<std::int64_t, 2> kernel_size{1, 1};
  std::optional<std::array<std::int64_t, 2>> stride;
  std::array<std::int64_t, 2> padding{0, 0};
  // A square kernel, stride and padding; stride 0 means stride = kernel_size.
  static Pool2dOptions square(std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);
};

// Max pooling (torch.nn.functional.max_pool2d): x [N, C, H, W] ->
// [N, C, OH, OW], padding counting as -inf; a NaN in a window wins. The
// gradient goes to the first maximum of each window (row-major order).
// Semantic op "oa::ml::max_pool_2d", attributes kernel_size, stride, padding.
Matrix max_pool_2d(const Matrix& x, const Pool2dOptions& options);
// Square kernel; stride 0 means stride = kernel_size.
Matrix max_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);

// Average pooling (torch.nn.functional.avg_pool2d with count_include_pad =
// true): the window sum over kernel_h * kernel_w, padding counting as zeros.
// Semantic op "oa::ml::avg_pool_2d", attributes kernel_size, stride, padding.
Matrix avg_pool_2d(const Matrix& x, const Pool2dOptions& options);
Matrix avg_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);

// Global average pooling: x [N, C, H, W] -> [N, C], the mean over H * W
// (torch.nn.functional.adaptive_avg_pool2d(x, 1) flattened). N = 0 or C = 0
// gives an empty result and gradient (no dispatch), as torch; H or W = 0
// throws InvalidArgument naming x's shape (torch rejects an empty plane too).
// Semantic op "oa::ml::global_avg_pool_2d".
Matrix global_avg_pool_2d(const Matrix& x);

}  // namespace oa::ml
