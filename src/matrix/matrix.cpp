#include "oa/matrix/matrix.hpp"

#include <cmath>
#include <cstring>
#include <ostream>

#include <fmt/ranges.h>

#include "matrix/op_def.hpp"

namespace oa {

namespace detail {

std::uint32_t shader_u32(std::int64_t value, const char* what, const char* op) {
  if (value < 0 || value > static_cast<std::int64_t>(UINT32_MAX))
    fail(ErrorKind::InvalidArgument, "{}: {} = {} exceeds what the shaders can index (2^32 - 1)", op, what, value);
  return static_cast<std::uint32_t>(value);
}

ElementChunks element_chunks(const Engine& engine, std::int64_t count) {
  const auto range = engine.device().max_storage_buffer_range;
  // Whole elements, and piece offsets that keep every binding offset aligned.
  const std::int64_t per = static_cast<std::int64_t>(range / 4) / 1024 * 1024;
  return {std::max<std::int64_t>(count, 0), per};
}

Engine resolve(const std::optional<Engine>& engine) { return engine ? *engine : Engine::default_engine(); }

Matrix allocate(const Engine& engine, const Shape& shape, DType dtype) {
  const std::int64_t n = shape.numel();
  const std::int64_t bytes = checked_mul(n, static_cast<std::int64_t>(size_of(dtype)), "Matrix byte size");
  // Whole 4-byte words, so that kernels may read 1- and 2-byte elements as uint words.
  auto storage = engine.allocate(static_cast<std::uint64_t>(std::max<std::int64_t>((bytes + 3) / 4 * 4, 4)));
  return Matrix(std::make_shared<MatrixImpl>(MatrixImpl{engine, std::move(storage), shape, dtype, nullptr}));
}

Matrix zeros(const Engine& engine, const Shape& shape, DType dtype) {
  Matrix m = allocate(engine, shape, dtype);
  engine.fill(*m.storage(), 0, m.storage()->bytes(), 0);
  return m;
}

void require_defined(const Matrix& m, const char* op, const char* arg) {
  if (!m.defined()) fail(ErrorKind::InvalidArgument, "{}: {} is an undefined Matrix", op, arg);
}

void require_f32(const Matrix& m, const char* op, const char* arg) { require_dtype(m, DType::F32, op, arg); }

void require_dtype(const Matrix& m, DType dtype, const char* op, const char* arg) {
  require_defined(m, op, arg);
  if (m.dtype() != dtype)
    fail(ErrorKind::InvalidArgument, "{}: {} must be {}; found {} {}", op, arg, to_string(dtype), to_string(m.dtype()), m.shape());
}

void require_same_engine(const Matrix& a, const char* a_arg, const Matrix& b, const char* b_arg, const char* op) {
  if (!(a.engine() == b.engine()))
    fail(ErrorKind::InvalidArgument, "{}: {} {} lives on another engine than {} {}", op, b_arg, b.shape(), a_arg, a.shape());
}

void require_same_dtype(const Matrix& a, const char* a_arg, const Matrix& b, const char* b_arg, const char* op) {
  if (a.dtype() != b.dtype())
    fail(ErrorKind::InvalidArgument, "{}: {} {} {} and {} {} {} must have the same dtype", op, a_arg, to_string(a.dtype()), a.shape(),
         b_arg, to_string(b.dtype()), b.shape());
}

}  // namespace detail

namespace {

// The distributions of matrix/random (its specialization constant).
enum Distribution : std::uint32_t { Uniform, Normal, Arange };

struct RandomAttributes {
  std::string distribution;  // "uniform", "normal" or "arange"
  std::uint64_t seed = 0;
  // Not traced: the output's shape, the kernel's distribution code and its
  // parameters (low and high, mean and stddev, or start and step).
  Shape shape;
  Distribution code = Uniform;
  float a = 0, b = 0;
  static constexpr auto fields = std::tuple{detail::field("distribution", &RandomAttributes::distribution),
                                            detail::field("seed", &RandomAttributes::seed)};
};

// Element i takes word i of the seed's stream (matrix/random), so the values
// do not depend on the chunking.
const detail::Op<RandomAttributes> kRandom{
    {.name = "oa::matrix::random",
     .inputs = {},
     .infer = [](const detail::OpCall<RandomAttributes>& c) { return std::vector<detail::OutputSpec>{{c.attributes.shape}}; },
     .lower = {{DType::F32,
                [](const detail::OpCall<RandomAttributes>& c, const std::vector<Matrix>& out, std::vector<runtime::ComputeDispatch>& ds) {
                  const RandomAttributes& r = c.attributes;
                  for (auto chunk : detail::element_chunks(c.engine, out[0].numel())) {
                    runtime::ComputeDispatch d;
                    d.kernel = kernels::matrix_random;
                    d.specialization = {r.code};
                    d.bindings = {runtime::BufferBinding::write(out[0].storage(), static_cast<std::uint64_t>(chunk.begin) * 4,
                                                                static_cast<std::uint64_t>(chunk.count) * 4)};
                    d.push.set(push::matrix_random{.n = static_cast<std::uint32_t>(chunk.count),
                                                   .base = detail::shader_u32(chunk.begin, "element index", c.name),
                                                   .seed_lo = static_cast<std::uint32_t>(r.seed),
                                                   .seed_hi = static_cast<std::uint32_t>(r.seed >> 32),
                                                   .a = r.a,
                                                   .b = r.b});
                    d.groups = {detail::groups_for(chunk.count, 256), 1, 1};
                    ds.push_back(std::move(d));
                  }
                }}}}};

Matrix generate(const Shape& shape, Distribution dist, float a, float b, std::uint64_t seed, const Engine& engine) {
  const char* names[] = {"uniform", "normal", "arange"};
  return detail::apply(kRandom, {}, RandomAttributes{names[dist], seed, shape, dist, a, b}, nullptr, &engine)[0];
}

// `values` as the bytes of `dtype` (F32, F16 or BF16) elements.
std::vector<std::uint8_t> encode(std::span<const float> values, DType dtype) {
  std::vector<std::uint8_t> out(values.size() * size_of(dtype));
  if (dtype == DType::F32) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = dtype == DType::F16 ? f16_from_float(values[i]) : bf16_from_float(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

void require_floating(const Matrix& m, const char* op) {
  if (!is_floating_point(m.dtype()))
    fail(ErrorKind::InvalidArgument, "{}: Matrix {} is {}, not f32, f16 or bf16", op, m.shape(), to_string(m.dtype()));
}

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

}  // namespace

const Shape& Matrix::shape() const {
  if (!impl_) fail(ErrorKind::InvalidArgument, "Matrix: use of an undefined Matrix");
  return impl_->shape;
}
DType Matrix::dtype() const {
  if (!impl_) fail(ErrorKind::InvalidArgument, "Matrix: use of an undefined Matrix");
  return impl_->dtype;
}
const Engine& Matrix::engine() const {
  if (!impl_) fail(ErrorKind::InvalidArgument, "Matrix: use of an undefined Matrix");
  return impl_->engine;
}
const std::shared_ptr<runtime::Storage>& Matrix::storage() const {
  if (!impl_) fail(ErrorKind::InvalidArgument, "Matrix: use of an undefined Matrix");
  return impl_->storage;
}
std::uint64_t Matrix::version() const { return storage()->version(); }

Matrix Matrix::empty(const Shape& shape, DType dtype, std::optional<Engine> engine) {
  return detail::allocate(detail::resolve(engine), shape, dtype);
}

Matrix Matrix::full(const Shape& shape, float value, std::optional<Engine> engine) {
  Engine e = detail::resolve(engine);
  Matrix m = detail::allocate(e, shape);
  e.fill(*m.storage(), 0, static_cast<std::uint64_t>(shape.numel()) * 4, bits(value));
  return m;
}
Matrix Matrix::zeros(const Shape& shape, std::optional<Engine> engine) { return full(shape, 0.0f, std::move(engine)); }
Matrix Matrix::ones(const Shape& shape, std::optional<Engine> engine) { return full(shape, 1.0f, std::move(engine)); }

Matrix Matrix::from_vector(const Shape& shape, std::span<const float> values, std::optional<Engine> engine) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "Matrix::from_vector: {} values do not fill shape {} ({} elements)", values.size(), shape,
         shape.numel());
  Engine e = detail::resolve(engine);
  Matrix m = detail::allocate(e, shape);
  e.write(*m.storage(), 0, values.data(), values.size() * 4);
  return m;
}

Matrix Matrix::from_vector(const Shape& shape, std::span<const float> values, DType dtype, std::optional<Engine> engine) {
  if (!is_floating_point(dtype))
    fail(ErrorKind::InvalidArgument, "Matrix::from_vector: dtype must be f32, f16 or bf16; found {} (shape {})", to_string(dtype), shape);
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "Matrix::from_vector: {} values do not fill shape {} ({} elements)", values.size(), shape,
         shape.numel());
  Engine e = detail::resolve(engine);
  Matrix m = detail::allocate(e, shape, dtype);
  const std::vector<std::uint8_t> bytes = encode(values, dtype);
  e.write(*m.storage(), 0, bytes.data(), bytes.size());
  return m;
}

