#pragma once
// Pooling modules over oa::ml::max_pool_2d, avg_pool_2d and global_avg_pool_2d
// (oa/ml/functional.hpp), which give their semantics, options and errors.
// No parameters.
#include <cstdint>

#include "oa/ml/nn/module.hpp"
#include "oa/ml/pool.hpp"

namespace oa::ml::nn {

// torch.nn.MaxPool2d: x [N, C, H, W] -> [N, C, OH, OW].
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const Pool2dOptions& options) : options_(options) {}
  // Square kernel; stride 0 means stride = kernel_size.
  explicit MaxPool2d(std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);
  Matrix forward(const Matrix& x) override { return max_pool_2d(x, options_); }
  std::string type_name() const override { return "MaxPool2d"; }

 private:
  Pool2dOptions options_;
};

// torch.nn.AvgPool2d (count_include_pad = true): x [N, C, H, W] -> [N, C, OH, OW].
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const Pool2dOptions& options) : options_(options) {}
  explicit AvgPool2d(std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);
  Matrix forward(const Matrix& x) override { return avg_pool_2d(x, options_); }
  std::string type_name() const override { return "AvgPool2d"; }

 private:
  Pool2dOptions options_;
};

// The mean over H and W: x [N, C, H, W] -> [N, C] (torch.nn.AdaptiveAvgPool2d(1)
// followed by flattening).
class GlobalAvgPool2d : public Module {
 public:
  Matrix forward(const Matrix& x) override { return global_avg_pool_2d(x); }
  std::string type_name() const override { return "GlobalAvgPool2d"; }
};

}  // namespace oa::ml::nn
