// The Module base: hierarchical names and their order, parameter counts,
// buffers, modes, registration errors; Sequential, Flatten and activations.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "oa/ml/nn/activation.hpp"
#include "oa/ml/nn/embedding.hpp"
#include "oa/ml/nn/linear.hpp"
#include "oa/ml/nn/sequential.hpp"
#include "oa/oa.hpp"
#include "reference/elementwise.hpp"
#include "support/expect.hpp"
#include "support/module_check.hpp"

namespace {

using namespace oa::test::module_names;

// A module with two parameters and a buffer; y = x * a + b (a, b [n]).
class Leaf : public Module {
 public:
  explicit Leaf(std::int64_t n) {
    a_ = register_parameter("a", Matrix::full({n}, 2.0f));
    register_buffer("count", Matrix::zeros({1}));
    b_ = register_parameter("b", Matrix::full({n}, 0.5f));
  }
  Matrix forward(const Matrix& x) override { return x * a_.value() + b_.value(); }
  std::string type_name() const override { return "Leaf"; }

 private:
  oa::ml::Parameter a_, b_;
};

// A module with its own parameter and children, registered in between.
class Tree : public Module {
 public:
  Tree() {
    first_ = register_module("first", std::make_shared<Leaf>(3));
    register_parameter("scale", Matrix::ones({1}));
    stack_ = register_module("stack", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
                                          std::make_shared<Leaf>(3), std::make_shared<ReLU>(), std::make_shared<Leaf>(3)}));
  }
  Matrix forward(const Matrix& x) override { return stack_->forward(first_->forward(x)); }
  std::string type_name() const override { return "Tree"; }

 private:
  std::shared_ptr<Leaf> first_;
  std::shared_ptr<Sequential> stack_;
};

TEST(NnModule, HierarchicalNamesInPyTorchOrder) {
  Tree tree;
  // Own entries first, then each child's, in registration order (state_dict order).
  EXPECT_EQ(names_of(tree.named_parameters()),
            (std::vector<std::string>{"scale", "first.a", "first.b", "stack.0.a", "stack.0.b", "stack.2.a", "stack.2.b"}));
  EXPECT_EQ(names_of(tree.named_buffers()), (std::vector<std::string>{"first.count", "stack.0.count", "stack.2.count"}));
  EXPECT_EQ(names_of(tree.named_tensors()),
            (std::vector<std::string>{"scale", "first.a", "first.b", "first.count", "stack.0.a", "stack.0.b", "stack.0.count",
                                      "stack.2.a", "stack.2.b", "stack.2.count"}));
  EXPECT_EQ(names_of(tree.named_modules()),
            (std::vector<std::string>{"first", "stack", "stack.0", "stack.1", "stack.2"}));
  EXPECT_EQ(names_of(tree.named_children()), (std::vector<std::string>{"first", "stack"}));
  EXPECT_EQ(tree.parameter_count(), 1 + 3 * 6);
  EXPECT_EQ(tree.parameters().size(), 7u);
  // The Parameters carry the names the root module gives them (optimizers use them).
  for (const auto& [name, p] : tree.named_parameters()) EXPECT_EQ(p.name(), name);
  Leaf alone(2);
  EXPECT_EQ(alone.named_parameters()[0].second.name(), "a");
  EXPECT_TRUE(oa_test::throws([&] { alone.named_parameters()[0].second.set_name(""); }, oa::ErrorKind::InvalidArgument,
                              {"set_name", "empty"}));
  // named_tensors() hands out the module's own storage (checkpoints load into it in place).
  EXPECT_TRUE(tree.named_tensors()[1].second.storage() == tree.named_parameters()[1].second.value().storage());
}

// The same child under two names: its parameters are tied.
class Tied : public Module {
 public:
  Tied() {
    auto leaf = std::make_shared<Leaf>(2);
    register_module("encoder", leaf);
    register_module("decoder", leaf);
  }
  Matrix forward(const Matrix& x) override { return x; }
  std::string type_name() const override { return "Tied"; }
};

TEST(NnModule, TiedParametersAreListedOnce) {
  Tied tied;
  EXPECT_EQ(names_of(tied.named_parameters()), (std::vector<std::string>{"encoder.a", "encoder.b"}));
  for (const auto& [name, p] : tied.named_parameters()) EXPECT_EQ(p.name(), name);
  EXPECT_EQ(tied.parameter_count(), 4);
  EXPECT_EQ(names_of(tied.named_tensors()),
            (std::vector<std::string>{"encoder.a", "encoder.b", "encoder.count", "decoder.a", "decoder.b", "decoder.count"}));
}