Matrix Matrix::from_i32(const Shape& shape, std::span<const std::int32_t> values, std::optional<Engine> engine) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "Matrix::from_i32: {} values do not fill shape {} ({} elements)", values.size(), shape,
         shape.numel());
  Engine e = detail::resolve(engine);
  Matrix m = detail::allocate(e, shape, DType::I32);
  e.write(*m.storage(), 0, values.data(), values.size() * 4);
  return m;
}

Matrix Matrix::from_bool(const Shape& shape, std::span<const std::uint8_t> values, std::optional<Engine> engine) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "Matrix::from_bool: {} values do not fill shape {} ({} elements)", values.size(), shape,
         shape.numel());
  std::vector<std::uint8_t> bytes(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bytes[i] = values[i] != 0 ? 1 : 0;
  Engine e = detail::resolve(engine);
  Matrix m = detail::allocate(e, shape, DType::Bool);
  e.write(*m.storage(), 0, bytes.data(), bytes.size());
  return m;
}

Matrix Matrix::from_bool(const Shape& shape, const std::vector<bool>& values, std::optional<Engine> engine) {
  const std::vector<std::uint8_t> bytes(values.begin(), values.end());
  return from_bool(shape, std::span<const std::uint8_t>(bytes), std::move(engine));
}

Matrix Matrix::arange(double start, double stop, double step, std::optional<Engine> engine) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail(ErrorKind::InvalidArgument, "Matrix::arange: start {}, stop {}, step {} do not describe a finite range", start, stop, step);
  const double n = std::max(0.0, std::ceil((stop - start) / step));
  // Beyond 2^53 the count is no longer exact in a double (and far beyond any device's memory).
  if (n > 0x1p53)
    fail(ErrorKind::InvalidArgument, "Matrix::arange: start {}, stop {}, step {} describe {} elements, too many to allocate", start,
         stop, step, n);
  return generate(Shape{static_cast<std::int64_t>(n)}, Arange, static_cast<float>(start), static_cast<float>(step), 0,
                  detail::resolve(engine));
}

