#pragma once
// oa::Matrix: an n-dimensional array (rank 0..8) on one Engine. A Matrix is a
// handle: copies share the same value and autograd identity (like a
// torch.Tensor); reshape shares the storage. Storage is contiguous, row-major.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "oa/core/dtype.hpp"
#include "oa/core/error.hpp"
#include "oa/core/shape.hpp"
#include "oa/runtime/engine.hpp"

namespace oa {

struct AutogradMeta;  // defined in oa/matrix/autograd.hpp

// Built only with all fields given (an Engine is never default-constructed here:
// that would create a new device).
struct MatrixImpl {
  Engine engine;
  std::shared_ptr<runtime::Storage> storage;
  Shape shape;
  DType dtype = DType::F32;
  std::shared_ptr<AutogradMeta> autograd;  // null until autograd touches this value
};

class Matrix {
 public:
  Matrix() = default;  // an undefined Matrix; defined() is false
  explicit Matrix(std::shared_ptr<MatrixImpl> impl) : impl_(std::move(impl)) {}

  // ── Creation (engine defaults to Engine::default_engine()) ─────────────────
  // Uninitialised contents; for op implementations that overwrite every element.
  static Matrix empty(const Shape& shape, DType dtype = DType::F32, std::optional<Engine> engine = {});
  static Matrix zeros(const Shape& shape, std::optional<Engine> engine = {});
  static Matrix ones(const Shape& shape, std::optional<Engine> engine = {});
  static Matrix full(const Shape& shape, float value, std::optional<Engine> engine = {});
  // Throws InvalidArgument when values.size() != shape.numel().
  static Matrix from_vector(const Shape& shape, std::span<const float> values, std::optional<Engine> engine = {});
  // `values` stored as `dtype`: F32 as given; F16 or BF16 rounded on the host
  // to nearest, ties to even (f16_from_float, bf16_from_float in
  // oa/core/dtype.hpp), as torch.tensor(values, dtype=...). Throws
  // InvalidArgument on a size mismatch or a dtype other than F32, F16, BF16.
  static Matrix from_vector(const Shape& shape, std::span<const float> values, DType dtype, std::optional<Engine> engine = {});
  static Matrix from_i32(const Shape& shape, std::span<const std::int32_t> values, std::optional<Engine> engine = {});
  // Bool elements (torch.bool): nonzero bytes (or true) are stored as 1, zero as 0.
  static Matrix from_bool(const Shape& shape, std::span<const std::uint8_t> values, std::optional<Engine> engine = {});
  static Matrix from_bool(const Shape& shape, const std::vector<bool>& values, std::optional<Engine> engine = {});
  // [n] holding start, start + step, ... in f32 (torch.arange): n = ceil((stop
  // - start) / step) in double, from the arguments as given (arange(0.1, 0.4,
  // 0.1) has 4 elements, as torch's and NumPy's). Throws InvalidArgument for a
  // zero or non-finite argument, or a count past 2^53.
  static Matrix arange(double start, double stop, double step = 1.0, std::optional<Engine> engine = {});
  // Counter-based (Philox-4x32-10) random values: the same seed gives the same
  // values on every device. uniform is on [low, high); normal uses Box-Muller.
  static Matrix uniform(const Shape& shape, float low, float high, std::uint64_t seed, std::optional<Engine> engine = {});
  static Matrix normal(const Shape& shape, float mean, float stddev, std::uint64_t seed, std::optional<Engine> engine = {});

  // ── Properties ─────────────────────────────────────────────────────────────
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  std::int64_t numel() const { return shape().numel(); }
  std::size_t rank() const { return shape().rank(); }
  std::int64_t dim(int axis) const { return shape().dim(axis); }
  const Engine& engine() const;
  const std::shared_ptr<runtime::Storage>& storage() const;
  const std::shared_ptr<MatrixImpl>& impl() const { return impl_; }
  // Bumped by every in-place write to the storage.
  std::uint64_t version() const;

  // Zero-copy view with another shape of the same element count; throws
  // InvalidArgument otherwise. One extent may be -1 (inferred). Differentiable.
  Matrix reshape(const std::vector<std::int64_t>& shape) const;

  // ── Host transfers (submit and wait as needed) ─────────────────────────────
  // F32, or F16 / BF16 widened exactly to float (torch's .float().tolist()).
  std::vector<float> to_vector() const;
  std::vector<std::int32_t> to_i32() const;  // I32 only
  std::vector<std::uint8_t> to_bool() const;  // Bool only: 0 or 1 per element
  float item() const;                        // F32, F16 or BF16 with one element
  // Overwrites all elements in place (bumps the version); write() rounds to
  // F16 / BF16 as from_vector does. Throws InvalidArgument on a size mismatch
  // or a dtype mismatch (write: F32, F16 or BF16; write_i32: I32).
  void write(std::span<const float> values) const;
  void write_i32(std::span<const std::int32_t> values) const;

  bool same_as(const Matrix& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<MatrixImpl> impl_;
};

// Shape, dtype and up to 6 leading and trailing values per row (F16 and BF16
// printed as their exact float values, bool as 0 and 1).
std::ostream& operator<<(std::ostream& os, const Matrix& m);

namespace detail {
// Creates an uninitialised Matrix on `engine`.
Matrix allocate(const Engine& engine, const Shape& shape, DType dtype = DType::F32);
// Creates a Matrix of zeros of any dtype on `engine` (all-zero bits; a GPU fill, no host write).
Matrix zeros(const Engine& engine, const Shape& shape, DType dtype = DType::F32);
// Throws InvalidArgument unless `m` is defined, and FailedPrecondition/InvalidArgument
// unless all have the same engine and the expected dtype; names `op` and `arg`.
void require_defined(const Matrix& m, const char* op, const char* arg);
void require_f32(const Matrix& m, const char* op, const char* arg);
void require_dtype(const Matrix& m, DType dtype, const char* op, const char* arg);
// Throws InvalidArgument naming `op`, both arguments and their shapes unless
// `a` (argument a_arg) and `b` (b_arg) live on one engine.
void require_same_engine(const Matrix& a, const char* a_arg, const Matrix& b, const char* b_arg, const char* op);
// Throws InvalidArgument naming `op`, both arguments, their dtypes and shapes
// unless `a` (argument a_arg) and `b` (b_arg) have one dtype.
void require_same_dtype(const Matrix& a, const char* a_arg, const Matrix& b, const char* b_arg, const char* op);
Engine resolve(const std::optional<Engine>& engine);
}  // namespace detail

}  // namespace oa
