#pragma once
// f64 oracles for the indexing ops, written from their index definitions
// (torch.index_select, gather, scatter_add, where, masked_fill, expand,
// nonzero), with
// oa's rule for indices outside [0, N): they select nothing (0) and add
// nothing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/layout.hpp"

namespace oa::reference {

inline std::int64_t count_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

// result[c] = x[c with c_dim = index[c_dim]]; index is [K].
inline std::vector<double> index_select(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t dim,
                                        const std::vector<std::int32_t>& index) {
  std::vector<std::int64_t> out = shape;
  out[dim] = static_cast<std::int64_t>(index.size());
  std::vector<double> y(static_cast<std::size_t>(count_of(out)));
  for (std::size_t i = 0; i < y.size(); ++i) {
    std::vector<std::int64_t> c = coordinates(static_cast<std::int64_t>(i), out);
    const std::int64_t v = index[static_cast<std::size_t>(c[dim])];
    if (v < 0 || v >= shape[dim]) continue;
    c[dim] = v;
    y[i] = x[static_cast<std::size_t>(flat_index(c, shape))];
  }
  return y;
}

// result[c] = x[c with c_dim = index[c]]; result shaped as index.
inline std::vector<double> gather(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t dim,
                                  const std::vector<std::int32_t>& index, const std::vector<std::int64_t>& index_shape) {
  std::vector<double> y(index.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    std::vector<std::int64_t> c = coordinates(static_cast<std::int64_t>(i), index_shape);
    const std::int64_t v = index[i];
    if (v < 0 || v >= shape[dim]) continue;
    c[dim] = v;
    y[i] = x[static_cast<std::size_t>(flat_index(c, shape))];
  }
  return y;
}

// out = x; out[c with c_dim = index[c]] += src[c] for every c of index (src
// may be larger than index: its elements at index's coordinates are used).
inline std::vector<double> scatter_add(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t dim,
                                       const std::vector<std::int32_t>& index, const std::vector<std::int64_t>& index_shape,
                                       const std::vector<double>& src, const std::vector<std::int64_t>& src_shape) {
  std::vector<double> out = x;
  for (std::size_t i = 0; i < index.size(); ++i) {
    std::vector<std::int64_t> c = coordinates(static_cast<std::int64_t>(i), index_shape);
    const double s = src[static_cast<std::size_t>(flat_index(c, src_shape))];
    const std::int64_t v = index[i];
    if (v < 0 || v >= shape[dim]) continue;
    c[dim] = v;
    out[static_cast<std::size_t>(flat_index(c, shape))] += s;
  }
  return out;
}

// The element of an operand of shape `s` that NumPy broadcasting maps result
// coordinates c (of a result of rank c.size()) to.
inline std::int64_t broadcast_index(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& s) {
  std::vector<std::int64_t> own(s.size());
  for (std::size_t d = 0; d < s.size(); ++d) own[d] = s[d] == 1 ? 0 : c[c.size() - s.size() + d];
  return flat_index(own, s);
}

// x broadcast to `out` (torch.Tensor.expand with the result's extents).
inline std::vector<double> expand(const std::vector<double>& x, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& out) {
  std::vector<double> y(static_cast<std::size_t>(count_of(out)));
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = x[static_cast<std::size_t>(broadcast_index(coordinates(static_cast<std::int64_t>(i), out), shape))];
  return y;
}

// cond ? x : y over the broadcast shape `out`; a disengaged x or y (empty
// values) stands for `value`.
inline std::vector<double> where(const std::vector<std::uint8_t>& cond, const std::vector<std::int64_t>& cs, const std::vector<double>& x,
                                 const std::vector<std::int64_t>& xs, const std::vector<double>& y, const std::vector<std::int64_t>& ys,
                                 const std::vector<std::int64_t>& out, double value = 0) {
  std::vector<double> r(static_cast<std::size_t>(count_of(out)));
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto c = coordinates(static_cast<std::int64_t>(i), out);
    const bool take_x = cond[static_cast<std::size_t>(broadcast_index(c, cs))] != 0;
    const auto& v = take_x ? x : y;
    const auto& s = take_x ? xs : ys;
    r[i] = v.empty() ? value : v[static_cast<std::size_t>(broadcast_index(c, s))];
  }
  return r;
}