Matrix Matrix::uniform(const Shape& shape, float low, float high, std::uint64_t seed, std::optional<Engine> engine) {
  if (!(low <= high)) fail(ErrorKind::InvalidArgument, "Matrix::uniform: low {} exceeds high {}", low, high);
  return generate(shape, Uniform, low, high, seed, detail::resolve(engine));
}

Matrix Matrix::normal(const Shape& shape, float mean, float stddev, std::uint64_t seed, std::optional<Engine> engine) {
  if (!(stddev >= 0)) fail(ErrorKind::InvalidArgument, "Matrix::normal: stddev {} is negative", stddev);
  return generate(shape, Normal, mean, stddev, seed, detail::resolve(engine));
}

Matrix Matrix::reshape(const std::vector<std::int64_t>& dims) const {
  const Shape& from = shape();
  std::vector<std::int64_t> d = dims;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (d[i] == -1 && infer < 0) infer = static_cast<int>(i);
    else if (d[i] < 0)
      fail(ErrorKind::InvalidArgument, "Matrix::reshape: bad extent {} in the requested shape [{}] for {}", d[i], fmt::join(dims, ", "), from);
    else known = checked_mul(known, d[i], "Matrix::reshape element count");
  }
  if (infer >= 0) {
    if (known == 0 || from.numel() % known)
      fail(ErrorKind::InvalidArgument, "Matrix::reshape: cannot reshape {} ({} elements) to the requested shape [{}] (extent {} cannot be inferred)",
           from, from.numel(), fmt::join(dims, ", "), infer);
    d[static_cast<std::size_t>(infer)] = from.numel() / known;
  }
  Shape to(d);
  if (to.numel() != from.numel())
    fail(ErrorKind::InvalidArgument, "Matrix::reshape: cannot view {} ({} elements) as the requested shape {} ({} elements)", from,
         from.numel(), to, to.numel());
  auto impl = std::make_shared<MatrixImpl>(*impl_);
  impl->shape = to;
  impl->autograd.reset();
  Matrix view(std::move(impl));
  autograd::record("oa::matrix::reshape", {*this}, {view}, [from](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{gy[0].reshape(from.to_vector())};
  });
  // A view of a Parameter keeps its name, so that version errors name it.
  if (impl_->autograd && !impl_->autograd->name.empty()) {
    auto& a = view.impl()->autograd;
    if (!a) a = std::make_shared<AutogradMeta>();
    a->name = impl_->autograd->name;
  }
  return view;
}

