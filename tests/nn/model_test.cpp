// Models built from the layer modules: state_dict-style names with buffers,
// checkpoints through named_tensors(), optimizers over parameters(), and the
// constructors' argument errors.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "oa/ml/checkpoint.hpp"
#include "oa/ml/nn/nn.hpp"
#include "oa/ml/optim.hpp"
#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"
#include "support/module_check.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace oa::test::module_names;

std::shared_ptr<Sequential> small_convnet(std::uint64_t seed) {
  oa::ml::Generator g(seed);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(1, 2, std::array<std::int64_t, 2>{3, 3}, g), std::make_shared<BatchNorm2d>(2),
      std::make_shared<ReLU>(), std::make_shared<Flatten>(), std::make_shared<Linear>(8, 3, g, false)});
}

TEST(NnModel, NamedTensorsHoldParametersThenBuffersPerModule) {
  const auto net = small_convnet(1);
  EXPECT_EQ(names_of(net->named_tensors()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                      "1.num_batches_tracked", "4.weight"}));
  EXPECT_EQ(names_of(net->named_buffers()), (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(net->parameter_count(), 2 * 9 + 2 + 2 + 2 + 24);
  for (const auto& [name, p] : net->named_parameters()) EXPECT_EQ(p.name(), name);
  const auto* bn = dynamic_cast<const BatchNorm2d*>((*net)[1].get());
  ASSERT_NE(bn, nullptr);
  EXPECT_TRUE(net->named_tensors()[4].second.storage() == bn->running_mean().storage());
  EXPECT_TRUE(oa_test::near(bn->running_var().to_vector(), {1.0, 1.0}, 0, 0));
}

TEST(NnModel, CheckpointRoundTripThroughNamedTensors) {
  oa::test::TempDir dir;
  const auto a = small_convnet(2), b = small_convnet(3);
  const Matrix x = Matrix::from_vector({2, 1, 4, 4}, oa::test::test_values(32, 4));
  a->forward(x);  // training mode: moves the running statistics away from their start
  oa::ml::save_safetensors(dir.path() / "model.safetensors", a->named_tensors());
  oa::ml::load_safetensors_into(dir.path() / "model.safetensors", b->named_tensors());
  const auto ta = a->named_tensors(), tb = b->named_tensors();
  for (std::size_t i = 0; i < ta.size(); ++i) {
    if (ta[i].second.dtype() == oa::DType::I32) EXPECT_EQ(ta[i].second.to_i32(), tb[i].second.to_i32()) << ta[i].first;
    else EXPECT_EQ(ta[i].second.to_vector(), tb[i].second.to_vector()) << ta[i].first;
  }
  const auto* bn = dynamic_cast<const BatchNorm2d*>((*b)[1].get());
  EXPECT_EQ(bn->num_batches_tracked().to_i32(), std::vector<std::int32_t>{1});
  a->eval();
  b->eval();
  EXPECT_EQ(a->forward(x).to_vector(), b->forward(x).to_vector());
}

TEST(NnModel, OptimizersTakeTheModelsParameters) {
  const auto net = small_convnet(5);
  oa::ml::optim::AdamW adamw(net->parameters(), {.lr = 1e-2f});  // unique hierarchical names
  const Matrix x = Matrix::from_vector({2, 1, 4, 4}, oa::test::test_values(32, 6));
  const auto before = net->named_parameters()[0].second.value().to_vector();
  oa::backward(oa::matrix::sum_all(oa::matrix::square(net->forward(x))));
  adamw.step();
  EXPECT_NE(net->named_parameters()[0].second.value().to_vector(), before);
  EXPECT_EQ(names_of(adamw.state()).front(), "0.weight.exp_avg");
}

TEST(NnModel, ConstructorErrorsNameTheModule) {
  using oa::ErrorKind;
  oa::ml::Generator g(7);
  EXPECT_TRUE(oa_test::throws([&] { Linear(0, 3, g); }, ErrorKind::InvalidArgument, {"Linear", "in_features 0"}));
  EXPECT_TRUE(oa_test::throws([&] { Conv2d(3, 4, {3, 3}, g, {.groups = 2}); }, ErrorKind::InvalidArgument,
                              {"Conv2d", "in_channels 3", "groups 2"}));
  EXPECT_TRUE(oa_test::throws([&] { Conv1d(2, 2, 0, g); }, ErrorKind::InvalidArgument, {"Conv1d", "kernel"}));
  EXPECT_TRUE(oa_test::throws([&] { ConvTranspose2d(4, 6, {2, 2}, g, {.groups = 4}); }, ErrorKind::InvalidArgument,
                              {"ConvTranspose2d", "out_channels 6"}));
  EXPECT_TRUE(oa_test::throws([&] { LayerNorm(0); }, ErrorKind::InvalidArgument, {"LayerNorm", "normalized_dim 0"}));
  EXPECT_TRUE(oa_test::throws([&] { BatchNorm2d(3, 1e-5, 1.5); }, ErrorKind::InvalidArgument, {"BatchNorm2d", "momentum 1.5"}));
  EXPECT_TRUE(oa_test::throws([&] { Embedding(5, 0, g); }, ErrorKind::InvalidArgument, {"Embedding", "embedding_dim 0"}));
  EXPECT_TRUE(oa_test::throws([&] { Dropout(1.5, g); }, ErrorKind::InvalidArgument, {"Dropout", "1.5"}));
  // Shape errors at forward come from the op, naming it.
  Linear layer(4, 2, g);
  EXPECT_TRUE(oa_test::throws([&] { layer(Matrix::zeros({3, 5})); }, ErrorKind::InvalidArgument, {"oa::ml::linear", "[3, 5]"}));
}

}  // namespace