// GPT-2's tying: the head's weight set to the embedding's Parameter.
class TiedLM : public Module {
 public:
  TiedLM() {
    oa::ml::Generator g(3);
    emb_ = register_module("emb", std::make_shared<Embedding>(5, 3, g));
    head_ = register_module("head", std::make_shared<Linear>(3, 5, g, false));
    head_->set_parameter("weight", emb_->weight());
  }
  Matrix forward(const Matrix& idx) override { return head_->forward(emb_->forward(idx)); }
  std::string type_name() const override { return "TiedLM"; }
  std::shared_ptr<Embedding> emb_;
  std::shared_ptr<Linear> head_;
};

TEST(NnModule, SetParameterTiesAndForwardUsesIt) {
  TiedLM lm;
  EXPECT_EQ(names_of(lm.named_parameters()), (std::vector<std::string>{"emb.weight"}));
  EXPECT_EQ(names_of(lm.named_tensors()), (std::vector<std::string>{"emb.weight", "head.weight"}));
  EXPECT_TRUE(lm.head_->weight().value().impl() == lm.emb_->weight().value().impl());
  // y[t, v] = sum_d E[idx_t, d] E[v, d] (E: the one weight, embedding and head).
  const std::vector<std::int32_t> idx{1, 4};
  const Matrix y = lm.head_->forward(lm.emb_->forward(idx, Shape{2}));
  const std::vector<float> e = lm.emb_->weight().value().to_vector(), out = y.to_vector();
  for (int t = 0; t < 2; ++t)
    for (int v = 0; v < 5; ++v) {
      double want = 0;
      for (int d = 0; d < 3; ++d) want += double(e[idx[t] * 3 + d]) * e[v * 3 + d];
      EXPECT_NEAR(out[t * 5 + v], want, 1e-5) << t << " " << v;
    }
  oa::backward(oa::matrix::sum_all(y));
  // d sum(y) / dE[v, d] = sum_t E[idx_t, d] (head use) + [v in idx] * sum_u E[u, d] (embedding use).
  const std::vector<float> g = lm.emb_->weight().grad().to_vector();
  for (int v = 0; v < 5; ++v)
    for (int d = 0; d < 3; ++d) {
      double want = 0;
      for (int t = 0; t < 2; ++t) want += e[idx[t] * 3 + d];
      for (int t = 0; t < 2; ++t)
        if (idx[t] == v)
          for (int u = 0; u < 5; ++u) want += e[u * 3 + d];
      EXPECT_NEAR(g[v * 3 + d], want, 1e-5) << v << " " << d;
    }
}