std::vector<float> Matrix::to_vector() const {
  require_floating(*this, "Matrix::to_vector");
  std::vector<float> out(static_cast<std::size_t>(numel()));
  if (dtype() == DType::F32) {
    impl_->engine.read(*impl_->storage, 0, out.data(), out.size() * 4);
    return out;
  }
  std::vector<std::uint16_t> h(out.size());
  impl_->engine.read(*impl_->storage, 0, h.data(), h.size() * 2);
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = dtype() == DType::F16 ? float_from_f16(h[i]) : float_from_bf16(h[i]);
  return out;
}

std::vector<std::int32_t> Matrix::to_i32() const {
  if (dtype() != DType::I32) fail(ErrorKind::InvalidArgument, "Matrix::to_i32: Matrix {} is {}, not i32", shape(), to_string(dtype()));
  std::vector<std::int32_t> out(static_cast<std::size_t>(numel()));
  impl_->engine.read(*impl_->storage, 0, out.data(), out.size() * 4);
  return out;
}

std::vector<std::uint8_t> Matrix::to_bool() const {
  if (dtype() != DType::Bool)
    fail(ErrorKind::InvalidArgument, "Matrix::to_bool: Matrix {} is {}, not bool", shape(), to_string(dtype()));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(numel()));
  impl_->engine.read(*impl_->storage, 0, out.data(), out.size());
  return out;
}

float Matrix::item() const {
  if (numel() != 1) fail(ErrorKind::InvalidArgument, "Matrix::item: Matrix {} has {} elements, not 1", shape(), numel());
  return to_vector()[0];
}

void Matrix::write(std::span<const float> values) const {
  require_floating(*this, "Matrix::write");
  if (static_cast<std::int64_t>(values.size()) != numel())
    fail(ErrorKind::InvalidArgument, "Matrix::write: {} values for a Matrix {} of {} elements", values.size(), shape(), numel());
  const std::vector<std::uint8_t> bytes = encode(values, dtype());
  impl_->engine.write(*impl_->storage, 0, bytes.data(), bytes.size());
  impl_->storage->bump_version();
}

void Matrix::write_i32(std::span<const std::int32_t> values) const {
  if (dtype() != DType::I32) fail(ErrorKind::InvalidArgument, "Matrix::write_i32: Matrix {} is {}", shape(), to_string(dtype()));
  if (static_cast<std::int64_t>(values.size()) != numel())
    fail(ErrorKind::InvalidArgument, "Matrix::write_i32: {} values for a Matrix {} of {} elements", values.size(), shape(), numel());
  impl_->engine.write(*impl_->storage, 0, values.data(), values.size() * 4);
  impl_->storage->bump_version();
}

std::ostream& operator<<(std::ostream& os, const Matrix& m) {
  if (!m.defined()) return os << "Matrix(undefined)";
  os << "Matrix(" << m.shape().to_string() << ", " << to_string(m.dtype()) << ")";
  if (m.numel() == 0) return os << " []";
  const std::int64_t cols = m.shape().cols(), rows = m.shape().rows();
  auto row = [&](const auto& v, std::int64_t r) {
    os << "\n  [";
    for (std::int64_t c = 0; c < cols; ++c) {
      if (cols > 12 && c == 6) {
        os << " ...";
        c = cols - 6;
      }
      os << (c ? " " : "") << v[static_cast<std::size_t>(r * cols + c)];
    }
    os << "]";
  };
  auto show = [&](const auto& v) {
    for (std::int64_t r = 0; r < rows; ++r) {
      if (rows > 8 && r == 4) {
        os << "\n  ...";
        r = rows - 4;
      }
      row(v, r);
    }
  };
  if (m.dtype() == DType::I32) {
    show(m.to_i32());
  } else if (m.dtype() == DType::Bool) {
    std::vector<int> bits;  // printed as 0 and 1
    for (const auto b : m.to_bool()) bits.push_back(b ? 1 : 0);
    show(bits);
  } else {
    show(m.to_vector());
  }
  return os;
}

}  // namespace oa
