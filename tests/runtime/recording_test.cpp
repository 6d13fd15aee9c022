// The recording path: push descriptors where the device has them, descriptor
// sets otherwise, and dispatches that carry their bindings, specialization
// constants and push constants inline.
#include <gtest/gtest.h>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace {

using oa::Matrix;
using oa::ml::Parameter;

// Three SGD steps of a conv layer followed by a two-layer MLP with bias;
// returns the parameters afterwards.
std::vector<std::vector<float>> train(const oa::Engine& e) {
  std::vector<Parameter> params = {Parameter("conv_w", Matrix::uniform({4, 2, 3, 3}, -0.4f, 0.4f, 11, e)),
                                   Parameter("conv_b", Matrix::uniform({4}, -0.1f, 0.1f, 12, e)),
                                   Parameter("w1", Matrix::uniform({4 * 8 * 8, 24}, -0.1f, 0.1f, 13, e)),
                                   Parameter("b1", Matrix::uniform({24}, -0.1f, 0.1f, 14, e)),
                                   Parameter("w2", Matrix::uniform({24, 5}, -0.3f, 0.3f, 15, e))};
  const auto x = Matrix::uniform({3, 2, 8, 8}, -1, 1, 16, e);
  oa::ml::optim::Sgd opt(params, {.lr = 0.05f, .momentum = 0.9f});
  for (int step = 0; step < 3; ++step) {
    auto c = oa::matrix::relu(oa::ml::conv_2d(x, params[0].value(), params[1].value(), 1, 1));
    auto h = oa::matrix::gelu(oa::matrix::add(oa::matrix::matmul(c.reshape({3, 4 * 8 * 8}), params[2].value()),
                                              params[3].value()));
    oa::backward(oa::matrix::mean_all(oa::matrix::square(oa::matrix::matmul(h, params[4].value()))));
    opt.step();
    opt.zero_grad();
  }
  std::vector<std::vector<float>> out;
  for (auto& p : params) out.push_back(p.value().to_vector());
  return out;
}

TEST(RuntimeRecording, PushDescriptorsAndDescriptorSetsGiveTheSameResults) {
  oa::Engine pushed;
  oa::Engine sets(oa::EngineOptions{.descriptor_sets = true});
  EXPECT_FALSE(sets.device().push_descriptors);
  // The default engine uses push descriptors wherever the device offers them.
  EXPECT_EQ(pushed.device().push_descriptors, oa::Engine::devices()[pushed.device().index].push_descriptors);
  const auto a = train(pushed), b = train(sets);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "parameter " << i;
  EXPECT_EQ(pushed.stats().dispatches, sets.stats().dispatches);
}

TEST(RuntimeRecording, DispatchLimitsAreErrors) {
  oa::Engine e;
  auto x = Matrix::zeros({16}, e);
  oa::runtime::ComputeDispatch d;
  for (std::size_t i = 0; i < oa::runtime::ComputeDispatch::kMaxBindings; ++i)
    d.bindings.push_back(oa::runtime::BufferBinding::write(x.storage()));
  const std::string limit = "at most " + std::to_string(oa::runtime::ComputeDispatch::kMaxBindings) + " bindings";
  EXPECT_TRUE(oa_test::throws([&] { d.bindings.push_back(oa::runtime::BufferBinding::read(x.storage())); }, oa::ErrorKind::Internal,
                              {limit.c_str()}));
  EXPECT_TRUE(oa_test::throws([&] { d.specialization = std::vector<std::uint32_t>(17, 1u); }, oa::ErrorKind::Internal,
                              {"at most 16 specialization constants"}));
}

}  // namespace
