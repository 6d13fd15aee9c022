// LSTM and GRU modules: parameter names and shapes, forward against the f64
// reference (states in and out, batch_first), gradients of the input and of
// every parameter through time, the trace of one forward, and errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oa/ml/nn/rnn.hpp"
#include "oa/ml/rnn.hpp"
#include "oa/oa.hpp"
#include "reference/elementwise.hpp"
#include "reference/layout.hpp"
#include "reference/rnn.hpp"
#include "support/expect.hpp"
#include "support/module_check.hpp"

namespace {

using oa::ErrorKind;
using namespace oa::test::module_names;
namespace reference = oa::reference;

// The reference layers from args[first..] in named_parameters() order.
std::vector<reference::RecurrentLayer> layers_of(const Args& a, std::size_t first, std::int64_t num_layers, bool bias) {
  std::vector<reference::RecurrentLayer> layers;
  std::size_t i = first;
  for (std::int64_t k = 0; k < num_layers; ++k) {
    reference::RecurrentLayer l;
    l.weight_ih = a[i++];
    l.weight_hh = a[i++];
    if (bias) {
      l.bias_ih = a[i++];
      l.bias_hh = a[i++];
    }
    layers.push_back(l);
  }
  return layers;
}

Args host_parameters(const oa::ml::nn::Module& m) {
  Args out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(ref::to_f64(p.value().to_vector()));
  return out;
}

// [d1, d0, d2] from [d0, d1, d2] (batch-first from time-major, or back).
std::vector<double> swap01(const std::vector<double>& v, std::int64_t d0, std::int64_t d1, std::int64_t d2) {
  return reference::permute(v, {d0, d1, d2}, {1, 0, 2});
}

TEST(NnRnn, ParameterNamesShapesAndInitialisation) {
  oa::ml::Generator gen(5);
  LSTM lstm(3, 4, gen, {.num_layers = 2});
  std::vector<std::string> names;
  for (const auto& [name, p] : lstm.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1", "weight_hh_l1",
                                             "bias_ih_l1", "bias_hh_l1"}));
  EXPECT_EQ(lstm.weight_ih(0).shape(), (Shape{16, 3}));
  EXPECT_EQ(lstm.weight_ih(1).shape(), (Shape{16, 4}));
  EXPECT_EQ(lstm.weight_hh(1).shape(), (Shape{16, 4}));
  EXPECT_EQ(lstm.bias_hh(0).shape(), (Shape{16}));
  for (const auto& [name, p] : lstm.named_parameters())
    for (float v : p.value().to_vector()) EXPECT_LE(std::abs(v), 0.5f) << name;  // U(-1/sqrt(4), 1/sqrt(4))
  GRU gru(3, 5, gen, {.bias = false});
  names.clear();
  for (const auto& [name, p] : gru.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0"}));
  EXPECT_EQ(gru.weight_hh(0).shape(), (Shape{15, 5}));
  EXPECT_FALSE(gru.bias_ih(0).value().defined());
  EXPECT_EQ(gru.type_name(), "GRU");
}

TEST(NnRnn, LstmStatesMatchReference) {
  oa::ml::Generator gen(7);
  const std::int64_t T = 3, B = 2, I = 3, H = 4, L = 2;
  LSTM lstm(I, H, gen, {.num_layers = L});
  const std::vector<float> x = oa::test::test_values(T * B * I, 41), h0 = oa::test::test_values(L * B * H, 42),
                           c0 = oa::test::test_values(L * B * H, 43);
  const LSTMOutput out = lstm.forward_with_state(Matrix::from_vector({T, B, I}, x),
                                                 {Matrix::from_vector({L, B, H}, h0), Matrix::from_vector({L, B, H}, c0)});
  const auto want = reference::recurrent(true, layers_of(host_parameters(lstm), 0, L, true), ref::to_f64(x), T, B, I, H, ref::to_f64(h0), ref::to_f64(c0));
  EXPECT_EQ(out.output.shape(), (Shape{T, B, H}));
  EXPECT_EQ(out.state.h.shape(), (Shape{L, B, H}));
  EXPECT_TRUE(oa_test::near(out.output.to_vector(), want[0], 1e-5, 1e-4));
  EXPECT_TRUE(oa_test::near(out.state.h.to_vector(), want[1], 1e-5, 1e-4));
  EXPECT_TRUE(oa_test::near(out.state.c.to_vector(), want[2], 1e-5, 1e-4));
}

