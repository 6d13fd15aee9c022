#include "models.hpp"

#include "oa/ml/conv.hpp"
#include "oa/ml/init.hpp"
#include "oa/ml/nn/linear.hpp"
#include "oa/ml/nn_ops.hpp"

namespace oa_cli {
namespace {

using oa::Matrix;
using oa::ml::Parameter;
namespace init = oa::ml::init;

// conv(3x3) blocks then a classifier:
//   full:  [1→32, pool] [32→64, pool] → 3136 → 128 → 10
//   quick: [1→8, stride 2] [8→16, stride 2] → 784 → 10
class ConvNet final : public oa::ml::nn::Module {
 public:
  ConvNet(bool quick, oa::ml::Generator& g, const oa::Engine& e) : quick_(quick) {
    const std::int64_t c1 = quick ? 8 : 32, c2 = quick ? 16 : 64;
    conv1_w_ = weight("conv1_weight", {c1, 1, 3, 3}, g, e);
    conv1_b_ = bias("conv1_bias", {c1}, {c1, 1, 3, 3}, g, e);
    conv2_w_ = weight("conv2_weight", {c2, c1, 3, 3}, g, e);
    conv2_b_ = bias("conv2_bias", {c2}, {c2, c1, 3, 3}, g, e);
    const std::int64_t flat = c2 * 7 * 7;
    if (quick) {
      fc_w_ = weight("fc_weight", {10, flat}, g, e);
      fc_b_ = bias("fc_bias", {10}, {10, flat}, g, e);
    } else {
      hidden_w_ = weight("fc1_weight", {128, flat}, g, e);
      hidden_b_ = bias("fc1_bias", {128}, {128, flat}, g, e);
      fc_w_ = weight("fc2_weight", {10, 128}, g, e);
      fc_b_ = bias("fc2_bias", {10}, {10, 128}, g, e);
    }
  }

  Matrix forward(const Matrix& x) override {
    namespace ml = oa::ml;
    const std::int64_t s = quick_ ? 2 : 1;
    Matrix h = oa::matrix::relu(ml::conv_2d(x, conv1_w_.value(), conv1_b_.value(), s, 1));
    if (!quick_) h = ml::max_pool_2d(h, 2);
    h = oa::matrix::relu(ml::conv_2d(h, conv2_w_.value(), conv2_b_.value(), s, 1));
    if (!quick_) h = ml::max_pool_2d(h, 2);
    h = h.reshape({h.dim(0), -1});
    if (!quick_) h = oa::matrix::relu(ml::nn::linear(h, hidden_w_.value(), hidden_b_.value()));
    return ml::nn::linear(h, fc_w_.value(), fc_b_.value());
  }
  std::string type_name() const override { return "ConvNet"; }

 private:
  Parameter weight(const std::string& name, const oa::Shape& shape, oa::ml::Generator& g, const oa::Engine& e) {
    return register_parameter(name, init::default_weight(shape, g, e));
  }
  Parameter bias(const std::string& name, const oa::Shape& shape, const oa::Shape& w, oa::ml::Generator& g, const oa::Engine& e) {
    return register_parameter(name, init::default_bias(shape, w, g, e));
  }

  bool quick_;
  Parameter conv1_w_, conv1_b_, conv2_w_, conv2_b_, hidden_w_, hidden_b_, fc_w_, fc_b_;
};

}  // namespace

std::shared_ptr<oa::ml::nn::Module> make_image_model(const ImageModelConfig& config, oa::ml::Generator& generator,
                                                     const oa::Engine& engine) {
  if (config.kind == "convnet") return std::make_shared<ConvNet>(config.quick, generator, engine);
  oa::fail(oa::ErrorKind::InvalidArgument, "unknown model \"{}\" (expected convnet)", config.kind);
}

}  // namespace oa_cli
