#include "oa/ml/nn/dropout.hpp"

#include "oa/ml/functional.hpp"

namespace oa::ml::nn {

namespace {

double checked_p(double p) {
  if (!(p >= 0 && p <= 1)) fail(ErrorKind::InvalidArgument, "oa::ml::nn::Dropout: p {} must be in [0, 1]", p);
  return p;
}

}  // namespace

Dropout::Dropout(double p, Generator& generator) : p_(checked_p(p)), masks_(generator.next_seed()) {}

Matrix Dropout::forward(const Matrix& x) {
  if (!training()) return x;
  return dropout(x, p_, masks_.next_seed(), true);
}

}  // namespace oa::ml::nn
