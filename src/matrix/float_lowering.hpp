#pragma once
// 16-bit float operands through an op's f32 kernels (internal to the
// library): the lowerings of an op for f32, f16 and bf16 from its f32
// lowering, and its backward rule on widened operands. Torch computes such
// ops (reductions, softmax, layer_norm) in f32 and rounds the result to the
// input dtype.
#include <functional>
#include <vector>

#include "matrix/cast_lowering.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"

namespace oa::detail {

inline bool is_half(DType d) { return d == DType::F16 || d == DType::BF16; }

// The lowerings for f32 x (the first input) and, through `f32`, for f16 and
// bf16 x: x and every other 16-bit input (a weight of x's dtype) widened into
// f32 temporaries (the other inputs as given), each 16-bit result computed
// into an f32 temporary and rounded once into its dtype (f32 and int32
// results written directly).
template <class A>
std::vector<std::pair<DType, Lowering<A>>> float_lowerings(const Lowering<A>& f32) {
  const Lowering<A> half = [f32](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<runtime::ComputeDispatch>& ds) {
    std::vector<Matrix> inputs(c.inputs.begin(), c.inputs.end());
    for (Matrix& m : inputs) {
      if (!m.defined() || !is_half(m.dtype())) continue;
      const Matrix narrow = m;
      m = allocate(c.engine, narrow.shape());
      cast_dispatches(narrow, m, narrow.numel(), ds);
    }
    std::vector<Matrix> results;
    for (const Matrix& y : out) results.push_back(is_half(y.dtype()) ? allocate(c.engine, y.shape()) : y);
    f32(OpCall<A>{c.name, std::span<const Matrix>(inputs), c.attributes, c.engine}, results, ds);
    for (std::size_t i = 0; i < out.size(); ++i)
      if (is_half(out[i].dtype())) cast_dispatches(results[i], out[i], out[i].numel(), ds);
  };
  return {{DType::F32, f32}, {DType::F16, half}, {DType::BF16, half}};
}

// The backward rule `f32` for a call whose gradients are 16-bit: the f32 rule
// on the saved inputs, outputs and gradients widened to f32 (each a cast op),
// each of its gradients rounded once to its input's dtype (an f32 weight's
// stays f32).
template <class A>
std::vector<Matrix> widened_backward(const BackwardCall<A>& c, const std::function<std::vector<Matrix>(const BackwardCall<A>&)>& f32) {
  const auto wide = [](const std::vector<Matrix>& ms) {
    std::vector<Matrix> out;
    for (const Matrix& m : ms) out.push_back(m.defined() && is_half(m.dtype()) ? matrix::cast(m, DType::F32) : m);
    return out;
  };
  const std::vector<Matrix> inputs = wide(c.inputs), outputs = wide(c.outputs), grads = wide(c.grad_outputs);
  std::vector<Matrix> gx = f32(BackwardCall<A>{c.name, c.attributes, inputs, outputs, c.input_shapes, c.input_dtypes, grads, c.needs});
  for (std::size_t i = 0; i < gx.size() && i < c.input_dtypes.size(); ++i)
    if (gx[i].defined()) gx[i] = matrix::cast(gx[i], c.input_dtypes[i]);
  return gx;
}

}  // namespace oa::detail
