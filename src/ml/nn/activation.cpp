#include "oa/ml/nn/activation.hpp"

#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/layout.hpp"

namespace oa::ml::nn {

Matrix ReLU::forward(const Matrix& x) { return matrix::relu(x); }
Matrix GELU::forward(const Matrix& x) { return matrix::gelu(x); }
Matrix SiLU::forward(const Matrix& x) { return matrix::silu(x); }
Matrix Tanh::forward(const Matrix& x) { return matrix::tanh(x); }
Matrix Sigmoid::forward(const Matrix& x) { return matrix::sigmoid(x); }

Matrix Flatten::forward(const Matrix& x) { return matrix::flatten(x, start_dim_, end_dim_); }

}  // namespace oa::ml::nn
