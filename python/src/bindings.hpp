#pragma once
// The pieces of the extension module oa._oa, one file per topic; module.cpp
// calls each bind_* once. The Python class of oa::Matrix is oa.Tensor.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <oa/oa.hpp>

namespace oa::python {

namespace py = pybind11;
using TensorClass = py::class_<Matrix>;

// oa.Error and its subclasses by kind, and the translation of oa::Error.
void bind_errors(py::module_& m);
// oa.dtype, oa.DeviceInfo, oa.Engine, oa.devices, oa.default_engine, oa.synchronize.
void bind_engine(py::module_& m);
// oa.Tensor's data and arithmetic, and the creation functions.
void bind_tensor(py::module_& m, TensorClass& tensor);
// backward, grad, requires_grad, detach, no_grad.
void bind_autograd(py::module_& m, TensorClass& tensor);
// oa.nn.functional (the submodule oa._oa.functional).
void bind_functional(py::module_& m, TensorClass& tensor);
// x[key], and the selection ops (index_select, gather, topk, cat, ...).
void bind_indexing(py::module_& m, TensorClass& tensor);
// The C++ layers behind oa.nn's modules (the submodule oa._oa.nn).
void bind_nn(py::module_& m, TensorClass& tensor);
// oa.optim (oa._oa.optim), and oa.save / oa.load (safetensors).
void bind_optim(py::module_& m);
// oa.nn.functional.one_hot.
void bind_one_hot(py::module_& functional);
// oa.data's readers and loaders (the submodule oa._oa.data).
void bind_data(py::module_& m);

// The process-wide seed stream of the creation functions and dropout when no
// seed is given (oa.manual_seed restarts it); used with the GIL held.
ml::Generator& default_generator();
// `seed`, or the next seed of default_generator().
std::uint64_t seed_or_next(const std::optional<std::uint64_t>& seed);

// Pooling options from torch's kernel_size, stride (None: the kernel size)
// and padding, each an int or a pair; throws InvalidArgument naming `op`.
ml::Pool2dOptions pool_options(py::handle kernel_size, py::handle stride, py::handle padding, const char* op);

// oa.tensor and oa.from_numpy: `data` copied to a new leaf on `engine`, of
// `dtype` or, without it, float16 for float16, float32 for other floats, int32
// for integers and bool for booleans. Throws InvalidArgument naming `op` and
// the element for a value int32 cannot hold (outside int32, NaN, infinite;
// floats are truncated toward zero).
Matrix from_array(const py::array& data, std::optional<DType> dtype, bool requires_grad, const std::optional<Engine>& engine,
                  const char* op);
// A state_dict value (module.load_state_dict, optimizer.load_state_dict) as an
// oa tensor on `engine`: an oa.Tensor as it is; a NumPy array or a CPU
// torch.Tensor (read through NumPy) copied as `dtype` (from_array). Anything
// else raises TypeError naming `op` and the entry, `what`.
Matrix state_tensor(const py::handle& value, DType dtype, const Engine& engine, const char* op, const std::string& what);
// torch.argmax (largest) or torch.argmin of x: over the flattened tensor
// when dim is None (keepdim: every extent 1), else along dim.
Matrix arg_extreme(const Matrix& x, std::optional<int> dim, bool keepdim, bool largest);
// torch's NumPy-style aliases of a reduction's keywords, axis= for dim and
// keepdims= for keepdim: sets dim and keepdim from the aliases given; TypeError
// naming `op` when an argument and its alias are both given.
void numpy_aliases(py::object& dim, bool& keepdim, const py::object& axis, const std::optional<bool>& keepdims, const char* op);
// x.argmax(dim=None, keepdim=False, *, axis=None, keepdims=None) (largest) or
// x.argmin as `op` in errors: arg_extreme with the NumPy-style aliases.
std::function<Matrix(const Matrix&, py::object, bool, const py::object&, const std::optional<bool>&)> arg_extreme_of(bool largest,
                                                                                                                 const char* op);
// x.to(dtype) over the conversions oa's C++ ops give: between the floating
// dtypes and from int32 to them (mx::cast; int32 rounds to nearest even past
// 2^24), bool to a floating dtype or int32 (1 and 0, through where), and any
// dtype to bool (x != 0). There is no op from a floating dtype to int32: that
// raises UnsupportedError.
Matrix convert(const Matrix& x, DType dtype);
// torch.promote_types over oa's dtypes: categories bool < int32 < floating,
// the higher one wins; within one the wider dtype (float16 with bfloat16
// gives float32).
DType promote(DType a, DType b);
// `value` as an int32 tensor of shape [] on `engine`.
Matrix int32_scalar(std::int32_t value, const Engine& engine);

// Marks `result` as a copy made by `op` (x[key], transpose, permute, mT,
// expand, split, chunk), whose torch twin is a view of `source`: in-place ops
// on it (or on what shares its storage) raise, since oa cannot write through
// to `source`. A result that shares source's storage (x[:]) is not marked.
// Returns `result`; used with the GIL held.
Matrix copy_not_view(const Matrix& source, Matrix result, const char* op);
std::vector<Matrix> copies_not_views(const Matrix& source, std::vector<Matrix> results, const char* op);
// A copy of x's values (any dtype) in a new storage, made on the device;
// nothing is recorded for autograd.
Matrix device_copy(const Matrix& x);
// x, or a device copy of x when x's storage is marked by copy_not_view: a new
// Parameter made from it then owns storage that in-place ops may update,
// while x (and whatever shares its storage) keeps refusing them.
Matrix writable(const Matrix& x);

// torch's in-place protocol (x += y, x[key] = v, ...): refuses a copy_not_view
// result in any mode and, with grad mode on, a leaf that requires grad; then
// runs `compute`, casts its result (x's shape) to x's dtype, writes it into
// x's own storage on the device (seen by everything sharing it) and bumps x's
// version. With grad mode on and autograd history in x or `other`, compute
// records it and x takes the result's history, and its storage when that is
// the result's alone (values saved from x's old one stay intact); refused
// when x's storage is shared (a view would keep the old history). Otherwise
// compute runs under no_grad.
// Throws oa::Error (FailedPrecondition, InvalidArgument) naming `op`.
void update_in_place(const Matrix& x, const Matrix* other, const std::function<Matrix()>& compute, const char* op);

// An undefined Matrix as None.
py::object tensor_or_none(const Matrix& m);
// Whether `o` is an int argument (a dim, a size, a count) as torch takes one:
// anything with __index__ (a Python int, a NumPy integer scalar) but a bool
// (Python's or NumPy's), an oa.Tensor or a NumPy array.
bool is_int(py::handle o);
// An int (repeated) or a sequence of `N` ints, as PyTorch's int-or-tuple
// options; throws InvalidArgument naming `op` and `arg` otherwise.
template <std::size_t N>
std::array<std::int64_t, N> int_tuple(py::handle value, const char* op, const char* arg) {
  std::array<std::int64_t, N> out{};
  if (is_int(value)) {
    out.fill(value.cast<std::int64_t>());
    return out;
  }
  if (py::isinstance<py::sequence>(value) && !py::isinstance<py::str>(value) && py::len(value) == N) {
    const auto seq = py::reinterpret_borrow<py::sequence>(value);
    bool ints = true;
    for (std::size_t i = 0; i < N; ++i) ints = ints && is_int(seq[i]);
    if (ints) {
      for (std::size_t i = 0; i < N; ++i) out[i] = seq[i].cast<std::int64_t>();
      return out;
    }
  }
  fail(ErrorKind::InvalidArgument, "{}: {} must be an int or a sequence of {} ints, not {}", op, arg, N,
       py::str(py::repr(value)).cast<std::string>());
}

// fn() with an oa::Error it throws named after `op`, the user's Python call,
// before the engine's op (oa::with_context: "oa.nn.functional.conv2d:
// oa::ml::conv_2d: weight extent 1 must be ...").
template <class Fn>
decltype(auto) as_called(const char* op, Fn&& fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const Error& e) {
    throw with_context(e, op);
  }
}

