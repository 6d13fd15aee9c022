#pragma once
// Pooling modules over oa::ml::max_pool_2d, avg_pool_2d and global_avg_pool_2d
// (oa/ml/functional.hpp), which give their semantics, options and errors.
// No parameters.
#include <cstdint>

#include "oa/ml/nn/module.hpp"
#include "oa/ml/pool.hpp"

namespace oa::ml::nn {

// What MaxPool2d and AvgPool2d share: their options, given whole or as a
// square kernel (Pool2dOptions::square).
class Pool2dModule : public Module {
 public:
  explicit Pool2dModule(const Pool2dOptions& options) : options_(options) {}
  explicit Pool2dModule(std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0)
      : options_(Pool2dOptions::square(kernel_size, stride, padding)) {}
  const Pool2dOptions& options() const { return options_; }

 private:
  Pool2dOptions options_;
};

// torch.nn.MaxPool2d: x [N, C, H, W] -> [N, C, OH, OW].
class MaxPool2d : public Pool2dModule {
 public:
  using Pool2dModule::Pool2dModule;
  Matrix forward(const Matrix& x) override { return max_pool_2d(x, options()); }
  std::string type_name() const override { return "MaxPool2d"; }
};

// torch.nn.AvgPool2d (count_include_pad = true): x [N, C, H, W] -> [N, C, OH, OW].
class AvgPool2d : public Pool2dModule {
 public:
  using Pool2dModule::Pool2dModule;
  Matrix forward(const Matrix& x) override { return avg_pool_2d(x, options()); }
  std::string type_name() const override { return "AvgPool2d"; }
};

// The mean over H and W: x [N, C, H, W] -> [N, C] (torch.nn.AdaptiveAvgPool2d(1)
// followed by flattening).
class GlobalAvgPool2d : public Module {
 public:
  Matrix forward(const Matrix& x) override { return global_avg_pool_2d(x); }
  std::string type_name() const override { return "GlobalAvgPool2d"; }
};

}  // namespace oa::ml::nn
