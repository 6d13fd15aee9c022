// oa::ml::Parameter: identity, versions, one gradient per Parameter.
#include <gtest/gtest.h>

#include <string>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace {

using oa::ErrorKind;
using oa::Matrix;
using oa::ml::Parameter;

TEST(AutogradParameter, IdentityAndVersions) {
  auto init = Matrix::from_vector({2, 2}, std::vector<float>{1, 2, 3, 4});
  Parameter p("layer.weight", init);
  EXPECT_EQ(p.name(), "layer.weight");
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.value().storage() == init.storage());  // takes the storage over, no copy
  EXPECT_FALSE(oa::requires_grad(init));               // the initial handle is not the leaf
  EXPECT_FALSE(p.grad().defined());
  const auto v0 = p.version();
  p.write(std::vector<float>{5, 6, 7, 8});
  EXPECT_EQ(p.version(), v0 + 1);
  EXPECT_EQ(p.value().to_vector(), (std::vector<float>{5, 6, 7, 8}));
  p.assign(Matrix::full({2, 2}, 0.5f));
  EXPECT_EQ(p.version(), v0 + 2);
  EXPECT_EQ(p.value().to_vector(), std::vector<float>(4, 0.5f));
  p.value().storage()->bump_version();  // what an optimizer kernel does
  EXPECT_EQ(p.version(), v0 + 3);
  Parameter q = p;  // a handle: same value, gradient and version
  EXPECT_EQ(q.version(), p.version());
  EXPECT_TRUE(q.value().same_as(p.value()));
  p.set_requires_grad(false);
  EXPECT_FALSE(q.requires_grad());
}

