// oa.Tensor (oa::Matrix): conversion from and to NumPy, properties,
// arithmetic and the views of oa/matrix, and the creation functions.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
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
  if ((is_floating_point(from) || from == DType::I32) && (is_floating_point(dtype) || dtype == DType::I32)) return mx::cast(x, dtype);
  if (from == DType::Bool && dtype == DType::I32) return mx::where(x, int32_scalar(1, x.engine()), int32_scalar(0, x.engine()));
  if (from == DType::Bool && is_floating_point(dtype))
    return mx::cast(mx::where(x, Matrix::ones({}, x.engine()), Matrix::zeros({}, x.engine())), dtype);
  if (dtype == DType::Bool) {
    if (from == DType::I32) return mx::ne(x, int32_scalar(0, x.engine()));
    return mx::ne(mx::cast(x, DType::F32), 0.0f);
  }
  fail(ErrorKind::Unsupported, "oa.Tensor.to: no conversion from {} to {} (oa converts between float32, float16, "
       "bfloat16 and int32, from bool to those, and from any dtype to bool)", to_string(from), to_string(dtype));
}

namespace {

// The creation functions' common tail: dtype (a conversion) and requires_grad.
Matrix finish(Matrix m, std::optional<DType> dtype, bool requires_grad) {
  if (dtype) m = convert(m, *dtype);
  if (requires_grad) set_requires_grad(m);
  return m;
}

}  // namespace

Matrix arg_extreme(const Matrix& x, std::optional<int> dim, bool keepdim, bool largest) {
  if (x.rank() == 0) {  // torch: index 0, for dim None, 0 or -1
    if (dim && *dim != 0 && *dim != -1)
      fail(ErrorKind::InvalidArgument, "{}: dim {} is out of range for a 0-d tensor (expected 0 or -1)", largest ? "oa.argmax" : "oa.argmin",
           *dim);
    return int32_scalar(0, x.engine());
  }
  const auto pick = [largest, keepdim](const Matrix& m, int d) { return largest ? mx::argmax(m, d, keepdim) : mx::argmin(m, d, keepdim); };
  if (dim) return pick(x, *dim);
  const Matrix r = pick(x.reshape({x.numel()}), -1);
  return keepdim ? r.reshape(std::vector<std::int64_t>(x.rank(), 1)) : r;
}

void numpy_aliases(py::object& dim, bool& keepdim, const py::object& axis, const std::optional<bool>& keepdims, const char* op) {
  if (!axis.is_none()) {
    if (!dim.is_none()) throw py::type_error(fmt::format("{}: got dim and its alias axis; give one of them", op));
    dim = axis;
  }
  if (keepdims) {
    if (keepdim) throw py::type_error(fmt::format("{}: got keepdim and its alias keepdims; give one of them", op));
    keepdim = *keepdims;
  }
}

std::function<Matrix(const Matrix&, py::object, bool, const py::object&, const std::optional<bool>&)> arg_extreme_of(bool largest,
                                                                                                                 const char* op) {
  return [largest, op](const Matrix& x, py::object dim, bool keepdim, const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    if (!dim.is_none() && !is_int(dim))
      throw py::type_error(fmt::format("{}: dim must be None or an int, not {}", op,
                                       py::str(py::type::handle_of(dim).attr("__name__")).cast<std::string>()));
    return arg_extreme(x, dim.is_none() ? std::nullopt : std::optional<int>(dim.cast<int>()), keepdim, largest);
  };
}

