#include "oa/ml/nn/activation.hpp"

#include "oa/matrix/elementwise.hpp"

namespace oa::ml::nn {

Matrix ReLU::forward(const Matrix& x) { return matrix::relu(x); }
Matrix GELU::forward(const Matrix& x) { return matrix::gelu(x); }
Matrix SiLU::forward(const Matrix& x) { return matrix::silu(x); }
Matrix Tanh::forward(const Matrix& x) { return matrix::tanh(x); }
Matrix Sigmoid::forward(const Matrix& x) { return matrix::sigmoid(x); }

Matrix Flatten::forward(const Matrix& x) {
  detail::require_defined(x, "oa::ml::nn::Flatten", "x");
  const int rank = static_cast<int>(x.rank());
  const int start = start_dim_ < 0 ? start_dim_ + rank : start_dim_, end = end_dim_ < 0 ? end_dim_ + rank : end_dim_;
  if (start < 0 || end >= rank || start > end)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::Flatten: start_dim {} and end_dim {} do not select axes of x {}", start_dim_,
         end_dim_, x.shape());
  std::vector<std::int64_t> dims;
  for (int i = 0; i < start; ++i) dims.push_back(x.shape()[static_cast<std::size_t>(i)]);
  std::int64_t merged = 1;
  for (int i = start; i <= end; ++i) merged *= x.shape()[static_cast<std::size_t>(i)];
  dims.push_back(merged);
  for (int i = end + 1; i < rank; ++i) dims.push_back(x.shape()[static_cast<std::size_t>(i)]);
  return x.reshape(dims);
}

}  // namespace oa::ml::nn
