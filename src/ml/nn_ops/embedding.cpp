// embedding, declared once (matrix/op_def.hpp): validation, forward gather,
// and the weight gradient as a sort followed by a segmented reduction.
#include <climits>

#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kEmbeddingName = "oa::ml::embedding";

constexpr std::int64_t kSortBlock = 512;  // pairs sorted in shared memory by one workgroup

// dweight [V, D] from dy [..., D], recorded as one "oa::ml::embedding backward" op:
// the (index, position) pairs are sorted by a bitonic network
// (ml/nn/embedding_sort), then every vocabulary row sums its run of positions
// (ml/nn/embedding_backward).
Matrix embedding_backward(const detail::BackwardCall<detail::NoAttributes>& c) {
  const Matrix &gy = c.grad_outputs[0], &indices = c.inputs[0];
  const Shape& weight_shape = c.input_shapes[1];
  const Engine& engine = gy.engine();
  const std::int64_t n = indices.numel(), V = weight_shape[0], D = weight_shape[1];
  std::int64_t total = kSortBlock;
  while (total < n) total *= 2;
  const auto pairs = engine.allocate(bytes_of(total, 8));
  std::vector<ComputeDispatch> ds;
  auto sort_pass = [&](std::uint32_t mode, std::int64_t k, std::int64_t j) {
    ComputeDispatch d;
    d.kernel = kernels::ml_nn_embedding_sort;
    d.specialization = {mode};
    d.bindings = {BufferBinding::read(indices.storage()), BufferBinding::read_write(pairs)};
    d.push.set(push::ml_nn_embedding_sort{.N = static_cast<std::uint32_t>(n),
                                          .V = static_cast<std::int32_t>(V),
                                          .k = static_cast<std::uint32_t>(k),
                                          .j = static_cast<std::uint32_t>(j)});
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
  d.kernel = kernels::ml_nn_embedding_backward;
  d.bindings = {BufferBinding::read(pairs), BufferBinding::read(gy.storage()), BufferBinding::write(dw.storage())};
  d.push.set(push::ml_nn_embedding_backward{.N = static_cast<std::uint32_t>(n),
                                            .D = static_cast<std::uint32_t>(D),
                                            .tiles = static_cast<std::uint32_t>(tiles)});
  d.groups = {static_cast<std::uint64_t>(V * tiles), 1, 1};
  ds.push_back(std::move(d));
  c.record(ds, {&gy, &indices}, {&dw});
  return dw;
}

// Validates weight [V, D] against indices of shape `is` (not the index values).
void validate(const Shape& is, const Matrix& weight) {
  detail::require_f32(weight, kEmbeddingName, "weight");
  const Shape& ws = weight.shape();
  if (ws.rank() != 2 || ws[0] == 0 || ws[1] == 0)
    fail(ErrorKind::InvalidArgument, "{}: weight must be [V, D] with nonzero extents; found {} (indices {})", kEmbeddingName, ws, is);
  if (is.rank() + 1 > Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "{}: indices {} must have rank <= {}", kEmbeddingName, is, Shape::kMaxRank - 1);
  const std::int64_t n = is.numel(), V = ws[0], D = ws[1];
  if (V > INT32_MAX) fail(ErrorKind::InvalidArgument, "{}: weight {} has more rows than i32 indices address", kEmbeddingName, ws);
  if (n > (std::int64_t{1} << 30)) fail(ErrorKind::InvalidArgument, "{}: indices {} hold more than 2^30 elements", kEmbeddingName, is);
  detail::shader_u32(checked_mul(std::max(n, V), D, "embedding size"), "element count of the output or weight", kEmbeddingName);
  detail::shader_u32(checked_mul(V, (D + 31) / 32, "embedding gradient grid"), "workgroups of the weight gradient", kEmbeddingName);
}

// Rows of weight [V, D] gathered at i32 indices [...] (ml/nn/embedding): y [..., D].
const detail::Op<detail::NoAttributes> kEmbedding{
    {.name = kEmbeddingName,
     .inputs = {"indices", "weight"},
     .infer = [](const detail::OpCall<detail::NoAttributes>& c) {
       validate(c.inputs[0].shape(), c.inputs[1]);
       std::vector<std::int64_t> dims = c.inputs[0].shape().to_vector();
       dims.push_back(c.inputs[1].shape()[1]);
       return std::vector<detail::OutputSpec>{{Shape(dims)}};
     },
     .lower = {{DType::I32,
                [](const detail::OpCall<detail::NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &indices = c.inputs[0], &weight = c.inputs[1], &y = out[0];
                  ComputeDispatch d;
                  d.kernel = kernels::ml_nn_embedding;
                  d.bindings = {BufferBinding::read(indices.storage()), BufferBinding::read(weight.storage()),
                                BufferBinding::write(y.storage())};
                  const auto what = [s = weight.shape()] { return fmt::format("the rows of weight {}", s); };
                  const std::uint32_t check = detail::bind_index_check(c.engine, d, c.name, what, weight.shape()[0]);
                  d.push.set(push::ml_nn_embedding{.n = static_cast<std::uint32_t>(y.numel()),
                                                   .D = static_cast<std::uint32_t>(weight.shape()[1]),
                                                   .V = static_cast<std::int32_t>(weight.shape()[0]),
                                                   .check_id = check});
                  d.groups = {detail::groups_for(y.numel(), 256), 1, 1};
                  ds.push_back(std::move(d));
                }}},
     .saves = [](const detail::OpCall<detail::NoAttributes>&, const std::vector<bool>&) { return detail::Saves{{true, false}, {}}; },
     .backward = [](const detail::BackwardCall<detail::NoAttributes>& c) {
       return std::vector<Matrix>{Matrix(), c.needs[1] ? embedding_backward(c) : Matrix()};
     }}};

}  // namespace

Matrix embedding(const Matrix& indices, const Matrix& weight) { return detail::apply(kEmbedding, {indices, weight})[0]; }

Matrix embedding(std::span<const std::int32_t> indices, const Shape& shape, const Matrix& weight) {
  if (static_cast<std::int64_t>(indices.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "{}: {} host indices for indices of shape {}", kEmbeddingName, indices.size(), shape);
  validate(shape, weight);
  const std::int64_t V = weight.shape()[0];
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] < 0 || indices[i] >= V)
      fail(ErrorKind::InvalidArgument, "{}: index {} at position {} of indices {} is outside [0, {}) (weight {})", kEmbeddingName, indices[i], i,
           shape, V, weight.shape());
  return embedding(Matrix::from_i32(shape, indices, weight.engine()), weight);
}

}  // namespace oa::ml
