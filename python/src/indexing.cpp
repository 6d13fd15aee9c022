// Indexing with Python's syntax (oa.Tensor.__getitem__) and the selection
// ops of oa/matrix/indexing.hpp and oa/matrix/concat.hpp: index_select,
// gather, scatter_add, take_along_axis, topk, one_hot, argmin, masked_select,
// cat, stack, split, chunk.
//
// x[key] walks the entries of key over x's axes (x of any dtype, its
// elements moved as bits), each a C++ op: an int is a
// narrow of one element and a squeeze (negative counts from the end), a slice
// a oa::matrix::slice (step >= 1), None an unsqueeze, Ellipsis the full
// slices it stands for, an int32 tensor or a list of ints an index_select
// (a tensor is read back, a synchronization, and its indices checked on the
// host as a list's are: negative ones count from the end, one outside the
// axis raises IndexError, as in PyTorch), a bool tensor or list (at any
// position, as torch) an index_select of its true positions along the axes
// it covers, merged (it reads the mask back: a synchronization). A key with several tensor, list or mask entries goes to
// oa/_indexing.py, which broadcasts them together as torch. Gradients flow
// through all of them. The result is a
// copy (torch: a view) unless it is x itself, so copy_not_view marks it and
// in-place ops on it raise (they would not reach x), except in an augmented
// assignment x[key] op= v, whose result Python assigns back to x[key].
//
// x[key] = value undoes the same steps in reverse on the value (broadcast to
// x[key]'s shape) and on ones: each step is an index_select by its inverse
// map, computed on the host from the key (an int32 index tensor or a mask is
// read back for it), so the assigned values and a mask of the assigned
// positions arrive in x's shape; a where merges them with x, and the result
// is written into x's storage as the other in-place ops are.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace mx = oa::matrix;

[[noreturn]] void index_error(const std::string& message) { throw py::index_error(message); }

bool is_mask(py::handle entry) {
  if (py::isinstance<Matrix>(entry)) return entry.cast<const Matrix&>().dtype() == DType::Bool;
  if (py::isinstance<py::list>(entry) || py::isinstance<py::tuple>(entry) || py::isinstance<py::array>(entry))
    return py::module_::import("numpy").attr("asarray")(entry).attr("dtype").attr("kind").cast<std::string>() == "b";
  return false;
}

// An int entry (is_int) as an int; IndexError when it does not fit in 64
// bits. nullopt for others.
std::optional<std::int64_t> int_index(py::handle e) {
  if (!is_int(e)) return std::nullopt;
  const Py_ssize_t v = PyNumber_AsSsize_t(e.ptr(), PyExc_IndexError);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// A slice's start, stop or step; past 64 bits clipped, as Python's slices are.
std::optional<std::int64_t> slice_part(py::handle v) {
  if (v.is_none()) return std::nullopt;
  const Py_ssize_t n = PyNumber_AsSsize_t(v.ptr(), nullptr);
  if (n == -1 && PyErr_Occurred()) throw py::error_already_set();
  return n;
}

// How many of x's axes a key entry consumes.
std::size_t axes_of(py::handle entry) {
  if (entry.is_none() || entry.is(py::ellipsis()) || py::isinstance<py::bool_>(entry)) return 0;
  if (is_mask(entry)) {
    if (py::isinstance<Matrix>(entry)) return entry.cast<const Matrix&>().rank();
    return py::len(py::module_::import("numpy").attr("shape")(entry));
  }
  return 1;
}

// Host indices along an axis of extent n: negative ones count from the end;
// any outside [-n, n) is an IndexError.
std::vector<std::int32_t> host_indices(py::handle entry, std::int64_t n, std::size_t axis, const char* op) {
  const auto wide = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(
      py::module_::import("numpy").attr("asarray")(entry));
  if (!wide) throw py::error_already_set();
  std::vector<std::int32_t> out(static_cast<std::size_t>(wide.size()));
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    std::int64_t v = wide.data()[i];
    if (v < -n || v >= n)
      index_error(std::string(op) + ": index " + std::to_string(v) + " is out of bounds for axis " + std::to_string(axis) +
                  " of extent " + std::to_string(n));
    out[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v < 0 ? v + n : v);
  }
  return out;
}