TEST(NnRnn, GruBatchFirstMatchesReference) {
  oa::ml::Generator gen(8);
  const std::int64_t T = 4, B = 3, I = 2, H = 5, L = 2;
  GRU gru(I, H, gen, {.num_layers = L, .batch_first = true});
  const std::vector<float> x = oa::test::test_values(B * T * I, 51), h0 = oa::test::test_values(L * B * H, 52);
  const GRUOutput out = gru.forward_with_state(Matrix::from_vector({B, T, I}, x), Matrix::from_vector({L, B, H}, h0));
  const auto want = reference::recurrent(false, layers_of(host_parameters(gru), 0, L, true), swap01(ref::to_f64(x), B, T, I), T, B, I, H, ref::to_f64(h0));
  EXPECT_EQ(out.output.shape(), (Shape{B, T, H}));
  EXPECT_TRUE(oa_test::near(out.output.to_vector(), swap01(want[0], T, B, H), 1e-5, 1e-4));
  EXPECT_TRUE(oa_test::near(out.h.to_vector(), want[1], 1e-5, 1e-4));
}

// Backpropagation through time: the input's and every parameter's gradient
// against finite differences of the f64 reference.
TEST(NnRnn, LstmGradientsThroughTime) {
  oa::ml::Generator gen(9);
  const std::int64_t T = 3, B = 2, I = 3, H = 3, L = 2;
  LSTM lstm(I, H, gen, {.num_layers = L});
  oa::test::module_gradcheck(lstm, oa::test::random_input({T, B, I}, 61), [&](const Args& a) {
    return reference::recurrent(true, layers_of(a, 1, L, true), a[0], T, B, I, H)[0];
  });
}

TEST(NnRnn, GruGradientsThroughTime) {
  oa::ml::Generator gen(10);
  const std::int64_t T = 3, B = 2, I = 2, H = 3, L = 2;
  GRU gru(I, H, gen, {.num_layers = L, .bias = false, .batch_first = true});
  oa::test::module_gradcheck(gru, oa::test::random_input({B, T, I}, 62), [&](const Args& a) {
    return swap01(reference::recurrent(false, layers_of(a, 1, L, false), swap01(a[0], B, T, I), T, B, I, H)[0], T, B, H);
  });
}

// One GEMM for the input projection of all steps, then one layer op: per step one recurrent GEMM and one cell, with
// no per-step copies. Its backward records one op too, with one GEMM over all steps for weight_hh's gradient.
TEST(NnRnn, ForwardAndBackwardTrace) {
  oa::ml::Generator gen(11);
  const std::int64_t T = 5;
  LSTM lstm(3, 4, gen);
  const Matrix x = Matrix::zeros({T, 2, 3});
  oa::TraceCapture trace(x.engine());
  const Matrix y = lstm.forward(x);
  const auto ops = trace.ops();
  EXPECT_EQ(oa_test::count_label(ops, "oa::ml::linear"), 1u);
  EXPECT_EQ(oa_test::count_label(ops, "oa::ml::lstm_layer"), 1u);
  EXPECT_EQ(oa_test::count_label(ops, "oa::matrix::chunk"), 0u);
  for (const auto& op : ops) {
    if (op.name == "oa::ml::lstm_layer") {
      EXPECT_EQ(op.dispatches, static_cast<std::uint32_t>(2 * T));  // a GEMM this small splits no K
    }
  }
  oa::TraceCapture backward_trace(x.engine());
  oa::backward(y, Matrix::ones(y.shape()));
  const auto bops = backward_trace.ops();
  EXPECT_EQ(oa_test::count_label(bops, "oa::ml::lstm_layer backward"), 1u);
  EXPECT_EQ(oa_test::count_label(bops, "oa::autograd::accumulate"), 0u);
}