TEST(NnModule, SetParameterErrorsChangeNothing) {
  using oa::ErrorKind;
  oa::ml::Generator g(1);
  Linear lin(2, 3, g);
  const oa::ml::Parameter w = lin.weight();
  EXPECT_TRUE(oa_test::throws([&] { lin.set_parameter("weight", oa::ml::Parameter("w", Matrix::zeros({2, 2}))); },
                              ErrorKind::InvalidArgument, {"Linear", "'weight'", "[3, 2]", "[2, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { lin.set_parameter("scale", w); }, ErrorKind::InvalidArgument,
                              {"Linear", "'scale'", "not a parameter"}));
  EXPECT_TRUE(oa_test::throws([&] { lin.set_parameter("bias", oa::ml::Parameter()); }, ErrorKind::InvalidArgument,
                              {"Linear", "'bias'", "undefined"}));
  Leaf leaf(2);  // keeps handles without rebinding them: refused
  EXPECT_TRUE(oa_test::throws([&] { leaf.set_parameter("a", oa::ml::Parameter("a2", Matrix::zeros({2}))); },
                              ErrorKind::InvalidArgument, {"Leaf", "'a'", "cannot be replaced"}));
  EXPECT_TRUE(lin.weight().value().impl() == w.value().impl());
  EXPECT_TRUE(lin.named_parameters()[0].second.value().impl() == w.value().impl());
  EXPECT_EQ(leaf.named_parameters()[0].second.name(), "a");
}

TEST(NnModule, GradientsReachEveryParameterAndZeroGradClearsThem) {
  Tree tree;
  const Matrix x = Matrix::from_vector({2, 3}, oa_test::iota(6, -1.0f));
  oa::backward(oa::matrix::sum_all(tree(x)));
  for (const auto& [name, p] : tree.named_parameters()) {
    if (name == "scale") EXPECT_FALSE(p.grad().defined()) << name;  // unused in forward
    else EXPECT_TRUE(p.grad().defined()) << name;
  }
  tree.zero_grad();
  for (const auto& [name, p] : tree.named_parameters()) {
    const Matrix g = p.grad();
    if (!g.defined()) continue;
    for (float v : g.to_vector()) EXPECT_EQ(v, 0.0f) << name;
  }
}

TEST(NnModule, TrainAndEvalPropagate) {
  Tree tree;
  EXPECT_TRUE(tree.training());
  tree.eval();
  EXPECT_FALSE(tree.training());
  for (const auto& [name, m] : tree.named_modules()) EXPECT_FALSE(m->training()) << name;
  tree.train();
  for (const auto& [name, m] : tree.named_modules()) EXPECT_TRUE(m->training()) << name;
  // A child registered into an eval-mode parent takes the parent's mode.
  Sequential seq;
  seq.eval();
  seq.push_back(std::make_shared<Leaf>(1));
  EXPECT_FALSE(seq[0]->training());
}

class Bad : public Module {
 public:
  Matrix forward(const Matrix& x) override { return x; }
  std::string type_name() const override { return "Bad"; }
  void add_parameter(const std::string& name) { register_parameter(name, Matrix::zeros({2})); }
  void add_buffer(const std::string& name, const Matrix& m) { register_buffer(name, m); }
  void add_child(const std::string& name, std::shared_ptr<Module> m) { register_module(name, std::move(m)); }
};

TEST(NnModule, RegistrationErrors) {
  using oa::ErrorKind;
  Bad m;
  m.add_parameter("w");
  EXPECT_TRUE(oa_test::throws([&] { m.add_parameter("w"); }, ErrorKind::InvalidArgument, {"Bad", "'w'", "already"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_buffer("w", Matrix::zeros({1})); }, ErrorKind::InvalidArgument, {"Bad", "'w'"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_child("w", std::make_shared<ReLU>()); }, ErrorKind::InvalidArgument, {"Bad", "'w'"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_parameter("a.b"); }, ErrorKind::InvalidArgument, {"Bad", "'a.b'", "'.'"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_parameter(""); }, ErrorKind::InvalidArgument, {"Bad", "empty"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_child("c", nullptr); }, ErrorKind::InvalidArgument, {"Bad", "'c'", "null"}));
  EXPECT_TRUE(oa_test::throws([&] { m.add_buffer("b", Matrix()); }, ErrorKind::InvalidArgument, {"Bad", "undefined"}));
  EXPECT_EQ(m.parameter_count(), 2);
  EXPECT_EQ(names_of(m.named_parameters()), std::vector<std::string>{"w"});
  EXPECT_TRUE(oa_test::throws([&] { Sequential()[0]; }, ErrorKind::InvalidArgument, {"Sequential", "layer 0"}));
  EXPECT_TRUE(oa_test::throws([&] { Sequential({nullptr}); }, ErrorKind::InvalidArgument, {"Sequential", "'0'", "null"}));
}

TEST(NnModule, SequentialAndFlatten) {
  Sequential empty;
  const auto xv = oa_test::iota(24, -6.0f);
  const Matrix x = Matrix::from_vector({2, 3, 2, 2}, xv);
  EXPECT_TRUE(empty(x).same_as(x));  // the identity
  EXPECT_EQ(Flatten()(x).shape(), Shape({2, 12}));
  EXPECT_EQ(Flatten(0)(x).shape(), Shape({24}));
  EXPECT_EQ(Flatten(1, 2)(x).shape(), Shape({2, 6, 2}));
  EXPECT_EQ(Flatten(-2)(x).shape(), Shape({2, 3, 4}));
  EXPECT_TRUE(oa_test::throws([&] { Flatten(3, 1)(x); }, oa::ErrorKind::InvalidArgument, {"flatten", "[2, 3, 2, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { Flatten(1, 4)(x); }, oa::ErrorKind::InvalidArgument, {"flatten", "end_dim 4"}));
  Sequential chain({std::make_shared<ReLU>(), std::make_shared<Flatten>(), std::make_shared<Tanh>()});
  std::vector<double> want;
  for (float v : xv) want.push_back(std::tanh(std::max(0.0, static_cast<double>(v))));
  const Matrix y = chain(x);
  EXPECT_EQ(y.shape(), Shape({2, 12}));
  EXPECT_TRUE(oa_test::near(y.to_vector(), want, 1e-6, 1e-6));
  EXPECT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[2]->type_name(), "Tanh");
  EXPECT_EQ(chain.parameter_count(), 0);
}

TEST(NnActivation, ForwardAndGradients) {
  // Values kept away from ReLU's kink at 0.
  auto input = oa::test::random_input({3, 7}, 1, 0.05, 2.0);
  for (std::size_t i = 0; i < input.values.size(); i += 2) input.values[i] = -input.values[i];
  const std::vector<std::pair<std::shared_ptr<Module>, double (*)(double)>> cases{
      {std::make_shared<ReLU>(), [](double v) { return std::max(v, 0.0); }},
      {std::make_shared<GELU>(), ref::gelu},
      {std::make_shared<SiLU>(), ref::silu},
      {std::make_shared<Tanh>(), [](double v) { return std::tanh(v); }},
      {std::make_shared<Sigmoid>(), ref::sigmoid}};
  for (const auto& [module, f] : cases) {
    SCOPED_TRACE(module->type_name());
    oa::test::module_gradcheck(*module, input, [f = f](const std::vector<std::vector<double>>& v) { return ref::map(v[0], f); });
  }
}

}  // namespace
