// oa.optim over oa/ml/optim.hpp (SGD, Adam, AdamW, the warmup-cosine schedule),
// oa.amp.GradScaler over oa/ml/amp.hpp and
// oa.save / oa.load over the safetensors code of oa/ml/checkpoint.hpp.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace optim = oa::ml::optim;

// FileNotFoundError (errno ENOENT, the path as its filename), as open() and
// torch.load raise, when `path` names no file.
void require_file(const std::filesystem::path& path, const char* op) {
  if (std::filesystem::exists(path)) return;
  const py::tuple args = py::make_tuple(ENOENT, fmt::format("{}: no such file: '{}'", op, path.string()), path.string());
  PyErr_SetObject(PyExc_FileNotFoundError, args.ptr());
  throw py::error_already_set();
}

// The oa::ml::Parameters of the tensors handed to `op`: oa.nn.Parameter
// values, or (as torch.optim) any float32 leaf that requires grad, which
// Parameter::of_leaf names "tensor<k>" (k counts such tensors over the
// process, so names stay unique across optimizers). TypeError for anything
// else.
std::vector<ml::Parameter> parameters_of(const py::iterable& params, const char* op) {
  static std::int64_t unnamed = 0;  // the GIL serialises callers
  std::vector<ml::Parameter> out;
  for (py::handle p : params) {
    if (!py::isinstance<Matrix>(p))
      throw py::type_error(fmt::format("{}: params must be tensors (a module's parameters()); got {}", op,
                                       py::str(py::type::handle_of(p).attr("__name__")).cast<std::string>()));
    const Matrix& value = p.cast<const Matrix&>();
    if (std::any_of(out.begin(), out.end(), [&](const ml::Parameter& q) { return q.value().same_as(value); })) {
      // As torch 1.13: a warning, and the tensor is updated once.
      const std::string message = fmt::format("{}: params lists the same tensor twice; it is updated once", op);
      if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
      continue;
    }
    try {
      out.push_back(ml::Parameter::of_leaf(value, fmt::format("tensor{}", unnamed)));
    } catch (const Error& e) {
      throw py::type_error(fmt::format("{}: params must be float32 leaf tensors that require grad (a module's parameters(), "
                                       "or oa.tensor(..., requires_grad=True)): {}", op, e.what()));
    }
    if (out.back().name() == fmt::format("tensor{}", unnamed)) ++unnamed;
  }
  return out;
}

// torch's optimizer.state_dict(): {'state': {i: {buffer: copy, ..., 'step':
// float32 [] updates so far}} for each parameter i updated at least once,
// 'param_groups': [group with 'lr' and 'params': [0, ..., n - 1]]}.
py::dict state_dict(const optim::Optimizer& self, py::dict group) {
  const auto& params = self.parameters();
  const std::vector<std::int64_t> counts = self.parameter_steps();
  const ml::NamedMatrices buffers = self.state();  // "<parameter>.<buffer>" (buffer names have no dot)
  py::dict state;
  py::list indices;
  for (std::size_t i = 0; i < params.size(); ++i) {
    indices.append(i);
    if (counts[i] == 0) continue;
    py::dict entry;
    for (const auto& [name, m] : buffers)
      if (name.substr(0, name.rfind('.')) == self.state_names()[i]) entry[py::str(name.substr(name.rfind('.') + 1))] = device_copy(m);
    entry["step"] = Matrix::full({}, static_cast<float>(counts[i]), params[i].value().engine());
    state[py::int_(i)] = entry;
  }
  group["lr"] = self.lr();
  group["params"] = indices;
  py::dict out;
  out["state"] = state;
  py::list groups;
  groups.append(group);
  out["param_groups"] = groups;
  return out;
}

