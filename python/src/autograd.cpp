// Autograd on oa.Tensor (oa/matrix/autograd.hpp): requires_grad, grad,
// backward, detach, the thread's gradient mode (under oa.no_grad and its kin,
// oa/_grad_mode.py) and oa.autocast() as a context manager.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

// `with oa.autocast(dtype, enabled):` holds an oa::AutocastGuard on this
// thread; guards nest (a stack, so one object may be entered again while inside).
class Autocast {
 public:
  Autocast(DType dtype, bool enabled) : dtype_(dtype), enabled_(enabled) {}
  void enter() { guards_.push_back(std::make_unique<AutocastGuard>(dtype_, enabled_)); }
  void exit() {
    if (!guards_.empty()) guards_.pop_back();
  }

 private:
  DType dtype_;
  bool enabled_;
  std::vector<std::unique_ptr<AutocastGuard>> guards_;
};

// oa.autocast(first, second, enabled): torch's autocast(device_type,
// dtype=None, enabled=True), device_type being 'cuda', 'cpu' or 'vulkan'
// (they select nothing: the policy covers every engine's ops on the thread;
// without dtype, torch's default for that device type), or oa's own
// autocast(dtype, enabled=True), whose enabled may come second by position.
// Throws TypeError and ValueError naming the argument at fault.
Autocast make_autocast(const py::object& first, const py::object& second, bool enabled) {
  const auto type_name = [](const py::object& o) { return py::str(py::type::handle_of(o).attr("__name__")).cast<std::string>(); };
  if (py::isinstance<DType>(first)) {
    if (py::isinstance<py::bool_>(second)) return Autocast(first.cast<DType>(), second.cast<bool>());
    if (!second.is_none()) throw py::type_error("oa.autocast: dtype given twice (as the first argument and as dtype)");
    return Autocast(first.cast<DType>(), enabled);
  }
  if (!second.is_none() && !py::isinstance<DType>(second))
    throw py::type_error("oa.autocast: dtype must be an oa dtype (oa.float16 or oa.bfloat16), not " + type_name(second));
  const std::optional<DType> dtype = second.is_none() ? std::nullopt : std::optional(second.cast<DType>());
  if (first.is_none()) {
    if (!dtype) throw py::type_error("oa.autocast: give torch's device_type ('cuda', 'cpu' or 'vulkan') or a dtype");
    return Autocast(*dtype, enabled);
  }
  if (!py::isinstance<py::str>(first))
    throw py::type_error("oa.autocast: device_type must be a str ('cuda', 'cpu' or 'vulkan') or a dtype, not " + type_name(first));
  const std::string device = first.cast<std::string>();
  if (device != "cuda" && device != "cpu" && device != "vulkan")
    throw py::value_error("oa.autocast: device_type '" + device +
                          "' is not one oa takes: 'cuda', 'cpu' or 'vulkan' (accepted for torch's signature; oa's policy "
                          "covers its engines' ops whichever is given)");
  return Autocast(dtype ? *dtype : device == "cpu" ? DType::BF16 : DType::F16, enabled);
}

}  // namespace

