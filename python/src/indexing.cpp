// Indexing with Python's syntax (oa.Tensor.__getitem__) and the selection
// ops of oa/matrix/indexing.hpp and oa/matrix/concat.hpp: index_select,
// gather, scatter_add, take_along_axis, topk, one_hot, argmin, masked_select,
// cat, stack, split, chunk.
//
// x[key] walks the entries of key over x's axes, each a C++ op: an int is a
// narrow of one element and a squeeze (negative counts from the end), a slice
// a oa::matrix::slice (step >= 1), None an unsqueeze, Ellipsis the full
// slices it stands for, an int32 tensor or a list of ints an index_select
// (a list is checked on the host; a tensor's indices live on the device and
// are not: one outside the axis gives zeros), a bool tensor or list a
// masked_select over the axes it covers (it reads the mask back: a
// synchronization). Gradients flow through all of them. The result is a
// copy (torch: a view) unless it is x itself, so copy_not_view marks it and
// in-place ops on it raise. Assignment
// (x[key] = value) is not offered: oa's tensors have no in-place writes
// into part of a value.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

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

// An int entry as an int: a Python int or a NumPy integer scalar (not a
// bool); IndexError when it does not fit in 64 bits. nullopt for others.
std::optional<std::int64_t> int_index(py::handle e) {
  if (py::isinstance<py::bool_>(e)) return std::nullopt;
  if (!py::isinstance<py::int_>(e) && !py::isinstance(e, py::module_::import("numpy").attr("integer"))) return std::nullopt;
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
  if (entry.is_none() || entry.is(py::ellipsis())) return 0;
  if (is_mask(entry)) {
    if (py::isinstance<Matrix>(entry)) return entry.cast<const Matrix&>().rank();
    return py::len(py::module_::import("numpy").attr("shape")(entry));
  }
  return 1;
}

