// split_heads / merge_heads: one OpDef each (matrix/op_def.hpp) with
// validation and the permutation lowering (f32, f16 and bf16: the kernels move
// bits); each one's backward is the other
// permutation. split_qkv_heads: the packed q, k, v projection to three heads
// layouts in one pass, and back in its backward.
#include "ml/attention/internal.hpp"

namespace oa::ml {

namespace {

using namespace attention_detail;
using runtime::BufferBinding;
using runtime::ComputeDispatch;

constexpr const char* kSplit = "oa::ml::split_heads";
constexpr const char* kMerge = "oa::ml::merge_heads";
constexpr const char* kSplitQkv = "oa::ml::split_qkv_heads";

struct HeadAttributes {
  std::int64_t batch = 0, sequence_length = 0, num_heads = 0;
  static constexpr auto fields = std::tuple{field("batch", &HeadAttributes::batch),
                                            field("sequence_length", &HeadAttributes::sequence_length),
                                            field("num_heads", &HeadAttributes::num_heads)};
};

struct Heads {
  std::int64_t batch, seq, heads, head_dim;
};

// The geometry of the op's input x (merge = false: split_heads' x [B*S, D]).
Heads heads_of(const Shape& x, const HeadAttributes& a, bool merge) {
  return {a.batch, a.sequence_length, a.num_heads, merge ? x[2] : x[1] / a.num_heads};
}

// An empty batch or sequence is allowed (an empty result, as torch's view and transpose).
void require_extents(const char* op, const HeadAttributes& a, const Matrix& x) {
  if (a.batch < 0 || a.sequence_length < 0 || a.num_heads < 1)
    fail(ErrorKind::InvalidArgument, "{}: batch {} and seq_len {} must be >= 0 and num_heads {} >= 1 (x {})", op, a.batch,
         a.sequence_length, a.num_heads, x.shape());
}

// x's dtype is apply()'s to check (after autocast's casts).
Heads split_geometry(const Matrix& x, const HeadAttributes& a) {
  detail::require_defined(x, kSplit, "x");
  require_extents(kSplit, a, x);
  const std::int64_t rows = checked_mul(a.batch, a.sequence_length, "split_heads batch * seq_len");
  if (x.rank() != 2 || x.dim(0) != rows || x.dim(1) % a.num_heads != 0)
    fail(ErrorKind::InvalidArgument, "{}: x must be [B*S, D] = [{}, D] with D divisible by num_heads {}; found {}", kSplit,
         rows, a.num_heads, x.shape());
  detail::shader_u32(x.numel(), "element count", kSplit);
  return heads_of(x.shape(), a, false);
}

Heads merge_geometry(const Matrix& x, const HeadAttributes& a) {
  detail::require_defined(x, kMerge, "x");
  require_extents(kMerge, a, x);
  const std::int64_t bh = checked_mul(a.batch, a.num_heads, "merge_heads batch * num_heads");
  if (x.rank() != 3 || x.dim(0) != bh || x.dim(1) != a.sequence_length)
    fail(ErrorKind::InvalidArgument, "{}: x must be [B*H, S, Dh] = [{}, {}, Dh]; found {}", kMerge, bh,
         a.sequence_length, x.shape());
  detail::shader_u32(x.numel(), "element count", kMerge);
  return heads_of(x.shape(), a, true);
}

// The shape of the permutation of x (merge = false: packed -> heads).
Shape permuted_shape(const Heads& g, bool merge) {
  return merge ? Shape{g.batch * g.seq, g.heads * g.head_dim} : Shape{g.batch * g.heads, g.seq, g.head_dim};
}

// Output words of a head kernel writing n elements of x's dtype: 16-bit
// elements go two to a word (shaders/ml/attention/heads.comp).
std::int64_t words_of(const Matrix& x, std::int64_t n) { return size_of(x.dtype()) == 2 ? (n + 1) / 2 : n; }

// The permutation of x into y (merge = false: packed -> heads), in x's dtype;
// no dispatch for an empty x.
void permute(const Matrix& x, const Matrix& y, const Heads& g, bool merge, std::vector<ComputeDispatch>& ds) {
  if (x.numel() == 0) return;
  ComputeDispatch d;
  d.kernel = kernels::ml_attention_heads;
  d.specialization = {merge ? 1u : 0u, size_of(x.dtype()) == 2 ? 1u : 0u};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(y.storage())};
  d.push.set(push::ml_attention_heads{.n = static_cast<std::uint32_t>(x.numel()),
                                      .seq = static_cast<std::uint32_t>(g.seq),
                                      .heads = static_cast<std::uint32_t>(g.heads),
                                      .dh = static_cast<std::uint32_t>(g.head_dim)});
  d.groups = {detail::groups_for(words_of(x, x.numel()), 1024), 1, 1};
  ds.push_back(std::move(d));
}

// The op of one direction (merge = false: split_heads); its backward is the
// other permutation, recorded as "<op> backward".
Op<HeadAttributes> heads_op(const char* name, bool merge) {
  auto geometry = [merge](const Matrix& x, const HeadAttributes& a) { return merge ? merge_geometry(x, a) : split_geometry(x, a); };
  const detail::Lowering<HeadAttributes> lowering = [geometry, merge](const OpCall<HeadAttributes>& c, const std::vector<Matrix>& out,
                                                                      std::vector<ComputeDispatch>& ds) {
    permute(c.inputs[0], out[0], geometry(c.inputs[0], c.attributes), merge, ds);
  };
  return Op<HeadAttributes>(
      {.name = name,
       .inputs = {"x"},
       .infer = [geometry, merge](const OpCall<HeadAttributes>& c) {
         return std::vector<OutputSpec>{{permuted_shape(geometry(c.inputs[0], c.attributes), merge), c.inputs[0].dtype()}};
       },
       .lower = {{DType::F32, lowering}, {DType::F16, lowering}, {DType::BF16, lowering}},
       .backward = [merge](const BackwardCall<HeadAttributes>& c) {
         const Matrix& gy = c.grad_outputs[0];
         const Heads g = heads_of(c.input_shapes[0], c.attributes, merge);
         Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0], gy.dtype());
         std::vector<ComputeDispatch> ds;
         permute(gy, gx, g, !merge, ds);
         c.record(ds, {&gy}, {&gx}, detail::attribute_values(c.attributes));
         return std::vector<Matrix>{gx};
       }});
}

