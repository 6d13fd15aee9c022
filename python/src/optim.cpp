// oa.optim over oa/ml/optim.hpp (SGD, AdamW, the warmup-cosine schedule),
// oa.amp.GradScaler over oa/ml/amp.hpp and
// oa.save / oa.load over the safetensors code of oa/ml/checkpoint.hpp.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace optim = oa::ml::optim;

// The oa::ml::Parameters of the tensors handed to an optimizer (each must be
// an oa.nn.Parameter: Parameter::of throws for other tensors).
std::vector<ml::Parameter> parameters_of(const py::iterable& params) {
  std::vector<ml::Parameter> out;
  for (py::handle p : params) out.push_back(ml::Parameter::of(p.cast<const Matrix&>()));
  return out;
}

// The part both optimizers share, with PyTorch's names.
template <typename T>
void bind_common(py::class_<T, optim::Optimizer>& c) {
  c.def("step", [](T& self) { self.step(); }, "One update of every parameter that has a gradient.")
      .def("zero_grad", &T::zero_grad, "Clears every parameter's gradient.")
      .def_property("lr", &T::lr, &T::set_lr, "The learning rate of the next step.")
      .def_property_readonly("steps", &T::steps, "step() calls so far.")
      .def_property_readonly("params", [](const T& self) {
        std::vector<Matrix> out;
        for (const auto& p : self.parameters()) out.push_back(p.value());
        return out;
      });
}

}  // namespace