namespace {

// PyTorch's dim of a reduction: None (every axis), an int, or a tuple or
// list of ints, as the axis list of oa/matrix/reduction.hpp. Throws TypeError
// naming `op` for another type, InvalidArgument for an axis outside x's rank.
std::vector<int> reduction_dims(const Matrix& x, const py::object& dim, const char* op) {
  if (dim.is_none()) return {};
  const bool one = is_int(dim);
  if (!one && !(py::isinstance<py::tuple>(dim) || py::isinstance<py::list>(dim)))
    throw py::type_error(fmt::format("{}: dim must be None, an int or a tuple of ints, not {}", op,
                                     py::str(py::type::handle_of(dim).attr("__name__")).cast<std::string>()));
  const auto rank = std::max<long long>(static_cast<long long>(x.rank()), 1);
  std::vector<int> dims;
  for (const py::handle d : one ? py::tuple(py::make_tuple(dim)) : py::tuple(dim)) {
    if (!is_int(d))
      throw py::type_error(fmt::format("{}: dim must be None, an int or a tuple of ints, not one holding {}", op,
                                       py::str(py::repr(d)).cast<std::string>()));
    int overflow = 0;
    const long long a = PyLong_AsLongLongAndOverflow(d.ptr(), &overflow);
    if (overflow || a < -rank || a >= rank)
      fail(ErrorKind::InvalidArgument, "{}: dim {} is out of range for x of shape {} (expected an axis in [{}, {}])", op,
           py::str(d).cast<std::string>(), x.shape(), -rank, rank - 1);
    const auto axis = static_cast<int>(a < 0 ? a + rank : a);
    if (std::ranges::find(dims, axis) != dims.end())
      fail(ErrorKind::InvalidArgument, "{}: dim {} appears multiple times in the list of dims {} (x of shape {})", op, axis,
           py::str(py::repr(dim)).cast<std::string>(), x.shape());
    dims.push_back(axis);
  }
  return dims;
}

// torch.permute(x, dims) as `op`: dims must name each of x's axes once
// (negative ones count from the end); a copy, not a view (see copy_not_view).
Matrix permute(const Matrix& x, const std::vector<std::int64_t>& dims, const char* op) {
  const auto rank = static_cast<std::int64_t>(x.rank());
  const auto refuse = [&](const std::string& why) {
    fail(ErrorKind::InvalidArgument, "{}: dims ({}) must be a permutation of the axes of x of shape {}: {}", op, fmt::join(dims, ", "),
         x.shape(), why);
  };
  if (static_cast<std::int64_t>(dims.size()) != rank) refuse(fmt::format("len(dims) = {} is not x.dim() = {}", dims.size(), rank));
  std::vector<bool> seen(static_cast<std::size_t>(rank));
  for (const std::int64_t d : dims) {
    if (d < -rank || d >= rank) refuse(fmt::format("dim {} is out of range [{}, {}]", d, -rank, rank - 1));
    const auto axis = static_cast<std::size_t>(d < 0 ? d + rank : d);
    if (seen[axis]) refuse(fmt::format("duplicate dims are not allowed (axis {} appears twice)", axis));
    seen[axis] = true;
  }
  return copy_not_view(x, mx::permute(x, dims), op);
}

// x.sum(dim=None, keepdim=False) and its kin over any axes, as `op` in errors.
template <Matrix (*Reduce)(const Matrix&, const std::vector<int>&, bool)>
auto reduction(const char* op) {
  return [op](const Matrix& x, py::object dim, bool keepdim, const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    return Reduce(x, reduction_dims(x, dim, op), keepdim);
  };
}
// x.var(dim=None, unbiased=None, keepdim=False, *, correction=None) and
// x.std(...), torch's two signatures in one: the legacy unbiased (True: a
// correction of 1, False: 0; also taken as the first argument, x.var(False))
// or correction (default 1), not both (TypeError, as torch).
template <Matrix (*Reduce)(const Matrix&, const std::vector<int>&, float, bool)>
auto spread(const char* op) {
  return [op](const Matrix& x, py::object dim, std::optional<bool> unbiased, bool keepdim, std::optional<float> correction,
              const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    if (py::isinstance<py::bool_>(dim) && !unbiased) {
      unbiased = dim.cast<bool>();
      dim = py::none();
    }
    if (unbiased && correction) throw py::type_error(fmt::format("{}: give unbiased or correction, not both (as torch)", op));
    return Reduce(x, reduction_dims(x, dim, op), correction.value_or(unbiased.value_or(true) ? 1.0f : 0.0f), keepdim);
  };
}

// x.norm(p, dim, keepdim) as `op` in errors.
auto norm(const char* op) {
  return [op](const Matrix& x, float p, py::object dim, bool keepdim, const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    return mx::norm(x, p, reduction_dims(x, dim, op), keepdim);
  };
}

// torch.all (every) or torch.any over dim (None, an int or a tuple of ints) as
// `op` in errors: bool, whether every element (or any) is nonzero, for x of
// any dtype. It counts the False (all) or True (any) elements in int32, so an
// empty reduction gives True (all) or False (any), as torch.
auto all_or_any(bool every, const char* op) {
  return [every, op](const Matrix& x, py::object dim, bool keepdim, const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    const Matrix b = convert(x, DType::Bool);
    const Matrix count = mx::sum(every ? mx::bitwise_not(b) : b, reduction_dims(x, dim, op), keepdim);
    const Matrix zero = int32_scalar(0, x.engine());
    return every ? mx::eq(count, zero) : mx::ne(count, zero);
  };
}

// torch.transpose(x, dim0, dim1) as `op`: a copy, not a view (see copy_not_view).
auto transpose(const char* op) {
  return [op](const Matrix& x, int dim0, int dim1) { return copy_not_view(x, mx::transpose(x, dim0, dim1), op); };
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
  if (!is_int(dim))
    throw py::type_error(fmt::format("{}: dim must be an int, a tensor (the elementwise form) or None, not {} (several "
                                     "axes: amax or amin)", op, py::str(py::type::handle_of(dim).attr("__name__")).cast<std::string>()));
  const int axis = reduction_dims(x, dim, op)[0];
  if (x.rank() == 0)  // torch: the value itself and index 0 (dim 0 or -1)
    return (largest ? max_type : min_type)(largest ? mx::max(x, {}) : mx::min(x, {}), int32_scalar(0, x.engine()));
  if (x.dim(axis) == 0)
    fail(ErrorKind::InvalidArgument, "{}: expected reduction dim {} to have non-zero size (x of shape {}), as torch", op, axis, x.shape());
  // argmax and argmin refuse bool (as torch's): a bool x's indices are those of
  // its int32 0s and 1s, the first True (max) or False (min), or 0 where none.
  const Matrix ranked = x.dtype() == DType::Bool ? convert(x, DType::I32) : x;
  const Matrix indices = largest ? mx::argmax(ranked, axis, true) : mx::argmin(ranked, axis, true);
  // Float values are taken at the indices (their gradient reaches that element); int32 and bool
  // values (no gradient) are the exact amax or amin (bool: any, all).
  const Matrix values = !is_floating_point(x.dtype()) ? (largest ? mx::max(x, {axis}, true) : mx::min(x, {axis}, true))
                                                      : mx::take_along_axis(x, indices, axis);
  return (largest ? max_type : min_type)(keepdim ? values : mx::squeeze(values, axis),
                                         keepdim ? indices : mx::squeeze(indices, axis));
}

// x.max(dim=None, keepdim=False) or x.min(...) as `op` in errors, with the NumPy-style aliases.
auto extreme(bool largest, const char* op) {
  return [largest, op](const Matrix& x, py::object dim, bool keepdim, const py::object& axis, const std::optional<bool>& keepdims) {
    numpy_aliases(dim, keepdim, axis, keepdims, op);
    return extreme(x, dim, keepdim, largest, op);
  };
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
// that requires grad is refused as in torch; when x or the operand has
// autograd history, the result is computed with history and x takes it (as
// torch rebases x's grad_fn), which needs x's storage to be x's alone: a view
// of x (or a value saved from x) would keep the old history. A
// copy_not_view result is refused in any mode.
void require_in_place(const Matrix& x, const Matrix* other, const char* op) {
  const auto& marks = copy_marks();
  if (const auto it = marks.find(x.storage()->id()); it != marks.end())
    fail(ErrorKind::FailedPrecondition,
         "{}: this tensor was made by {}, which in oa returns a copy, not a view as in torch (so do x[key], "
         "transpose, permute, mT, T, expand, split and chunk): an in-place op on it would not reach the tensor it was "
         "taken from. Update the source in one subscript instead (x[i, j] += v or x[i, j] = v, which write x; not "
         "y = x[i]; y += v, nor x[i][j] += v), or compute the new value out of place; only reshape, view, flatten, "
         "squeeze, unsqueeze, x[:], x[...] and detach() share storage",
         op, it->second.op);
  if (!grad_enabled()) return;
  if (requires_grad(x) && autograd::grad_fn_name(x).empty())
    fail(ErrorKind::FailedPrecondition,
         "{}: a leaf Variable that requires grad is being used in an in-place operation (update it inside "
         "`with oa.no_grad():`, as optimizers do)",
         op);
  if ((requires_grad(x) || (other && requires_grad(*other))) && x.storage().use_count() > 1)
    fail(ErrorKind::FailedPrecondition,
         "{}: x {} shares its storage with another tensor (a view such as x.view(...) or x.detach(), or a value saved "
         "for backward), which would keep x's old autograd history after this in-place op; write x = x + y (or the "
         "op's out-of-place form) instead, or update inside `with oa.no_grad():`",
         op, x.shape());
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

// An in-place op's result as x's new value: x's shape, converted to x's dtype.
Matrix new_value(const Matrix& x, const Matrix& result, const char* op) {
  if (!(result.shape() == x.shape()))
    fail(ErrorKind::InvalidArgument, "{}: the result's shape {} (broadcast) does not match the tensor's shape {}", op,
         result.shape(), x.shape());
  return convert(result, x.dtype());
}

// Writes value into x's storage and bumps its version.
void write_in_place(const Matrix& x, const Matrix& value) {
  if (value.storage() != x.storage()) copy_values(value, x);
  x.storage()->bump_version();
}

}  // namespace

void update_in_place(const Matrix& x, const Matrix* other, const std::function<Matrix()>& compute, const char* op) {
  require_in_place(x, other, op);
  if (!(grad_enabled() && (requires_grad(x) || (other && requires_grad(*other))))) {
    NoGradGuard no_grad;
    write_in_place(x, new_value(x, compute(), op));
    return;
  }
  // Recorded: x takes the history of its new value and, when that value's
  // storage is its own, the storage too (what backward saved of x's old
  // value stays intact, as torch keeps the original self), else a copy.
  const Matrix value = new_value(x, compute(), op);
  if (value.storage().use_count() == 1) x.impl()->storage = value.storage();
  else write_in_place(x, value);
  x.impl()->autograd = value.impl()->autograd;
}

namespace {

// ── Type promotion ──────────────────────────────────────────────────────────
// torch's type promotion (torch.result_type) of a binary op's operands, over
// oa's dtypes: categories bool < integer (int32; torch's default int64) <
// floating. A Python number takes part by category alone: a bool with a bool
// tensor stays bool, an int with a bool tensor gives int32, a float with an
// integral tensor float32 (torch's default dtype), and otherwise the tensor
// keeps its dtype (an int beside a float tensor is taken as a float: 2**70 is
// compared as 2.0**70 rounded to the tensor's dtype). Two tensors: the higher
// category wins; within one the wider dtype (float16 with bfloat16 gives
// float32); a 0-d tensor beside a dimensioned one counts only when of a
// higher category.

int category(DType d) { return d == DType::Bool ? 0 : d == DType::I32 ? 1 : 2; }

}  // namespace

DType promote(DType a, DType b) {
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if (a == b || a == DType::F32) return a;
  return b == DType::F32 || category(a) == 2 ? DType::F32 : a;  // f16 with bf16
}

namespace {

DType result_type(const Matrix& a, const Matrix& b) {
  const bool a_scalar = a.rank() == 0, b_scalar = b.rank() == 0;
  if (a_scalar != b_scalar && category(a.dtype()) != category(b.dtype())) {
    const Matrix& dimensioned = a_scalar ? b : a;
    const Matrix& scalar = a_scalar ? a : b;
    return category(scalar.dtype()) < category(dimensioned.dtype()) ? dimensioned.dtype() : scalar.dtype();
  }
  if (a_scalar != b_scalar) return a_scalar ? b.dtype() : a.dtype();
  return promote(a.dtype(), b.dtype());
}

}  // namespace
}  // namespace oa::python

namespace oa::python {

// A Python number operand: a bool, an int of any size or a float (NumPy's
// bool_, integer and floating scalars too), as torch reads one.
struct Number {
  enum class Kind { Bool, Int, Float } kind = Kind::Float;
  std::int64_t i = 0;  // a Bool (0, 1) or an Int within int64
  bool wide = false;   // an Int outside int64
  double f = 0;        // the value as Python's float() gives it (+-inf past double's range)
  py::object value;    // the Python object
};

namespace {

// `o` as a Number, or nothing for another type.
std::optional<Number> number_of(py::handle o) {
  // Held for the process (released: no decref after the interpreter is gone).
  static const py::handle np_bool = py::object(py::module_::import("numpy").attr("bool_")).release();
  static const py::handle np_integer = py::object(py::module_::import("numpy").attr("integer")).release();
  static const py::handle np_floating = py::object(py::module_::import("numpy").attr("floating")).release();
  Number n;
  n.value = py::reinterpret_borrow<py::object>(o);
  if (PyBool_Check(o.ptr()) || py::isinstance(o, np_bool)) {
    n.kind = Number::Kind::Bool;
    n.i = PyObject_IsTrue(o.ptr());
    n.f = static_cast<double>(n.i);
    return n;
  }
  if (PyFloat_Check(o.ptr()) || py::isinstance(o, np_floating)) {
    n.f = PyFloat_AsDouble(o.ptr());
    if (PyErr_Occurred()) throw py::error_already_set();
    return n;
  }
  if (!PyLong_Check(o.ptr()) && !py::isinstance(o, np_integer)) return std::nullopt;
  n.kind = Number::Kind::Int;
  const auto exact = py::reinterpret_steal<py::object>(PyNumber_Index(o.ptr()));
  if (!exact) throw py::error_already_set();
  int overflow = 0;
  n.i = PyLong_AsLongLongAndOverflow(exact.ptr(), &overflow);
  n.wide = overflow != 0;
  n.f = PyLong_AsDouble(exact.ptr());
  if (PyErr_Occurred()) {  // past double's range
    PyErr_Clear();
    n.f = overflow > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  n.value = exact;
  return n;
}

}  // namespace

bool is_int(py::handle o) {
  if (PyLong_Check(o.ptr())) return !PyBool_Check(o.ptr());
  if (!PyIndex_Check(o.ptr()) || py::isinstance<Matrix>(o) || py::isinstance<py::array>(o)) return false;
  const std::optional<Number> n = number_of(o);
  return !n || n->kind == Number::Kind::Int;  // not a NumPy bool
}

}  // namespace oa::python

namespace pybind11::detail {
template <>
struct type_caster<oa::python::Number> {
  PYBIND11_TYPE_CASTER(oa::python::Number, const_name("number"));
  bool load(handle src, bool) {
    auto n = oa::python::number_of(src);
    if (n) value = std::move(*n);
    return n.has_value();
  }
};
}  // namespace pybind11::detail

namespace oa::python {
namespace {

std::string text_of(const Number& s) { return py::str(s.value).cast<std::string>(); }

// A Python number's category, as category()'s: bool 0, int 1, float 2.
int category(const Number& s) { return s.kind == Number::Kind::Bool ? 0 : s.kind == Number::Kind::Int ? 1 : 2; }

DType result_type(const Matrix& x, const Number& s) {
  const int c = category(s);
  if (c <= category(x.dtype())) return x.dtype();
  return c == 1 ? DType::I32 : DType::F32;
}

// Two Python numbers' torch.result_type: bool with bool stays bool, ints give
// int32 (torch: int64), a float float32 (torch's default dtype).
DType result_type(const Number& a, const Number& b) {
  const int c = std::max(category(a), category(b));
  return c == 0 ? DType::Bool : c == 1 ? DType::I32 : DType::F32;
}

// The name of o's Python type, for TypeErrors.
std::string type_name(py::handle o) { return py::str(py::type::handle_of(o).attr("__name__")).cast<std::string>(); }

// `o` as a Number, or a TypeError naming `op` and `arg` (pybind's own error
// for a mismatched argument names neither).
Number number_arg(py::handle o, const char* op, const char* arg) {
  if (auto n = number_of(o)) return *n;
  throw py::type_error(fmt::format("{}: {} must be a number (bool, int or float), got {}", op, arg, type_name(o)));
}

// `o` as a tensor, or a TypeError naming `op`, `arg` and `what` it must be
// (pybind's own error for a mismatched argument names neither).
const Matrix& tensor_arg(py::handle o, const char* op, const char* arg, const char* what = "a tensor") {
  if (py::isinstance<Matrix>(o)) return o.cast<const Matrix&>();
  throw py::type_error(fmt::format("{}: {} must be {}, got {}", op, arg, what, type_name(o)));
}

// torch.masked_fill(input, mask, value) for oa.masked_fill, x.masked_fill and
// x.masked_fill_, `op` naming the caller in errors. value is a number or a 0-d
// tensor, whose value is read back (a synchronization, as torch's item()) and
// filled as that number. An int past double's range is refused as a value no
// dtype holds, not filled as an infinity.
Matrix masked_fill(py::handle input, py::handle mask, py::handle value, const char* op) {
  const Matrix& x = tensor_arg(input, op, "input");
  const Matrix& m = tensor_arg(mask, op, "mask", "a bool tensor");
  const Matrix* v = py::isinstance<Matrix>(value) ? &value.cast<const Matrix&>() : nullptr;
  oa::detail::require_same_engine(x, "input", m, "mask", op);
  if (v) oa::detail::require_same_engine(x, "input", *v, "value", op);
  if (v && v->rank() != 0)
    fail(ErrorKind::InvalidArgument, "{}: value must be a number or a 0-d tensor, got a tensor of shape {} (torch: "
         "masked_fill only supports a 0-dimensional value tensor)", op, v->shape());
  const auto n = number_of(v ? item(*v) : py::reinterpret_borrow<py::object>(value));
  if (!n)
    throw py::type_error(fmt::format("{}: value must be a number (bool, int or float) or a 0-d tensor, got {}", op, type_name(value)));
  if (n->kind == Number::Kind::Int && !std::isfinite(n->f))
    fail(ErrorKind::InvalidArgument, "{}: value {} cannot be converted to a floating or int32 dtype without overflow", op, text_of(*n));
  const Matrix filled = mx::masked_fill(x, m, n->f);
  if (!(v && grad_enabled() && requires_grad(*v) && is_floating_point(x.dtype()))) return filled;
  // A value that requires grad goes in again through where, which gives it the
  // sum of the result's gradient where mask holds (as torch); `filled` keeps
  // the check that x's dtype holds the value, and gives x its gradient.
  return mx::where(m, convert(*v, x.dtype()), filled);
}

// s as a 0-d tensor of `dtype` on `engine`. InvalidArgument naming `op` for an
// int outside int32 into int32 (oa's integers are int32; torch: int64) and for
// a float into int32 or bool, which result_type never asks for.
Matrix scalar_tensor(const Number& s, DType dtype, const Engine& engine, const char* op) {
  if (dtype == DType::Bool) {
    const std::uint8_t v = s.i != 0;
    return Matrix::from_bool({}, std::span(&v, 1), engine);
  }
  if (dtype == DType::I32) {
    if (s.kind == Number::Kind::Float) fail(ErrorKind::Internal, "{}: a float {} reached int32", op, s.f);
    if (s.wide || s.i < INT32_MIN || s.i > INT32_MAX)
      fail(ErrorKind::InvalidArgument, "{}: the Python int {} is outside int32, the dtype oa computes an int32 or bool tensor with an "
           "int in (oa's integers are int32; torch: int64, and past it 'Overflow when unpacking long')", op, text_of(s));
    return int32_scalar(static_cast<std::int32_t>(s.i), engine);
  }
  return convert(Matrix::full({}, static_cast<float>(s.f), engine), dtype);
}

// An operand of where or div as given: a tensor, or a Python number (promoted
// with the other operand); a TypeError naming `op` and `arg` for anything else.
std::variant<Matrix, Number> where_operand(py::handle o, const char* op, const char* arg) {
  if (py::isinstance<Matrix>(o)) return o.cast<Matrix>();
  if (auto n = number_of(o)) return *n;
  throw py::type_error(fmt::format("{}: {} must be a tensor or a number (bool, int or float), got {}", op, arg, type_name(o)));
}

// torch.where(condition, input, other): input and other promoted to their
// torch.result_type (a Python number with a tensor as torch's scalars; two
// numbers as result_type of numbers), a number becoming a 0-d tensor of that
// dtype that broadcasts. `op` names the caller in errors.
Matrix where(py::handle condition, py::handle input, py::handle other, const char* op) {
  const Matrix& c = tensor_arg(condition, op, "condition", "a bool tensor");
  const auto x = where_operand(input, op, "input"), y = where_operand(other, op, "other");
  const Matrix* xt = std::get_if<Matrix>(&x);
  const Matrix* yt = std::get_if<Matrix>(&y);
  if (xt) oa::detail::require_same_engine(c, "condition", *xt, "input", op);
  if (yt) oa::detail::require_same_engine(c, "condition", *yt, "other", op);
  const DType d = xt && yt ? result_type(*xt, *yt)
                  : xt     ? result_type(*xt, std::get<Number>(y))
                  : yt     ? result_type(*yt, std::get<Number>(x))
                           : result_type(std::get<Number>(x), std::get<Number>(y));
  const auto operand = [&](const std::variant<Matrix, Number>& v) {
    return std::holds_alternative<Matrix>(v) ? convert(std::get<Matrix>(v), d) : scalar_tensor(std::get<Number>(v), d, c.engine(), op);
  };
  return mx::where(c, operand(x), operand(y));
}

// oa.where(condition) (torch.nonzero(condition, as_tuple=True)) and
// oa.nonzero's as_tuple form: a tuple of int32 [K] tensors, one per axis.
py::tuple nonzero_tuple(const Matrix& x) { return py::tuple(py::cast(mx::where(x))); }

// oa.nonzero(input, as_tuple=...) and x.nonzero(...), `op` naming the caller
// in errors: a TypeError for an input that is not a tensor or an as_tuple
// that is not a bool (as torch, which takes no None or int for it).
py::object nonzero(py::handle input, py::handle as_tuple, const char* op) {
  const Matrix& x = tensor_arg(input, op, "input");
  const auto flag = number_of(as_tuple);
  if (!flag || flag->kind != Number::Kind::Bool)
    throw py::type_error(fmt::format("{}: as_tuple must be a bool, got {}", op, type_name(as_tuple)));
  return flag->i ? py::object(nonzero_tuple(x)) : py::cast(mx::nonzero(x));
}

// torch.clamp(x, min, max), bounds promoted with x as torch's: int32 x with
// int bounds (or none) computes in int32 (maximum, minimum), else in x's
// floating dtype (or float32) through oa::matrix::clamp. min > max gives max
// everywhere, as torch.
Matrix clamp(const Matrix& x, const std::optional<Number>& min, const std::optional<Number>& max) {
  const auto is_float = [](const std::optional<Number>& n) { return n && n->kind == Number::Kind::Float; };
  if (x.dtype() == DType::I32 && !is_float(min) && !is_float(max)) {
    Matrix y = x;
    if (min) y = mx::maximum(y, scalar_tensor(*min, DType::I32, x.engine(), "oa.Tensor.clamp"));
    if (max) y = mx::minimum(y, scalar_tensor(*max, DType::I32, x.engine(), "oa.Tensor.clamp"));
    return y;
  }
  const float low = min ? static_cast<float>(min->f) : -std::numeric_limits<float>::infinity();
  const float high = max ? static_cast<float>(max->f) : std::numeric_limits<float>::infinity();
  const Matrix f = is_floating_point(x.dtype()) ? x : convert(x, DType::F32);
  return low > high ? mx::clamp(f, high, high) : mx::clamp(f, low, high);
}

// How a binary op computes from its operands' promoted dtype (the result
// type): in it (Result), in float32 unless it is floating (TrueDivide, torch's
// true division), in float32 or int32 giving bool (Compare: the comparison
// kernels take those; float16, bfloat16 and bool convert exactly), or in it
// when it is int32 or bool (Bitwise; torch refuses floats).
enum class Compute { Result, TrueDivide, Compare, Bitwise };

// x (op) s for a floating x and a host float, the result in x's dtype (one
// unary dispatch, no scalar tensor); null: s goes in as a 0-d tensor.
using NumberFn = Matrix (*)(const Matrix&, float);
using TensorFn = Matrix (*)(const Matrix&, const Matrix&);

struct BinaryOp {
  const char* name;  // torch's, for errors
  TensorFn tensor;
  NumberFn number;
  NumberFn reflected;  // s (op) x for a floating x, as `number`
  Compute compute;
  bool divides = false;  // an integer divisor of 0 raises ZeroDivisionError (floor_divide, remainder)
};

Matrix pow_tensors(const Matrix& a, const Matrix& b) { return mx::pow(a, b); }
Matrix pow_number(const Matrix& x, float e) { return mx::pow(x, e); }

const BinaryOp kAdd{"add", &mx::add, [](const Matrix& x, float s) { return x + s; }, [](const Matrix& x, float s) { return x + s; },
                    Compute::Result};
const BinaryOp kSub{"sub", &mx::sub, [](const Matrix& x, float s) { return x - s; },
                    [](const Matrix& x, float s) { return mx::affine(x, -1.0f, s); }, Compute::Result};
const BinaryOp kMul{"mul", &mx::mul, [](const Matrix& x, float s) { return x * s; }, [](const Matrix& x, float s) { return x * s; },
                    Compute::Result};
const BinaryOp kDiv{"div", &mx::div, [](const Matrix& x, float s) { return x / s; },
                    [](const Matrix& x, float s) { return mx::reciprocal(x) * s; }, Compute::TrueDivide};
const BinaryOp kPow{"pow", &pow_tensors, &pow_number, nullptr, Compute::Result};
const BinaryOp kFloorDivide{"floor_divide", &mx::floor_divide, nullptr, nullptr, Compute::Result, true};
const BinaryOp kRemainder{"remainder", &mx::remainder, nullptr, nullptr, Compute::Result, true};
const BinaryOp kBitwiseAnd{"bitwise_and", &mx::bitwise_and, nullptr, nullptr, Compute::Bitwise};
const BinaryOp kBitwiseOr{"bitwise_or", &mx::bitwise_or, nullptr, nullptr, Compute::Bitwise};
const BinaryOp kBitwiseXor{"bitwise_xor", &mx::bitwise_xor, nullptr, nullptr, Compute::Bitwise};
const BinaryOp kEq{"eq", &mx::eq, [](const Matrix& x, float s) { return mx::eq(x, s); }, nullptr, Compute::Compare};
const BinaryOp kNe{"ne", &mx::ne, [](const Matrix& x, float s) { return mx::ne(x, s); }, nullptr, Compute::Compare};
const BinaryOp kLt{"lt", &mx::lt, [](const Matrix& x, float s) { return mx::lt(x, s); }, nullptr, Compute::Compare};
const BinaryOp kLe{"le", &mx::le, [](const Matrix& x, float s) { return mx::le(x, s); }, nullptr, Compute::Compare};
const BinaryOp kGt{"gt", &mx::gt, [](const Matrix& x, float s) { return mx::gt(x, s); }, nullptr, Compute::Compare};
const BinaryOp kGe{"ge", &mx::ge, [](const Matrix& x, float s) { return mx::ge(x, s); }, nullptr, Compute::Compare};

// The dtype op computes in from the result type; InvalidArgument naming
// `where` and the operands as written (a dtype, or "a Python int") for a
// bitwise op on floats.
DType compute_dtype(const BinaryOp& op, DType result, std::string_view a, std::string_view b, const char* where) {
  switch (op.compute) {
    case Compute::Result: return result;
    case Compute::TrueDivide: return is_floating_point(result) ? result : DType::F32;
    case Compute::Compare: return is_floating_point(result) ? DType::F32 : DType::I32;
    case Compute::Bitwise:
      if (is_floating_point(result))
        fail(ErrorKind::InvalidArgument, "{}: {} takes int32 or bool operands (torch: integral or bool); found {} and {}", where, op.name,
             a, b);
      return result;
  }
  return result;
}

// torch's ZeroDivisionError of an integer floor_divide or remainder by zero
// (its CPU kernels'); an int32 divisor tensor is read back to look (a
// synchronization).
void require_nonzero_divisor(const Matrix& divisor, const char* where, const BinaryOp& op) {
  if (divisor.dtype() != DType::I32) return;
  const bool zero = divisor.rank() == 0 ? divisor.to_i32()[0] == 0 : mx::max(mx::eq(divisor, int32_scalar(0, divisor.engine())), {}).to_bool()[0] != 0;
  if (zero) {
    PyErr_SetString(PyExc_ZeroDivisionError, fmt::format("{}: integer {} by zero", where, op.name).c_str());
    throw py::error_already_set();
  }
}

// a (op) b for two tensors under torch's promotion, as `where` in errors.
Matrix binary(const BinaryOp& op, const Matrix& a, const Matrix& b, const char* where) {
  const DType d = compute_dtype(op, result_type(a, b), to_string(a.dtype()), to_string(b.dtype()), where);
  const Matrix a2 = convert(a, d), b2 = convert(b, d);
  if (op.divides) require_nonzero_divisor(b2, where, op);
  return op.tensor(a2, b2);
}

// x (op) s, or s (op) x when `reflected`, for a Python number s.
Matrix binary(const BinaryOp& op, const Matrix& x, const Number& s, bool reflected, const char* where) {
  const std::string written = s.kind == Number::Kind::Bool ? "a Python bool" : s.kind == Number::Kind::Int ? "a Python int" : "a Python float";
  const DType d = reflected ? compute_dtype(op, result_type(x, s), written, to_string(x.dtype()), where)
                            : compute_dtype(op, result_type(x, s), to_string(x.dtype()), written, where);
  const NumberFn number = reflected ? op.reflected : op.number;
  if (number && is_floating_point(d)) {
    // A comparison takes s in the result type (a float16 x against s rounded to float16), as torch.
    const float v = static_cast<float>(s.f);
    const DType r = result_type(x, s);
    return number(convert(x, d), op.compute != Compute::Compare || r == DType::F32 ? v
                                 : r == DType::F16 ? float_from_f16(f16_from_float(v)) : float_from_bf16(bf16_from_float(v)));
  }
  if (&op == &kPow && d == DType::I32 && !reflected && s.i < 0)
    fail(ErrorKind::InvalidArgument, "{}: integers to negative integer powers are not allowed (as torch): {} ** {}", where,
         to_string(x.dtype()), text_of(s));
  const Matrix t = scalar_tensor(s, d, x.engine(), where), x2 = convert(x, d);
  if (op.divides) require_nonzero_divisor(reflected ? x2 : t, where, op);
  return reflected ? op.tensor(t, x2) : op.tensor(x2, t);
}

// torch's alpha of add and sub: other * alpha in the result type of x and
// other (alpha does not take part in the promotion); an integral result
// takes an integral alpha (InvalidArgument naming `where`, as torch refuses a
// float one).
bool is_one(const Number& alpha) { return alpha.kind != Number::Kind::Float && !alpha.wide && alpha.i == 1; }
void require_alpha(DType result, const Number& alpha, const char* where) {
  if (!is_floating_point(result) && alpha.kind == Number::Kind::Float)
    fail(ErrorKind::InvalidArgument, "{}: for integral input tensors, argument alpha must not be a floating point number (as torch); "
         "found {}", where, text_of(alpha));
}
Matrix scaled(const Matrix& x, const Matrix& other, const Number& alpha, const char* where) {
  if (is_one(alpha)) return other;
  const DType d = result_type(x, other);
  require_alpha(d, alpha, where);
  return binary(kMul, convert(other, d), alpha, false, where);
}
// A number other times alpha, exact (Python's arithmetic).
Number scaled(const Matrix& x, const Number& s, const Number& alpha, const char* where) {
  if (is_one(alpha)) return s;
  require_alpha(result_type(x, s), alpha, where);
  return *number_of(s.value * alpha.value);
}

// torch.div(input, other, *, rounding_mode=None) as `op` in errors: true
// division, as /, of two tensors or a tensor and a Python number on either
// side. rounding_mode 'trunc' and 'floor' raise oa.UnsupportedError (oa's
// floor_divide is the 'floor' one); other operands a TypeError.
Matrix divide(py::handle input, py::handle other, const std::optional<std::string>& rounding_mode, const char* op) {
  if (rounding_mode)
    fail(ErrorKind::Unsupported, "{}: rounding_mode='{}' is not supported; oa divides only as rounding_mode=None (true "
         "division; x // y is oa.floor_divide, torch's rounding_mode='floor')", op, *rounding_mode);
  const auto a = where_operand(input, op, "input"), b = where_operand(other, op, "other");
  const Matrix* at = std::get_if<Matrix>(&a);
  const Matrix* bt = std::get_if<Matrix>(&b);
  if (at && bt) return binary(kDiv, *at, *bt, op);
  if (at) return binary(kDiv, *at, std::get<Number>(b), false, op);
  if (bt) return binary(kDiv, *bt, std::get<Number>(a), true, op);
  throw py::type_error(fmt::format("{}: input or other must be a tensor, got two numbers", op));
}

// A NumPy array operand of a binary op with x (x + a, a @ x, x += a, ...) as
// a tensor on x's engine: in x's dtype when x is floating (as a Python number
// is taken; oa has no float64), else in oa.tensor's dtype (int32, bool,
// float32), then promoted as a tensor.
Matrix array_operand(const Matrix& x, const py::array& a, const char* op) {
  return from_array(a, is_floating_point(x.dtype()) ? std::optional(x.dtype()) : std::nullopt, false, x.engine(), op);
}

// a @ b (oa::matrix::matmul), whose operands are floating: an int32 or bool
// one is refused naming `op`, the user's call, and the operand (`input`, or
// `other`: b's name in that call) (torch's CUDA matmul refuses integers too;
// oa has no integer matmul).
Matrix matmul(const Matrix& a, const Matrix& b, const char* op, const char* other = "other") {
  for (const auto& [m, arg] : {std::pair{&a, "input"}, std::pair{&b, other}})
    if (!is_floating_point(m->dtype()))
      fail(ErrorKind::InvalidArgument, "{}: {} is {} {}; matmul takes float32, float16 or bfloat16 operands (convert with .float())",
           op, arg, to_string(m->dtype()), m->shape());
  return mx::matmul(a, b);
}

// torch.mm, torch.bmm and torch.mv: matmul of input, of rank `rank`, and the
// operand torch names `other` (mat2 or vec), of rank `other_rank`, whose
// inner extents agree (and, for bmm, whose batch extents are equal; nothing
// broadcasts).
struct FixedRankProduct {
  const char* name;
  const char* other;
  std::size_t rank, other_rank;
  const char* doc;
};
constexpr FixedRankProduct kFixedRankProducts[] = {
    {"mm", "mat2", 2, 2, "torch.mm: input [n, m] @ mat2 [m, p] -> [n, p]"},
    {"bmm", "mat2", 3, 3, "torch.bmm: input [b, n, m] @ mat2 [b, m, p] -> [b, n, p]"},
    {"mv", "vec", 2, 1, "torch.mv: input [n, m] @ vec [m] -> [n]"},
};

Matrix fixed_rank_product(const FixedRankProduct& p, const Matrix& a, const Matrix& b, const char* op) {
  const bool fits = a.rank() == p.rank && b.rank() == p.other_rank && a.dim(-1) == b.dim(p.other_rank == 1 ? 0 : -2) &&
                    (p.rank < 3 || a.dim(0) == b.dim(0));
  if (!fits)
    fail(ErrorKind::InvalidArgument, "{}: input {} and {} {} cannot be multiplied ({})", op, a.shape(), p.other, b.shape(), p.doc);
  return matmul(a, b, op, p.other);
}

// x.<method>(arg) and, where `dunder` is given, the augmented assignment
// (x += y), for a Tensor, a Python number or a NumPy array `arg`; both return
// x itself (the same Python object, so a Parameter stays a Parameter).
struct InPlaceOp {
  const char* method;
  const char* name;  // the method's, for errors
  const char* dunder;
  const char* dunder_name;  // the augmented assignment's, for errors
  const char* arg;
  bool alpha;                     // the method takes torch's alpha (arg * alpha is applied)
  const BinaryOp* op;             // the out-of-place op, promoted as the operators; null: copy_ or fill_
};

// torch's rule for an in-place op: the result's dtype must cast to x's within
// its category or a lower one (bool < int32 < the floating dtypes), so a float
// result never goes into an int32 tensor nor an int32 one into a bool tensor.
void require_castable(const Matrix& result, const Matrix& x, const char* name) {
  if (category(result.dtype()) > category(x.dtype()))
    fail(ErrorKind::InvalidArgument, "{}: result type {} can't be cast to the desired output type {} (as torch: compute out of "
         "place, or convert the tensor first)", name, to_string(result.dtype()), to_string(x.dtype()));
}

// `v` as `dtype` everywhere in `shape`: zeros, ones, full and fill_. int32
// is filled on the host, exactly (an f32 fill would round past 2^24): an
// int, or a float truncated toward zero (as torch), within int32; InvalidArgument naming
// `op` and the exact value otherwise (NaN and infinities included).
Matrix filled(const Shape& shape, const Number& v, DType dtype, const std::optional<Engine>& engine, const char* op) {
  if (dtype != DType::I32) {
    try {
      return convert(Matrix::full(shape, static_cast<float>(v.f), engine), dtype);
    } catch (const Error& e) {  // an allocation past the device's memory or limits
      throw with_context(e, op);
    }
  }
  const double value = v.kind == Number::Kind::Float ? v.f : static_cast<double>(v.i);
  if (v.wide || !(value >= INT32_MIN && value <= INT32_MAX))
    fail(ErrorKind::InvalidArgument, "{}: value {} cannot be converted to type int32 without overflow", op, text_of(v));
  const std::vector<std::int32_t> values(static_cast<std::size_t>(shape.numel()), static_cast<std::int32_t>(value));
  return Matrix::from_i32(shape, values, engine);
}

// torch.full_like(input, fill_value, dtype=None, requires_grad=False) as `op`
// in errors, and zeros_like and ones_like through it: fill_value in input's
// shape, as dtype (input's without one), on input's engine; a new leaf.
Matrix full_like(const Matrix& x, const Number& value, std::optional<DType> dtype, bool requires_grad, const char* op) {
  return finish(filled(x.shape(), value, dtype.value_or(x.dtype()), x.engine(), op), {}, requires_grad);
}

// x's new value from `other` (a Tensor or a Python number) under `op`.
Matrix in_place_value(const Matrix& x, const Matrix& other, const InPlaceOp& op, const char* name, const Number& alpha) {
  if (!op.op) {  // copy_: src on x's engine (oa does not move tensors between engines), broadcast to x's shape
    oa::detail::require_same_engine(x, "x", other, op.arg, name);
    return x.shape() == other.shape() ? other : mx::expand(other, x.shape().to_vector());
  }
  return binary(*op.op, x, scaled(x, other, alpha, name), name);
}
Matrix in_place_value(const Matrix& x, const Number& other, const InPlaceOp& op, const char* name, const Number& alpha) {
  if (!op.op) return filled(x.shape(), other, x.dtype(), x.engine(), name);  // fill_
  return binary(*op.op, x, scaled(x, other, alpha, name), false, name);
}

template <class Other>
py::object apply_in_place(const py::object& self, const Other& other, const InPlaceOp& op, const char* name, const Number& alpha) {
  const auto& x = self.cast<const Matrix&>();
  const Matrix* tensor_operand = nullptr;
  if constexpr (std::is_same_v<Other, Matrix>) tensor_operand = &other;
  update_in_place(x, tensor_operand, [&] {
    Matrix result = in_place_value(x, other, op, name, alpha);
    if (op.op) require_castable(result, x, name);  // copy_ converts any dtype, as torch's
    return result;
  }, name);
  return self;
}

const char* const in_place_doc =
    "In place, as torch's: computes the op, casts the result to x's dtype and writes it into x's own storage "
    "(seen by x's views and detach()), bumps x's version (backward through an op that saved x then refuses), and "
    "returns x itself. A result of a higher category than x's dtype (a float into int32, an int32 into bool) raises "
    "oa.InvalidArgumentError, as torch (copy_ converts any dtype, as torch's: a float into int32 truncates toward zero; "
    "a src on another engine raises oa.InvalidArgumentError, since oa does not move tensors between engines). With "
    "grad mode on, a leaf that requires grad is refused (RuntimeError, as torch); "
    "with autograd history in x or the operand the op is recorded and x takes its history, as torch (refused when a view "
    "of x or a value saved for backward shares x's storage: it would keep the old history). A tensor made by "
    "x[key], transpose, permute, mT, T, expand, split or chunk is a copy in oa, not a view as in torch, so in-place ops "
    "on it (or on its reshapes) raise oa.FailedPreconditionError instead of silently missing the source: update the "
    "source instead (x[key] = value, or x[key] += v: an augmented assignment through one subscript writes x).";

// op's method (with alpha where op takes it) and augmented assignment for an `Other` argument.
template <class Other>
void bind_in_place_op(TensorClass& t, const InPlaceOp& op) {
  if (op.alpha) {
    t.def(
        op.method,
        [&op](const py::object& self, const Other& other, const Number& alpha) { return apply_in_place<Other>(self, other, op, op.name, alpha); },
        py::arg(op.arg), py::kw_only(), py::arg("alpha") = 1, in_place_doc);
  } else {
    t.def(
        op.method,
        [&op](const py::object& self, const Other& other) { return apply_in_place<Other>(self, other, op, op.name, *number_of(py::int_(1))); },
        py::arg(op.arg), in_place_doc);
  }
  if (op.dunder)
    t.def(
        op.dunder,
        [&op](const py::object& self, const Other& other) {
          return apply_in_place<Other>(self, other, op, op.dunder_name, *number_of(py::int_(1)));
        },
        py::is_operator());
  // x += a for a NumPy array a (see array_operand), in place as for a tensor.
  if constexpr (std::is_same_v<Other, Matrix>)
    if (op.dunder)
      t.def(
          op.dunder,
          [&op](const py::object& self, const py::array& other) {
            return apply_in_place<Matrix>(self, array_operand(self.cast<const Matrix&>(), other, op.dunder_name), op, op.dunder_name,
                                          *number_of(py::int_(1)));
          },
          py::is_operator(), py::arg("other").noconvert());
}

void bind_in_place(TensorClass& t) {
  static const InPlaceOp ops[] = {
      {"add_", "oa.Tensor.add_", "__iadd__", "+= (oa.Tensor.__iadd__)", "other", true, &kAdd},
      {"sub_", "oa.Tensor.sub_", "__isub__", "-= (oa.Tensor.__isub__)", "other", true, &kSub},
      {"mul_", "oa.Tensor.mul_", "__imul__", "*= (oa.Tensor.__imul__)", "other", false, &kMul},
      {"div_", "oa.Tensor.div_", "__itruediv__", "/= (oa.Tensor.__itruediv__)", "other", false, &kDiv},
      {"pow_", "oa.Tensor.pow_", "__ipow__", "**= (oa.Tensor.__ipow__)", "exponent", false, &kPow},
      {"floor_divide_", "oa.Tensor.floor_divide_", "__ifloordiv__", "//= (oa.Tensor.__ifloordiv__)", "other", false, &kFloorDivide},
      {"remainder_", "oa.Tensor.remainder_", "__imod__", "%= (oa.Tensor.__imod__)", "other", false, &kRemainder},
      {"bitwise_and_", "oa.Tensor.bitwise_and_", "__iand__", "&= (oa.Tensor.__iand__)", "other", false, &kBitwiseAnd},
      {"bitwise_or_", "oa.Tensor.bitwise_or_", "__ior__", "|= (oa.Tensor.__ior__)", "other", false, &kBitwiseOr},
      {"bitwise_xor_", "oa.Tensor.bitwise_xor_", "__ixor__", "^= (oa.Tensor.__ixor__)", "other", false, &kBitwiseXor},
      {"copy_", "oa.Tensor.copy_", nullptr, nullptr, "src", false, nullptr},  // src broadcast to x's shape, as torch's
      {"fill_", "oa.Tensor.fill_", nullptr, nullptr, "value", false, nullptr},
  };
  for (const InPlaceOp& op : ops) {
    if (std::string_view(op.method) != "fill_") bind_in_place_op<Matrix>(t, op);
    if (std::string_view(op.method) != "copy_" && std::string_view(op.method) != "fill_") bind_in_place_op<Number>(t, op);
  }
  // fill_ takes a number or a 0-d tensor (as torch): anything else is an error naming the op and the argument.
  t.def("fill_",
        [](const py::object& self, const py::object& value) {
          const char* op = "oa.Tensor.fill_";
          if (!py::isinstance<Matrix>(value))
            return apply_in_place<Number>(self, number_arg(value, op, "value"), ops[11], op, *number_of(py::int_(1)));
          const auto& v = value.cast<const Matrix&>();
          if (v.rank() != 0)
            fail(ErrorKind::InvalidArgument, "{}: value must be a number or a 0-d tensor, got a tensor of shape {} (torch: fill_ "
                 "only supports 0-dimension value tensor)", op, v.shape());
          const auto& x = self.cast<const Matrix&>();
          // A value that requires grad is broadcast on the device, so that it gets the sum of x's gradient; any other
          // is read back (a synchronization, as torch's item()) and filled as that number.
          if (!(grad_enabled() && requires_grad(v) && is_floating_point(x.dtype())))
            return apply_in_place<Number>(self, *number_of(item(v)), ops[11], op, *number_of(py::int_(1)));
          update_in_place(x, &v, [&] { return mx::expand(convert(v, x.dtype()), x.shape().to_vector()); }, op);
          return self;
        },
        py::arg("value"),
        "torch.Tensor.fill_(value): every element of x set to value, a number or a 0-d tensor (of any dtype; one that "
        "requires grad gets the sum of x's gradient, as torch), in place; into int32 a float is truncated toward zero "
        "(as torch). oa.InvalidArgumentError for a tensor value that is not 0-d or a value outside an int32 x's range, "
        "TypeError for a value that is neither. See oa.Tensor.add_ for the in-place rules.");
  t.def("zero_", [](const py::object& self) { return apply_in_place<Number>(self, *number_of(py::int_(0)), ops[11], "oa.Tensor.zero_", *number_of(py::int_(1))); },
        "x.fill_(0): in place, as fill_.");
}

// x.<op>_(): x = fn(x) in place (see update_in_place); a result of a higher
// category than x's dtype (an int32 x clamped to a float bound) is refused as
// by the other in-place ops.
template <class Fn>
py::object unary_in_place(const py::object& self, const Fn& fn, const char* op) {
  const auto& x = self.cast<const Matrix&>();
  update_in_place(x, nullptr, [&] {
    Matrix result = fn(x);
    require_castable(result, x, op);
    return result;
  }, op);
  return self;
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
  py::module_ return_types = m.def_submodule("return_types", "torch.return_types: the named tuples of max, min, topk and sort");
  const py::object namedtuple = py::module_::import("collections").attr("namedtuple");
  for (auto [name, type] : {std::pair{"max", &max_type}, std::pair{"min", &min_type}}) {
    py::object made = namedtuple(name, py::make_tuple("values", "indices"), py::arg("module") = "oa.return_types");
    return_types.attr(name) = made;
    *type = made.release();
  }
  // bind_indexing's topk returns topk; oa.sort (python/oa/_tensor_ops.py) returns sort.
  for (const char* name : {"topk", "sort"})
    return_types.attr(name) = namedtuple(name, py::make_tuple("values", "indices"), py::arg("module") = "oa.return_types");
  const char* const add_doc =
      "x + other * alpha (torch.add), other a tensor (broadcast) or a Python number. Operands follow torch's type promotion, "
      "here and in the operators (+, -, *, /, //, %, **, &, |, ^, ==, <, ..., and +=, -=, ...): bool < int32 < the float "
      "dtypes, the higher category wins (int32 + float32 gives float32, int32 + bool int32, bool + bool bool, as a logical "
      "or; bool * bool a logical and), float16 with bfloat16 gives float32, and a 0-d tensor or a Python number counts "
      "only when of a higher category (a float32 x with a Python int or float stays float32; an int beyond int64 is taken "
      "as a float there). An int32 or bool x with an int gives int32 (torch: int64; add, sub, mul and pow wrap modulo "
      "2^32, and an int outside int32 raises oa.InvalidArgumentError naming the op and the value), with a float float32; "
      "a bool x with a bool stays bool. True division of integers gives float32. With an integral result, alpha must be an "
      "integer (oa.InvalidArgumentError, as torch). In-place forms refuse a result of a higher category than x's dtype "
      "(x /= 2 or x += 0.5 on int32: 'result type f32 can't be cast to the desired output type i32').";
  const char* const max_doc =
      "torch.max: x.max() the largest element (its gradient split among ties, as amax); x.max(dim, keepdim=False) "
      "the named tuple oa.return_types.max (values, int32 indices: the first maximum, NaN counting as largest; the "
      "gradient reaches the element at the index); x.max(other) the elementwise oa.maximum. float32, float16, bfloat16, "
      "int32 (exact), and bool (values any along dim, indices the first True, or 0 where none, as torch).";
  const char* const all_doc =
      "torch.all: bool, True where every element of x (any dtype; nonzero counts as True, NaN too) over dim is: None "
      "(every axis, shape []), an int or a tuple of ints; keepdim keeps the reduced axes as 1. An empty reduction gives "
      "True, as torch. No gradient. oa.InvalidArgumentError for an axis out of range.";
  const char* const any_doc = "torch.any: as all, True where any element is nonzero (an empty reduction gives False).";
  const char* const clamp_doc =
      "torch.clamp: min(max(x, min), max), each bound a number or None; an int32 x with int (or no) bounds stays int32, "
      "a float bound promotes it to float32, as torch; min > max gives max everywhere. The gradient flows where x is "
      "within the bounds.";
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
      // Conversions (see convert): (pred == target).float().mean() is an accuracy.
      // x.to(dtype) of oa.Tensor.to (python/oa/_device.py, which reads torch's other forms).
      .def("_to_dtype", &convert, py::arg("dtype"),
           "A copy as `dtype` (x itself if already): between float32, float16 and bfloat16, int32 to those (rounded to "
           "nearest even past 2^24, as torch), those to int32 (truncated toward zero, saturating, NaN giving 0), bool "
           "to those and to int32 (1, 0), any dtype to bool (x != 0).")
      .def("float", [](const Matrix& x) { return convert(x, DType::F32); })
      .def("half", [](const Matrix& x) { return convert(x, DType::F16); })
      .def("bfloat16", [](const Matrix& x) { return convert(x, DType::BF16); })
      .def("bool", [](const Matrix& x) { return convert(x, DType::Bool); })
      .def("type_as", [](const Matrix& x, const Matrix& other) { return convert(x, other.dtype()); }, py::arg("other"),
           "torch.Tensor.type_as: x.to(other.dtype) (x itself if already), conversions as oa.Tensor.to.")
      .def("is_floating_point", [](const Matrix& x) { return is_floating_point(x.dtype()); },
           "torch.Tensor.is_floating_point: True for float32, float16 and bfloat16, False for int32 and bool.")
      .def_property_readonly("device", &Matrix::engine,
                             "x.engine: oa's device is an oa.Engine (one Vulkan device), which x.to(device) and "
                             "Module.to(device) take as torch's take a torch.device.")
      .def("contiguous", [](const py::object& self) { return self; },
           "torch.Tensor.contiguous: x itself, since oa's tensors are always contiguous (row-major in storage of their own "
           "or shared with their reshapes).")
      // Reshapes (views: they share the storage) and layout ops (copies).
      .def("reshape", [](const Matrix& x, const py::args& shape) { return x.reshape(size_of_args(shape)); })
      .def("view", [](const Matrix& x, const py::args& shape) { return x.reshape(size_of_args(shape)); })
      .def("view_as", [](const Matrix& x, const Matrix& other) { return x.reshape(other.shape().to_vector()); }, py::arg("other"),
           "torch.Tensor.view_as: x.view(other.shape), sharing x's storage; oa.InvalidArgumentError when the element "
           "counts differ.")
      // permute, transpose, mT and expand return copies (torch: views), so
      // in-place ops on their results raise (see copy_not_view).
      .def("permute",
           [](const Matrix& x, const py::args& dims, const py::kwargs& kwargs) {
             const char* op = "oa.Tensor.permute";
             py::object order = dims;
             for (const auto& [key, value] : kwargs) {
               const auto name = py::str(key).cast<std::string>();
               if (name != "dims") throw py::type_error(fmt::format("{}: unexpected keyword argument '{}' (it takes dims)", op, name));
               if (!dims.empty()) throw py::type_error(fmt::format("{}: dims given by position and as dims=", op));
               order = py::make_tuple(value);
             }
             return permute(x, size_of_args(order), op);
           },
           "torch.Tensor.permute(*dims) or permute(dims=(...)): x's axes in the order dims gives, a copy, not a view as "
           "torch's: in-place ops on the result raise oa.FailedPreconditionError. TypeError for another keyword.")
      .def("transpose", transpose("oa.Tensor.transpose"), py::arg("dim0"), py::arg("dim1"),
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
      .def("expand_as",
           [](const Matrix& x, const Matrix& other) {
             return copy_not_view(x, mx::expand(x, other.shape().to_vector()), "oa.Tensor.expand_as");
           },
           py::arg("other"),
           "torch.Tensor.expand_as: x.expand(other.shape), a copy (see expand); gradients sum back over the broadcast "
           "axes. oa.InvalidArgumentError when x does not broadcast to other's shape.")
      .def("t",
           [](const Matrix& x) {
             if (x.rank() > 2)
               fail(ErrorKind::InvalidArgument, "oa.Tensor.t: expects a tensor with <= 2 dimensions, but got shape {} (as "
                    "torch; use transpose or mT)", x.shape());
             return x.rank() < 2 ? x : copy_not_view(x, mx::transpose(x, 0, 1), "oa.Tensor.t");
           },
           "torch.Tensor.t: a 2-D x transposed ([R, C] -> [C, R], a copy, see transpose); 0-D and 1-D x as they are; "
           "oa.InvalidArgumentError for more axes, as torch.")
      .def("squeeze", [](const Matrix& x, std::optional<int> dim) { return mx::squeeze(x, dim); },
           py::arg("dim") = py::none())
      .def("unsqueeze", [](const Matrix& x, int dim) { return mx::unsqueeze(x, dim); }, py::arg("dim"))
      .def("flatten", [](const Matrix& x, int start_dim, int end_dim) { return mx::flatten(x, start_dim, end_dim); },
           py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      // Reductions.
      // Reductions over dim = None (every axis), an int or a tuple of ints.
      .def("sum", reduction<&mx::sum>("oa.Tensor.sum"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("mean", reduction<&mx::mean>("oa.Tensor.mean"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("amax", reduction<&mx::max>("oa.Tensor.amax"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("amin", reduction<&mx::min>("oa.Tensor.amin"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("max", extreme(true, "oa.Tensor.max"),
           py::arg("dim") = py::none(), py::arg("keepdim") = false,
               py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), max_doc)
      .def("min", extreme(false, "oa.Tensor.min"),
           py::arg("dim") = py::none(), py::arg("keepdim") = false,
               py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), min_doc)
      .def("prod", reduction<&mx::prod>("oa.Tensor.prod"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("logsumexp", reduction<&mx::logsumexp>("oa.Tensor.logsumexp"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("var", spread<&mx::var>("oa.Tensor.var"), py::arg("dim") = py::none(), py::arg("unbiased") = py::none(),
           py::arg("keepdim") = false, py::kw_only(), py::arg("correction") = py::none(),
           py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("std", spread<&mx::std>("oa.Tensor.std"), py::arg("dim") = py::none(), py::arg("unbiased") = py::none(),
           py::arg("keepdim") = false, py::kw_only(), py::arg("correction") = py::none(),
           py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("norm", norm("oa.Tensor.norm"), py::arg("p") = 2.0f, py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none())
      .def("all", all_or_any(true, "oa.Tensor.all"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), all_doc)
      .def("any", all_or_any(false, "oa.Tensor.any"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), any_doc)
      .def("cumsum", &mx::cumsum, py::arg("dim"))
      .def("argmax", arg_extreme_of(true, "oa.Tensor.argmax"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
           py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(),
           "torch.argmax: int32 index of the maximum along dim, or of the flattened tensor without dim.")
      // Arithmetic and comparisons with a Tensor, a Python number or a NumPy
      // array on either side: the operators bound below.
      .def("__matmul__", [](const Matrix& a, const Matrix& b) { return matmul(a, b, "oa.Tensor.__matmul__ (@)"); }, py::is_operator())
      .def("matmul", [](const Matrix& a, const Matrix& b) { return matmul(a, b, "oa.Tensor.matmul"); }, py::arg("other"),
           "self @ other (torch.Tensor.matmul); see oa.matmul.")
      .def("__neg__", [](const Matrix& a) { return -a; }, "-x (torch.neg): float, or int32 (wrapping: -(-2**31) is -2**31).")
      .def("__abs__", [](const Matrix& a) { return mx::abs(a); }, "abs(x): x.abs() (torch.Tensor.__abs__); float or int32.")
      .def("__invert__", &mx::bitwise_not, "~x (torch.bitwise_not): bitwise not of int32, logical not of bool.")
      .def("bitwise_not", &mx::bitwise_not, "torch.bitwise_not: bitwise not of int32, logical not of bool.")
      .def(
          "bitwise_not_",
          [](const py::object& self) {
            const auto& x = self.cast<const Matrix&>();
            update_in_place(x, nullptr, [&] { return mx::bitwise_not(x); }, "oa.Tensor.bitwise_not_");
            return self;
          },
          "torch.Tensor.bitwise_not_: x = ~x in place (int32 or bool; see oa.Tensor.add_ for the in-place rules).")
      .def(
          "__contains__",
          [](const Matrix& x, const py::object& value) {
            const char* op = "oa.Tensor.__contains__";
            const Matrix hits = py::isinstance<Matrix>(value) ? binary(kEq, x, value.cast<Matrix>(), op)
                              : number_of(value)               ? binary(kEq, x, *number_of(value), false, op)
                                                               : throw py::type_error(fmt::format(
                                                                     "{}: a Tensor or a number, not {}", op,
                                                                     py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>()));
            return hits.numel() > 0 && mx::max(hits, {}).to_bool()[0] != 0;
          },
          "value in x (torch.Tensor.__contains__): (x == value).any() for a number or a tensor (broadcast); reads back.")
      .def("add", [](const Matrix& x, const Matrix& other, const Number& alpha) { return binary(kAdd, x, scaled(x, other, alpha, "oa.Tensor.add"), "oa.Tensor.add"); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1, add_doc)
      .def("add", [](const Matrix& x, const Number& other, const Number& alpha) { return binary(kAdd, x, scaled(x, other, alpha, "oa.Tensor.add"), false, "oa.Tensor.add"); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("sub", [](const Matrix& x, const Matrix& other, const Number& alpha) { return binary(kSub, x, scaled(x, other, alpha, "oa.Tensor.sub"), "oa.Tensor.sub"); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1, "x - other * alpha (torch.sub); promotion as add.")
      .def("sub", [](const Matrix& x, const Number& other, const Number& alpha) { return binary(kSub, x, scaled(x, other, alpha, "oa.Tensor.sub"), false, "oa.Tensor.sub"); },
           py::arg("other"), py::kw_only(), py::arg("alpha") = 1)
      .def("__hash__", [](const py::object& self) { return reinterpret_cast<std::intptr_t>(self.ptr()); })
      .def("masked_fill",
           [](const py::object& x, const py::object& mask, const py::object& value) {
             return masked_fill(x, mask, value, "oa.Tensor.masked_fill");
           },
           py::arg("mask"), py::arg("value"), "x.masked_fill(mask, value): oa.masked_fill(x, mask, value), as torch.Tensor.masked_fill.")
      .def("masked_fill_",
           [](const py::object& self, const py::object& mask, const py::object& value) {
             const auto& x = self.cast<const Matrix&>();
             const Matrix* other = py::isinstance<Matrix>(value) ? &value.cast<const Matrix&>() : nullptr;
             update_in_place(x, other, [&] { return masked_fill(self, mask, value, "oa.Tensor.masked_fill_"); }, "oa.Tensor.masked_fill_");
             return self;
           },
           py::arg("mask"), py::arg("value"), in_place_doc)
      .def("nonzero", [](const py::object& x, const py::object& as_tuple) { return nonzero(x, as_tuple, "oa.Tensor.nonzero"); },
           py::kw_only(), py::arg("as_tuple") = false, "x.nonzero(): oa.nonzero(x), as torch.Tensor.nonzero.")
      .def("where", [](const py::object& x, const py::object& c, const py::object& y) { return where(c, x, y, "oa.Tensor.where"); },
           py::arg("condition"), py::arg("other"),
           "x.where(condition, other): oa.where(condition, x, other), as torch.Tensor.where (other a tensor or a number).")
      .def("tril", &mx::tril, py::arg("diagonal") = 0)
      .def("triu", &mx::triu, py::arg("diagonal") = 0)
      .def("clamp", &clamp, py::arg("min") = py::none(), py::arg("max") = py::none(), clamp_doc)
      .def("clamp_",
           [](const py::object& self, const std::optional<Number>& min, const std::optional<Number>& max) {
             return unary_in_place(self, [&](const Matrix& x) { return clamp(x, min, max); }, "oa.Tensor.clamp_");
           },
           py::arg("min") = py::none(), py::arg("max") = py::none(),
           "torch.Tensor.clamp_: x = x.clamp(min, max) in place; an int32 x with a float bound raises "
           "oa.InvalidArgumentError (see oa.Tensor.add_ for the in-place rules).")
      .def("exp_", [](const py::object& self) { return unary_in_place(self, &mx::exp, "oa.Tensor.exp_"); },
           "torch.Tensor.exp_: x = x.exp() in place (floating x; see oa.Tensor.add_ for the in-place rules).")
      .def("relu_", [](const py::object& self) { return unary_in_place(self, &mx::relu, "oa.Tensor.relu_"); },
           "torch.Tensor.relu_: x = x.relu() in place (see oa.Tensor.add_ for the in-place rules).");

  // The binary operators: a Tensor, a Python number or a NumPy array (taken
  // as a tensor, see array_operand) as the other operand, promoted as torch
  // (see result_type). A reflected operator (a + x calls x.__radd__(a))
  // computes other (op) x; Python reflects a comparison a < x as x > a itself.
  struct Operator {
    const char* name;
    const BinaryOp* op;
    bool reflected;
  };
  static const Operator operators[] = {
      {"__add__", &kAdd, false},          {"__radd__", &kAdd, true},           {"__sub__", &kSub, false},
      {"__rsub__", &kSub, true},          {"__mul__", &kMul, false},           {"__rmul__", &kMul, true},
      {"__truediv__", &kDiv, false},      {"__rtruediv__", &kDiv, true},       {"__pow__", &kPow, false},
      {"__rpow__", &kPow, true},          {"__floordiv__", &kFloorDivide, false}, {"__rfloordiv__", &kFloorDivide, true},
      {"__mod__", &kRemainder, false},    {"__rmod__", &kRemainder, true},     {"__and__", &kBitwiseAnd, false},
      {"__rand__", &kBitwiseAnd, true},   {"__or__", &kBitwiseOr, false},      {"__ror__", &kBitwiseOr, true},
      {"__xor__", &kBitwiseXor, false},   {"__rxor__", &kBitwiseXor, true},    {"__eq__", &kEq, false},
      {"__ne__", &kNe, false},            {"__lt__", &kLt, false},             {"__le__", &kLe, false},
      {"__gt__", &kGt, false},            {"__ge__", &kGe, false}};
  for (const Operator& o : operators) {
    const std::string where = fmt::format("oa.Tensor.{}", o.name);
    if (!o.reflected)
      t.def(o.name, [o, where](const Matrix& a, const Matrix& b) { return binary(*o.op, a, b, where.c_str()); }, py::is_operator());
    t.def(o.name, [o, where](const Matrix& x, const Number& s) { return binary(*o.op, x, s, o.reflected, where.c_str()); },
          py::is_operator());
    t.def(
        o.name,
        [o, where](const Matrix& x, const py::array& other) {
          const Matrix a = array_operand(x, other, where.c_str());
          return o.reflected ? binary(*o.op, a, x, where.c_str()) : binary(*o.op, x, a, where.c_str());
        },
        py::is_operator(), py::arg("other").noconvert());
  }
  t.def("__matmul__", [](const Matrix& x, const py::array& a) {
          return matmul(x, array_operand(x, a, "oa.Tensor.__matmul__ (@)"), "oa.Tensor.__matmul__ (@)");
        },
        py::is_operator(), py::arg("other").noconvert());
  t.def("__rmatmul__", [](const Matrix& x, const py::array& a) {
          return matmul(array_operand(x, a, "oa.Tensor.__rmatmul__ (@)"), x, "oa.Tensor.__rmatmul__ (@)");
        },
        py::is_operator(), py::arg("other").noconvert());
  // The methods and functions of the promoted binary ops (oa.floor_divide,
  // x.remainder(y), ...), with a Tensor or a Python number.
  struct Function {
    const char* name;
    const BinaryOp* op;
    const char* doc;
  };
  static const Function functions[] = {
      {"floor_divide", &kFloorDivide,
       "torch.floor_divide (x // y): floor(x / y). Floats as torch (a zero divisor gives +-inf or NaN); int32 exact, an integer "
       "division by zero raises ZeroDivisionError (an int32 divisor tensor is read back to look: a synchronization). No gradient."},
      {"remainder", &kRemainder,
       "torch.remainder (x % y): x - y * floor(x / y), with the divisor's sign. Floats (a zero divisor gives NaN; "
       "differentiable, as torch) or int32 (exact; an integer division by zero raises ZeroDivisionError)."},
      {"mul", &kMul, "torch.mul (x * y): promotion as oa.Tensor.add; differentiable for floats."},
      {"eq", &kEq, "torch.eq (x == y): bool, elementwise, of the operands promoted as oa.Tensor.add (broadcast)."},
      {"ne", &kNe, "torch.ne (x != y): as eq."},
      {"lt", &kLt, "torch.lt (x < y): as eq."},
      {"le", &kLe, "torch.le (x <= y): as eq."},
      {"gt", &kGt, "torch.gt (x > y): as eq."},
      {"ge", &kGe, "torch.ge (x >= y): as eq."},
      {"bitwise_and", &kBitwiseAnd, "torch.bitwise_and (x & y): int32 or bool (logical) operands."},
      {"bitwise_or", &kBitwiseOr, "torch.bitwise_or (x | y): int32 or bool (logical) operands."},
      {"bitwise_xor", &kBitwiseXor, "torch.bitwise_xor (x ^ y): int32 or bool (logical) operands."},
      {"pow", &kPow,
       "torch.pow (x ** y): floats as float32 pow; an int32 (or bool) tensor with an int exponent stays int32 (wrapping, as "
       "torch's integer pow; a negative int exponent raises, as torch's)."}};
  for (const Function& f : functions) {
    const std::string method = fmt::format("oa.Tensor.{}", f.name), function = fmt::format("oa.{}", f.name);
    const char* arg = f.op == &kPow ? "exponent" : "other";
    t.def(f.name, [f, method](const Matrix& x, const Matrix& y) { return binary(*f.op, x, y, method.c_str()); }, py::arg(arg), f.doc);
    t.def(f.name, [f, method](const Matrix& x, const Number& y) { return binary(*f.op, x, y, false, method.c_str()); }, py::arg(arg));
    m.def(f.name, [f, function](const Matrix& x, const Matrix& y) { return binary(*f.op, x, y, function.c_str()); }, py::arg("input"),
          py::arg(arg), f.doc);
    m.def(f.name, [f, function](const Matrix& x, const Number& y) { return binary(*f.op, x, y, false, function.c_str()); },
          py::arg("input"), py::arg(arg));
    m.def(f.name, [f, function](const Number& x, const Matrix& y) { return binary(*f.op, y, x, true, function.c_str()); },
          py::arg("input"), py::arg(arg));
  }
  m.def("bitwise_not", &mx::bitwise_not, py::arg("input"), "torch.bitwise_not (~x): bitwise not of int32, logical not of bool.");
  const char* const div_doc =
      "torch.div (x / y): true division of tensors or a tensor and a number, promoted as oa.Tensor.add, integers giving "
      "float32; differentiable for floats. rounding_mode None only: 'trunc' and 'floor' raise oa.UnsupportedError "
      "(x // y is oa.floor_divide); TypeError for an operand that is not a tensor or a number, or two numbers.";
  t.def("div",
        [](const py::object& x, const py::object& other, const std::optional<std::string>& rounding_mode) {
          return divide(x, other, rounding_mode, "oa.Tensor.div");
        },
        py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none(), div_doc);
  m.def("div",
        [](const py::object& x, const py::object& other, const std::optional<std::string>& rounding_mode) {
          return divide(x, other, rounding_mode, "oa.div");
        },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("rounding_mode") = py::none(), div_doc);

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
  m.def("matmul", [](const Matrix& a, const Matrix& b) { return matmul(a, b, "oa.matmul"); }, py::arg("input"), py::arg("other"),
        "input @ other (torch.matmul): 1-D operands as torch (a row / a column the result drops; [K] @ [K] is the dot\n"
        "product, shape []), batch extents broadcast ([2, 1, 3, 4] @ [5, 4, 6] -> [2, 5, 3, 6]); f32, float16 or\n"
        "bfloat16, both one dtype. ValueError (oa.InvalidArgumentError) naming both shapes when inner extents differ or\n"
        "batch extents do not broadcast, and naming oa.matmul for an int32 or bool operand (torch's CUDA matmul refuses\n"
        "integers too).");
  for (const FixedRankProduct& p : kFixedRankProducts) {
    const std::string doc = fmt::format(
        "{}; float32, float16 or bfloat16, both one dtype, differentiable. oa.InvalidArgumentError naming both shapes for other "
        "ranks or extents, and the operand for an int32 or bool one.", p.doc);
    m.def(p.name, [&p, op = fmt::format("oa.{}", p.name)](const Matrix& a, const Matrix& b) { return fixed_rank_product(p, a, b, op.c_str()); },
          py::arg("input"), py::arg(p.other), doc.c_str());
    t.def(p.name, [&p, op = fmt::format("oa.Tensor.{}", p.name)](const Matrix& a, const Matrix& b) { return fixed_rank_product(p, a, b, op.c_str()); },
          py::arg(p.other), fmt::format("torch.Tensor.{}: oa.{}(self, {}).", p.name, p.name, p.other).c_str());
  }
  m.def("maximum", &mx::maximum, py::arg("input"), py::arg("other"));
  m.def(
      "where",
      [](const py::object& condition, const py::object& input, const py::object& other) -> py::object {
        if (input.is_none() && other.is_none() && py::isinstance<Matrix>(condition)) return nonzero_tuple(condition.cast<const Matrix&>());
        return py::cast(where(condition, input, other, "oa.where"));
      },
      py::arg("condition"), py::arg("input") = py::none(), py::arg("other") = py::none(),
      "torch.where(condition, input, other): NumPy broadcasting, condition bool; input and other of any dtype (bool "
      "included), promoted to their torch.result_type (float16 with bfloat16 gives float32); either or both may be a "
      "Python number: with a tensor it is promoted as torch's scalars (oa.where(c, x, 0) keeps x's dtype, an int32 x "
      "with 0.5 gives float32), two numbers give bool (two bools), int32 (ints; torch: int64) or float32 (any float, "
      "torch's default dtype), as torch. Gradients flow to the tensor operands (floating ones). "
      "torch.where(condition) with one argument: oa.nonzero(condition, as_tuple=True) (a synchronization). Errors: "
      "TypeError naming the argument for a condition that is not a tensor or an operand that is not a tensor or a "
      "number; oa.InvalidArgumentError (a ValueError) for shapes that do not broadcast or a non-bool condition.");
  m.def(
      "masked_fill",
      [](const py::object& input, const py::object& mask, const py::object& value) {
        return masked_fill(input, mask, value, "oa.masked_fill");
      },
      py::arg("input"), py::arg("mask"), py::arg("value"),
      "torch.masked_fill(input, mask, value): input with value where mask (bool, broadcast with input) holds, of the "
      "broadcast shape; input of any dtype: a float one takes value rounded to it, int32 truncated toward zero, bool "
      "True for any nonzero value (as torch). value: a bool, int or float, or a 0-d tensor of any dtype (read back, a "
      "synchronization, as torch's); a floating one that requires grad gets the sum of the result's gradient where "
      "mask holds, as torch. Errors: TypeError naming the op and the argument for an input or mask that is not a "
      "tensor or a value that is not a number or a tensor; oa.InvalidArgumentError for a value tensor that is not 0-d "
      "(naming its shape; torch: RuntimeError), a value input's dtype cannot hold (as torch), a non-bool mask, "
      "shapes that do not broadcast, or a mask or value tensor on another engine than input.");
  m.def(
      "nonzero", [](const py::object& input, const py::object& as_tuple) { return nonzero(input, as_tuple, "oa.nonzero"); },
      py::arg("input"), py::kw_only(), py::arg("as_tuple") = false,
      "torch.nonzero(input, as_tuple=False): the int32 (torch: int64) [K, input.ndim] coordinates of input's nonzero "
      "elements (any dtype; NaN counts as nonzero, -0.0 as zero), row-major order; as_tuple=True: a tuple of input.ndim "
      "int32 [K] tensors, one per axis (a 0-d input counts as 1-d: one tensor). K depends on the values: the count is "
      "read back from the device, a synchronization (as torch's on a GPU); the coordinates are found on the device. No "
      "gradient. Errors: TypeError naming the argument for an input that is not a tensor or an as_tuple that is not a "
      "bool (None or 1 included), as torch.");
  m.def("tril", &mx::tril, py::arg("input"), py::arg("diagonal") = 0);
  m.def("clamp", &clamp, py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none(), clamp_doc);
  m.def("permute",
        [](const Matrix& x, const py::object& dims) {
          return permute(x, size_of_args(py::make_tuple(dims)), "oa.permute");
        },
        py::arg("input"), py::arg("dims"),
        "torch.permute(input, dims): input's axes in the order dims (a sequence of ints) gives; a copy, not a view "
        "(see oa.Tensor.permute). oa.InvalidArgumentError when dims is not a permutation of input's axes.");
  m.def("transpose", transpose("oa.transpose"), py::arg("input"), py::arg("dim0"), py::arg("dim1"),
        "torch.transpose: dims dim0 and dim1 swapped, a copy, not a view: in-place ops on the result raise "
        "oa.FailedPreconditionError.");
  m.def("reshape", [](const Matrix& x, const std::vector<std::int64_t>& shape) { return x.reshape(shape); }, py::arg("input"),
        py::arg("shape"),
        "torch.reshape: input's elements in `shape` (a sequence of ints, one of them -1 for the rest), sharing input's "
        "storage; oa.InvalidArgumentError when the element counts differ.");
  m.def("all", all_or_any(true, "oa.all"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), all_doc);
  m.def("any", all_or_any(false, "oa.any"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), any_doc);
  m.def("triu", &mx::triu, py::arg("input"), py::arg("diagonal") = 0);
  m.def("minimum", &mx::minimum, py::arg("input"), py::arg("other"));
  m.def("add", [](const Matrix& x, const Matrix& other, const Number& alpha) { return binary(kAdd, x, scaled(x, other, alpha, "oa.add"), "oa.add"); },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1,
        "input + other * alpha (torch.add); promotion as oa.Tensor.add.");
  m.def("add", [](const Matrix& x, const Number& other, const Number& alpha) { return binary(kAdd, x, scaled(x, other, alpha, "oa.add"), false, "oa.add"); },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1);
  m.def("sub", [](const Matrix& x, const Matrix& other, const Number& alpha) { return binary(kSub, x, scaled(x, other, alpha, "oa.sub"), "oa.sub"); },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1, "input - other * alpha (torch.sub); promotion as oa.add.");
  m.def("sub", [](const Matrix& x, const Number& other, const Number& alpha) { return binary(kSub, x, scaled(x, other, alpha, "oa.sub"), false, "oa.sub"); },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = 1);
  m.def("cumsum", &mx::cumsum, py::arg("input"), py::arg("dim"));
  m.def("argmax", arg_extreme_of(true, "oa.argmax"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(),
        "torch.argmax: int32 index of the maximum along dim, or of the flattened tensor without dim.");
  m.def("sum", reduction<&mx::sum>("oa.sum"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("mean", reduction<&mx::mean>("oa.mean"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("max", extreme(true, "oa.max"),
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
            py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), max_doc);
  m.def("min", extreme(false, "oa.min"),
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
            py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none(), min_doc);
  m.def("amax", reduction<&mx::max>("oa.amax"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("amin", reduction<&mx::min>("oa.amin"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("prod", reduction<&mx::prod>("oa.prod"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("logsumexp", reduction<&mx::logsumexp>("oa.logsumexp"), py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("var", spread<&mx::var>("oa.var"), py::arg("input"), py::arg("dim") = py::none(), py::arg("unbiased") = py::none(),
        py::arg("keepdim") = false, py::kw_only(), py::arg("correction") = py::none(),
        py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("std", spread<&mx::std>("oa.std"), py::arg("input"), py::arg("dim") = py::none(), py::arg("unbiased") = py::none(),
        py::arg("keepdim") = false, py::kw_only(), py::arg("correction") = py::none(),
        py::arg("axis") = py::none(), py::arg("keepdims") = py::none());
  m.def("norm", norm("oa.norm"), py::arg("input"), py::arg("p") = 2.0f, py::arg("dim") = py::none(), py::arg("keepdim") = false,
        py::kw_only(), py::arg("axis") = py::none(), py::arg("keepdims") = py::none());

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
        return finish(filled(Shape(size_of_args(size)), *number_of(py::int_(0)), dtype.value_or(DType::F32), engine, "oa.zeros"), {},
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, py::arg("engine") = py::none());
  m.def(
      "ones",
      [](const py::args& size, Opt dtype, bool requires_grad, const OptEngine& engine) {
        return finish(filled(Shape(size_of_args(size)), *number_of(py::int_(1)), dtype.value_or(DType::F32), engine, "oa.ones"), {},
                      requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("requires_grad") = false, py::arg("engine") = py::none());
  m.def(
      "full",
      [](const std::vector<std::int64_t>& size, const py::object& fill_value, Opt dtype, bool requires_grad,
         const OptEngine& engine) {
        const Number v = number_arg(fill_value, "oa.full", "fill_value");
        return finish(filled(Shape(size), v, dtype.value_or(result_type(v, v)), engine, "oa.full"), {}, requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      py::arg("engine") = py::none(),
      "torch.full(size, fill_value, dtype=None): a new leaf of shape size holding fill_value, as dtype or, without one, "
      "torch's inference: bool for a bool, int32 for an int (torch: int64), float32 for a float. Raises "
      "oa.InvalidArgumentError for a value int32 cannot hold (outside int32, NaN or infinite), TypeError for a "
      "fill_value that is not a number.");
  const char* const like_doc =
      "torch.zeros_like, ones_like and full_like(input, fill_value): a new leaf of input's shape on input's engine, "
      "of dtype (input's dtype without one), filled with 0, 1 or fill_value (a number; int32 truncates a float toward "
      "zero, as torch, and refuses a value outside int32, NaN or an infinity: oa.InvalidArgumentError). requires_grad "
      "as torch's.";
  m.def(
      "zeros_like",
      [](const Matrix& x, Opt dtype, bool requires_grad) { return full_like(x, *number_of(py::int_(0)), dtype, requires_grad, "oa.zeros_like"); },
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false, like_doc);
  m.def(
      "ones_like",
      [](const Matrix& x, Opt dtype, bool requires_grad) { return full_like(x, *number_of(py::int_(1)), dtype, requires_grad, "oa.ones_like"); },
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false, like_doc);
  m.def(
      "full_like",
      [](const Matrix& x, const py::object& fill_value, Opt dtype, bool requires_grad) {
        return full_like(x, number_arg(fill_value, "oa.full_like", "fill_value"), dtype, requires_grad, "oa.full_like");
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      like_doc);
  m.def(
      "eye",
      [](std::int64_t n, std::optional<std::int64_t> width, Opt dtype, bool requires_grad, const OptEngine& engine) {
        const std::int64_t cols = width.value_or(n);
        if (n < 0 || cols < 0) fail(ErrorKind::InvalidArgument, "oa.eye: n and m must be >= 0, got {} and {}", n, cols);
        // 1 where the row index equals the column index: float32 counts are exact below 2^24.
        const Matrix rows = Matrix::arange(0.0f, static_cast<float>(n), 1.0f, engine).reshape({n, 1});
        const Matrix columns = Matrix::arange(0.0f, static_cast<float>(cols), 1.0f, engine).reshape({1, cols});
        return finish(mx::eq(rows, columns), dtype.value_or(DType::F32), requires_grad);
      },
      py::arg("n"), py::arg("m") = py::none(), py::kw_only(), py::arg("dtype") = py::none(), py::arg("requires_grad") = false,
      py::arg("engine") = py::none(),
      "torch.eye: the [n, m] identity (m = n without it): 1 on the main diagonal, 0 elsewhere, as dtype (float32 "
      "without one). oa.InvalidArgumentError for a negative n or m.");
  m.def(
      "arange",
      [](const py::object& start, const py::object& end, const py::object& step, Opt dtype, bool requires_grad,
         const OptEngine& engine) {
        const char* op = "oa.arange";
        const Number a = number_arg(start, op, "start"), by = number_arg(step, op, "step");
        // arange(end) counts from 0, as torch.arange.
        const Number first = end.is_none() ? *number_of(py::int_(0)) : a;
        const Number last = end.is_none() ? a : number_arg(end, op, "end");
        // torch's inference: integers alone give int32 (torch: int64), any float float32.
        const DType type = dtype.value_or(std::max({category(first), category(last), category(by)}) == 2 ? DType::F32 : DType::I32);
        if (type != DType::I32)
          return finish(as_called(op, [&] { return Matrix::arange(first.f, last.f, by.f, engine); }), type, requires_grad);
        // int32 is counted and filled on the host, exactly, in double as torch.
        if (by.f == 0 || !std::isfinite(first.f) || !std::isfinite(last.f) || !std::isfinite(by.f))
          fail(ErrorKind::InvalidArgument, "{}: start {}, end {}, step {} do not describe a finite range (step nonzero)", op,
               text_of(first), text_of(last), text_of(by));
        const double count = std::max(0.0, std::ceil((last.f - first.f) / by.f));
        const double final_value = first.f + std::max(count - 1, 0.0) * by.f;
        if (!(count <= INT32_MAX) ||
            (count > 0 && !(std::min(first.f, final_value) >= INT32_MIN && std::max(first.f, final_value) <= INT32_MAX)))
          fail(ErrorKind::InvalidArgument,
               "{}: values from {} to {} by {} do not fit int32 (oa's integer dtype, for torch's int64): "
               "give dtype=oa.float32, or a range within int32",
               op, text_of(first), text_of(last), text_of(by));
        std::vector<std::int32_t> values(static_cast<std::size_t>(count));
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(first.f + static_cast<double>(i) * by.f);
        return finish(Matrix::from_i32({static_cast<std::int64_t>(values.size())}, values, engine), {}, requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::arg("dtype") = py::none(),
      py::arg("requires_grad") = false, py::arg("engine") = py::none(),
      "torch.arange(start=0, end, step=1, dtype=None): [n] holding start, start + step, ... below end (above it for a "
      "negative step), n = ceil((end - start) / step) computed in double as torch's (arange(0.1, 0.4, 0.1) has 4 "
      "elements). Without dtype, torch's inference: int32 when start, end and step are all ints (torch: int64), "
      "float32 when any is a float; with dtype, that dtype (int32 counted on the host exactly, floats truncated toward "
      "zero). Raises oa.InvalidArgumentError for a zero or non-finite step or bound, and for int32 values outside "
      "int32; TypeError for an argument that is not a number.");
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
  m.def("_next_seed", &seed_or_next, py::arg("seed") = py::none(),
        "`seed`, or without one the next seed of the stream oa.manual_seed restarts (for the Python creation functions).");
  m.def(
      "manual_seed", [](std::uint64_t seed) { default_generator() = ml::Generator(seed); }, py::arg("seed"),
      "Restarts the seed stream (oa::ml::Generator) of oa.rand, oa.randn and dropout calls given no seed.");
}

}  // namespace oa::python