void bind_autograd(py::module_& m, TensorClass& t) {
  t.def_property(
       "requires_grad", [](const Matrix& x) { return requires_grad(x); },
       [](const Matrix& x, bool value) { set_requires_grad(x, value); },
       "Whether backward accumulates a gradient into this leaf (or, for a result of ops, whether it has history).")
      .def(
          "requires_grad_", [](const Matrix& x, bool value) { return set_requires_grad(x, value); },
          py::arg("requires_grad") = true, "Marks this leaf (float32, float16 or bfloat16; its gradient takes its dtype) as requiring gradients "
          "(torch.Tensor.requires_grad_).")
      .def_property(
          "grad", [](const Matrix& x) { return tensor_or_none(grad(x)); },
          [](const Matrix& x, const py::object& value) {
            if (value.is_none()) return zero_grad(x);
            if (!py::isinstance<Matrix>(value))
              throw py::type_error("oa.Tensor.grad: assigned grad expected to be a Tensor or None, not " +
                                   py::str(value.get_type().attr("__name__")).cast<std::string>());
            const auto& gradient = value.cast<const Matrix&>();
            const Matrix current = grad(x);
            // x.grad += y has already written the gradient in place.
            if (current.defined() && current.storage() == gradient.storage() && current.shape() == gradient.shape()) return;
            set_grad(x, gradient);
          },
          "The gradient accumulated into this leaf by backward, or None. Assign None to clear it, or a tensor of the "
          "leaf's shape and dtype to replace it (shared, not copied; the next backward adds into a copy), as torch; "
          "x.grad += y updates it in place.")
      .def_property_readonly(
          "grad_fn",
          [](const Matrix& x) -> py::object {
            const std::string name = autograd::grad_fn_name(x);
            return name.empty() ? py::object(py::none()) : py::object(py::str(name));
          },
          "The name of the op that produced this value (\"oa::matrix::mul\"), or None for a leaf.")
      .def_property_readonly("is_leaf", [](const Matrix& x) { return autograd::grad_fn_name(x).empty(); })
      .def(
          "backward",
          [](const Matrix& x, const std::optional<Matrix>& gradient, bool retain_graph, bool create_graph) {
            if (create_graph) {
              PyErr_SetString(PyExc_NotImplementedError,
                              "oa.Tensor.backward: create_graph=True is not supported: oa does not compute higher-order "
                              "gradients (its backward records no autograd history)");
              throw py::error_already_set();
            }
            as_called("oa.Tensor.backward", [&] { gradient ? backward(x, *gradient, retain_graph) : backward(x, retain_graph); });
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false, py::arg("create_graph") = false,
          "Backward from this scalar (or from any output with `gradient` of its shape), accumulating into the leaves' "
          ".grad (torch.Tensor.backward). Raises NotImplementedError for create_graph=True (higher-order gradients); "
          "oa.InvalidArgumentError for a non-scalar tensor without gradient or a gradient of another shape or dtype; "
          "oa.FailedPreconditionError for a tensor that does not require grad, a graph already released (a second "
          "backward without retain_graph) or a value modified after it was saved for backward.")
      .def("detach", &detach, "The same value without history (shares storage).");

  m.def("is_grad_enabled", &grad_enabled,
        "Whether ops record autograd history on this thread (torch.is_grad_enabled): False inside oa.no_grad() or "
        "oa.inference_mode(), after oa.set_grad_enabled(False).");
  m.def("_set_grad_enabled", &set_grad_enabled, py::arg("mode"),
        "Sets this thread's gradient mode (oa::set_grad_enabled), for the context managers of oa/_grad_mode.py.");

  py::class_<Autocast>(m, "autocast",
                       "Context manager: mixed precision on this thread, as torch.autocast(device_type, dtype=None, "
                       "enabled=True, cache_enabled=None), and oa's own autocast(dtype, enabled=True). Inside, "
                       "matmul, linear and bmm run in `dtype` (oa.float16 or oa.bfloat16, their f32 inputs cast, master weights "
                       "cast once per scope); softmax, norms, losses and reductions run in float32; other ops take the widest "
                       "of their inputs' dtypes (float32 where they have no 16-bit kernel). One policy table "
                       "(oa/matrix/autocast.hpp); backward runs outside it. enabled=False disables it inside another scope. "
                       "device_type ('cuda', 'cpu' or 'vulkan') is accepted for compatibility and selects nothing (the "
                       "policy covers the ops of every oa engine on this thread); without dtype it gives torch's default "
                       "for that device type: float16 for 'cuda' and 'vulkan', bfloat16 for 'cpu'. cache_enabled is "
                       "accepted and changes nothing (the results are the same). Raises TypeError without device_type "
                       "and dtype, for dtype given twice, a dtype that is not an oa dtype or a device_type that is not a "
                       "str; ValueError for another "
                       "device_type, and on entering for a dtype other than float16 or bfloat16.")
      .def(py::init([](const py::object& device_type, const py::object& dtype, bool enabled,
                       const std::optional<bool>& /*cache_enabled*/) { return make_autocast(device_type, dtype, enabled); }),
           py::arg("device_type") = py::none(), py::arg("dtype") = py::none(), py::arg("enabled") = true,
           py::arg("cache_enabled") = py::none())
      .def("__enter__", [](Autocast& a) { a.enter(); })
      .def("__exit__", [](Autocast& a, const py::args&) {
        a.exit();
        return false;
      });
  m.attr("autocast").attr("__module__") = "oa";
}

}  // namespace oa::python