// x[indices] along `axis` for indices of shape `shape`: index_select of the
// flattened indices, then the axis unflattened to that shape.
Matrix select_along(const Matrix& x, std::size_t axis, const Matrix& flat_indices, const Shape& shape) {
  const int a = static_cast<int>(axis);
  Matrix r = mx::index_select(x, a, flat_indices);
  if (shape.rank() == 1) return r;
  if (shape.rank() == 0) return mx::squeeze(r, a);
  return mx::unflatten(r, a, shape.to_vector());
}

// One entry of a key, resolved against the partial result it indexes (the
// tensor after the entries before it): x[key] applies the steps in order,
// x[key] = value undoes them in reverse.
struct Step {
  enum class Kind { NewAxis, Int, Slice, Indices, Mask } kind;
  int axis = 0;             // the partial result's axis it applies to
  std::int64_t extent = 0;  // that axis's extent (Mask: the product of the extents it covers)
  // Int: start is the index (non-negative). Slice: Python's normalised start,
  // step and count; lo and hi as written.
  std::int64_t start = 0, step = 1, count = 0;
  std::optional<std::int64_t> lo, hi;
  // Indices: `positions` (checked, non-negative), and the int32 tensor given
  // when its indices needed no change. Mask: `positions` holds the flat
  // positions where it is true, `count` their number.
  Matrix tensor;
  std::vector<std::int32_t> positions;
  std::vector<std::int64_t> shape;  // Indices: the index's shape; Mask: the extents it covers
};

