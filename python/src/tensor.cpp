// oa.Tensor (oa::Matrix): conversion from and to NumPy, properties,
// arithmetic and the views of oa/matrix, and the creation functions.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace mx = oa::matrix;

Shape shape_of(const py::array& a) { return Shape(std::vector<std::int64_t>(a.shape(), a.shape() + a.ndim())); }

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) t[i] = s[i];
  return t;
}

// A NumPy array of `shape` that owns `values` (no copy).
template <typename T>
py::array owning_array(std::vector<T>&& values, const Shape& shape, py::dtype dtype) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  const auto dims = shape.to_vector();
  return py::array(dtype, std::vector<py::ssize_t>(dims.begin(), dims.end()), {}, owned->data(), free_when_done);
}

// The dtype oa.tensor gives an array of NumPy dtype `d` when none is asked
// for: float16 stays float16, other floats become float32 (as torch.tensor
// of Python floats), integers int32, booleans bool.
DType inferred_dtype(const py::dtype& d, const char* op) {
  switch (d.kind()) {
    case 'f': return d.itemsize() == 2 ? DType::F16 : DType::F32;
    case 'i':
    case 'u': return DType::I32;
    case 'b': return DType::Bool;
    default:
      fail(ErrorKind::InvalidArgument, "{}: NumPy dtype {} has no oa dtype (floats, integers and booleans only)", op,
           py::str(static_cast<py::handle>(d)).cast<std::string>());
  }
}

// `data` as int32 through T: double for floats (truncated toward zero, as
// torch), int64 for the rest. Values outside int32 are refused rather than
// wrapped, NaN and infinities by name (NumPy's own cast of them to an integer
// warns and gives garbage).
template <typename T>
std::vector<std::int32_t> int32_values(const py::array& data, const char* op) {
  const auto wide = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(data);
  if (!wide) throw py::error_already_set();
  std::vector<std::int32_t> values(static_cast<std::size_t>(wide.size()));
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    T v = wide.data()[i];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v) || std::isinf(v))
        fail(ErrorKind::InvalidArgument, "{}: element {} is {}; int32 holds no NaN or infinity", op, i,
             std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
      v = std::trunc(v);
    }
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      fail(ErrorKind::InvalidArgument, "{}: element {} is {}, outside int32", op, i, wide.data()[i]);
    values[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
  }
  return values;
}

}  // namespace

Matrix from_array(const py::array& data, std::optional<DType> dtype, bool requires_grad,
                  const std::optional<Engine>& engine, const char* op) {
  const DType target = dtype ? *dtype : inferred_dtype(data.dtype(), op);
  const Shape shape = shape_of(data);
  Matrix out;
  switch (target) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: {
      const auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(data);
      if (!values) throw py::error_already_set();
      out = Matrix::from_vector(shape, std::span<const float>(values.data(), values.size()), target, engine);
      break;
    }
    case DType::I32:
      out = Matrix::from_i32(shape, data.dtype().kind() == 'f' ? int32_values<double>(data, op) : int32_values<std::int64_t>(data, op),
                             engine);
      break;
    case DType::Bool: {
      const auto values = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(data.attr("astype")("bool"));
      if (!values) throw py::error_already_set();
      out = Matrix::from_bool(
          shape, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(values.data()), values.size()), engine);
      break;
    }
  }
  if (requires_grad) set_requires_grad(out);
  return out;
}

Matrix state_tensor(const py::handle& value, DType dtype, const Engine& engine, const char* op, const std::string& what) {
  if (py::isinstance<Matrix>(value)) return value.cast<Matrix>();
  const bool torch_tensor = py::hasattr(value, "cpu") && py::hasattr(value, "numpy");
  if (!torch_tensor && !py::isinstance<py::array>(value))
    throw py::type_error(fmt::format("{}: {} must be an oa.Tensor, a NumPy array or a CPU torch.Tensor, not {}", op, what,
                                     py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>()));
  const py::object host = torch_tensor ? value.attr("cpu")() : py::reinterpret_borrow<py::object>(value);
  return from_array(py::module_::import("numpy").attr("asarray")(host), dtype, false, engine, op);
}

namespace {

// x.numpy(): float32, float16 (exact), float32 for bfloat16 (NumPy has no
// bfloat16), int32 or bool.
py::array to_numpy(const Matrix& x) {
  switch (x.dtype()) {
    case DType::F32:
    case DType::BF16: return owning_array(x.to_vector(), x.shape(), py::dtype::of<float>());
    case DType::F16: return owning_array(x.to_vector(), x.shape(), py::dtype::of<float>()).attr("astype")("float16");
    case DType::I32: return owning_array(x.to_i32(), x.shape(), py::dtype::of<std::int32_t>());
    case DType::Bool: return owning_array(x.to_bool(), x.shape(), py::dtype("bool"));
  }
  return {};
}

py::object item(const Matrix& x) {
  if (is_floating_point(x.dtype())) return py::float_(x.item());
  if (x.numel() != 1)
    fail(ErrorKind::InvalidArgument, "oa.Tensor.item: a tensor of shape {} has {} elements, not 1", x.shape(), x.numel());
  if (x.dtype() == DType::I32) return py::int_(x.to_i32()[0]);
  return py::bool_(x.to_bool()[0] != 0);
}

// x.item() of a one-element tensor, else InvalidArgument (ValueError, as
// torch) naming `op`: int(x) and float(x).
py::object scalar(const Matrix& x, const char* op) {
  if (x.numel() != 1)
    fail(ErrorKind::InvalidArgument, "{}: only one element tensors can be converted to Python scalars, not shape {}", op,
         x.shape());
  return item(x);
}

// int(x) of a one-element x as an exact Python int (a bool element too).
py::int_ to_int(const Matrix& x, const char* op) {
  PyObject* v = PyNumber_Long(scalar(x, op).ptr());
  if (!v) throw py::error_already_set();
  return py::reinterpret_steal<py::int_>(v);
}

// torch's truth value: a one-element tensor is its value != 0 (NaN is true);
// any other count is ambiguous (FailedPrecondition: a RuntimeError, as torch).
bool truth(const Matrix& x) {
  if (x.numel() != 1)
    fail(ErrorKind::FailedPrecondition, "oa.Tensor.__bool__: Boolean value of Tensor with {} values is ambiguous (shape {})",
         x.numel() == 0 ? "no" : "more than one", x.shape());
  return PyObject_IsTrue(item(x).ptr()) == 1;
}

// A size given as ints (zeros(2, 3)) or as one sequence (zeros((2, 3))).
std::vector<std::int64_t> size_of_args(const py::args& args) {
  py::object size = args;
  if (args.size() == 1 && py::isinstance<py::sequence>(args[0]) && !py::isinstance<py::str>(args[0])) size = args[0];
  try {
    return size.cast<std::vector<std::int64_t>>();
  } catch (const py::cast_error&) {
    throw py::type_error("a size must be ints or one sequence of ints, not " + py::str(py::repr(args)).cast<std::string>());
  }
}

}  // namespace

Matrix int32_scalar(std::int32_t value, const Engine& engine) { return Matrix::from_i32({}, std::span(&value, 1), engine); }

