#pragma once
// Helpers shared by the nn op lowerings in src/ml/nn_ops (internal).
#include <cstdint>
#include <memory>
#include <vector>

#include "matrix/lowering.hpp"
#include "oa/ml/functional.hpp"

namespace oa::ml::nn_ops {

using runtime::Access;
using runtime::BufferBinding;
using runtime::ComputeDispatch;
using runtime::Storage;

// A 4-byte storage bound where a kernel declares an output that this call does
// not produce (the shader never writes it).
inline std::shared_ptr<Storage> unused_output(const Engine& engine) { return engine.allocate(4); }

// Throws InvalidArgument unless `m` is a defined i32 Matrix; names `op` and `arg`.
inline void require_i32(const Matrix& m, const char* op, const char* arg) { detail::require_dtype(m, DType::I32, op, arg); }

// Throws InvalidArgument unless `m` is a Matrix of `dtype` (f32 unless
// given) and shape [n] on x's engine.
inline void require_vector(const Matrix& m, std::int64_t n, const Matrix& x, const char* op, const char* arg, DType dtype = DType::F32) {
  detail::require_dtype(m, dtype, op, arg);
  if (!(m.shape() == Shape{n}))
    fail(ErrorKind::InvalidArgument, "{}: {} must have shape [{}] to match x {}; found {}", op, arg, n, x.shape(), m.shape());
  detail::require_same_engine(x, "x", m, arg, op);
}

// Throws InvalidArgument unless `value` lies within [low, high] (NaN never
// does); the message names the operand `x` the option applies to.
inline void require_range(double value, double low, double high, const Matrix& x, const char* op, const char* arg) {
  if (!(value >= low && value <= high))
    fail(ErrorKind::InvalidArgument, "{}: {} = {} must lie in [{}, {}] (x {})", op, arg, value, low, high, x.shape());
}

inline std::uint64_t bytes_of(std::int64_t elements, std::int64_t width = 4) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(elements * width, 4));
}

}  // namespace oa::ml::nn_ops