// The steps of x[key] (`op` names the caller in errors). Int32 index tensors
// and masks are read to the host (a synchronization) and checked, an index
// outside its axis raising IndexError. `selected` receives the shape of x[key].
std::vector<Step> parse_key(const Matrix& x, py::handle key, const char* op, std::vector<std::int64_t>& selected) {
  py::tuple entries = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::size_t consumed = 0, ellipses = 0;
  for (py::handle e : entries) {
    consumed += axes_of(e);
    ellipses += e.is(py::ellipsis()) ? 1 : 0;
  }
  if (ellipses > 1) index_error(std::string(op) + ": an index can only have a single ellipsis ('...')");
  if (consumed > x.rank()) index_error(std::string(op) + ": too many indices for a tensor of shape " + fmt::format("{}", x.shape()));

  const py::module_ np = py::module_::import("numpy");
  std::vector<std::int64_t>& shape = selected;
  shape = x.shape().to_vector();
  std::vector<Step> steps;
  std::size_t axis = 0;    // the axis of the partial result that the next entry indexes
  std::size_t source = 0;  // the axis of x that it indexes (what errors name)
  const auto out_of_range = [op](std::int64_t i, std::size_t axis, std::int64_t n) {
    index_error(std::string(op) + ": index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                " of extent " + std::to_string(n));
  };
  for (py::handle e : entries) {
    Step s{};
    s.axis = static_cast<int>(axis);
    if (e.is(py::ellipsis())) {
      axis += x.rank() - consumed;
      source += x.rank() - consumed;
      continue;
    }
    if (e.is_none()) {
      s.kind = Step::Kind::NewAxis;
      shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      ++axis;
    } else if (py::isinstance<py::bool_>(e)) {
      // torch: True adds an axis of extent 1, False one of extent 0 (a new
      // axis, then an empty slice of it).
      s.kind = Step::Kind::NewAxis;
      shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      if (!e.cast<bool>()) {
        steps.push_back(s);
        s.kind = Step::Kind::Slice;
        s.extent = 1;
        s.lo = s.hi = 0;
        shape[axis] = 0;
      }
      ++axis;
    } else if (const auto index = int_index(e)) {
      s.kind = Step::Kind::Int;
      s.extent = shape[axis];
      if (*index < -s.extent || *index >= s.extent) out_of_range(*index, source, s.extent);
      s.start = *index < 0 ? *index + s.extent : *index;
      shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
      ++source;
    } else if (py::isinstance<py::slice>(e)) {
      const auto sl = py::reinterpret_borrow<py::slice>(e);
      s.kind = Step::Kind::Slice;
      s.extent = shape[axis];
      s.step = slice_part(sl.attr("step")).value_or(1);
      if (s.step < 1) throw py::value_error(std::string(op) + ": a slice step must be positive, not " + std::to_string(s.step));
      s.lo = slice_part(sl.attr("start"));
      s.hi = slice_part(sl.attr("stop"));
      Py_ssize_t start = 0, stop = 0, step = 0, count = 0;
      if (!sl.compute(static_cast<Py_ssize_t>(s.extent), &start, &stop, &step, &count)) throw py::error_already_set();
      s.start = start;
      s.count = count;
      shape[axis] = count;
      ++axis;
      ++source;
    } else {
      if (is_mask(e)) {
        s.kind = Step::Kind::Mask;
        Matrix mask;
        if (py::isinstance<Matrix>(e)) {
          mask = e.cast<Matrix>();
          oa::detail::require_same_engine(x, "x", mask, "mask", op);
          s.shape = mask.shape().to_vector();
        } else {
          s.shape = np.attr("shape")(e).cast<std::vector<std::int64_t>>();
        }
        s.extent = 1;
        for (std::size_t k = 0; k < s.shape.size(); ++k) {
          if (s.shape[k] != shape[axis + k])
            index_error(
                std::string(op) + ": the mask's shape " + fmt::format("{}", Shape(s.shape)) + " does not match the extents " +
                fmt::format("{}", Shape(std::vector<std::int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(axis),
                                                                  shape.begin() + static_cast<std::ptrdiff_t>(axis + s.shape.size())))) +
                " of the indexed tensor " + fmt::format("{}", Shape(shape)) + " from axis " + std::to_string(axis));
          s.extent *= s.shape[k];
        }
        const auto values = mask.defined() ? mask.to_bool()
                                           : np.attr("asarray")(e, "uint8").attr("ravel")().cast<std::vector<std::uint8_t>>();
        for (std::size_t k = 0; k < values.size(); ++k)
          if (values[k]) s.positions.push_back(static_cast<std::int32_t>(k));
        s.count = static_cast<std::int64_t>(s.positions.size());
        const auto first = shape.begin() + static_cast<std::ptrdiff_t>(axis);
        shape.insert(shape.erase(first, first + static_cast<std::ptrdiff_t>(s.shape.size())), s.count);
        axis += 1;
        source += s.shape.size();
      } else {
        s.kind = Step::Kind::Indices;
        s.extent = shape[axis];
        if (py::isinstance<Matrix>(e)) {
          const Matrix index = e.cast<Matrix>();
          oa::detail::require_same_engine(x, "x", index, "index", op);
          if (index.dtype() != DType::I32)
            throw py::type_error(std::string(op) + ": a tensor index must be int32 or bool, not " + std::string(to_string(index.dtype())));
          s.shape = index.shape().to_vector();
          s.positions = index.to_i32();
          bool wrapped = false;
          for (std::int32_t& p : s.positions) {
            if (p < -s.extent || p >= s.extent) out_of_range(p, source, s.extent);
            if (p < 0) {
              p += static_cast<std::int32_t>(s.extent);
              wrapped = true;
            }
          }
          if (!wrapped) s.tensor = index;  // already valid on the device: no upload of positions
        } else if (py::isinstance<py::sequence>(e) && !py::isinstance<py::str>(e)) {
          s.shape = np.attr("shape")(e).cast<std::vector<std::int64_t>>();
          s.positions = host_indices(e, s.extent, source, op);
        } else {
          throw py::type_error(std::string(op) + ": an index must be an int, slice, None, ..., a list or an int32/bool tensor, not " +
                               py::str(py::type::handle_of(e).attr("__name__")).cast<std::string>());
        }
        shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
        shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), s.shape.begin(), s.shape.end());
        axis += s.shape.size();
        ++source;
      }
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

// Whether the Python code running reads x[key] for an augmented assignment,
// x[key] op= v, which Python runs as t = x[key]; t = t.__iop__(v); x[key] = t:
// CPython compiles it (alone) to two COPYs of the operands right before the
// subscript (3.11+: COPY 2, COPY 2, BINARY_SUBSCR; 3.8-3.10: DUP_TOP_TWO,
// BINARY_SUBSCR), which is the instruction the calling frame is running.
bool augmented_assignment_read() {
  const auto opcode = [](const char* name) {
    const py::dict opmap = py::module_::import("dis").attr("opmap");
    return opmap.contains(name) ? opmap[name].cast<int>() : -1;
  };
  static const int subscr = opcode("BINARY_SUBSCR"), copy = opcode("COPY"), dup_two = opcode("DUP_TOP_TWO");
  const auto frame = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(PyEval_GetFrame()));
  if (!frame) return false;
  const auto at = frame.attr("f_lasti").cast<std::int64_t>();
  // The bytecode read in place (no copy: this runs on every subscript).
  const py::bytes co_code = frame.attr("f_code").attr("co_code");
  char* code = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(co_code.ptr(), &code, &size) != 0) throw py::error_already_set();
  const auto op = [&](std::int64_t i) { return i >= 0 && i < size ? static_cast<int>(static_cast<unsigned char>(code[i])) : -1; };
  if (op(at) != subscr) return false;
  if (copy >= 0) return op(at - 4) == copy && op(at - 3) == 2 && op(at - 2) == copy && op(at - 1) == 2;
  return op(at - 2) == dup_two;
}