Matrix convert(const Matrix& x, DType dtype) {
  const DType from = x.dtype();
  if (from == dtype) return x;
  if ((is_floating_point(from) || from == DType::I32) && is_floating_point(dtype)) return mx::cast(x, dtype);
  if (from == DType::Bool && dtype == DType::I32) return mx::where(x, int32_scalar(1, x.engine()), int32_scalar(0, x.engine()));
  if (from == DType::Bool && is_floating_point(dtype))
    return mx::cast(mx::where(x, Matrix::ones({}, x.engine()), Matrix::zeros({}, x.engine())), dtype);
  if (dtype == DType::Bool) {
    if (from == DType::I32) return mx::ne(x, int32_scalar(0, x.engine()));
    return mx::ne(mx::cast(x, DType::F32), 0.0f);
  }
  fail(ErrorKind::Unsupported, "oa.Tensor.to: no conversion from {} to {} (oa converts between float32, float16 and "
       "bfloat16, from int32 and bool to those, from bool to int32, and from any dtype to bool)", to_string(from), to_string(dtype));
}

namespace {

// zeros, ones, full and fill_: `value` everywhere as `dtype` (int32 filled on
// the host: no op converts float32 to int32).
Matrix filled(const Shape& shape, float value, DType dtype, const std::optional<Engine>& engine, const char* op) {
  if (dtype != DType::I32) return convert(Matrix::full(shape, value, engine), dtype);
  if (value != std::trunc(value) || std::abs(value) > 2147483520.0f)
    fail(ErrorKind::InvalidArgument, "{}: value {} is not an int32", op, value);
  const std::vector<std::int32_t> values(static_cast<std::size_t>(shape.numel()), static_cast<std::int32_t>(value));
  return Matrix::from_i32(shape, values, engine);
}

// The creation functions' common tail: dtype (a conversion) and requires_grad.
Matrix finish(Matrix m, std::optional<DType> dtype, bool requires_grad) {
  if (dtype) m = convert(m, *dtype);
  if (requires_grad) set_requires_grad(m);
  return m;
}

}  // namespace

Matrix arg_extreme(const Matrix& x, std::optional<int> dim, bool keepdim, bool largest) {
  const auto pick = [largest, keepdim](const Matrix& m, int d) { return largest ? mx::argmax(m, d, keepdim) : mx::argmin(m, d, keepdim); };
  if (dim) return pick(x, *dim);
  const Matrix r = pick(x.reshape({x.numel()}), -1);
  return keepdim ? r.reshape(std::vector<std::int64_t>(x.rank(), 1)) : r;
}

namespace {

Matrix argmax(const Matrix& x, std::optional<int> dim, bool keepdim) { return arg_extreme(x, dim, keepdim, true); }

// PyTorch's dim of a reduction: None (every axis), an int, or a tuple or
// list of ints, as the axis list of oa/matrix/reduction.hpp. Throws TypeError
// naming `op` for another type, InvalidArgument for an axis outside x's rank.
std::vector<int> reduction_dims(const Matrix& x, const py::object& dim, const char* op) {
  if (dim.is_none()) return {};
  const bool one = py::isinstance<py::int_>(dim);
  if (!one && !(py::isinstance<py::tuple>(dim) || py::isinstance<py::list>(dim)))
    throw py::type_error(fmt::format("{}: dim must be None, an int or a tuple of ints, not {}", op,
                                     py::str(py::type::handle_of(dim).attr("__name__")).cast<std::string>()));
  const auto rank = std::max<long long>(static_cast<long long>(x.rank()), 1);
  std::vector<int> dims;
  for (const py::handle d : one ? py::tuple(py::make_tuple(dim)) : py::tuple(dim)) {
    if (!py::isinstance<py::int_>(d) || py::isinstance<py::bool_>(d))
      throw py::type_error(fmt::format("{}: dim must be None, an int or a tuple of ints, not one holding {}", op,
                                       py::str(py::repr(d)).cast<std::string>()));
    int overflow = 0;
    const long long a = PyLong_AsLongLongAndOverflow(d.ptr(), &overflow);
    if (overflow || a < -rank || a >= rank)
      fail(ErrorKind::InvalidArgument, "{}: dim {} is out of range for x of shape {} (expected an axis in [{}, {}])", op,
           py::str(d).cast<std::string>(), x.shape(), -rank, rank - 1);
    dims.push_back(static_cast<int>(a));
  }
  return dims;
}

// x.sum(dim=None, keepdim=False) and its kin over any axes, as `op` in errors.
template <Matrix (*Reduce)(const Matrix&, const std::vector<int>&, bool)>
auto reduction(const char* op) {
  return [op](const Matrix& x, const py::object& dim, bool keepdim) { return Reduce(x, reduction_dims(x, dim, op), keepdim); };
}
// x.var(dim=None, correction=1, keepdim=False), x.std(...).
template <Matrix (*Reduce)(const Matrix&, const std::vector<int>&, float, bool)>
auto spread(const char* op) {
  return [op](const Matrix& x, const py::object& dim, float correction, bool keepdim) {
    return Reduce(x, reduction_dims(x, dim, op), correction, keepdim);
  };
}
// x.norm(p, dim, keepdim) as `op` in errors.
auto norm(const char* op) {
  return [op](const Matrix& x, float p, const py::object& dim, bool keepdim) { return mx::norm(x, p, reduction_dims(x, dim, op), keepdim); };
}

// torch.return_types.max and .min: (values, indices) named tuples, made once
// by bind_tensor as oa.return_types.max and .min (kept for the process).
py::handle max_type, min_type;

// torch.max (largest) or torch.min of x: over every element for dim None
// (torch.amax's gradient), (values, indices) along an int dim (the gradient
// reaches the element at the index, as torch's), or elementwise against a
// tensor given as dim (torch.max(input, other)).
py::object extreme(const Matrix& x, const py::object& dim, bool keepdim, bool largest, const char* op) {
  if (py::isinstance<Matrix>(dim)) {
    if (keepdim) throw py::type_error(fmt::format("{}(input, other): keepdim applies to a dim, not to an other tensor", op));
    const auto& other = dim.cast<const Matrix&>();
    return py::cast(largest ? mx::maximum(x, other) : mx::minimum(x, other));
  }
  if (dim.is_none()) {
    if (keepdim) throw py::type_error(fmt::format("{}: keepdim=True needs a dim (torch's max(input) takes none)", op));
    return py::cast(largest ? mx::max(x, {}) : mx::min(x, {}));
  }
  if (!py::isinstance<py::int_>(dim))
    throw py::type_error(fmt::format("{}: dim must be an int, a tensor (the elementwise form) or None, not {} (several "
                                     "axes: amax or amin)", op, py::str(py::type::handle_of(dim).attr("__name__")).cast<std::string>()));
  const int axis = reduction_dims(x, dim, op)[0];
  // argmax and argmin refuse bool (as torch's): a bool x's indices are those of
  // its int32 0s and 1s, the first True (max) or False (min), or 0 where none.
  const Matrix ranked = x.dtype() == DType::Bool ? convert(x, DType::I32) : x;
  const Matrix indices = largest ? mx::argmax(ranked, axis, true) : mx::argmin(ranked, axis, true);
  // take_along_axis copies float32: a 16-bit x is read through float32 (exact);
  // int32 and bool values (no gradient) are the exact amax or amin (bool: any, all).
  const Matrix values = !is_floating_point(x.dtype()) ? (largest ? mx::max(x, {axis}, true) : mx::min(x, {axis}, true))
                                                      : convert(mx::take_along_axis(convert(x, DType::F32), indices, axis), x.dtype());
  return (largest ? max_type : min_type)(keepdim ? values : mx::squeeze(values, axis),
                                         keepdim ? indices : mx::squeeze(indices, axis));
}

// The storages of copy_not_view's results by storage id (unique for the
// process), with the op that made each; expired entries are dropped whenever
// the table has doubled since the last sweep.
struct CopyMark {
  std::weak_ptr<runtime::Storage> storage;
  const char* op;
};
std::unordered_map<std::uint64_t, CopyMark>& copy_marks() {
  static std::unordered_map<std::uint64_t, CopyMark> marks;
  return marks;
}

// torch's in-place ops (x += y, x.add_(y), ...): the result is computed out
// of place, cast to x's dtype, then copied on the device into x's own storage
// (shared by its views and detach()) and x's version is bumped, so that
// backward through an op that saved x refuses it. With grad mode on, a leaf
// that requires grad is refused as in torch, and so is an operand with
// autograd history (oa records no history through an in-place op). A
// copy_not_view result is refused in any mode.
void require_in_place(const Matrix& x, const Matrix* other, const char* op) {
  const auto& marks = copy_marks();
  if (const auto it = marks.find(x.storage()->id()); it != marks.end())
    fail(ErrorKind::FailedPrecondition,
         "{}: this tensor was made by {}, which in oa returns a copy, not a view as in torch (so do x[key], "
         "transpose, permute, mT, T, expand, split and chunk): an in-place op on it would not reach the tensor it was "
         "taken from. Assign into the source in one subscript instead (x[i, j] = v, not x[i][j] = v), or compute "
         "the new value out of place; only reshape, view, flatten, squeeze, unsqueeze, x[:], x[...] and detach() "
         "share storage",
         op, it->second.op);
  if (!grad_enabled()) return;
  if (requires_grad(x) && autograd::grad_fn_name(x).empty())
    fail(ErrorKind::FailedPrecondition,
         "{}: a leaf Variable that requires grad is being used in an in-place operation (update it inside "
         "`with oa.no_grad():`, as optimizers do)",
         op);
  if (requires_grad(x) || (other && requires_grad(*other)))
    fail(ErrorKind::FailedPrecondition,
         "{}: an in-place op on values with autograd history is not recorded for backward; write x = x + y (or the "
         "op's out-of-place form) instead, or update inside `with oa.no_grad():`",
         op);
}

// Copies from's values into `to` (same element count and dtype) on the device.
void copy_values(const Matrix& from, const Matrix& to) {
  const auto bytes = static_cast<std::uint64_t>(to.numel()) * size_of(to.dtype());
  to.engine().copy(*from.storage(), 0, *to.storage(), 0, bytes);
}

}  // namespace