// torch.nonzero: the coordinates over `shape` of x's nonzero values (NaN
// included) in row-major order, each a row of shape.size() entries, flattened.
inline std::vector<double> nonzero(const std::vector<double>& x, const std::vector<std::int64_t>& shape) {
  std::vector<double> rows;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != 0) {
      const auto c = coordinates(static_cast<std::int64_t>(i), shape);
      rows.insert(rows.end(), c.begin(), c.end());
    }
  return rows;
}

// numpy.take_along_axis with broadcasting outside `axis` (x and indices of
// one rank): the result has the broadcast extents and indices' along axis.
inline std::vector<double> take_along_axis(const std::vector<double>& x, const std::vector<std::int64_t>& xs,
                                           const std::vector<std::int32_t>& indices, const std::vector<std::int64_t>& is, std::size_t axis) {
  std::vector<std::int64_t> out(xs.size());
  for (std::size_t d = 0; d < xs.size(); ++d) out[d] = d == axis ? is[d] : std::max(xs[d], is[d]);
  std::vector<double> y(static_cast<std::size_t>(count_of(out)));
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto c = coordinates(static_cast<std::int64_t>(i), out);
    std::vector<std::int64_t> ic(c.size()), xc(c.size());
    for (std::size_t d = 0; d < c.size(); ++d) {
      ic[d] = is[d] == 1 ? 0 : c[d];
      xc[d] = xs[d] == 1 ? 0 : c[d];
    }
    const std::int64_t v = indices[static_cast<std::size_t>(flat_index(ic, is))];
    if (v < 0 || v >= xs[axis]) continue;
    xc[axis] = v;
    y[i] = x[static_cast<std::size_t>(flat_index(xc, xs))];
  }
  return y;
}

// torch.topk(x, k, axis, largest) sorted, NaN counted larger than every
// number, equal values in increasing position: the values, and the positions
// in `positions` when given.
inline std::vector<double> topk(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::size_t axis, std::int64_t k,
                                bool largest, std::vector<std::int32_t>* positions = nullptr) {
  std::vector<std::int64_t> out = shape;
  out[axis] = k;
  std::vector<double> y(static_cast<std::size_t>(count_of(out)));
  if (positions) positions->assign(y.size(), 0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto c = coordinates(static_cast<std::int64_t>(i), out);
    auto at = [&](std::int64_t j) {
      auto xc = c;
      xc[axis] = j;
      return x[static_cast<std::size_t>(flat_index(xc, shape))];
    };
    std::vector<std::int64_t> order(static_cast<std::size_t>(shape[axis]));
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = static_cast<std::int64_t>(j);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t p, std::int64_t q) {
      const double u = at(p), v = at(q);
      if (std::isnan(u) != std::isnan(v)) return largest ? std::isnan(u) : std::isnan(v);
      return largest ? u > v : u < v;
    });
    const std::int64_t j = order[static_cast<std::size_t>(c[axis])];
    y[i] = at(j);
    if (positions) (*positions)[i] = static_cast<std::int32_t>(j);
  }
  return y;
}

// torch.nn.functional.one_hot as f64, [indices..., classes], with oa's rule
// for indices outside [0, classes): a row of zeros.
inline std::vector<double> one_hot(const std::vector<std::int32_t>& indices, std::int64_t classes) {
  std::vector<double> y(indices.size() * static_cast<std::size_t>(classes));
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] >= 0 && indices[i] < classes) y[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(indices[i])] = 1;
  return y;
}

// torch.tril (upper false) / torch.triu over the last two axes of `shape`.
inline std::vector<double> triangle(const std::vector<double>& x, const std::vector<std::int64_t>& shape, std::int64_t diagonal,
                                    bool upper) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto c = coordinates(static_cast<std::int64_t>(i), shape);
    const std::int64_t offset = c[c.size() - 1] - c[c.size() - 2];
    y[i] = (upper ? offset >= diagonal : offset <= diagonal) ? x[i] : 0.0;
  }
  return y;
}

}  // namespace oa::reference
