// embedding: validation, forward gather, and the weight gradient as a sort
// followed by a segmented reduction; autograd rule.
#include <climits>

#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kEmbedding = "oa::ml::embedding";
const detail::ContractRegistration kEmbeddingContract{{kEmbedding, 2, 1, {}}};

constexpr std::int64_t kSortBlock = 512;  // pairs sorted in shared memory by one workgroup

// dweight [V, D] from dy [..., D], recorded as one "oa::ml::embedding backward" op:
// the (index, position) pairs are sorted by a bitonic network
// (ml/nn/embedding_sort), then every vocabulary row sums its run of positions
// (ml/nn/embedding_backward).
Matrix embedding_backward(const Matrix& gy, const Matrix& indices, const Shape& weight_shape) {
  const Engine& engine = gy.engine();
  const std::int64_t n = indices.numel(), V = weight_shape[0], D = weight_shape[1];
  std::int64_t total = kSortBlock;
  while (total < n) total *= 2;
  const auto pairs = engine.allocate(bytes_of(total, 8));
  std::vector<ComputeDispatch> ds;
  auto sort_pass = [&](std::uint32_t mode, std::int64_t k, std::int64_t j) {
    ComputeDispatch d;
    d.kernel = "ml/nn/embedding_sort";
    d.specialization = {mode};
    d.bindings = {BufferBinding::read(indices.storage()), BufferBinding::read_write(pairs)};
    d.push.u32(static_cast<std::uint32_t>(n)).i32(static_cast<std::int32_t>(V)).u32(static_cast<std::uint32_t>(k)).u32(
        static_cast<std::uint32_t>(j));
    d.groups = {detail::groups_for(total, mode == 1 ? 512 : kSortBlock), 1, 1};
    ds.push_back(std::move(d));
  };
  sort_pass(0, 0, 0);
  for (std::int64_t k = 2 * kSortBlock; k <= total; k *= 2) {
    for (std::int64_t j = k / 2; j >= kSortBlock; j /= 2) sort_pass(1, k, j);
    sort_pass(2, k, 0);
  }
  Matrix dw = detail::allocate(engine, weight_shape);
  const std::int64_t tiles = (D + 31) / 32;
  ComputeDispatch d;
  d.kernel = "ml/nn/embedding_backward";
  d.bindings = {BufferBinding::read(pairs), BufferBinding::read(gy.storage()), BufferBinding::write(dw.storage())};
  d.push.u32(static_cast<std::uint32_t>(n)).u32(static_cast<std::uint32_t>(D)).u32(static_cast<std::uint32_t>(tiles));
  d.groups = {static_cast<std::uint64_t>(V * tiles), 1, 1};
  ds.push_back(std::move(d));
  engine.record(detail::semantic(kEmbedding, {&gy, &indices}, {&dw}, {}, true), ds);
  return dw;
}

// Validates weight [V, D] against indices of shape `is` (not the index values).
void validate(const Shape& is, const Matrix& weight) {
  detail::require_f32(weight, kEmbedding, "weight");
  const Shape& ws = weight.shape();
  if (ws.rank() != 2 || ws[0] == 0 || ws[1] == 0)
    fail(ErrorKind::InvalidArgument, "{}: weight must be [V, D] with nonzero extents; found {} (indices {})", kEmbedding, ws, is);
  if (is.rank() + 1 > Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "{}: indices {} must have rank <= {}", kEmbedding, is, Shape::kMaxRank - 1);
  const std::int64_t n = is.numel(), V = ws[0], D = ws[1];
  if (V > INT32_MAX) fail(ErrorKind::InvalidArgument, "{}: weight {} has more rows than i32 indices address", kEmbedding, ws);
  if (n > (std::int64_t{1} << 30)) fail(ErrorKind::InvalidArgument, "{}: indices {} hold more than 2^30 elements", kEmbedding, is);
  detail::shader_u32(checked_mul(std::max(n, V), D, "embedding size"), "element count of the output or weight", kEmbedding);
  detail::shader_u32(checked_mul(V, (D + 31) / 32, "embedding gradient grid"), "workgroups of the weight gradient", kEmbedding);
}

}  // namespace

Matrix embedding(const Matrix& indices, const Matrix& weight) {
  require_i32(indices, kEmbedding, "indices");
  validate(indices.shape(), weight);
  detail::require_same_engine(indices, weight, kEmbedding);
  const Shape& ws = weight.shape();
  const std::int64_t V = ws[0], D = ws[1];

  const Engine& engine = weight.engine();
  std::vector<std::int64_t> dims = indices.shape().to_vector();
  dims.push_back(D);
  Matrix y = detail::allocate(engine, Shape(dims));
  ComputeDispatch d;
  d.kernel = "ml/nn/embedding";
  d.bindings = {BufferBinding::read(indices.storage()), BufferBinding::read(weight.storage()), BufferBinding::write(y.storage())};
  d.push.u32(static_cast<std::uint32_t>(y.numel())).u32(static_cast<std::uint32_t>(D)).i32(static_cast<std::int32_t>(V));
  d.groups = {detail::groups_for(y.numel(), 256), 1, 1};
  engine.record(detail::semantic(kEmbedding, {&indices, &weight}, {&y}), {&d, 1});
  autograd::record(kEmbedding, {indices, weight}, {y},
                   [sindices = autograd::SavedValue(indices), ws](const std::vector<Matrix>& gy, const std::vector<bool>& needs) {
                     return std::vector<Matrix>{Matrix(), needs[1] ? embedding_backward(gy[0], sindices.get(), ws) : Matrix()};
                   });
  return y;
}

Matrix embedding(std::span<const std::int32_t> indices, const Shape& shape, const Matrix& weight) {
  if (static_cast<std::int64_t>(indices.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "{}: {} host indices for indices of shape {}", kEmbedding, indices.size(), shape);
  validate(shape, weight);
  const std::int64_t V = weight.shape()[0];
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] < 0 || indices[i] >= V)
      fail(ErrorKind::InvalidArgument, "{}: index {} at position {} of indices {} is outside [0, {}) (weight {})", kEmbedding, indices[i], i,
           shape, V, weight.shape());
  return embedding(Matrix::from_i32(shape, indices, weight.engine()), weight);
}

}  // namespace oa::ml