// Whether key has several tensor, list or mask entries, which broadcast
// together (x[rows, cols]): oa/_indexing.py's get_item and set_item take those.
bool several_indices(py::handle key) {
  if (!py::isinstance<py::tuple>(key)) return false;
  std::size_t n = 0;
  for (py::handle e : key)
    n += e.is_none() || e.is(py::ellipsis()) || py::isinstance<py::bool_>(e) || py::isinstance<py::slice>(e) || int_index(e) ? 0 : 1;
  return n > 1;
}

// x[key] before copy_not_view.
Matrix indexed(const Matrix& x, py::handle key) {
  if (several_indices(key)) return py::module_::import("oa._indexing").attr("get_item")(x, key).cast<Matrix>();
  std::vector<std::int64_t> selected;
  const std::vector<Step> steps = parse_key(x, key, "oa.Tensor.__getitem__", selected);
  Matrix r = x;
  for (const Step& s : steps) {
    switch (s.kind) {
      case Step::Kind::NewAxis: r = mx::unsqueeze(r, s.axis); break;
      case Step::Kind::Int: r = mx::squeeze(mx::narrow(r, s.axis, s.start, 1), s.axis); break;
      case Step::Kind::Slice:
        if (s.lo || s.hi || s.step != 1) r = mx::slice(r, s.axis, s.lo, s.hi, s.step);
        break;
      case Step::Kind::Indices: {
        const Matrix flat = s.tensor.defined() ? s.tensor.reshape({s.tensor.numel()})
                                               : Matrix::from_i32({static_cast<std::int64_t>(s.positions.size())}, s.positions, r.engine());
        r = select_along(r, static_cast<std::size_t>(s.axis), flat, Shape(s.shape));
        break;
      }
      case Step::Kind::Mask:
        // The axes the mask covers merged into one (a 0-d mask: a new axis of 1), its true positions selected.
        r = s.shape.empty() ? mx::unsqueeze(r, s.axis) : mx::flatten(r, s.axis, s.axis + static_cast<int>(s.shape.size()) - 1);
        r = mx::index_select(r, s.axis, Matrix::from_i32({s.count}, s.positions, r.engine()));
        break;
    }
  }
  return r;
}

Matrix get_item(const Matrix& x, py::handle key) {
  const Matrix r = indexed(x, key);
  // x[key] op= v: the copy is updated in place and assigned back, so it is
  // left unmarked (in-place ops on it allowed).
  return augmented_assignment_read() ? r : copy_not_view(x, r, "oa.Tensor.__getitem__");
}