Matrix copy_not_view(const Matrix& source, Matrix result, const char* op) {
  if (result.storage() == source.storage()) return result;
  static std::size_t swept_at = 64;
  auto& marks = copy_marks();
  if (marks.size() >= 2 * swept_at) {
    std::erase_if(marks, [](const auto& entry) { return entry.second.storage.expired(); });
    swept_at = std::max<std::size_t>(64, marks.size());
  }
  marks[result.storage()->id()] = {result.storage(), op};
  return result;
}

std::vector<Matrix> copies_not_views(const Matrix& source, std::vector<Matrix> results, const char* op) {
  for (Matrix& r : results) r = copy_not_view(source, std::move(r), op);
  return results;
}

Matrix device_copy(const Matrix& x) {
  const Matrix own = Matrix::empty(x.shape(), x.dtype(), x.engine());
  copy_values(x, own);
  return own;
}

Matrix writable(const Matrix& x) { return copy_marks().contains(x.storage()->id()) ? device_copy(x) : x; }

namespace {

void write_in_place(const Matrix& x, const Matrix& result, const char* op) {
  if (!(result.shape() == x.shape()))
    fail(ErrorKind::InvalidArgument, "{}: the result's shape {} (broadcast) does not match the tensor's shape {}", op,
         result.shape(), x.shape());
  const Matrix value = convert(result, x.dtype());
  if (value.storage() != x.storage()) copy_values(value, x);
  x.storage()->bump_version();
}

}  // namespace

void update_in_place(const Matrix& x, const Matrix* other, const std::function<Matrix()>& compute, const char* op) {
  require_in_place(x, other, op);
  Matrix result;
  {
    NoGradGuard no_grad;
    result = compute();
  }
  write_in_place(x, result, op);
}

