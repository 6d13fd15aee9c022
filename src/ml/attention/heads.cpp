// split_heads / merge_heads: validation, the permutation lowering, and their
// autograd rules (each one's backward is the other permutation).
#include "ml/attention/internal.hpp"

namespace oa::ml {

namespace {

using runtime::BufferBinding;
using runtime::ComputeDispatch;

constexpr const char* kSplit = "oa::ml::split_heads";
constexpr const char* kMerge = "oa::ml::merge_heads";

const std::vector<AttributeSpec> kHeadAttributes = {
    {"batch", AttributeType::Int}, {"sequence_length", AttributeType::Int}, {"num_heads", AttributeType::Int}};
const detail::ContractRegistration kSplitContract{{kSplit, 1, 1, kHeadAttributes}};
const detail::ContractRegistration kMergeContract{{kMerge, 1, 1, kHeadAttributes}};

struct Heads {
  std::int64_t batch, seq, heads, head_dim;
};

void require_positive(const char* op, std::int64_t batch, std::int64_t seq, std::int64_t heads, const Matrix& x) {
  if (batch < 1 || seq < 1 || heads < 1)
    fail(ErrorKind::InvalidArgument, "{}: batch {}, seq_len {} and num_heads {} must all be >= 1 (x {})", op, batch, seq, heads,
         x.shape());
}

Heads split_geometry(const Matrix& x, std::int64_t batch, std::int64_t seq, std::int64_t heads) {
  detail::require_f32(x, kSplit, "x");
  require_positive(kSplit, batch, seq, heads, x);
  const std::int64_t rows = checked_mul(batch, seq, "split_heads batch * seq_len");
  if (x.rank() != 2 || x.dim(0) != rows || x.dim(1) < 1 || x.dim(1) % heads != 0)
    fail(ErrorKind::InvalidArgument, "{}: x must be [B*S, D] = [{}, D] with D >= 1 divisible by num_heads {}; found {}", kSplit,
         rows, heads, x.shape());
  detail::shader_u32(x.numel(), "element count", kSplit);
  return {batch, seq, heads, x.dim(1) / heads};
}

Heads merge_geometry(const Matrix& x, std::int64_t batch, std::int64_t seq, std::int64_t heads) {
  detail::require_f32(x, kMerge, "x");
  require_positive(kMerge, batch, seq, heads, x);
  const std::int64_t bh = checked_mul(batch, heads, "merge_heads batch * num_heads");
  if (x.rank() != 3 || x.dim(0) != bh || x.dim(1) != seq || x.dim(2) < 1)
    fail(ErrorKind::InvalidArgument, "{}: x must be [B*H, S, Dh] = [{}, {}, Dh] with Dh >= 1; found {}", kMerge, bh, seq,
         x.shape());
  detail::shader_u32(x.numel(), "element count", kMerge);
  return {batch, seq, heads, x.dim(2)};
}

std::vector<OpAttribute> head_attributes(const Heads& g) {
  return {{"batch", g.batch}, {"sequence_length", g.seq}, {"num_heads", g.heads}};
}

// Records the permutation (merge = false: packed -> heads) as op `name`.
Matrix permute(const char* name, bool backward, const Matrix& x, const Heads& g, bool merge) {
  const Shape out_shape = merge ? Shape{g.batch * g.seq, g.heads * g.head_dim} : Shape{g.batch * g.heads, g.seq, g.head_dim};
  Matrix y = detail::allocate(x.engine(), out_shape);
  ComputeDispatch d;
  d.kernel = "ml/attention/heads";
  d.specialization = {merge ? 1u : 0u};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(y.storage())};
  d.push.u32(static_cast<std::uint32_t>(x.numel()))
      .u32(static_cast<std::uint32_t>(g.seq))
      .u32(static_cast<std::uint32_t>(g.heads))
      .u32(static_cast<std::uint32_t>(g.head_dim));
  d.groups = {detail::groups_for(x.numel(), 1024), 1, 1};
  x.engine().record(detail::semantic(name, {&x}, {&y}, head_attributes(g), backward), std::span(&d, 1));
  return y;
}

// split's backward is the merge permutation and merge's the split one, each
// recorded as "<op> backward".
void attach_rule(const char* name, const Matrix& x, const Matrix& y, const Heads& g, bool merge) {
  if (!autograd::needs_record({&x})) return;
  autograd::record(name, {x}, {y}, [name, g, merge](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{permute(name, true, gy[0], g, !merge)};
  });
}

}  // namespace

Matrix split_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads) {
  const Heads g = split_geometry(x, batch, seq_len, num_heads);
  if (g.heads == 1) return x.reshape({g.batch, g.seq, g.head_dim});
  Matrix y = permute(kSplit, false, x, g, false);
  attach_rule(kSplit, x, y, g, false);
  return y;
}

Matrix merge_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads) {
  const Heads g = merge_geometry(x, batch, seq_len, num_heads);
  if (g.heads == 1) return x.reshape({g.batch * g.seq, g.head_dim});
  Matrix y = permute(kMerge, false, x, g, true);
  attach_rule(kMerge, x, y, g, true);
  return y;
}

}  // namespace oa::ml
