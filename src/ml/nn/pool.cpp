#include "oa/ml/nn/pool.hpp"

namespace oa::ml::nn {

namespace {

Pool2dOptions square(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  Pool2dOptions o;
  o.kernel_size = {kernel_size, kernel_size};
  if (stride != 0) o.stride = std::array<std::int64_t, 2>{stride, stride};
  o.padding = {padding, padding};
  return o;
}

}  // namespace

MaxPool2d::MaxPool2d(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding)
    : options_(square(kernel_size, stride, padding)) {}

AvgPool2d::AvgPool2d(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding)
    : options_(square(kernel_size, stride, padding)) {}

}  // namespace oa::ml::nn