// torch's optimizer.load_state_dict(state_dict) through Optimizer::load_state:
// one param group over this optimizer's n parameters, whose hyperparameters
// besides lr must equal `group`'s (compared as float32; oa's options are
// fixed at construction); a parameter absent from 'state' restarts (zero
// buffers, no updates); a present one without 'step' (torch's SGD) counts as
// updated once. The global step count becomes the largest parameter's.
void load_state_dict(optim::Optimizer& self, const py::dict& state_dict, const py::dict& group, const char* op) {
  const auto& params = self.parameters();
  const auto invalid = [op](const std::string& what) { fail(ErrorKind::InvalidArgument, "{}: {}", op, what); };
  if (!state_dict.contains("state") || !state_dict.contains("param_groups")) invalid("a state_dict has keys 'state' and 'param_groups'");
  const py::list groups = state_dict["param_groups"];
  if (groups.size() != 1) invalid(fmt::format("{} param groups given; oa's optimizers have one", groups.size()));
  const py::dict saved = groups[0];
  if (!saved.contains("params") || py::len(saved["params"]) != params.size())
    invalid(fmt::format("the param group lists {} parameters; this optimizer has {}",
                        saved.contains("params") ? py::len(saved["params"]) : 0, params.size()));
  for (const auto& [key, value] : group) {
    const std::string k = key.cast<std::string>();
    // torch's implementation switches (which kernels it runs) do not change the update.
    const bool implementation = k == "foreach" || k == "fused" || k == "differentiable" || k == "capturable";
    if (k == "lr" || k == "params" || implementation || !saved.contains(key)) continue;
    const py::object want = py::reinterpret_borrow<py::object>(value), got = saved[key];
    const auto as_f32 = [](const py::handle& v) {
      return py::module_::import("numpy").attr("asarray")(v, "float32").attr("tolist")();
    };
    const bool numeric = !want.is_none() && !py::isinstance<py::bool_>(want);
    if (numeric ? !as_f32(want).equal(as_f32(got)) : !want.equal(got))
      invalid(fmt::format("param group '{}' is {} in the state_dict but {} in this optimizer (oa's hyperparameters are fixed at "
                          "construction; only lr is loaded)",
                          k, py::repr(got).cast<std::string>(), py::repr(want).cast<std::string>()));
  }
  const py::dict state = state_dict["state"];
  std::vector<std::int64_t> counts(params.size(), 0);
  std::vector<std::optional<py::dict>> entries(params.size());
  for (const auto& [key, value] : state) {
    const auto i = key.cast<std::int64_t>();
    if (i < 0 || i >= static_cast<std::int64_t>(params.size()))
      invalid(fmt::format("'state' has an entry for parameter {}; this optimizer has {}", i, params.size()));
    const auto entry = py::reinterpret_borrow<py::dict>(value);
    entries[i] = entry;
    counts[i] = entry.contains("step") ? static_cast<std::int64_t>(py::float_(entry["step"]).cast<double>()) : 1;
  }
  ml::NamedMatrices tensors;
  for (const auto& [name, m] : self.state()) {
    const std::string owner = name.substr(0, name.rfind('.')), buffer = name.substr(name.rfind('.') + 1);
    const auto& names = self.state_names();
    const auto i = static_cast<std::size_t>(std::find(names.begin(), names.end(), owner) - names.begin());
    if (!entries[i]) {
      tensors.emplace_back(name, Matrix::zeros(m.shape(), m.engine()));
    } else if (entries[i]->contains(buffer.c_str()) && !(*entries[i])[buffer.c_str()].is_none()) {
      const Matrix given = state_tensor((*entries[i])[buffer.c_str()], DType::F32, m.engine(), op, fmt::format("state[{}]['{}']", i, buffer));
      if (!(given.shape() == m.shape()))  // named by state index, as the user's dict is
        invalid(fmt::format("state[{}]['{}'] is {}; parameter {}'s is {}", i, buffer, given.shape(), i, m.shape()));
      tensors.emplace_back(name, given);
    }
  }
  self.load_state(tensors, saved["lr"].cast<float>(), *std::max_element(counts.begin(), counts.end()), counts);
}

const char* const state_dict_doc =
    "torch's optimizer.state_dict(): {'state': {i: {'momentum_buffer' (SGD with momentum) or 'exp_avg', 'exp_avg_sq' "
    "and with amsgrad 'max_exp_avg_sq' (Adam, AdamW), and 'step': float32 [] updates so far}} for each parameter i updated at least once, 'param_groups': [one "
    "dict of the hyperparameters, 'lr' and 'params': [0, ..., n - 1]]}. The tensors are device copies (torch's are "
    "references to the live state).";
const char* const load_state_dict_doc =
    "torch's optimizer.load_state_dict(state_dict) (from state_dict() of an optimizer of this kind, oa's or torch's, over "
    "parameters of the same shapes; torch's CPU tensors are read through NumPy): copies the buffers into the state on the device and restores each parameter's "
    "update count and lr, so training continues bit for bit. A parameter absent from 'state' restarts; one without "
    "'step' (torch's SGD) counts as updated once. Raises oa.InvalidArgumentError, before changing anything, for another "
    "group count, parameter count, a hyperparameter other than lr that differs from this optimizer's (torch's "
    "implementation switches foreach, fused, differentiable and capturable are not compared; oa's are fixed at "
    "construction; amsgrad included, so a state with 'max_exp_avg_sq' loads only where amsgrad is on), or a missing or "
    "mismatched buffer.";

// The part the optimizers share, with PyTorch's names.
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