TEST(AutogradParameter, OfAValueIsTheSameParameter) {
  Parameter p("w", Matrix::ones({3}));
  const Parameter q = Parameter::of(p.value());
  EXPECT_TRUE(q.value().same_as(p.value()));
  q.set_name("renamed");
  EXPECT_EQ(p.name(), "renamed");
  EXPECT_TRUE(oa_test::throws([] { Parameter::of(Matrix::ones({3})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::Parameter::of", "not a Parameter's value"}));
  EXPECT_TRUE(oa_test::throws([&] { Parameter::of(p.value() * 2.0f); }, ErrorKind::InvalidArgument,
                              {"oa::ml::Parameter::of", "not a named leaf"}));
  EXPECT_TRUE(oa_test::throws([] { Parameter::of(Matrix()); }, ErrorKind::InvalidArgument, {"oa::ml::Parameter::of", "undefined"}));
}

// torch.optim takes any leaf: an unnamed f32 leaf that requires gradients
// becomes a Parameter in place, sharing its gradient with the user's handle.
TEST(AutogradParameter, OfLeafNamesAPlainLeaf) {
  const Matrix w = oa::set_requires_grad(Matrix::ones({3}));
  const Parameter p = Parameter::of_leaf(w, "t0");
  EXPECT_TRUE(p.value().same_as(w));
  EXPECT_EQ(Parameter::of(w).name(), "t0");
  oa::backward(w * 2.0f, Matrix::ones({3}));
  EXPECT_EQ(p.grad().to_vector(), (std::vector<float>{2, 2, 2}));
  Parameter q("named", Matrix::ones({2}));
  EXPECT_EQ(Parameter::of_leaf(q.value(), "other").name(), "named");  // a Parameter keeps its name
  EXPECT_TRUE(oa_test::throws([] { Parameter::of_leaf(Matrix::ones({3}), "t"); }, ErrorKind::InvalidArgument,
                              {"oa::ml::Parameter::of_leaf", "f32 [3]", "requires_grad false"}));
  EXPECT_TRUE(oa_test::throws([&] { Parameter::of_leaf(w * 2.0f, "t"); }, ErrorKind::InvalidArgument,
                              {"of_leaf", "computed by an op: true"}));
  EXPECT_TRUE(oa_test::throws([] { Parameter::of_leaf(oa::set_requires_grad(Matrix::ones({3})), ""); }, ErrorKind::InvalidArgument,
                              {"of_leaf", "name is empty"}));
}

TEST(AutogradParameter, Errors) {
  EXPECT_TRUE(
      oa_test::throws([] { Parameter("", Matrix::ones({2})); }, ErrorKind::InvalidArgument, {"oa::ml::Parameter", "name"}));
  EXPECT_TRUE(oa_test::throws([] { Parameter("w", Matrix()); }, ErrorKind::InvalidArgument, {"oa::ml::Parameter", "undefined"}));
  Parameter p("fc.bias", Matrix::ones({3}));
  EXPECT_TRUE(
      oa_test::throws([&] { p.assign(Matrix::ones({4})); }, ErrorKind::InvalidArgument, {"assign", "fc.bias", "[4]", "[3]"}));
  EXPECT_TRUE(oa_test::throws([&] { p.write(std::vector<float>{1, 2}); }, ErrorKind::InvalidArgument, {"write"}));
  EXPECT_TRUE(oa_test::throws([] { Parameter().name(); }, ErrorKind::InvalidArgument, {"undefined Parameter"}));
}

TEST(AutogradParameter, UsedTwiceAccumulatesOneGradient) {
  Parameter p("w", Matrix::from_vector({3}, std::vector<float>{1, 2, 3}));
  const Parameter alias = p;
  auto x = Matrix::from_vector({3}, std::vector<float>{10, 20, 30});
  auto y = oa::matrix::mul(p.value(), x) + oa::matrix::tanh(alias.value()) + p.value();
  oa::backward(y, Matrix::ones({3}));
  auto g = p.grad().to_vector();
  auto v = std::vector<double>{1, 2, 3};
  for (std::size_t i = 0; i < 3; ++i) {
    const double th = std::tanh(v[i]);
    EXPECT_NEAR(g[i], 10.0 * (i + 1) + (1 - th * th) + 1, 1e-4);
  }
  EXPECT_TRUE(alias.grad().storage() == p.grad().storage());
  p.zero_grad();
  EXPECT_FALSE(alias.grad().defined());
}

TEST(AutogradParameter, ModifiedAfterForwardNamesTheParameter) {
  Parameter w("encoder.layer0.weight", Matrix::uniform({2, 3}, -1, 1, 1));
  auto x = oa::set_requires_grad(Matrix::uniform({2, 3}, -1, 1, 2));
  auto y = x * w.value();  // saves the weight
  w.assign(Matrix::zeros({2, 3}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        oa::backward(y, Matrix::ones({2, 3}));
      },
      ErrorKind::FailedPrecondition, {"Parameter 'encoder.layer0.weight'", "oa::matrix::mul", "modified in place"}));
  // A reshaped view of the Parameter keeps its name.
  auto y2 = x.reshape({6}) * w.value().reshape({6});
  w.value().storage()->bump_version();
  EXPECT_TRUE(oa_test::throws([&] { oa::backward(y2, Matrix::ones({6})); }, ErrorKind::FailedPrecondition,
                              {"Parameter 'encoder.layer0.weight'"}));
  // An update before the forward pass is fine.
  auto y3 = x * w.value();
  oa::backward(y3, Matrix::ones({2, 3}));
  EXPECT_EQ(oa::grad(x).to_vector(), w.value().to_vector());
}

TEST(AutogradParameter, AutogradFunctionsOnAParameterValue) {
  Parameter p("w", Matrix::full({2}, 2.0f));
  auto y = oa::matrix::square(p.value());
  EXPECT_TRUE(oa::requires_grad(y));
  oa::backward(y, Matrix::ones({2}));
  EXPECT_EQ(oa::grad(p.value()).to_vector(), (std::vector<float>{4, 4}));
  oa::zero_grad(p.value());
  {
    oa::NoGradGuard guard;
    EXPECT_FALSE(oa::grad_enabled());
    EXPECT_FALSE(oa::requires_grad(p.value() * 2.0f));
  }
  EXPECT_FALSE(oa::requires_grad(oa::detach(y)));
}

}  // namespace