// With one step the LSTM layer keeps no cells between steps for its backward, and the backward of c0's gradient
// allocates the gates' gradient and c0's: no copy of the output's gradient, no cell or h gradient between steps
// (and, with h0 constant, no recurrent GEMM).
TEST(NnRnn, OneStepLstmLayerAllocatesNoBuffersBetweenSteps) {
  auto e = oa::Engine::default_engine();
  const std::int64_t B = 16, H = 256;
  const std::uint64_t state_bytes = B * H * 4;  // a size class of its own
  const Matrix gx = Matrix::uniform({1, B, 4 * H}, -1, 1, 1), w = Matrix::uniform({4 * H, H}, -0.1f, 0.1f, 2),
               h0 = Matrix::uniform({B, H}, -1, 1, 3), dout = Matrix::ones({1, B, H});
  const Matrix c0 = oa::set_requires_grad(Matrix::uniform({B, H}, -1, 1, 4));
  e.synchronize();
  const auto live = e.memory_stats().live_storages;
  const Matrix out = oa::ml::lstm_layer(gx, w, Matrix(), h0, c0).first;
  e.synchronize();
  EXPECT_EQ(e.memory_stats().live_storages, live + 3) << "out, c_n and the saved gates";
  e.reset_peak_memory();
  const auto in_use = e.memory_stats().in_use_bytes;
  oa::backward(out, dout);
  e.synchronize();
  // c_n's zero gradient, the gates' gradient (4 states) and c0's.
  EXPECT_EQ(e.memory_stats().peak_in_use_bytes - in_use, 6 * state_bytes);
  EXPECT_EQ(oa::grad(c0).shape(), (Shape{B, H}));
}

TEST(NnRnn, DropoutBetweenLayersOnlyInTraining) {
  oa::ml::Generator gen(12);
  LSTM lstm(2, 3, gen, {.num_layers = 2, .dropout = 0.5});
  const Matrix x = Matrix::from_vector({2, 1, 2}, std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f});
  auto count_dropout = [&] {
    oa::TraceCapture trace(x.engine());
    lstm.forward(x);
    return oa_test::count_label(trace.ops(), "oa::ml::dropout");
  };
  EXPECT_EQ(count_dropout(), 1u);
  lstm.eval();
  EXPECT_EQ(count_dropout(), 0u);
}

TEST(NnRnn, Errors) {
  oa::ml::Generator gen(13);
  EXPECT_TRUE(oa_test::throws([&] { LSTM(0, 4, gen); }, ErrorKind::InvalidArgument, {"oa::ml::nn::LSTM", "input_size 0"}));
  EXPECT_TRUE(oa_test::throws([&] { GRU(2, 4, gen, {.dropout = 2}); }, ErrorKind::InvalidArgument, {"oa::ml::nn::GRU", "dropout 2"}));
  LSTM lstm(3, 4, gen, {.num_layers = 2});
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward(Matrix::zeros({5, 2, 4})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::LSTM", "input_size 3", "[5, 2, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward(Matrix::zeros({5, 3})); }, ErrorKind::InvalidArgument, {"oa::ml::nn::LSTM", "[5, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward_with_state(Matrix::zeros({5, 2, 3}), {Matrix::zeros({1, 2, 4}), Matrix()}); },
                              ErrorKind::InvalidArgument, {"oa::ml::nn::LSTM", "h0", "[1, 2, 4]"}));
  // Operands the module refuses itself, naming it (not the ops it composes).
  const Matrix x16 = oa::matrix::cast(Matrix::zeros({5, 2, 3}), oa::DType::F16), h16 = oa::matrix::cast(Matrix::zeros({2, 2, 4}), oa::DType::F16);
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward(x16); }, ErrorKind::InvalidArgument, {"oa::ml::nn::LSTM", "input", "f16 [5, 2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward_with_state(Matrix::zeros({5, 2, 3}), {h16, Matrix()}); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::LSTM", "h0", "f16 [2, 2, 4]"}));
  const oa::Engine other;
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward(Matrix::zeros({5, 2, 3}, other)); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::LSTM", "input [5, 2, 3] lives on another engine"}));
  {
    // Under autocast 16-bit inputs and states pass, as in torch.
    oa::AutocastGuard guard(oa::DType::F16);
    const auto out = lstm.forward_with_state(x16, {h16, h16});
    EXPECT_EQ(out.output.shape(), (Shape{5, 2, 4}));
  }
  const Matrix g = Matrix::zeros({2, 8}), c = Matrix::zeros({2, 2});
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_cell(Matrix::zeros({2, 6}), Matrix(), c); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_cell", "gates_x", "[2, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_cell(g, Matrix::zeros({2, 4}), c); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_cell", "gates_h [2, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_cell(g, g, Matrix::zeros({3, 2})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_cell", "c_prev", "[3, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::gru_cell(Matrix::zeros({2, 6}), Matrix::zeros({2, 6}), Matrix::zeros({2, 3})); },
                              ErrorKind::InvalidArgument, {"oa::ml::gru_cell", "h_prev", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::gru_cell(Matrix::zeros({2, 6}), Matrix(), Matrix::zeros({2, 2})); },
                              ErrorKind::InvalidArgument, {"oa::ml::gru_cell", "gates_h"}));
}