namespace {

// other * alpha: torch's alpha of add and sub (other itself for alpha 1).
Matrix scaled(const Matrix& other, float alpha) { return alpha == 1.0f ? other : other * alpha; }

// torch's add and sub: x + other * alpha and x - other * alpha.
Matrix add_alpha(const Matrix& x, const Matrix& other, float alpha) { return x + scaled(other, alpha); }
Matrix sub_alpha(const Matrix& x, const Matrix& other, float alpha) { return x - scaled(other, alpha); }

// ── Python numbers ──────────────────────────────────────────────────────────
// torch's promotion of a tensor x with a Python number s (torch.result_type):
// a floating x computes in its own dtype, s taken as a float; an int32 or bool
// x computes with a Python int in int32 (bool read as 1 and 0; torch gives
// int64, oa's integers are int32, so add, sub and mul wrap modulo 2^32) and
// with a Python float in float32 (torch's default dtype); true division gives
// float32 either way. Each operator and method that takes a number binds it
// twice: as a float (a Python float, or what pybind converts: a NumPy float
// scalar) and as an int (a Python int or bool, a NumPy integer), the overload
// pybind picks for an int (its first pass converts nothing).

// x (op) s for a floating x (the result in its dtype) and a host float.
using NumberFn = Matrix (*)(const Matrix&, float);
// x (op) t for two tensors of one dtype, broadcast: the int32 form; null
// where two integers give a float (true division).
using TensorFn = Matrix (*)(const Matrix&, const Matrix&);

// x (op) s * alpha with torch's promotion (above); alpha is torch's scale of
// add's and sub's other (1 elsewhere), which must be an integer where the op
// is computed in int32 (as torch refuses a float alpha for integral tensors).
// InvalidArgument naming `op` for that and for s * alpha outside int32.
template <class Number>
Matrix promoted(const Matrix& x, Number s, NumberFn number, TensorFn tensor, const char* op, float alpha = 1.0f) {
  if constexpr (std::is_integral_v<Number>) {
    if (!is_floating_point(x.dtype()) && tensor) {
      if (alpha != std::trunc(alpha))
        fail(ErrorKind::InvalidArgument, "{}: alpha {} must be an integer for a {} tensor and an int other (torch refuses a float "
             "alpha for integral tensors)", op, alpha, to_string(x.dtype()));
      const std::int64_t v = s * static_cast<std::int64_t>(alpha);
      if (v < INT32_MIN || v > INT32_MAX)
        fail(ErrorKind::InvalidArgument, "{}: {} is outside int32, the dtype of a {} tensor with a Python int (oa's integers are "
             "int32; torch: int64)", op, v, to_string(x.dtype()));
      return tensor(convert(x, DType::I32), int32_scalar(static_cast<std::int32_t>(v), x.engine()));
    }
  }
  return number(is_floating_point(x.dtype()) ? x : convert(x, DType::F32), static_cast<float>(s) * alpha);
}

// The operators' and methods' number forms.
Matrix plus(const Matrix& x, float s) { return x + s; }
Matrix minus(const Matrix& x, float s) { return x - s; }
Matrix times(const Matrix& x, float s) { return x * s; }
Matrix over(const Matrix& x, float s) { return x / s; }
Matrix power(const Matrix& x, float e) { return mx::pow(x, e); }
// A power of an integral tensor and a Python int, which torch computes in
// integers and oa does not (pow is float32).
Matrix integer_power(const Matrix& x, const Matrix&) {
  fail(ErrorKind::Unsupported, "pow: a power of a {} tensor {} and a Python int is an integer tensor in torch, which oa does not "
       "compute (its pow is float32): convert first (x.float() ** n)", to_string(x.dtype()), x.shape());
}

// The alpha argument that goes with a number `Number` (add's and sub's): a
// float beside a Python float; any object beside a Python int, so that
// pybind's first pass (no conversions) takes x.add(2, alpha=3) as ints, read
// by alpha_of.
template <class Number>
using AlphaOf = std::conditional_t<std::is_integral_v<Number>, py::object, float>;
float alpha_of(float alpha, const char*) { return alpha; }
// A Python int or float alpha; TypeError naming `op` for another type.
float alpha_of(const py::object& alpha, const char* op) {
  try {
    return alpha.cast<float>();
  } catch (const py::cast_error&) {
    throw py::type_error(
        fmt::format("{}: alpha must be a number, not {}", op, py::str(py::type::handle_of(alpha).attr("__name__")).cast<std::string>()));
  }
}

// x.add(other, alpha=1) and x.sub(...) (and oa.add, oa.sub) for a Python number other.
template <class Number>
auto add_number(bool subtract, const char* op) {
  return [subtract, op](const Matrix& x, Number other, const AlphaOf<Number>& alpha) {
    const float a = alpha_of(alpha, op);
    return subtract ? promoted(x, other, &minus, &mx::sub, op, a) : promoted(x, other, &plus, &mx::add, op, a);
  };
}

// A NumPy array operand of a binary op with x (x + a, a @ x, x += a, ...) as
// a tensor on x's engine: in x's dtype when x is floating (as a Python number
// is taken; oa has no float64), else in oa.tensor's dtype (int32, bool,
// float32), under the ops' dtype rules.
Matrix array_operand(const Matrix& x, const py::array& a, const char* op) {
  return from_array(a, is_floating_point(x.dtype()) ? std::optional(x.dtype()) : std::nullopt, false, x.engine(), op);
}

// The ndarray overload of a binary operator: fn(x, a) or, `reflected`, fn(a, x)
// (a + x calls x.__radd__(a)). Bound with py::arg("other").noconvert(), so
// that only an ndarray matches (not a list, nor a number NumPy would convert).
template <class Fn>
auto array_operator(Fn fn, bool reflected, const char* name) {
  return [fn, reflected, op = fmt::format("oa.Tensor.{}", name)](const Matrix& x, const py::array& other) {
    const Matrix a = array_operand(x, other, op.c_str());
    return reflected ? fn(a, x) : fn(x, a);
  };
}

// x.<method>(arg) and, where `dunder` is given, the augmented assignment
// (x += y), for a Tensor and/or a Python number `arg`; both return x itself
// (the same Python object, so a Parameter stays a Parameter).
struct InPlaceOp {
  const char* method;
  const char* name;  // the method's, for errors
  const char* dunder;
  const char* dunder_name;  // the augmented assignment's, for errors
  const char* arg;
  bool alpha;  // the method takes torch's alpha (arg * alpha is applied)
  TensorFn tensor;
  // For a number arg: promoted with `tensor` as the operators (an int keeps an
  // integral x in int32), or, without `tensor` (fill_), given x and the number.
  NumberFn number;
};

// x's new value from `other` (a Tensor, a Python float or int) under `op`.
template <class Other>
Matrix in_place_value(const Matrix& x, const Other& other, const InPlaceOp& op, const char* name, float alpha) {
  if constexpr (std::is_same_v<Other, Matrix>) return op.tensor(x, scaled(other, alpha));
  else if (!op.tensor) return op.number(x, static_cast<float>(other));
  else return promoted(x, other, op.number, op.tensor, name, alpha);
}

// torch's rule for an in-place op: the result's dtype must cast to x's within
// its kind or a wider one (bool < int32 < the floating dtypes), so a float
// result never goes into an int32 tensor nor an int32 one into a bool tensor.
void require_castable(const Matrix& result, const Matrix& x, const char* name) {
  const auto kind = [](DType d) { return d == DType::Bool ? 0 : d == DType::I32 ? 1 : 2; };
  if (kind(result.dtype()) > kind(x.dtype()))
    fail(ErrorKind::InvalidArgument, "{}: the result's dtype {} cannot be cast to the tensor's dtype {} in place (as torch: "
         "compute out of place, or convert the tensor first)", name, to_string(result.dtype()), to_string(x.dtype()));
}

template <class Other>
py::object apply_in_place(const py::object& self, const Other& other, const InPlaceOp& op, const char* name, float alpha = 1.0f) {
  const auto& x = self.cast<const Matrix&>();
  const Matrix* tensor_operand = nullptr;
  if constexpr (std::is_same_v<Other, Matrix>) tensor_operand = &other;
  update_in_place(x, tensor_operand, [&] {
    Matrix result = in_place_value(x, other, op, name, alpha);
    require_castable(result, x, name);
    return result;
  }, name);
  return self;
}

// `v` in x's shape and dtype: the value of x.fill_(v).
Matrix refilled(const Matrix& x, float v) { return filled(x.shape(), v, x.dtype(), x.engine(), "oa.Tensor.fill_"); }

const char* const in_place_doc =
    "In place, as torch's: computes the op, casts the result to x's dtype and writes it into x's own storage "
    "(seen by x's views and detach()), bumps x's version (backward through an op that saved x then refuses), and "
    "returns x itself. With grad mode on, a leaf that requires grad is refused (RuntimeError, as torch) and so are "
    "values with autograd history: update inside `with oa.no_grad():`, or write x = x + y. A tensor made by x[key], "
    "transpose, permute, mT, T, expand, split or chunk is a copy in oa, not a view as in torch, so in-place ops on it "
    "(or on its reshapes) raise oa.FailedPreconditionError instead of silently missing the source: assign into the "
    "source instead (x[key] = value).";

// op's method (with alpha where op takes it) and augmented assignment for an `Other` argument.
template <class Other>
void bind_in_place_op(TensorClass& t, const InPlaceOp& op) {
  if (op.alpha) {
    t.def(
        op.method,
        [&op](const py::object& self, const Other& other, const AlphaOf<Other>& alpha) {
          return apply_in_place<Other>(self, other, op, op.name, alpha_of(alpha, op.name));
        },
        py::arg(op.arg), py::kw_only(), py::arg("alpha") = 1.0f, in_place_doc);
  } else {
    t.def(
        op.method, [&op](const py::object& self, const Other& other) { return apply_in_place<Other>(self, other, op, op.name); },
        py::arg(op.arg), in_place_doc);
  }
  if (op.dunder)
    t.def(
        op.dunder, [&op](const py::object& self, const Other& other) { return apply_in_place<Other>(self, other, op, op.dunder_name); },
        py::is_operator());
  // x += a for a NumPy array a (see array_operand), in place as for a tensor.
  if constexpr (std::is_same_v<Other, Matrix>)
    if (op.dunder)
      t.def(
          op.dunder,
          [&op](const py::object& self, const py::array& other) {
            return apply_in_place<Matrix>(self, array_operand(self.cast<const Matrix&>(), other, op.dunder_name), op, op.dunder_name);
          },
          py::is_operator(), py::arg("other").noconvert());
}

void bind_in_place(TensorClass& t) {
  // Numbers as the operators take them (promoted; an int32 x stays int32 with
  // an int; require_castable refuses a float result for it, an int32 one for
  // a bool x); x / n and x ** n
  // of an integral x are floats (refused too), x ** int of one Unsupported.
  static const InPlaceOp ops[] = {
      {"add_", "oa.Tensor.add_", "__iadd__", "+= (oa.Tensor.__iadd__)", "other", true, &mx::add, &plus},
      {"sub_", "oa.Tensor.sub_", "__isub__", "-= (oa.Tensor.__isub__)", "other", true, &mx::sub, &minus},
      {"mul_", "oa.Tensor.mul_", "__imul__", "*= (oa.Tensor.__imul__)", "other", false, &mx::mul, &times},
      {"div_", "oa.Tensor.div_", "__itruediv__", "/= (oa.Tensor.__itruediv__)", "other", false, &mx::div, &over},
      {"pow_", "oa.Tensor.pow_", "__ipow__", "**= (oa.Tensor.__ipow__)", "exponent", false,
       [](const Matrix& a, const Matrix& b) { return mx::pow(a, b); }, &power},
      // src broadcast to x's shape, as torch's copy_.
      {"copy_", "oa.Tensor.copy_", nullptr, nullptr, "src", false,
       [](const Matrix& x, const Matrix& src) { return x.shape() == src.shape() ? src : mx::expand(src, x.shape().to_vector()); },
       nullptr},
      {"fill_", "oa.Tensor.fill_", nullptr, nullptr, "value", false, nullptr, &refilled},
  };
  for (const InPlaceOp& op : ops) {
    if (op.tensor) bind_in_place_op<Matrix>(t, op);
    if (op.number) bind_in_place_op<float>(t, op);
    if (op.number && op.tensor) bind_in_place_op<std::int64_t>(t, op);
  }
  t.def("zero_", [](const py::object& self) { return apply_in_place<float>(self, 0.0f, ops[6], "oa.Tensor.zero_"); },
        "x.fill_(0): in place, as fill_.");
}

// str(x): the shape, dtype and values (up to 6 leading and trailing ones per
// row, and 8 rows), as operator<< of oa::Matrix.
std::string str(const Matrix& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// repr(x), one line: the values (NumPy's formatting) only for up to 16
// elements, else the shape, as pybind's argument-mismatch TypeErrors and
// debuggers show it; then the dtype and requires_grad or grad_fn.
std::string repr(const Matrix& x) {
  if (!x.defined()) return "oa.Tensor(undefined)";
  std::string head;
  if (x.numel() <= 16) {
    const py::object text = py::module_::import("numpy").attr("array2string")(to_numpy(x), py::arg("separator") = ", ");
    bool line_start = false;  // a newline and the indentation after it become one space
    for (const char c : text.cast<std::string>()) {
      if (c == '\n') line_start = true;
      else if (!(line_start && c == ' ')) {
        if (line_start) head += ' ';
        line_start = false;
        head += c;
      }
    }
  } else {
    head = fmt::format("shape={}", x.shape());
  }
  std::string tail;
  const std::string grad_fn = autograd::grad_fn_name(x);
  if (!grad_fn.empty()) tail = fmt::format(", grad_fn=<{}>", grad_fn);
  else if (requires_grad(x)) tail = ", requires_grad=True";
  return fmt::format("oa.Tensor({}, dtype=oa.{}{})", head, py::cast(x.dtype()).attr("name").cast<std::string>(), tail);
}

}  // namespace

ml::Generator& default_generator() {
  static ml::Generator generator(0);
  return generator;
}

std::uint64_t seed_or_next(const std::optional<std::uint64_t>& seed) {
  return seed ? *seed : default_generator().next_seed();
}

py::object tensor_or_none(const Matrix& m) { return m.defined() ? py::cast(m) : py::none(); }

void bind_tensor(py::module_& m, TensorClass& t) {
  using Opt = std::optional<DType>;
  using OptEngine = std::optional<Engine>;
  py::module_ return_types = m.def_submodule("return_types", "torch.return_types: the named tuples of max and min");
  const py::object namedtuple = py::module_::import("collections").attr("namedtuple");
  for (auto [name, type] : {std::pair{"max", &max_type}, std::pair{"min", &min_type}}) {
    py::object made = namedtuple(name, py::make_tuple("values", "indices"), py::arg("module") = "oa.return_types");
    return_types.attr(name) = made;
    *type = made.release();
  }
  const char* const max_doc =
      "torch.max: x.max() the largest element (its gradient split among ties, as amax); x.max(dim, keepdim=False) "
      "the named tuple oa.return_types.max (values, int32 indices: the first maximum, NaN counting as largest; the "
      "gradient reaches the element at the index); x.max(other) the elementwise oa.maximum. float32, float16, bfloat16, "
      "int32 (exact), and bool (values any along dim, indices the first True, or 0 where none, as torch).";
  const char* const min_doc = "torch.min: as max, with the smallest (oa.return_types.min, oa.minimum; bool: all along dim, the "
                              "first False).";
  // NumPy defers to the Tensor's operators (array + tensor calls
  // Tensor.__radd__; NumPy's ufuncs refuse tensors), which take the array as a
  // tensor (array_operator): the result is an oa tensor with autograd intact.
  t.attr("__array_priority__") = 1000;
  t.attr("__array_ufunc__") = py::none();
  t.attr("__module__") = "oa";
  t.def_property_readonly("shape", [](const Matrix& x) { return shape_tuple(x.shape()); })
      .def("size",
           [](const Matrix& x, std::optional<int> dim) -> py::object {
             if (dim) return py::int_(x.dim(*dim));
             return shape_tuple(x.shape());
           },
           py::arg("dim") = py::none())
      .def_property_readonly("dtype", &Matrix::dtype)
      .def_property_readonly("ndim", &Matrix::rank)
      .def("dim", &Matrix::rank)
      .def("numel", &Matrix::numel)
      .def_property_readonly("engine", &Matrix::engine)
      .def("__len__",
           [](const Matrix& x) {
             if (x.rank() == 0) throw py::type_error("len() of a 0-d tensor");
             return x.dim(0);
           })
      .def("numpy", &to_numpy, "A copy as a NumPy array (bfloat16 as float32).")
      // Pickling (state dicts, copy.deepcopy, multiprocessing): the values as a
      // NumPy array, the dtype and whether a leaf requires grad; unpickled on
      // the default engine as a leaf (the autograd history is not pickled).
      .def(py::pickle(
          [](const Matrix& x) {
            const bool leaf_requires_grad = requires_grad(x) && autograd::grad_fn_name(x).empty();
            return py::make_tuple(to_numpy(x), static_cast<int>(x.dtype()), leaf_requires_grad);
          },
          [](const py::tuple& state) {
            if (state.size() != 3) throw py::value_error("oa.Tensor.__setstate__: the state must be (values, dtype, requires_grad)");
            const int code = state[1].cast<int>();
            for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool})
              if (static_cast<int>(d) == code) return from_array(state[0].cast<py::array>(), d, state[2].cast<bool>(), std::nullopt, "oa.Tensor.__setstate__");
            throw py::value_error("oa.Tensor.__setstate__: unknown dtype code " + std::to_string(code));
          }))
      .def(
          "__array__",
          [](const Matrix& x, py::object dtype, py::object) {
            py::object a = to_numpy(x);
            return dtype.is_none() ? a : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("tolist", [](const Matrix& x) { return to_numpy(x).attr("tolist")(); })
      .def("item", &item)
      // Python's conversions, as torch: bool() of one element (x > 0 in an
      // if), int() truncates, float(), and operator.index() of one int32 or
      // bool element (a list index).
      .def("__bool__", &truth,
           "torch's truth value: one element is its value != 0; more or no elements raise oa.FailedPreconditionError "
           "(a RuntimeError: ambiguous).")
      .def("__int__", [](const Matrix& x) { return to_int(x, "oa.Tensor.__int__"); })
      .def("__float__", [](const Matrix& x) { return py::float_(scalar(x, "oa.Tensor.__float__")); })
      .def("__index__",
           [](const Matrix& x) {
             if (x.numel() != 1 || is_floating_point(x.dtype()))
               throw py::type_error("only integer tensors of a single element can be converted to an index");
             return to_int(x, "oa.Tensor.__index__");
           })
      .def("__repr__", &repr)
      .def("__str__", &str)
      // Conversions (see convert): (pred == target).float().mean() is an accuracy.
      .def("to", &convert, py::arg("dtype"),
           "A copy as `dtype` (x itself if already): between float32, float16 and bfloat16, int32 to those (rounded to "
           "nearest even past 2^24, as torch), bool to those and to int32 (1, 0), any dtype to bool (x != 0); a float "
           "dtype to int32 raises oa.UnsupportedError.")
      .def("float", [](const Matrix& x) { return convert(x, DType::F32); })
      .def("half", [](const Matrix& x) { return convert(x, DType::F16); })
      .def("bfloat16", [](const Matrix& x) { return convert(x, DType::BF16); })
      .def("bool", [](const Matrix& x) { return convert(x, DType::Bool); })
      // Reshapes (views: they share the storage) and layout ops (copies).
      .def("reshape", [](const Matrix& x, const py::args& shape) { return x.reshape(size_of_args(shape)); })
      .def("view", [](const Matrix& x, const py::args& shape) { return x.reshape(size_of_args(shape)); })
      // permute, transpose, mT and expand return copies (torch: views), so
      // in-place ops on their results raise (see copy_not_view).
      .def("permute",
           [](const Matrix& x, const py::args& dims) {
             return copy_not_view(x, mx::permute(x, size_of_args(dims)), "oa.Tensor.permute");
           },
           "torch's permute, but a copy, not a view: in-place ops on the result raise oa.FailedPreconditionError.")
      .def("transpose",
           [](const Matrix& x, int dim0, int dim1) {
             return copy_not_view(x, mx::transpose(x, dim0, dim1), "oa.Tensor.transpose");
           },
           py::arg("dim0"), py::arg("dim1"),
           "torch's transpose, but a copy, not a view: in-place ops on the result raise oa.FailedPreconditionError.")
      .def_property_readonly(
          "mT", [](const Matrix& x) { return copy_not_view(x, mx::transpose(x), "oa.Tensor.mT"); },
          "The last two axes swapped: a copy, not a view as torch's; in-place ops on it raise "
          "oa.FailedPreconditionError.")
      .def_property_readonly(
          "T",
          [](const Matrix& x) {
            if (x.rank() < 2) return x;
            std::vector<std::int64_t> reversed(x.rank());
            for (std::size_t i = 0; i < x.rank(); ++i) reversed[i] = static_cast<std::int64_t>(x.rank() - 1 - i);
            return copy_not_view(x, mx::permute(x, reversed), "oa.Tensor.T");
          },
          "torch's x.T: the axes reversed ([R, C] -> [C, R]; rank 0 and 1: x itself). A copy, not a view as torch's, "
          "for rank >= 2: in-place ops on it raise oa.FailedPreconditionError.")
      .def(
          "clone",
          [](const Matrix& x) {
            return grad_enabled() && requires_grad(x) ? x * 1.0f : device_copy(x);
          },
          "torch's clone: the same values (any dtype) in a new storage, which in-place ops may write. Differentiable: "
          "with grad mode on and x requiring grad, the copy is recorded (x * 1) and its gradient flows to x.")
      .def("expand",
           [](const Matrix& x, const py::args& shape) {
             return copy_not_view(x, mx::expand(x, size_of_args(shape)), "oa.Tensor.expand");
           },
           "torch's expand, but a copy, not a view: in-place ops on the result raise oa.FailedPreconditionError.")
      .def("squeeze", [](const Matrix& x, std::optional<int> dim) { return mx::squeeze(x, dim); },
           py::arg("dim") = py::none())
      .def("unsqueeze", [](const Matrix& x, int dim) { return mx::unsqueeze(x, dim); }, py::arg("dim"))
      .def("flatten", [](const Matrix& x, int start_dim, int end_dim) { return mx::flatten(x, start_dim, end_dim); },
           py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      // Reductions.
      // Reductions over dim = None (every axis), an int or a tuple of ints.
      .def("sum", reduction<&mx::sum>("oa.Tensor.sum"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("mean", reduction<&mx::mean>("oa.Tensor.mean"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amax", reduction<&mx::max>("oa.Tensor.amax"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amin", reduction<&mx::min>("oa.Tensor.amin"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("max", [](const Matrix& x, const py::object& dim, bool keepdim) { return extreme(x, dim, keepdim, true, "oa.Tensor.max"); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false, max_doc)
      .def("min", [](const Matrix& x, const py::object& dim, bool keepdim) { return extreme(x, dim, keepdim, false, "oa.Tensor.min"); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false, min_doc)
      .def("prod", reduction<&mx::prod>("oa.Tensor.prod"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("logsumexp", reduction<&mx::logsumexp>("oa.Tensor.logsumexp"), py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("var", spread<&mx::var>("oa.Tensor.var"), py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1.0f,
           py::arg("keepdim") = false)
      .def("std", spread<&mx::std>("oa.Tensor.std"), py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1.0f,
           py::arg("keepdim") = false)
      .def("norm", norm("oa.Tensor.norm"), py::arg("p") = 2.0f, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("cumsum", &mx::cumsum, py::arg("dim"))
      .def("__pow__", [](const Matrix& a, const Matrix& b) { return mx::pow(a, b); }, py::is_operator())
      .def("argmax", &argmax, py::arg("dim") = py::none(), py::arg("keepdim") = false,
           "torch.argmax: int32 index of the maximum along dim, or of the flattened tensor without dim.")
      // Arithmetic: a Tensor or a Python number (the number forms below) on either side.
      .def("__add__", [](const Matrix& a, const Matrix& b) { return a + b; }, py::is_operator())
      .def("__sub__", [](const Matrix& a, const Matrix& b) { return a - b; }, py::is_operator())
      .def("__mul__", [](const Matrix& a, const Matrix& b) { return a * b; }, py::is_operator())
      .def("__truediv__", [](const Matrix& a, const Matrix& b) { return a / b; }, py::is_operator())
      .def("__matmul__", [](const Matrix& a, const Matrix& b) { return mx::matmul(a, b); }, py::is_operator())
      .def("matmul", &mx::matmul, py::arg("other"), "self @ other (torch.Tensor.matmul); see oa.matmul.")
      .def("__neg__", [](const Matrix& a) { return -a; })
      .def("__abs__", [](const Matrix& a) { return mx::abs(a); }, "abs(x): x.abs() (torch.Tensor.__abs__).")
      .def("add", &add_alpha, py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f,
           "x + other * alpha (torch.add), other a tensor of x's dtype (broadcast) or a Python number. A number follows "
           "torch's promotion of Python scalars, here and in the operators (+, -, *, /, **, ==, <, ..., and +=, -=, ...): "
           "a float16, bfloat16 or float32 x keeps its dtype; an int32 or bool x with an int gives int32 (bool as 1 and "
           "0; torch gives int64: add, sub and mul wrap modulo 2^32 here, and an int outside int32 raises "
           "oa.InvalidArgumentError), with a float float32 (torch's default dtype); true division of an int32 or bool x "
           "gives float32, and a power of one with an int raises oa.UnsupportedError (torch: an integer tensor). With "
           "an int other and an int32 or bool x, alpha must be an integer (oa.InvalidArgumentError, as torch). In-place "
           "forms refuse a result of another dtype than x's (x += 0.5 on int32).")
      .def("add", add_number<float>(false, "oa.Tensor.add"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f)
      .def("add", add_number<std::int64_t>(false, "oa.Tensor.add"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f)
      .def("sub", &sub_alpha, py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f,
           "x - other * alpha (torch.sub); numbers as add.")
      .def("sub", add_number<float>(true, "oa.Tensor.sub"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f)
      .def("sub", add_number<std::int64_t>(true, "oa.Tensor.sub"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f)
      // Comparisons give bool tensors (torch.Tensor.__eq__ ...); a Tensor stays
      // hashable by identity, as torch.Tensor.
      .def("__eq__", [](const Matrix& a, const Matrix& b) { return mx::eq(a, b); }, py::is_operator())
      .def("__ne__", [](const Matrix& a, const Matrix& b) { return mx::ne(a, b); }, py::is_operator())
      .def("__lt__", [](const Matrix& a, const Matrix& b) { return mx::lt(a, b); }, py::is_operator())
      .def("__le__", [](const Matrix& a, const Matrix& b) { return mx::le(a, b); }, py::is_operator())
      .def("__gt__", [](const Matrix& a, const Matrix& b) { return mx::gt(a, b); }, py::is_operator())
      .def("__ge__", [](const Matrix& a, const Matrix& b) { return mx::ge(a, b); }, py::is_operator())
      .def("__hash__", [](const py::object& self) { return reinterpret_cast<std::intptr_t>(self.ptr()); })
      .def("masked_fill", &mx::masked_fill, py::arg("mask"), py::arg("value"))
      .def("tril", &mx::tril, py::arg("diagonal") = 0)
      .def("triu", &mx::triu, py::arg("diagonal") = 0)
      .def("clamp",
           [](const Matrix& x, std::optional<float> min, std::optional<float> max) {
             return mx::clamp(x, min.value_or(-std::numeric_limits<float>::infinity()),
                              max.value_or(std::numeric_limits<float>::infinity()));
           },
           py::arg("min") = py::none(), py::arg("max") = py::none());

  // A Python number on either side of the operators (see promoted): a float
  // and an int overload each.
  struct NumberOperator {
    const char* name;
    NumberFn number;
    TensorFn tensor;
  };
  const NumberOperator number_operators[] = {
      {"__add__", &plus, &mx::add},
      {"__radd__", &plus, &mx::add},
      {"__sub__", &minus, &mx::sub},
      {"__rsub__", [](const Matrix& a, float s) { return mx::affine(a, -1.0f, s); },
       [](const Matrix& a, const Matrix& s) { return s - a; }},
      {"__mul__", &times, &mx::mul},
      {"__rmul__", &times, &mx::mul},
      {"__truediv__", &over, nullptr},
      {"__rtruediv__", [](const Matrix& a, float s) { return mx::reciprocal(a) * s; }, nullptr},
      {"__pow__", &power, &integer_power},
      {"__rpow__", [](const Matrix& b, float s) { return mx::pow(Matrix::full({}, s, b.engine()), b); }, &integer_power},
      {"__eq__", [](const Matrix& a, float s) { return mx::eq(a, s); }, &mx::eq},
      {"__ne__", [](const Matrix& a, float s) { return mx::ne(a, s); }, &mx::ne},
      {"__lt__", [](const Matrix& a, float s) { return mx::lt(a, s); }, &mx::lt},
      {"__le__", [](const Matrix& a, float s) { return mx::le(a, s); }, &mx::le},
      {"__gt__", [](const Matrix& a, float s) { return mx::gt(a, s); }, &mx::gt},
      {"__ge__", [](const Matrix& a, float s) { return mx::ge(a, s); }, &mx::ge}};
  for (const NumberOperator& o : number_operators) {
    const std::string op = fmt::format("oa.Tensor.{}", o.name);
    t.def(o.name, [o, op](const Matrix& x, float s) { return promoted(x, s, o.number, o.tensor, op.c_str()); }, py::is_operator());
    t.def(o.name, [o, op](const Matrix& x, std::int64_t s) { return promoted(x, s, o.number, o.tensor, op.c_str()); }, py::is_operator());
  }

  // A NumPy array on either side of the binary operators (after the Tensor
  // and number overloads, so that those are tried first).
  struct ArrayOperator {
    const char* name;
    const char* reflected;  // nullptr: a comparison (Python reflects a < x as x > a itself)
    Matrix (*fn)(const Matrix&, const Matrix&);
  };
  const ArrayOperator array_operators[] = {
      {"__add__", "__radd__", &mx::add},       {"__sub__", "__rsub__", &mx::sub},
      {"__mul__", "__rmul__", &mx::mul},       {"__truediv__", "__rtruediv__", &mx::div},
      {"__matmul__", "__rmatmul__", &mx::matmul},
      {"__pow__", "__rpow__", [](const Matrix& a, const Matrix& b) { return mx::pow(a, b); }},
      {"__eq__", nullptr, &mx::eq},            {"__ne__", nullptr, &mx::ne},
      {"__lt__", nullptr, &mx::lt},            {"__le__", nullptr, &mx::le},
      {"__gt__", nullptr, &mx::gt},            {"__ge__", nullptr, &mx::ge}};
  for (const ArrayOperator& o : array_operators) {
    t.def(o.name, array_operator(o.fn, false, o.name), py::is_operator(), py::arg("other").noconvert());
    if (o.reflected) t.def(o.reflected, array_operator(o.fn, true, o.reflected), py::is_operator(), py::arg("other").noconvert());
  }

  bind_in_place(t);

  // The elementwise functions, as methods and as oa.<name>.
  struct Unary {
    const char* name;
    Matrix (*fn)(const Matrix&);
  };
  const Unary unary[] = {{"exp", &mx::exp},       {"log", &mx::log},         {"sqrt", &mx::sqrt},
                         {"rsqrt", &mx::rsqrt},   {"reciprocal", &mx::reciprocal}, {"abs", &mx::abs},
                         {"square", &mx::square}, {"relu", &mx::relu},       {"sigmoid", &mx::sigmoid},
                         {"tanh", &mx::tanh},     {"neg", &mx::neg},         {"sin", &mx::sin},
                         {"cos", &mx::cos},       {"exp2", &mx::exp2},       {"log1p", &mx::log1p},
                         {"expm1", &mx::expm1},   {"erf", &mx::erf},         {"sign", &mx::sign},
                         {"floor", &mx::floor},   {"ceil", &mx::ceil},       {"round", &mx::round}};
  for (const auto& u : unary) {
    t.def(u.name, u.fn);
    m.def(u.name, u.fn, py::arg("input"));
  }
  m.def("matmul", &mx::matmul, py::arg("input"), py::arg("other"), "input @ other (torch.matmul): 1-D operands as torch (a row / a column the result drops; [K] @ [K] is the dot\n"
        "product, shape []), batch extents broadcast ([2, 1, 3, 4] @ [5, 4, 6] -> [2, 5, 3, 6]); f32, float16 or\n"
        "bfloat16, both one dtype. ValueError (oa.InvalidArgumentError) naming both shapes when inner extents differ or\n"
        "batch extents do not broadcast.");
  m.def("maximum", &mx::maximum, py::arg("input"), py::arg("other"));
  m.def("where", &mx::where, py::arg("condition"), py::arg("input"), py::arg("other"),
        "torch.where(condition, input, other): NumPy broadcasting, condition bool.");
  m.def("tril", &mx::tril, py::arg("input"), py::arg("diagonal") = 0);
  m.def("triu", &mx::triu, py::arg("input"), py::arg("diagonal") = 0);
  m.def("minimum", &mx::minimum, py::arg("input"), py::arg("other"));
  m.def("add", &add_alpha, py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f,
        "input + other * alpha (torch.add); a Python number other is promoted as torch does (see oa.Tensor.add).");
  m.def("add", add_number<float>(false, "oa.add"), py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f);
  m.def("add", add_number<std::int64_t>(false, "oa.add"), py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f);
  m.def("sub", &sub_alpha, py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f,
        "input - other * alpha (torch.sub); numbers as oa.add.");
  m.def("sub", add_number<float>(true, "oa.sub"), py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f);
  m.def("sub", add_number<std::int64_t>(true, "oa.sub"), py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1.0f);
  m.def("pow", [](const Matrix& a, const Matrix& b) { return mx::pow(a, b); }, py::arg("input"), py::arg("exponent"));
  m.def("pow", [](const Matrix& a, float e) { return promoted(a, e, &power, &integer_power, "oa.pow"); }, py::arg("input"),
        py::arg("exponent"));
  m.def("pow", [](const Matrix& a, std::int64_t e) { return promoted(a, e, &power, &integer_power, "oa.pow"); }, py::arg("input"),
        py::arg("exponent"));
  m.def("cumsum", &mx::cumsum, py::arg("input"), py::arg("dim"));
  m.def("argmax", &argmax, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        "torch.argmax: int32 index of the maximum along dim, or of the flattened tensor without dim.");
  m.def("sum", reduction<&mx::sum>("oa.sum"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("mean", reduction<&mx::mean>("oa.mean"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("max", [](const Matrix& x, const py::object& dim, bool keepdim) { return extreme(x, dim, keepdim, true, "oa.max"); },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, max_doc);
  m.def("min", [](const Matrix& x, const py::object& dim, bool keepdim) { return extreme(x, dim, keepdim, false, "oa.min"); },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, min_doc);
  m.def("amax", reduction<&mx::max>("oa.amax"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("amin", reduction<&mx::min>("oa.amin"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("prod", reduction<&mx::prod>("oa.prod"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("logsumexp", reduction<&mx::logsumexp>("oa.logsumexp"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("var", spread<&mx::var>("oa.var"), py::arg("input"), py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1.0f,
        py::arg("keepdim") = false);
  m.def("std", spread<&mx::std>("oa.std"), py::arg("input"), py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1.0f,
        py::arg("keepdim") = false);
  m.def("norm", norm("oa.norm"), py::arg("input"), py::arg("p") = 2.0f, py::arg("dim") = py::none(), py::arg("keepdim") = false);

  // Creation.
  m.def(
      "tensor",
      [](py::object data, Opt dtype, bool requires_grad, const OptEngine& engine) {
        const py::array array = py::module_::import("numpy").attr("asarray")(data);
        return from_array(array, dtype, requires_grad, engine, "oa.tensor");
      },
      py::arg("data"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false, py::arg("engine") = py::none(),
      "A new leaf holding a copy of `data` (torch.tensor). Without dtype: float16 stays float16, other floats become "
      "float32, integers int32, booleans bool; floats into int32 truncate toward zero. Raises oa.InvalidArgumentError "
      "for data of no oa dtype (complex, strings) and, into int32, for an element outside int32, NaN or infinite "
      "(naming the element).");
  m.def(
      "from_numpy",
      [](const py::array& array, const OptEngine& engine) {
        return from_array(array, std::nullopt, false, engine, "oa.from_numpy");
      },
      py::arg("ndarray"), py::arg("engine") = py::none(),
      "A tensor holding a copy of a NumPy array (torch.from_numpy shares memory; oa's live on the device).");
  m.def(
      "zeros",
      [](const py::args& size, Opt dtype, bool requires_grad, const OptEngine& engine) {
        return finish(filled(Shape(size_of_args(size)), 0.0f, dtype.value_or(DType::F32), engine, "oa.zeros"), {},
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, py::arg("engine") = py::none());
  m.def(
      "ones",
      [](const py::args& size, Opt dtype, bool requires_grad, const OptEngine& engine) {
        return finish(filled(Shape(size_of_args(size)), 1.0f, dtype.value_or(DType::F32), engine, "oa.ones"), {},
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, py::arg("engine") = py::none());
  m.def(
      "full",
      [](const std::vector<std::int64_t>& size, float fill_value, Opt dtype, bool requires_grad,
         const OptEngine& engine) {
        return finish(filled(Shape(size), fill_value, dtype.value_or(DType::F32), engine, "oa.full"), {}, requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      py::arg("engine") = py::none());
  m.def(
      "arange",
      [](float start, std::optional<float> end, float step, Opt dtype, bool requires_grad, const OptEngine& engine) {
        // arange(end) counts from 0, as torch.arange.
        const float first = end ? start : 0.0f, last = end ? *end : start;
        if (dtype == DType::I32) {  // counted on the host (no op converts float32 to int32), as torch: in double, truncated
          if (step == 0.0f) fail(ErrorKind::InvalidArgument, "oa.arange: step must be nonzero");
          const double count = std::max(0.0, std::ceil((double{last} - first) / step));
          if (count > 2147483647.0 || std::max(std::abs(first), std::abs(last)) > 2147483520.0f)
            fail(ErrorKind::InvalidArgument, "oa.arange: int32 values from {} to {} by {} do not fit int32", first, last, step);
          std::vector<std::int32_t> values(static_cast<std::size_t>(count));
          for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(first + static_cast<double>(i) * step);
          return finish(Matrix::from_i32({static_cast<std::int64_t>(values.size())}, values, engine), {}, requires_grad);
        }
        return finish(Matrix::arange(first, last, step, engine), dtype, requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1.0f, py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false, py::arg("engine") = py::none(),
      "Values start, start + step, ... below end: float32, or the dtype given (int32 counted on the host).");
  m.def(
      "rand",
      [](const py::args& size, std::optional<std::uint64_t> seed, Opt dtype, bool requires_grad,
         const OptEngine& engine) {
        return finish(Matrix::uniform(Shape(size_of_args(size)), 0.0f, 1.0f, seed_or_next(seed), engine), dtype,
                      requires_grad);
      },
      py::arg("seed") = py::none(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      py::arg("engine") = py::none(),
      "Uniform on [0, 1) (Philox-4x32-10, Matrix::uniform): the same seed gives the same values on every device; "
      "without one, the next seed of the stream oa.manual_seed restarts.");
  m.def(
      "randn",
      [](const py::args& size, std::optional<std::uint64_t> seed, Opt dtype, bool requires_grad,
         const OptEngine& engine) {
        return finish(Matrix::normal(Shape(size_of_args(size)), 0.0f, 1.0f, seed_or_next(seed), engine), dtype,
                      requires_grad);
      },
      py::arg("seed") = py::none(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      py::arg("engine") = py::none(), "Standard normal (Box-Muller over Philox, Matrix::normal); seeds as oa.rand.");
  m.def(
      "manual_seed", [](std::uint64_t seed) { default_generator() = ml::Generator(seed); }, py::arg("seed"),
      "Restarts the seed stream (oa::ml::Generator) of oa.rand, oa.randn and dropout calls given no seed.");
}

}  // namespace oa::python