// Undoes one step of x[key] for the assigned values t (the step's result
// shape): t placed into the step's source shape, zeros elsewhere. Each step
// is one index_select along its axis by the inverse map (for every source
// position along the axis, the selected position it came from), and a where
// that zeroes the positions no value came to; for an index with repeats the
// last one wins, as torch's sequential assignment on the CPU.
Matrix place(Matrix t, const Step& s) {
  std::vector<std::int32_t> inverse(static_cast<std::size_t>(s.extent), -1);
  switch (s.kind) {
    case Step::Kind::NewAxis: return mx::squeeze(t, s.axis);
    case Step::Kind::Int:
      t = mx::unsqueeze(t, s.axis);
      inverse[static_cast<std::size_t>(s.start)] = 0;
      break;
    case Step::Kind::Slice:
      if (s.start == 0 && s.step == 1 && s.count == s.extent) return t;
      for (std::int64_t j = 0; j < s.count; ++j) inverse[static_cast<std::size_t>(s.start + j * s.step)] = static_cast<std::int32_t>(j);
      break;
    case Step::Kind::Indices:
      if (s.shape.empty()) t = mx::unsqueeze(t, s.axis);
      if (s.shape.size() > 1) t = mx::flatten(t, s.axis, s.axis + static_cast<int>(s.shape.size()) - 1);
      [[fallthrough]];
    case Step::Kind::Mask:
      for (std::size_t k = 0; k < s.positions.size(); ++k) inverse[static_cast<std::size_t>(s.positions[k])] = static_cast<std::int32_t>(k);
      break;
  }
  // Positions that take no value select element 0, then a where zeroes them
  // (index_select raises OutOfRange for an index outside the axis).
  std::vector<std::uint8_t> taken(inverse.size());
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    taken[i] = inverse[i] >= 0;
    inverse[i] = std::max(inverse[i], 0);
  }
  t = mx::index_select(t, s.axis, Matrix::from_i32({s.extent}, inverse, t.engine()));
  if (std::ranges::count(taken, 0) > 0) {
    std::vector<std::int64_t> along(t.rank() - static_cast<std::size_t>(s.axis), 1);
    along[0] = s.extent;
    const Matrix zero = t.dtype() == DType::I32 ? int32_scalar(0, t.engine()) : Matrix::zeros({}, t.engine());
    t = mx::where(Matrix::from_bool(Shape(along), taken, t.engine()), t, zero);
  }
  if (s.kind == Step::Kind::Mask && s.shape.size() != 1) t = s.shape.empty() ? mx::squeeze(t, s.axis) : mx::unflatten(t, s.axis, s.shape);
  return t;
}

// The dtype x[key] = value computes in: x's own for f32 and i32 (where selects
// those), f32 for the 16-bit floats and bool (written back rounded, or as
// value != 0).
DType assignment_dtype(DType x) { return x == DType::I32 ? DType::I32 : DType::F32; }

// value (a tensor, a Python number, a NumPy array or a nested list) as a
// Matrix of `dtype` on x's engine, as torch casts what is assigned to x's
// dtype (a float into int32 truncates toward zero).
Matrix assigned_values(const Matrix& x, py::handle value, DType dtype, const char* op) {
  if (!py::isinstance<Matrix>(value)) {
    if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || value.is_none())
      throw py::type_error(std::string(op) + ": the value must be a number, an oa.Tensor, a NumPy array or a list, not " +
                           py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
    const py::module_ np = py::module_::import("numpy");
    const py::array array = dtype == DType::F32 ? np.attr("asarray")(value, "float64") : np.attr("asarray")(value);
    const char kind = array.dtype().kind();
    if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
      throw py::type_error(std::string(op) + ": the value must be numbers or booleans, not NumPy dtype " +
                           py::str(static_cast<py::handle>(array.dtype())).cast<std::string>());
    return from_array(array, dtype, false, x.engine(), op);
  }
  const Matrix v = value.cast<Matrix>();
  oa::detail::require_same_engine(x, "x", v, "value", op);
  return convert(v, dtype);
}

// x[key] = value (see __setitem__'s docstring).
void set_item(const Matrix& x, py::handle key, py::handle value) {
  constexpr const char* op = "oa.Tensor.__setitem__";
  const DType dtype = assignment_dtype(x.dtype());
  const Matrix v = assigned_values(x, value, dtype, op);
  const bool is_tensor = py::isinstance<Matrix>(value);
  const Matrix given = is_tensor ? value.cast<Matrix>() : Matrix();
  update_in_place(x, is_tensor ? &given : nullptr, [&] {
    if (several_indices(key))
      return py::module_::import("oa._indexing").attr("set_item")(convert(x, dtype), key, v).cast<Matrix>();
    std::vector<std::int64_t> selected;
    const std::vector<Step> steps = parse_key(x, key, op, selected);
    const Matrix base = convert(x, dtype);
    if (Shape(selected).numel() == 0) return base;
    // value broadcast to x[key]'s shape, leading extents of 1 dropped first (as torch).
    std::vector<std::int64_t> vs = v.shape().to_vector();
    while (vs.size() > selected.size() && vs.front() == 1) vs.erase(vs.begin());
    bool broadcasts = vs.size() <= selected.size();
    for (std::size_t k = 0; broadcasts && k < vs.size(); ++k) {
      const std::int64_t a = vs[vs.size() - 1 - k], b = selected[selected.size() - 1 - k];
      broadcasts = a == b || a == 1;
    }
    if (!broadcasts)
      fail(ErrorKind::InvalidArgument, "{}: a value of shape {} cannot be broadcast to the indexing result's shape {}", op,
           v.shape(), Shape(selected));
    Matrix values = mx::expand(v.reshape(vs), selected);
    Matrix chosen = Matrix::ones(Shape(selected), x.engine());
    for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
      values = place(values, *s);
      chosen = place(chosen, *s);
    }
    return mx::where(mx::gt(chosen, 0.5f), values, base);
  }, op);
}