void bind_optim(py::module_& m) {
  using py::arg;
  auto o = m.def_submodule("optim", "Optimizers and learning-rate schedules (oa::ml::optim)");
  py::class_<optim::Optimizer>(o, "Optimizer", "The base of oa's optimizers (oa::ml::optim::Optimizer).");

  py::class_<optim::Sgd, optim::Optimizer> sgd(o, "SGD",
                                                "torch.optim.SGD over oa::ml::optim::Sgd: with d = grad + weight_decay * p, "
                                                "the momentum buffer b = d first, then momentum * b + (1 - dampening) * d; "
                                                "d becomes d + momentum * b (nesterov) or b; p -= lr * d. One fused kernel "
                                                "per parameter.");
  sgd.def(py::init([](const py::iterable& params, float lr, float momentum, float dampening, float weight_decay,
                      bool nesterov) {
            return std::make_unique<optim::Sgd>(parameters_of(params),
                                                optim::SgdOptions{lr, momentum, dampening, weight_decay, nesterov});
          }),
          arg("params"), arg("lr") = 1e-3f, arg("momentum") = 0.0f, arg("dampening") = 0.0f, arg("weight_decay") = 0.0f,
          arg("nesterov") = false);
  bind_common(sgd);

  py::class_<optim::AdamW, optim::Optimizer> adamw(
      o, "AdamW",
      "torch.optim.AdamW (amsgrad off) over oa::ml::optim::AdamW: decoupled weight decay (Loshchilov & Hutter 2019), "
      "Adam's bias correction, eps outside the square root. One fused kernel per parameter.");
  adamw.def(py::init([](const py::iterable& params, float lr, std::pair<float, float> betas, float eps, float weight_decay) {
              return std::make_unique<optim::AdamW>(parameters_of(params),
                                                    optim::AdamWOptions{lr, betas.first, betas.second, eps, weight_decay});
            }),
            arg("params"), arg("lr") = 1e-3f, arg("betas") = std::pair<float, float>{0.9f, 0.999f}, arg("eps") = 1e-8f,
            arg("weight_decay") = 1e-2f);
  bind_common(adamw);

  auto amp = m.def_submodule("amp", "Dynamic loss scaling for float16 training (oa::ml::amp)");
  py::class_<ml::amp::GradScaler>(amp, "GradScaler",
                                  "torch.amp.GradScaler over oa::ml::amp::GradScaler: scale(loss), unscale_(optimizer), "
                                  "step(optimizer) (skipped on the device after an inf or NaN gradient), update() (back off "
                                  "x backoff_factor, or grow x growth_factor after growth_interval clean steps). The scale "
                                  "and the decisions stay on the device.")
      .def(py::init([](float init_scale, float growth_factor, float backoff_factor, std::int64_t growth_interval, bool enabled) {
             return std::make_unique<ml::amp::GradScaler>(
                 ml::amp::GradScalerOptions{init_scale, growth_factor, backoff_factor, growth_interval, enabled});
           }),
           arg("init_scale") = 65536.0f, arg("growth_factor") = 2.0f, arg("backoff_factor") = 0.5f, arg("growth_interval") = 2000,
           arg("enabled") = true)
      .def("scale", &ml::amp::GradScaler::scale, arg("outputs"), "outputs * scale (outputs itself when disabled).")
      .def("unscale_", &ml::amp::GradScaler::unscale_, arg("optimizer"),
           "Divides the optimizer's gradients by the scale in place and records whether any is inf or NaN.")
      .def("step", &ml::amp::GradScaler::step, arg("optimizer"), "unscale_ unless done, then the optimizer's step, skipped after an inf or NaN.")
      .def("update", &ml::amp::GradScaler::update, "Backs off or grows the scale; clears the found-inf flag.")
      .def("get_scale", &ml::amp::GradScaler::get_scale, "The current scale (1.0 when disabled).")
      .def("is_enabled", &ml::amp::GradScaler::enabled)
      .def(
          "state_dict",
          [](const ml::amp::GradScaler& s) {
            const auto st = s.state();
            py::dict d;
            d["scale"] = st.scale;
            d["_growth_tracker"] = st.growth_tracker;
            return d;
          },
          "{'scale': float, '_growth_tracker': int} (torch's keys).")
      .def(
          "load_state_dict",
          [](ml::amp::GradScaler& s, const py::dict& d) {
            s.load_state({d["scale"].cast<float>(), d["_growth_tracker"].cast<std::int64_t>()});
          },
          arg("state_dict"));

  o.def("warmup_cosine_lr", &optim::warmup_cosine_lr, arg("step"), arg("base_lr"), arg("warmup_steps"), arg("total_steps"),
        arg("min_lr") = 0.0,
        "Linear warmup to base_lr over warmup_steps, then half a cosine down to min_lr at total_steps (step 0-based).");
  o.def("clip_grad_norm_",
        [](const py::iterable& params, float max_norm) { return optim::clip_grad_norm(parameters_of(params), max_norm); },
        arg("parameters"), arg("max_norm"), "Scales the gradients in place to a global L2 norm <= max_norm; returns the norm.");

  m.def(
      "save",
      [](const py::object& state_dict, const std::filesystem::path& path, const std::map<std::string, std::string>& metadata) {
        ml::NamedMatrices tensors;
        for (py::handle item : state_dict.attr("items")()) {
          const py::object name = item[py::int_(0)], value = item[py::int_(1)];
          if (!py::isinstance<py::str>(name) || !py::isinstance<Matrix>(value))
            throw py::type_error("oa.save: state_dict must map str to oa.Tensor; " + py::repr(name).cast<std::string>() +
                                 " maps to " + py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
          tensors.emplace_back(name.cast<std::string>(), value.cast<Matrix>());
        }
        ml::save_safetensors(path, tensors, metadata);
      },
      arg("state_dict"), arg("path"), arg("metadata") = std::map<std::string, std::string>{},
      "Writes a mapping of name -> tensor (a state_dict, in its order) as a safetensors file (atomic replace).");
  m.def(
      "load",
      [](const std::filesystem::path& path, const std::optional<Engine>& engine) {
        const ml::Checkpoint c = ml::load_safetensors(path, engine);
        py::dict out;
        for (const auto& [name, value] : c.tensors) out[py::str(name)] = value;
        return out;
      },
      arg("path"), arg("engine") = py::none(), "Reads a safetensors file into a dict of new tensors (file order).");
  m.def("load_metadata", &ml::read_safetensors_metadata, arg("path"), "The __metadata__ map of a safetensors file.");
}

}  // namespace oa::python