// Host indices along an axis of extent n: negative ones count from the end;
// any outside [-n, n) is an IndexError.
std::vector<std::int32_t> host_indices(py::handle entry, std::int64_t n, std::size_t axis) {
  const auto wide = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(
      py::module_::import("numpy").attr("asarray")(entry));
  if (!wide) throw py::error_already_set();
  std::vector<std::int32_t> out(static_cast<std::size_t>(wide.size()));
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    std::int64_t v = wide.data()[i];
    if (v < -n || v >= n)
      index_error("oa.Tensor.__getitem__: index " + std::to_string(v) + " is out of bounds for axis " + std::to_string(axis) +
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

Matrix get_item(const Matrix& x, py::handle key) {
  py::tuple entries = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::size_t consumed = 0, ellipses = 0;
  for (py::handle e : entries) {
    consumed += axes_of(e);
    ellipses += e.is(py::ellipsis()) ? 1 : 0;
  }
  if (ellipses > 1) index_error("oa.Tensor.__getitem__: an index can only have a single ellipsis ('...')");
  if (consumed > x.rank())
    index_error("oa.Tensor.__getitem__: too many indices for a tensor of shape " + fmt::format("{}", x.shape()));

  Matrix r = x;
  std::size_t axis = 0;  // the axis of r that the next entry indexes
  bool advanced = false;
  for (py::handle e : entries) {
    if (e.is(py::ellipsis())) {
      axis += x.rank() - consumed;
    } else if (e.is_none()) {
      r = mx::unsqueeze(r, static_cast<int>(axis));
      ++axis;
    } else if (py::isinstance<py::bool_>(e)) {
      throw py::type_error("oa.Tensor.__getitem__: a Python bool is not an index");
    } else if (const auto index = int_index(e)) {
      const std::int64_t n = r.dim(static_cast<int>(axis));
      const std::int64_t i = *index;
      if (i < -n || i >= n)
        index_error("oa.Tensor.__getitem__: index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                    " of extent " + std::to_string(n));
      r = mx::squeeze(mx::narrow(r, static_cast<int>(axis), i, 1), static_cast<int>(axis));
    } else if (py::isinstance<py::slice>(e)) {
      const auto s = py::reinterpret_borrow<py::slice>(e);
      const std::int64_t step = slice_part(s.attr("step")).value_or(1);
      if (step < 1) throw py::value_error("oa.Tensor.__getitem__: a slice step must be positive, not " + std::to_string(step));
      const auto start = slice_part(s.attr("start")), stop = slice_part(s.attr("stop"));
      if (start || stop || step != 1) r = mx::slice(r, static_cast<int>(axis), start, stop, step);
      ++axis;
    } else {
      if (advanced)
        index_error("oa.Tensor.__getitem__: one tensor or list index per subscript is supported (use index_select or gather)");
      advanced = true;
      if (is_mask(e)) {
        const Matrix mask = py::isinstance<Matrix>(e) ? e.cast<Matrix>()
                                                      : Matrix::from_bool(Shape(py::module_::import("numpy")
                                                                                    .attr("shape")(e)
                                                                                    .cast<std::vector<std::int64_t>>()),
                                                                          py::module_::import("numpy")
                                                                              .attr("asarray")(e, "uint8")
                                                                              .attr("ravel")()
                                                                              .cast<std::vector<std::uint8_t>>(),
                                                                          r.engine());
        if (axis != 0)
          index_error("oa.Tensor.__getitem__: a bool mask is supported on the leading axes only (it follows slices or ints)");
        r = mx::masked_select(r, mask);
        axis += 1;
      } else if (py::isinstance<Matrix>(e)) {
        const Matrix& index = e.cast<const Matrix&>();
        if (index.dtype() != DType::I32)
          throw py::type_error("oa.Tensor.__getitem__: a tensor index must be int32 or bool, not " +
                               std::string(to_string(index.dtype())));
        r = select_along(r, axis, index.reshape({index.numel()}), index.shape());
        axis += index.rank();
      } else if (py::isinstance<py::sequence>(e) && !py::isinstance<py::str>(e)) {
        const auto shape = py::module_::import("numpy").attr("shape")(e).cast<std::vector<std::int64_t>>();
        const auto values = host_indices(e, r.dim(static_cast<int>(axis)), axis);
        const Matrix flat = Matrix::from_i32({static_cast<std::int64_t>(values.size())}, values, r.engine());
        r = select_along(r, axis, flat, Shape(shape));
        axis += shape.size();
      } else {
        throw py::type_error("oa.Tensor.__getitem__: an index must be an int, slice, None, ..., a list or an int32/bool "
                             "tensor, not " +
                             py::str(py::type::handle_of(e).attr("__name__")).cast<std::string>());
      }
    }
  }
  return copy_not_view(x, r, "oa.Tensor.__getitem__");
}

Matrix argmin(const Matrix& x, int dim, bool keepdim) {
  if (dim != -1 && dim != static_cast<int>(x.rank()) - 1)
    fail(ErrorKind::InvalidArgument, "oa.argmin: dim {} of a tensor of shape {}: only the last axis (-1) is supported", dim,
         x.shape());
  return mx::argmin(x, keepdim);
}

// torch's split_size_or_sections: an int or a list of ints.
std::vector<Matrix> split_any(const Matrix& x, py::handle split_size_or_sections, int dim) {
  return copies_not_views(x,
                          py::isinstance<py::int_>(split_size_or_sections)
                              ? mx::split(x, split_size_or_sections.cast<std::int64_t>(), dim)
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
        "x[key] with ints, slices (step >= 1), None, ..., an int32 tensor or list of ints (index_select), a bool tensor "
        "(masked_select, which synchronizes). Unlike torch, the result is a copy, not a view (x[:] and x[...] excepted): "
        "in-place ops on it raise oa.FailedPreconditionError; there is no x[key] = value.");
  t.def("index_select", [](const Matrix& x, int dim, const Matrix& index) { return mx::index_select(x, dim, index); },
        arg("dim"), arg("index"));
  t.def("gather", [](const Matrix& x, int dim, const Matrix& index) { return mx::gather(x, dim, index); }, arg("dim"),
        arg("index"));
  t.def("scatter_add", &mx::scatter_add, arg("dim"), arg("index"), arg("src"));
  t.def("masked_select", &mx::masked_select, arg("mask"));
  t.def("argmin", &argmin, arg("dim") = -1, arg("keepdim") = false);
  t.def("topk", [](const Matrix& x, std::int64_t k, int dim, bool largest) {
    auto r = mx::topk(x, k, dim, largest);
    return py::make_tuple(r.values, r.indices);
  }, arg("k"), arg("dim") = -1, arg("largest") = true);
  t.def("split", &split_any, arg("split_size_or_sections"), arg("dim") = 0,
        "torch's split, but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");
  t.def("chunk", &chunk, arg("chunks"), arg("dim") = 0,
        "torch's chunk, but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");

  m.def("index_select", [](const Matrix& input, int dim, const Matrix& index) { return mx::index_select(input, dim, index); },
        arg("input"), arg("dim"), arg("index"), "torch.index_select with an int32 index [K].");
  m.def("gather", [](const Matrix& input, int dim, const Matrix& index) { return mx::gather(input, dim, index); },
        arg("input"), arg("dim"), arg("index"), "torch.gather with an int32 index of input's rank.");
  m.def("scatter_add", &mx::scatter_add, arg("input"), arg("dim"), arg("index"), arg("src"),
        "torch.scatter_add (index has input's extents outside dim).");
  m.def("take_along_dim", [](const Matrix& input, const Matrix& indices, int dim) { return mx::take_along_axis(input, indices, dim); },
        arg("input"), arg("indices"), arg("dim"), "torch.take_along_dim (numpy.take_along_axis), broadcasting.");
  m.def("masked_select", &mx::masked_select, arg("input"), arg("mask"),
        "input[mask] for a mask of input's leading extents; reads the mask back (synchronizes).");
  m.def("topk", [](const Matrix& input, std::int64_t k, int dim, bool largest) {
    auto r = mx::topk(input, k, dim, largest);
    return py::make_tuple(r.values, r.indices);
  }, arg("input"), arg("k"), arg("dim") = -1, arg("largest") = true, "(values, int32 indices), sorted; ties by position.");
  m.def("argmin", &argmin, arg("input"), arg("dim") = -1, arg("keepdim") = false,
        "int32 index of the minimum over the last axis (dim -1).");
  m.def("cat", &mx::concat, arg("tensors"), arg("dim") = 0, "torch.cat (float32).");
  m.def("stack", &mx::stack, arg("tensors"), arg("dim") = 0, "torch.stack (float32).");
  m.def("split", &split_any, arg("tensor"), arg("split_size_or_sections"), arg("dim") = 0,
        "torch.split (float32), but copies, not views: in-place ops on them raise oa.FailedPreconditionError.");
  m.def("chunk", &chunk, arg("input"), arg("chunks"), arg("dim") = 0,
        "torch.chunk where the extent divides evenly (float32), but copies, not views: in-place ops on them raise "
        "oa.FailedPreconditionError.");
}

void bind_one_hot(py::module_& functional) {
  functional.def("one_hot", py::overload_cast<const Matrix&, std::int64_t>(&mx::one_hot), py::arg("tensor"), py::arg("num_classes"),
                 "int32 indices [...] -> float32 [..., num_classes] (num_classes required; out-of-range rows are zeros).");
}

}  // namespace oa::python