// A GEMM past maxStorageBufferRange (the gates [B, G * H] of a batch that
// large) raises ResourceExhausted, of its kind, naming first the layer op
// (its recurrent GEMM) or the module (its input projection, oa::ml::linear).
TEST(NnRnn, GemmPastTheStorageRangeNamesTheLayer) {
  const std::uint64_t range = oa::Engine::default_engine().device().max_storage_buffer_range;
  if (range > (std::uint64_t{1} << 28)) GTEST_SKIP() << "maxStorageBufferRange " << range << " makes a batch past it too large to test";
  const std::int64_t H = 4, B = static_cast<std::int64_t>(range / (4 * 3 * H)) + 1;  // f32 gates [B, 3H] (and [B, 4H]) past it
  const Matrix h = Matrix::empty({B, H});
  for (const std::int64_t G : {4, 3}) {
    const Matrix gx = Matrix::empty({1, B, G * H}), w = Matrix::zeros({G * H, H});
    const char* op = G == 4 ? "oa::ml::lstm_layer: GEMM" : "oa::ml::gru_layer: GEMM";
    const auto layer = [&] { G == 4 ? (void)oa::ml::lstm_layer(gx, w, Matrix(), h, h) : (void)oa::ml::gru_layer(gx, w, Matrix(), h); };
    EXPECT_TRUE(oa_test::throws(layer, ErrorKind::ResourceExhausted, {op, "maxStorageBufferRange"}));
  }
  oa::ml::Generator gen(17);
  LSTM lstm(1, H, gen);
  GRU gru(1, H, gen);
  const Matrix x = Matrix::empty({1, B, 1});
  EXPECT_TRUE(oa_test::throws([&] { lstm.forward(x); }, ErrorKind::ResourceExhausted,
                              {"oa::ml::nn::LSTM: oa::ml::linear: GEMM", "maxStorageBufferRange"}));
  EXPECT_TRUE(oa_test::throws([&] { gru.forward(x); }, ErrorKind::ResourceExhausted,
                              {"oa::ml::nn::GRU: oa::ml::linear: GEMM", "maxStorageBufferRange"}));
}

TEST(NnRnn, LayerErrors) {
  const Matrix gx = Matrix::zeros({3, 2, 8}), w = Matrix::zeros({8, 2}), b = Matrix::zeros({8}), s = Matrix::zeros({2, 2});
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(Matrix::zeros({2, 8}), w, b, s, s); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "gates_x", "[2, 8]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(Matrix::zeros({3, 2, 6}), w, b, s, s); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "gates_x", "[3, 2, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(gx, Matrix::zeros({8, 3}), b, s, s); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "weight_hh", "[8, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(gx, w, Matrix::zeros({6}), s, s); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "bias_hh", "[6]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(gx, w, b, s, Matrix::zeros({3, 2})); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "c0", "[3, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::lstm_layer(gx, w, b, oa::matrix::cast(s, oa::DType::F16), s); }, ErrorKind::InvalidArgument,
                              {"oa::ml::lstm_layer", "h0", "f16"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::gru_layer(Matrix::zeros({3, 2, 6}), Matrix::zeros({6, 2}), Matrix(), Matrix::zeros({2, 3})); },
                              ErrorKind::InvalidArgument, {"oa::ml::gru_layer", "h0", "[2, 3]"}));
}

}  // namespace
