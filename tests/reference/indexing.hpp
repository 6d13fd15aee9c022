#pragma once
// f64 oracles for the indexing ops, written from their index definitions
// (torch.index_select, gather, scatter_add, where, masked_fill, expand), with
// oa's rule for indices outside [0, N): they select nothing (0) and add
// nothing.
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

}  // namespace oa::reference
