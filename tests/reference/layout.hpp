#pragma once
// f64 oracles for the layout ops, written from their index definitions:
// result element at coordinates c is x at the coordinates the op maps c to.
#include <cstdint>
#include <functional>
#include <vector>

namespace oa::reference {

// Row-major coordinates of flat index i over `shape`.
inline std::vector<std::int64_t> coordinates(std::int64_t i, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> c(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

inline std::int64_t flat_index(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& shape) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + c[d];
  return i;
}

// y[c] = x[source(c)] for every coordinate c of `out_shape`.
inline std::vector<double> gather(const std::vector<double>& x, const std::vector<std::int64_t>& x_shape,
                                  const std::vector<std::int64_t>& out_shape,
                                  const std::function<std::vector<std::int64_t>(const std::vector<std::int64_t>&)>& source) {
  std::int64_t n = 1;
  for (auto e : out_shape) n *= e;
  std::vector<double> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(flat_index(source(coordinates(i, out_shape)), x_shape))];
  return y;
}

// torch.permute: result axis k is x's axis dims[k].
inline std::vector<double> permute(const std::vector<double>& x, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> out;
  for (auto d : dims) out.push_back(shape[static_cast<std::size_t>(d)]);
  return gather(x, shape, out, [&](const std::vector<std::int64_t>& c) {
    std::vector<std::int64_t> src(c.size());
    for (std::size_t k = 0; k < dims.size(); ++k) src[static_cast<std::size_t>(dims[k])] = c[k];
    return src;
  });
}

// x[..., start:stop:step] along `axis` with 0 <= start <= stop <= extent.
inline std::vector<double> slice(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t axis, std::int64_t start,
                                 std::int64_t stop, std::int64_t step) {
  std::vector<std::int64_t> out = shape;
  out[axis] = stop > start ? (stop - start + step - 1) / step : 0;
  return gather(x, shape, out, [&](const std::vector<std::int64_t>& c) {
    std::vector<std::int64_t> src = c;
    src[axis] = start + c[axis] * step;
    return src;
  });
}

// rows(x', L) of x (shape `shape`) along axis `dim` (non-negative): axis dim
// swapped with the last into x', each row of its L = shape[dim] elements
// mapped by `rows`, and swapped back.
inline std::vector<double> along_axis(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t dim,
                                      const std::function<std::vector<double>(const std::vector<double>&, std::int64_t)>& rows) {
  std::vector<std::int64_t> swap(shape.size()), swapped = shape;
  for (std::size_t k = 0; k < swap.size(); ++k) swap[k] = static_cast<std::int64_t>(k);
  std::swap(swap[dim], swap.back());
  std::swap(swapped[dim], swapped.back());
  return permute(rows(permute(x, shape, swap), shape[dim]), swapped, swap);
}

}  // namespace oa::reference
