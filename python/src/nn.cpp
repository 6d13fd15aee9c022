// The C++ layers of oa/ml/nn behind oa.nn's built-in modules (the submodule
// oa._oa.nn), and oa.nn.Parameter's link to oa::ml::Parameter.
//
// Each layer is built by its C++ constructor with the process-wide seed
// stream (default_generator(), restarted by oa.manual_seed), so a model built
// in Python after oa.manual_seed(s) draws the same initialisation seeds, in
// the same order, as the C++ model built with Generator(s).
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "oa/ml/nn/rnn.hpp"

namespace oa::python {
namespace {

namespace nn = oa::ml::nn;
using NativeModule = std::shared_ptr<nn::Module>;
using OptEngine = std::optional<Engine>;

// A module's own entries (no '.' in the name: the children's are prefixed).
template <typename Entries>
Entries own(Entries all) {
  Entries out;
  for (auto& entry : all)
    if (entry.first.find('.') == std::string::npos) out.push_back(std::move(entry));
  return out;
}

// A C++ layer's Python class, named first in the errors of its forward:
// "oa.nn.<type_name>", in torch's spelling (MultiheadAttention).
std::string python_class(const nn::Module& module) {
  const std::string type = module.type_name();
  return "oa.nn." + (type == "MultiHeadAttention" ? std::string("MultiheadAttention") : type);
}

// oa._oa.nn.<name>: the transposed convolution layer `Layer` over N spatial
// axes, under torch's constructor arguments (errors name `op`).
template <class Layer, class Options, std::size_t N>
void def_conv_transpose(py::module_& m, const char* name, const char* op) {
  using py::arg;
  m.def(
      name,
      [op](std::int64_t in, std::int64_t out, py::handle k, py::handle stride, py::handle padding, py::handle output_padding,
           std::int64_t groups, bool bias, py::handle dilation, const OptEngine& engine) -> NativeModule {
        const auto o = conv_options<Options>(op, stride, padding, dilation, groups, output_padding);
        const auto kernel = int_tuple<N>(k, op, "kernel_size");
        if constexpr (N == 1) {
          return std::make_shared<Layer>(in, out, kernel[0], default_generator(), o, bias, engine);
        } else {
          return std::make_shared<Layer>(in, out, kernel, default_generator(), o, bias, engine);
        }
      },
      arg("in_channels"), arg("out_channels"), arg("kernel_size"), arg("stride"), arg("padding"), arg("output_padding"), arg("groups"),
      arg("bias"), arg("dilation"), arg("engine") = py::none());
}

}  // namespace

void bind_nn(py::module_& m, TensorClass& tensor) {
  using py::arg;
  const auto none = py::none();
  tensor.def(py::init([](const Matrix& other) { return other; }), arg("other"),
             "A handle sharing `other`'s value and autograd identity (oa.nn.Parameter builds on it).");

  m.def(
      "new_parameter", [](const Matrix& data, const std::string& name) { return ml::Parameter(name, writable(data)).value(); },
      arg("data"), arg("name"),
      "The value of a new oa::ml::Parameter (a float32 leaf requiring grad) taking over data's storage, or a copy of "
      "data when data was made by x[key], transpose, permute, mT, expand, split or chunk.");
  m.def(
      "set_parameter_name", [](const Matrix& value, const std::string& name) { ml::Parameter::of(value).set_name(name); },
      arg("value"), arg("name"));
  m.def("parameter_name", [](const Matrix& value) { return ml::Parameter::of(value).name(); }, arg("value"));
  m.def(
      "keeping_seed_stream",
      [](const py::function& fn) {
        const ml::Generator kept = default_generator();
        py::object result;
        try {
          result = fn();
        } catch (...) {
          default_generator() = kept;
          throw;
        }
        default_generator() = kept;
        return result;
      },
      arg("fn"), "fn() with the seed stream of oa.manual_seed restored afterwards (a deep copy builds layers drawing none).");
  m.def(
      "write",
      [](const Matrix& target, const py::handle& value, const std::string& name) {
        constexpr const char* op = "oa.nn.Module.load_state_dict";
        const Matrix source = state_tensor(value, target.dtype(), target.engine(), op, fmt::format("'{}'", name));
        if (!(target.shape() == source.shape()) || target.dtype() != source.dtype())
          fail(ErrorKind::InvalidArgument, "{}: '{}' is {} {} in the module, {} {} in the state_dict", op, name,
               to_string(target.dtype()), target.shape(), to_string(source.dtype()), source.shape());
        if (target.dtype() == DType::I32) {
          target.write_i32(source.to_i32());
        } else {
          target.write(source.to_vector());
        }
      },
      arg("target"), arg("source"), arg("name"),
      "Overwrites target in place (its version is bumped) with source's values (an oa.Tensor, or a NumPy array or CPU "
      "torch.Tensor cast to target's dtype).");

  py::class_<nn::Module, NativeModule>(m, "NativeModule", "A C++ layer (oa::ml::nn::Module)")
      .def(
          "forward",
          [](nn::Module& self, const Matrix& x) { return as_called(python_class(self).c_str(), [&] { return self.forward(x); }); },
          arg("input"), "The C++ forward; its errors name the Python class first.")
      .def("train", &nn::Module::train, arg("mode") = true)
      .def_property_readonly("type_name", &nn::Module::type_name)
      .def("own_parameters",
           [](const nn::Module& self) {
             std::vector<std::pair<std::string, Matrix>> out;
             for (const auto& [name, p] : own(self.named_parameters())) out.emplace_back(name, p.value());
             return out;
           })
      .def(
          "set_parameter",
          [](nn::Module& self, const std::string& name, const Matrix& value) { self.set_parameter(name, ml::Parameter::of(value)); },
          arg("name"), arg("value"), "Makes the Parameter whose value is `value` the own parameter `name` (forward uses it).")
      .def("own_buffers", [](const nn::Module& self) { return own(self.named_buffers()); })
      .def("named_children", &nn::Module::named_children);

  m.def(
      "linear",
      [](std::int64_t in, std::int64_t out, bool bias, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::Linear>(in, out, default_generator(), bias, engine);
      },
      arg("in_features"), arg("out_features"), arg("bias"), arg("engine") = none);
  m.def(
      "conv1d",
      [](std::int64_t in, std::int64_t out, py::handle k, py::handle stride, py::handle padding,
                  py::handle dilation, std::int64_t groups, bool bias, const OptEngine& engine) -> NativeModule {
        const char* op = "oa.nn.Conv1d";
        const auto o = conv_options<ml::Conv1dOptions>(op, stride, padding, dilation, groups);
        return std::make_shared<nn::Conv1d>(in, out, int_tuple<1>(k, op, "kernel_size")[0], default_generator(), o, bias, engine);
      },
      arg("in_channels"), arg("out_channels"), arg("kernel_size"), arg("stride"), arg("padding"), arg("dilation"),
      arg("groups"), arg("bias"), arg("engine") = none);
  m.def(
      "conv2d",
      [](std::int64_t in, std::int64_t out, py::handle k, py::handle stride, py::handle padding,
                  py::handle dilation, std::int64_t groups, bool bias, const OptEngine& engine) -> NativeModule {
        const char* op = "oa.nn.Conv2d";
        const auto o = conv_options<ml::Conv2dOptions>(op, stride, padding, dilation, groups);
        return std::make_shared<nn::Conv2d>(in, out, int_tuple<2>(k, op, "kernel_size"), default_generator(), o, bias, engine);
      },
      arg("in_channels"), arg("out_channels"), arg("kernel_size"), arg("stride"), arg("padding"), arg("dilation"),
      arg("groups"), arg("bias"), arg("engine") = none);
  def_conv_transpose<nn::ConvTranspose1d, ml::ConvTranspose1dOptions, 1>(m, "conv_transpose1d", "oa.nn.ConvTranspose1d");
  def_conv_transpose<nn::ConvTranspose2d, ml::ConvTranspose2dOptions, 2>(m, "conv_transpose2d", "oa.nn.ConvTranspose2d");
  m.def(
      "layer_norm",
      [](std::int64_t d, double eps, bool affine, bool bias, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::LayerNorm>(d, eps, affine, bias, engine);
      },
      arg("normalized_dim"), arg("eps"), arg("elementwise_affine"), arg("bias"), arg("engine") = none);
  m.def(
      "rms_norm",
      [](std::int64_t d, std::optional<double> eps, bool affine, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::RMSNorm>(d, eps, affine, engine);
      },
      arg("normalized_dim"), arg("eps"), arg("elementwise_affine"), arg("engine") = none);
  m.def(
      "group_norm",
      [](std::int64_t groups, std::int64_t channels, double eps, bool affine, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::GroupNorm>(groups, channels, eps, affine, engine);
      },
      arg("num_groups"), arg("num_channels"), arg("eps"), arg("affine"), arg("engine") = none);
  m.def(
      "instance_norm2d",
      [](std::int64_t c, double eps, bool affine, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::InstanceNorm2d>(c, eps, affine, engine);
      },
      arg("num_features"), arg("eps"), arg("affine"), arg("engine") = none);
  m.def(
      "batch_norm1d",
      [](std::int64_t c, double eps, std::optional<double> momentum, bool affine, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::BatchNorm1d>(c, eps, momentum, affine, engine);
      },
      arg("num_features"), arg("eps"), arg("momentum"), arg("affine"), arg("engine") = none);
  m.def(
      "batch_norm2d",
      [](std::int64_t c, double eps, std::optional<double> momentum, bool affine, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::BatchNorm2d>(c, eps, momentum, affine, engine);
      },
      arg("num_features"), arg("eps"), arg("momentum"), arg("affine"), arg("engine") = none);
  m.def(
      "embedding",
      [](std::int64_t n, std::int64_t d, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::Embedding>(n, d, default_generator(), engine);
      },
      arg("num_embeddings"), arg("embedding_dim"), arg("engine") = none);
  m.def(
      "dropout", [](double p) -> NativeModule { return std::make_shared<nn::Dropout>(p, default_generator()); },
      arg("p"));
  m.def(
      "multihead_attention",
      [](std::int64_t d, std::int64_t heads, bool causal, double dropout, bool bias, std::optional<std::int64_t> kdim,
         std::optional<std::int64_t> vdim, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::MultiHeadAttention>(d, heads, default_generator(), causal, dropout, bias, engine, kdim, vdim);
      },
      arg("embed_dim"), arg("num_heads"), arg("causal"), arg("dropout"), arg("bias"), arg("kdim") = none, arg("vdim") = none,
      arg("engine") = none);
  // LSTM and GRU: built as the base class, seen as their own types (for the state form).
  using OptMatrix = std::optional<Matrix>;
  py::class_<nn::MultiHeadAttention, nn::Module, std::shared_ptr<nn::MultiHeadAttention>>(m, "NativeMultiHeadAttention",
                                                                                          "oa::ml::nn::MultiHeadAttention")
      .def(
          "forward_masked",
          [](nn::MultiHeadAttention& self, const Matrix& query, const Matrix& key, const Matrix& value, const OptMatrix& key_padding_mask,
             const OptMatrix& attn_mask) {
            return as_called(python_class(self).c_str(), [&] {
              return self.forward(query, key, value, key_padding_mask.value_or(Matrix()), attn_mask.value_or(Matrix()));
            });
          },
          arg("query"), arg("key"), arg("value"), arg("key_padding_mask"), arg("attn_mask"))
      .def(
          "forward_with_weights",
          [](nn::MultiHeadAttention& self, const Matrix& query, const Matrix& key, const Matrix& value, const OptMatrix& key_padding_mask,
             const OptMatrix& attn_mask) {
            const nn::MultiHeadAttentionOutput r = as_called(python_class(self).c_str(), [&] {
              return self.forward_with_weights(query, key, value, key_padding_mask.value_or(Matrix()), attn_mask.value_or(Matrix()));
            });
            return py::make_tuple(r.output, r.weights);
          },
          arg("query"), arg("key"), arg("value"), arg("key_padding_mask"), arg("attn_mask"));
  py::class_<nn::LSTM, nn::Module, std::shared_ptr<nn::LSTM>>(m, "NativeLSTM", "oa::ml::nn::LSTM")
      .def(
          "forward_with_state",
          [](nn::LSTM& self, const Matrix& x, const OptMatrix& h0, const OptMatrix& c0) {
            const nn::LSTMOutput r = as_called(python_class(self).c_str(), [&] {
              return self.forward_with_state(x, {h0.value_or(Matrix()), c0.value_or(Matrix())});
            });
            return py::make_tuple(r.output, py::make_tuple(r.state.h, r.state.c));
          },
          arg("input"), arg("h0"), arg("c0"));
  py::class_<nn::GRU, nn::Module, std::shared_ptr<nn::GRU>>(m, "NativeGRU", "oa::ml::nn::GRU")
      .def(
          "forward_with_state",
          [](nn::GRU& self, const Matrix& x, const OptMatrix& h0) {
            const nn::GRUOutput r = as_called(python_class(self).c_str(),
                                              [&] { return self.forward_with_state(x, h0.value_or(Matrix())); });
            return py::make_tuple(r.output, r.h);
          },
          arg("input"), arg("h0"));
  for (const char* kind : {"lstm", "gru"}) {
    const bool lstm = kind[0] == 'l';
    m.def(
        kind,
        [lstm](std::int64_t input, std::int64_t hidden, std::int64_t layers, bool bias, bool batch_first, double dropout,
               const OptEngine& engine) -> NativeModule {
          const nn::RNNOptions o{layers, bias, batch_first, dropout};
          if (lstm) return std::make_shared<nn::LSTM>(input, hidden, default_generator(), o, engine);
          return std::make_shared<nn::GRU>(input, hidden, default_generator(), o, engine);
        },
        arg("input_size"), arg("hidden_size"), arg("num_layers"), arg("bias"), arg("batch_first"), arg("dropout"),
        arg("engine") = none);
  }
  m.def(
      "transformer_block",
      [](std::int64_t d, std::int64_t heads, bool causal, double dropout, const OptEngine& engine) -> NativeModule {
        return std::make_shared<nn::TransformerBlock>(d, heads, default_generator(), causal, dropout, engine);
      },
      arg("embed_dim"), arg("num_heads"), arg("causal"), arg("dropout"), arg("engine") = none);
  m.def(
      "max_pool2d",
      [](py::handle kernel_size, py::handle stride, py::handle padding) -> NativeModule {
        return std::make_shared<nn::MaxPool2d>(pool_options(kernel_size, stride, padding, "oa.nn.MaxPool2d"));
      },
      arg("kernel_size"), arg("stride"), arg("padding"));
  m.def(
      "avg_pool2d",
      [](py::handle kernel_size, py::handle stride, py::handle padding) -> NativeModule {
        return std::make_shared<nn::AvgPool2d>(pool_options(kernel_size, stride, padding, "oa.nn.AvgPool2d"));
      },
      arg("kernel_size"), arg("stride"), arg("padding"));
  m.def(
      "flatten", [](int start_dim, int end_dim) -> NativeModule { return std::make_shared<nn::Flatten>(start_dim, end_dim); },
      arg("start_dim"), arg("end_dim"));
  m.def("relu", []() -> NativeModule { return std::make_shared<nn::ReLU>(); });
  m.def("gelu", []() -> NativeModule { return std::make_shared<nn::GELU>(); });
  m.def("silu", []() -> NativeModule { return std::make_shared<nn::SiLU>(); });
  m.def("tanh", []() -> NativeModule { return std::make_shared<nn::Tanh>(); });
  m.def("sigmoid", []() -> NativeModule { return std::make_shared<nn::Sigmoid>(); });
}

}  // namespace oa::python