// torch.cat's and torch.stack's operands converted to their result type
// (torch.result_type over them; cat takes no 0-d tensor and stack operands of
// one shape, so no 0-d rule applies).
std::vector<Matrix> promoted(std::vector<Matrix> xs) {
  if (xs.empty()) return xs;
  DType d = xs[0].dtype();
  for (const Matrix& x : xs) d = promote(d, x.dtype());
  for (Matrix& x : xs) x = convert(x, d);
  return xs;
}

// torch's split_size_or_sections: an int or a list of ints.
std::vector<Matrix> split_any(const Matrix& x, py::handle split_size_or_sections, int dim) {
  return copies_not_views(x,
                          is_int(split_size_or_sections) ? mx::split(x, split_size_or_sections.cast<std::int64_t>(), dim)
                                                         : mx::split(x, split_size_or_sections.cast<std::vector<std::int64_t>>(), dim),
                          "oa.split");
}
std::vector<Matrix> chunk(const Matrix& x, std::int64_t chunks, int dim) {
  return copies_not_views(x, mx::chunk(x, chunks, dim), "oa.chunk");
}

}  // namespace

void bind_indexing(py::module_& m, TensorClass& t) {
  using py::arg;
  t.def("__getitem__", &get_item, arg("key"),
        "x[key] with ints, slices (step >= 1), None, ..., True / False (a new axis of extent 1 / 0, as torch), an int32 "
        "tensor or list of ints (index_select), a bool tensor at any position (its true positions along the axes it covers, as torch; "
        "read back, a synchronization), and several of those, "
        "which broadcast together as torch's (x[rows, cols]: read back and checked, a synchronization; see oa._indexing). "
        "Unlike torch, the result "
        "is a copy, not a view (x[:] and x[...] excepted): in-place ops on it raise oa.FailedPreconditionError (assign with "
        "x[key] = value instead), except in an augmented assignment x[key] op= v, which Python completes by assigning the "
        "updated copy back to x[key] (as torch's result, gradients included). An int32 tensor index "
        "is not checked (an index outside the axis gives zeros). An index or mask tensor on another engine than x raises "
        "oa.InvalidArgumentError.");
  t.def("__setitem__", &set_item, arg("key"), arg("value"),
        "x[key] = value, as torch: the same keys as x[key]; value a Python number, an oa.Tensor, a NumPy array or a "
        "(nested) list that broadcasts to x[key]'s shape (leading extents of 1 dropped first), cast to x's dtype (a float "
        "into int32 truncates toward zero, a nonzero into bool is True). x may be float32, float16, bfloat16, int32 or "
        "bool. Writes x's own storage "
        "on the device (every tensor sharing it, as x.view(...) or x.detach(), sees the change) and bumps x's version; "
        "refused as the other in-place ops (see oa.Tensor.add_): on a copy made by x[key], transpose, ..., on a leaf "
        "that requires grad outside oa.no_grad(), on values with autograd history. An int32 tensor index or a bool "
        "mask is read back to the host (a synchronization): an index outside its axis raises IndexError, a mask of "
        "other extents than the axes it covers IndexError. Several index entries broadcast together as in x[key]. "
        "Repeated indices: the last assignment wins. Errors: "
        "TypeError for a value of other types; oa.InvalidArgumentError for a NumPy or list value outside int32 (or NaN, "
        "infinite) assigned into int32; oa.InvalidArgumentError (a ValueError; torch raises RuntimeError) for a value "
        "that does not broadcast, and for a value tensor, an index or a mask on another engine than x; IndexError, "
        "TypeError and ValueError as x[key]. Cost: one index_select per int, "
        "sliced (not whole-axis) or advanced entry, of x's size, and one where.");
  t.def("index_select", [](const Matrix& x, int dim, const Matrix& index) { return mx::index_select(x, dim, index); },
        arg("dim"), arg("index"));
  t.def("gather", [](const Matrix& x, int dim, const Matrix& index) { return mx::gather(x, dim, index); }, arg("dim"),
        arg("index"));
  t.def("scatter_add", &mx::scatter_add, arg("dim"), arg("index"), arg("src"));
  t.def("masked_select", &mx::masked_select, arg("mask"));
  t.def("argmin", arg_extreme_of(false, "oa.Tensor.argmin"), arg("dim") = py::none(), arg("keepdim") = false, py::kw_only(),
        arg("axis") = py::none(), arg("keepdims") = py::none());
  // torch.topk's result: the named tuple oa.return_types.topk (values, indices).
  const py::object topk_type = m.attr("return_types").attr("topk");
  const auto topk = [topk_type](const Matrix& x, std::int64_t k, int dim, bool largest) {
    const auto r = mx::topk(x, k, dim, largest);
    return topk_type(r.values, r.indices);
  };
  t.def("topk", topk, arg("k"), arg("dim") = -1, arg("largest") = true);
  t.def("split", &split_any, arg("split_size_or_sections"), arg("dim") = 0,
        "torch's split, but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");
  t.def("chunk", &chunk, arg("chunks"), arg("dim") = 0,
        "torch's chunk, but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");

  m.def("index_select", [](const Matrix& input, int dim, const Matrix& index) { return mx::index_select(input, dim, index); },
        arg("input"), arg("dim"), arg("index"),
        "torch.index_select with an int32 index [K]; one outside the axis raises oa.OutOfRangeError (an IndexError) at a later "
        "synchronize or host read (found on the device).");
  m.def("gather", [](const Matrix& input, int dim, const Matrix& index) { return mx::gather(input, dim, index); },
        arg("input"), arg("dim"), arg("index"),
        "torch.gather with an int32 index of input's rank; out of range as index_select.");
  m.def("scatter_add", &mx::scatter_add, arg("input"), arg("dim"), arg("index"), arg("src"),
        "torch.scatter_add (index has input's extents outside dim); input and src of one dtype, float32, float16 or bfloat16 "
        "(summed in float32, rounded once) or int32 (exact); out of range as index_select.");
  m.def("take_along_dim", [](const Matrix& input, const Matrix& indices, int dim) { return mx::take_along_axis(input, indices, dim); },
        arg("input"), arg("indices"), arg("dim"),
        "torch.take_along_dim (numpy.take_along_axis), broadcasting; out of range as index_select.");
  m.def("masked_select", &mx::masked_select, arg("input"), arg("mask"),
        "input[mask] for a mask of input's leading extents; reads the mask back (synchronizes).");
  m.def("topk", topk, arg("input"), arg("k"), arg("dim") = -1, arg("largest") = true,
        "torch.topk: the named tuple oa.return_types.topk (values, int32 indices), sorted; ties by position.");
  m.def("argmin", arg_extreme_of(false, "oa.argmin"), arg("input"), arg("dim") = py::none(), arg("keepdim") = false, py::kw_only(),
        arg("axis") = py::none(), arg("keepdims") = py::none(),
        "torch.argmin: int32 index of the minimum along dim, or of the flattened tensor without dim.");
  m.def("cat", [](const std::vector<Matrix>& tensors, int dim) { return mx::concat(promoted(tensors), dim); }, arg("tensors"),
        arg("dim") = 0,
        "torch.cat, any dtype: mixed dtypes are promoted first as torch.cat does (torch.result_type over the tensors: bool < "
        "int32 < floating, float16 with bfloat16 gives float32).");
  m.def("stack", [](const std::vector<Matrix>& tensors, int dim) { return mx::stack(promoted(tensors), dim); }, arg("tensors"),
        arg("dim") = 0, "torch.stack, any dtype, promoting mixed dtypes as oa.cat.");
  m.def("split", &split_any, arg("tensor"), arg("split_size_or_sections"), arg("dim") = 0,
        "torch.split, any dtype, but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");
  m.def("chunk", &chunk, arg("input"), arg("chunks"), arg("dim") = 0,
        "torch.chunk, any dtype: pieces of ceil(size / chunks), the last one smaller (so possibly fewer than chunks), but "
        "copies, not views: in-place ops on them raise oa.FailedPreconditionError.");
}

void bind_one_hot(py::module_& functional) {
  functional.def("one_hot", py::overload_cast<const Matrix&, std::int64_t, DType>(&mx::one_hot), py::arg("tensor"), py::arg("num_classes"),
                 py::arg("dtype"),
                 "int32 indices [...] -> float32 or int32 [..., num_classes] (num_classes required; out-of-range rows are zeros).");
}

}  // namespace oa::python