// oa.optim.<name> over optim::Adam or optim::AdamW (T, constructed from
// Options), with torch's arguments and param group keys.
template <class T, class Options>
void bind_adam(py::module_& o, const char* name, float default_weight_decay, const char* doc) {
  using py::arg;
  py::class_<T, optim::Optimizer> c(o, name, doc);
  const std::string op = fmt::format("oa.optim.{}", name);
  c.def(py::init([op](const py::iterable& params, float lr, std::pair<float, float> betas, float eps, float weight_decay, bool amsgrad) {
          return std::make_unique<T>(parameters_of(params, op.c_str()),
                                     Options{lr, betas.first, betas.second, eps, weight_decay, amsgrad});
        }),
        arg("params"), arg("lr") = 1e-3f, arg("betas") = std::pair<float, float>{0.9f, 0.999f}, arg("eps") = 1e-8f,
        arg("weight_decay") = default_weight_decay, arg("amsgrad") = false);
  bind_common(c);
  const auto group = [](const T& a) {
    const auto& o = a.options();
    py::dict g(py::arg("betas") = py::make_tuple(o.beta1, o.beta2), py::arg("eps") = o.eps, py::arg("weight_decay") = o.weight_decay,
               py::arg("amsgrad") = o.amsgrad, py::arg("maximize") = false, py::arg("foreach") = py::none(),
               py::arg("capturable") = false);
    if constexpr (std::is_same_v<T, optim::Adam>) g["differentiable"] = false, g["fused"] = false;
    return g;
  };
  c.def("_hyperparameters", group, "The param group's keys but 'lr' and 'params' (oa.optim's param_groups).");
  c.def("state_dict", [group](const T& a) { return state_dict(a, group(a)); }, state_dict_doc)
      .def("load_state_dict", [group, op](T& a, const py::dict& d) { load_state_dict(a, d, group(a), (op + ".load_state_dict").c_str()); },
           arg("state_dict"), load_state_dict_doc);
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
            return std::make_unique<optim::Sgd>(parameters_of(params, "oa.optim.SGD"),
                                                optim::SgdOptions{lr, momentum, dampening, weight_decay, nesterov});
          }),
          arg("params"), arg("lr") = 1e-3f, arg("momentum") = 0.0f, arg("dampening") = 0.0f, arg("weight_decay") = 0.0f,
          arg("nesterov") = false);
  bind_common(sgd);
  const auto sgd_group = [](const optim::Sgd& s) {
    const auto& o = s.options();
    return py::dict(py::arg("momentum") = o.momentum, py::arg("dampening") = o.dampening, py::arg("weight_decay") = o.weight_decay,
                    py::arg("nesterov") = o.nesterov, py::arg("maximize") = false, py::arg("foreach") = py::none(),
                    py::arg("differentiable") = false);
  };
  sgd.def("_hyperparameters", sgd_group, "The param group's keys but 'lr' and 'params' (oa.optim's param_groups).");
  sgd.def("state_dict", [sgd_group](const optim::Sgd& s) { return state_dict(s, sgd_group(s)); }, state_dict_doc)
      .def("load_state_dict",
           [sgd_group](optim::Sgd& s, const py::dict& d) { load_state_dict(s, d, sgd_group(s), "oa.optim.SGD.load_state_dict"); },
           arg("state_dict"), load_state_dict_doc);

  bind_adam<optim::Adam, optim::AdamOptions>(
      o, "Adam", 0.0f,
      "torch.optim.Adam over oa::ml::optim::Adam: weight_decay is an L2 term added to the gradient inside the fused "
      "update (p.grad is left as it was), Adam's bias correction, eps outside the square root; amsgrad keeps the "
      "running maximum of exp_avg_sq (state 'max_exp_avg_sq') for the denominator. One fused kernel per parameter.");
  bind_adam<optim::AdamW, optim::AdamWOptions>(
      o, "AdamW", 1e-2f,
      "torch.optim.AdamW over oa::ml::optim::AdamW: decoupled weight decay (Loshchilov & Hutter 2019), Adam's bias "
      "correction, eps outside the square root; amsgrad keeps the running maximum of exp_avg_sq (state "
      "'max_exp_avg_sq') for the denominator. One fused kernel per parameter.");

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
        [](const py::iterable& params, float max_norm) {
          return optim::clip_grad_norm(parameters_of(params, "oa.optim.clip_grad_norm_"), max_norm);
        },
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
      "Writes a mapping of name -> tensor (a state_dict, in its order) as a safetensors file (atomic replace): float32, "
      "float16, bfloat16, int32 and bool (BOOL, one byte an element) as they are. Raises TypeError for a key that is "
      "not a str or a value that is not an oa.Tensor, oa.InvalidArgumentError for an empty or reserved name or a file "
      "that cannot be written.");
  m.def(
      "load",
      [](const std::filesystem::path& path, const std::optional<Engine>& engine) {
        require_file(path, "oa.load");
        const ml::Checkpoint c = ml::load_safetensors(path, engine);
        py::dict out;
        for (const auto& [name, value] : c.tensors) out[py::str(name)] = value;
        return out;
      },
      arg("path"), arg("engine") = py::none(),
      "Reads a safetensors file into a dict of new tensors (file order), of its dtypes F32, F16, BF16, I32 or BOOL. "
      "Raises FileNotFoundError (as open() and torch.load) for a missing file, oa.InvalidArgumentError for a truncated or "
      "malformed one, oa.UnsupportedError for another dtype (F64, I64, ...), naming the tensor.");
  m.def(
      "load_metadata",
      [](const std::filesystem::path& path) {
        require_file(path, "oa.load_metadata");
        return ml::read_safetensors_metadata(path);
      },
      arg("path"), "The __metadata__ map of a safetensors file; FileNotFoundError for a missing one.");
}

}  // namespace oa::python