const Op<HeadAttributes> kSplitOp = heads_op(kSplit, false);
const Op<HeadAttributes> kMergeOp = heads_op(kMerge, true);

// qkv [B*S, 3D] with D = H * Dh; returns the geometry of each head tensor.
Heads qkv_geometry(const Matrix& qkv, const HeadAttributes& a) {
  detail::require_defined(qkv, kSplitQkv, "qkv");
  require_extents(kSplitQkv, a, qkv);
  const std::int64_t rows = checked_mul(a.batch, a.sequence_length, "split_qkv_heads batch * seq_len");
  if (qkv.rank() != 2 || qkv.dim(0) != rows || qkv.dim(1) % (3 * a.num_heads) != 0)
    fail(ErrorKind::InvalidArgument,
         "{}: qkv must be [B*S, 3*D] = [{}, 3*D] with D divisible by num_heads {}; found {}", kSplitQkv, rows, a.num_heads,
         qkv.shape());
  detail::shader_u32(qkv.numel(), "element count", kSplitQkv);
  return {a.batch, a.sequence_length, a.num_heads, qkv.dim(1) / (3 * a.num_heads)};
}

// One dispatch between packed (qkv or its gradient) and the three head
// tensors; backward = true writes packed.
ComputeDispatch qkv_dispatch(const Matrix& packed, const Matrix& q, const Matrix& k, const Matrix& v, const Heads& g, bool backward) {
  const auto heads = [backward](const Matrix& m) { return backward ? BufferBinding::read(m.storage()) : BufferBinding::write(m.storage()); };
  ComputeDispatch d;
  d.kernel = kernels::ml_attention_qkv_heads;
  d.specialization = {backward ? 1u : 0u, size_of(q.dtype()) == 2 ? 1u : 0u};
  d.bindings = {backward ? BufferBinding::write(packed.storage()) : BufferBinding::read(packed.storage()), heads(q), heads(k), heads(v)};
  d.push.set(push::ml_attention_heads{.n = static_cast<std::uint32_t>(q.numel()),
                                      .seq = static_cast<std::uint32_t>(g.seq),
                                      .heads = static_cast<std::uint32_t>(g.heads),
                                      .dh = static_cast<std::uint32_t>(g.head_dim)});
  // 16-bit: an invocation writes words of what it writes (all of qkv in the backward).
  d.groups = {detail::groups_for(size_of(q.dtype()) == 2 ? words_of(q, (backward ? 3 : 1) * q.numel()) : q.numel(), 1024), 1, 1};
  return d;
}