// target.def(name, fn, extra...) for fn (a function or a lambda) behind
// as_called(op, ...): see def_as_called.
template <class Target, class R, class... A, class... Extra>
void def_as_called_function(Target& target, std::string op, const char* name, std::function<R(A...)> fn, const Extra&... extra) {
  target.def(
      name,
      [op = std::move(op), fn = std::move(fn)](A... args) -> R {
        return as_called(op.c_str(), [&]() -> R { return fn(std::forward<A>(args)...); });
      },
      extra...);
}

// target.def(name, fn, extra...) whose oa::Errors name `prefix` + name first:
// prefix "oa.nn.functional." and name "relu" give "oa.nn.functional.relu:
// oa::matrix::relu: ..." (as_called).
template <class Target, class Fn, class... Extra>
void def_as_called(Target& target, const char* prefix, const char* name, Fn fn, const Extra&... extra) {
  def_as_called_function(target, std::string(prefix) + name, name, std::function{fn}, extra...);
}

// Convolution options (ml::Conv1dOptions, Conv2dOptions, ConvTranspose1dOptions
// or ConvTranspose2dOptions) from torch's per-axis arguments, each an int or
// one int per axis; output_padding only for the transposed ones. Throws
// InvalidArgument naming `op` and the argument.
template <class Options>
Options conv_options(const char* op, py::handle stride, py::handle padding, py::handle dilation, std::int64_t groups,
                     py::handle output_padding = {}) {
  constexpr std::size_t axes = std::is_same_v<decltype(Options::stride), std::int64_t> ? 1 : 2;
  const auto per_axis = [op](py::handle value, const char* arg) {
    const auto t = int_tuple<axes>(value, op, arg);
    if constexpr (axes == 1)
      return t[0];
    else
      return t;
  };
  Options o;
  o.stride = per_axis(stride, "stride");
  o.padding = per_axis(padding, "padding");
  if constexpr (requires(Options& x) { x.output_padding; }) o.output_padding = per_axis(output_padding, "output_padding");
  o.dilation = per_axis(dilation, "dilation");
  o.groups = groups;
  return o;
}

}  // namespace oa::python