const detail::Lowering<HeadAttributes> kQkvLowering = [](const OpCall<HeadAttributes>& c, const std::vector<Matrix>& out,
                                                          std::vector<ComputeDispatch>& ds) {
  const Heads g = qkv_geometry(c.inputs[0], c.attributes);
  if (c.inputs[0].numel() > 0) ds.push_back(qkv_dispatch(c.inputs[0], out[0], out[1], out[2], g, false));
};

// Results q, k, v (in qkv's dtype: f32, f16 or bf16); the backward writes the gradient of qkv from theirs (zeros
// stand in for an unused one) in one pass.
const Op<HeadAttributes> kSplitQkvOp{
    {.name = kSplitQkv,
     .inputs = {"qkv"},
     .outputs = 3,
     .infer = [](const OpCall<HeadAttributes>& c) {
       const Shape s = permuted_shape(qkv_geometry(c.inputs[0], c.attributes), false);
       const DType d = c.inputs[0].dtype();
       return std::vector<OutputSpec>{{s, d}, {s, d}, {s, d}};
     },
     .lower = {{DType::F32, kQkvLowering}, {DType::F16, kQkvLowering}, {DType::BF16, kQkvLowering}},
     .backward = [](const BackwardCall<HeadAttributes>& c) {
       const std::vector<Matrix>& gy = c.grad_outputs;
       const Shape& shape = c.input_shapes[0];
       const Heads g{c.attributes.batch, c.attributes.sequence_length, c.attributes.num_heads, shape[1] / (3 * c.attributes.num_heads)};
       Matrix gx = detail::allocate(gy[0].engine(), shape, gy[0].dtype());
       const ComputeDispatch d = qkv_dispatch(gx, gy[0], gy[1], gy[2], g, true);
       c.record(std::span(&d, gx.numel() > 0 ? 1 : 0), {&gy[0], &gy[1], &gy[2]}, {&gx}, detail::attribute_values(c.attributes));
       return std::vector<Matrix>{gx};
     }}};

}  // namespace

Matrix split_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads) {
  const HeadAttributes a{batch, seq_len, num_heads};
  const Heads g = split_geometry(x, a);
  if (g.heads == 1 && is_floating_point(x.dtype())) return x.reshape({g.batch, g.seq, g.head_dim});
  return detail::apply(kSplitOp, {x}, a)[0];
}

Matrix merge_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads) {
  const HeadAttributes a{batch, seq_len, num_heads};
  const Heads g = merge_geometry(x, a);
  if (g.heads == 1 && is_floating_point(x.dtype())) return x.reshape({g.batch * g.seq, g.head_dim});
  return detail::apply(kMergeOp, {x}, a)[0];
}

QkvHeads split_qkv_heads(const Matrix& qkv, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads) {
  std::vector<Matrix> r = detail::apply(kSplitQkvOp, {qkv}, HeadAttributes{batch, seq_len, num_heads});
  return {std::move(r[0]), std::move(r[1]), std::move(r[2])};
}

}  // namespace oa::ml
