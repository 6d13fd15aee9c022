// The f32 GEMM of Engine::set_float32_matmul_precision(High) (Ootomo & Yokota,
// IJHPCA 2022): A and B split into scaled f16 parts (matrix/gemm_split), three
// f16 products through lower_gemm (on the tensor cores where the device has
// them) summed into an f32 workspace, and matrix/gemm_split_epilogue.
#include <algorithm>

#include "matrix/gemm.hpp"

namespace oa::detail {

namespace {

using runtime::Access;
using runtime::ComputeDispatch;

std::int64_t round8(std::int64_t v) { return ceil_div(v, 8) * 8; }

// One f32 operand split into f16 parts hi and lo (`items` items of lines_p x
// K padded to 8, in the operand's layout) and an i32 exponent per line (row
// of op(A), column of op(B)). A shared operand (batch stride 0) is split once.
struct SplitOperand {
  const GemmOperand* o;
  bool contiguous;  // a line's elements are consecutive: rows of A, rows of a transposed B
  std::int64_t lines, lines_p, items;
  Matrix hi, lo, scale;
};

}  // namespace

std::optional<std::vector<ComputeDispatch>> lower_gemm_split_f16(const Engine& engine, const GemmProblem& p) {
  const std::string_view variant = tuning_of(engine)->choose("gemm.f32_high", {p.batch, p.m, p.n, p.k});
  if (variant == "fp32" ||
      (variant == "split-f16" && !engine.device().has_cooperative_matrix({DType::F16, DType::F16, DType::F32, DType::F32, 16, 16, 16})))
    return std::nullopt;
  const std::int64_t kp = round8(p.k), a_ext = p.m * p.k, b_ext = p.k * p.n, c_ext = p.m * p.n;
  const auto split_operand = [&](const GemmOperand& o, bool contiguous, std::int64_t lines) {
    const std::int64_t items = o.batch_stride == 0 ? 1 : p.batch, lines_p = round8(lines);
    return SplitOperand{&o,
                        contiguous,
                        lines,
                        lines_p,
                        items,
                        allocate(engine, Shape{items * lines_p * kp}, DType::F16),
                        allocate(engine, Shape{items * lines_p * kp}, DType::F16),
                        allocate(engine, Shape{items * lines_p}, DType::I32)};
  };
  const SplitOperand a = split_operand(p.a, !p.trans_a, p.m), b = split_operand(p.b, p.trans_b, p.n);
  const std::int64_t w_ext = a.lines_p * b.lines_p;
  const Matrix w = allocate(engine, Shape{p.batch * w_ext});
  const auto part_words = [&](const SplitOperand& s) { return BatchSpan{s.items > 1 ? s.lines_p * kp / 2 : 0, s.lines_p * kp / 2}; };
  const std::int64_t per = window_batch(engine, {{p.a.batch_stride, a_ext}, {p.b.batch_stride, b_ext}, {p.c.batch_stride, c_ext},
                                                 {w_ext, w_ext}, part_words(a), part_words(b)});
  std::vector<ComputeDispatch> out;
  for (const SplitOperand* s : {&a, &b})
    for (std::int64_t b0 = 0; b0 < s->items; b0 += per) {
      const std::int64_t q = std::min(per, s->items - b0), words = s->lines_p * kp / 2;
      const ElementWindow x = gemm_window(*s->o->matrix, s->o->offset + b0 * s->o->batch_stride,
                                          (q - 1) * s->o->batch_stride + s->lines * p.k, Access::Read);
      const ElementWindow hi = element_window(s->hi.storage(), b0 * words, q * words, Access::Write);
      const ElementWindow lo = element_window(s->lo.storage(), b0 * words, q * words, Access::Write);
      const ElementWindow scale = element_window(s->scale.storage(), b0 * s->lines_p, q * s->lines_p, Access::Write);
      ComputeDispatch d;
      d.kernel = kernels::matrix_gemm_split;
      d.specialization = {s->contiguous};
      d.bindings = {x.binding, hi.binding, lo.binding, scale.binding};
      d.push.set(push::matrix_gemm_split{.lines = u32(s->lines),
                                         .len = u32(p.k),
                                         .lines_p = u32(s->lines_p),
                                         .len_p = u32(kp),
                                         .x_off = x.offset,
                                         .x_stride = u32(s->o->batch_stride),
                                         .hi_off = hi.offset,
                                         .lo_off = lo.offset,
                                         .part_stride = u32(words),
                                         .scale_off = scale.offset});
      d.groups = {groups_for(s->lines_p, s->contiguous ? 4 : 64), static_cast<std::uint64_t>(q), 1};
      out.push_back(std::move(d));
    }

  // W = A_lo B_hi; W += A_hi B_lo; W = A_hi B_hi + W 2^-11 (all f32 accumulation).
  const auto part = [&](const SplitOperand& s, const Matrix& m) { return GemmOperand{&m, 0, s.items > 1 ? s.lines_p * kp : 0}; };
  GemmProblem product{.batch = p.batch, .m = a.lines_p, .n = b.lines_p, .k = kp, .trans_a = p.trans_a, .trans_b = p.trans_b,
                      .alpha = 1.0f, .beta = 0.0f, .a = part(a, a.lo), .b = part(b, b.hi), .c = {&w, 0, w_ext}};
  append_gemm(engine, product, out);
  product.beta = 1.0f;
  product.a = part(a, a.hi);
  product.b = part(b, b.lo);
  append_gemm(engine, product, out);
  product.beta = 0x1p-11f;
  product.b = part(b, b.hi);
  append_gemm(engine, product, out);

  std::optional<ElementWindow> bias;
  if (p.bias) bias = gemm_window(*p.bias, 0, p.n, Access::Read);
  for (std::int64_t b0 = 0; b0 < p.batch; b0 += per) {
    const std::int64_t q = std::min(per, p.batch - b0);
    const auto window = [&](const GemmOperand& o, std::int64_t ext, Access access) {
      return gemm_window(*o.matrix, o.offset + b0 * o.batch_stride, (q - 1) * o.batch_stride + ext, access);
    };
    const auto scales = [&](const SplitOperand& s) {
      return s.items > 1 ? element_window(s.scale.storage(), b0 * s.lines_p, q * s.lines_p, Access::Read)
                         : element_window(s.scale.storage(), 0, s.lines_p, Access::Read);
    };
    const ElementWindow ws = element_window(w.storage(), b0 * w_ext, q * w_ext, Access::Read), sa = scales(a), sb = scales(b);
    const ElementWindow aw = window(p.a, a_ext, Access::Read), bw = window(p.b, b_ext, Access::Read);
    const ElementWindow cw = window(p.c, c_ext, p.beta != 0.0f ? Access::ReadWrite : Access::Write);
    ComputeDispatch d;
    d.kernel = kernels::matrix_gemm_split_epilogue;
    d.specialization = {p.trans_a, p.trans_b};
    d.bindings = {ws.binding, sa.binding, sb.binding, aw.binding, bw.binding, cw.binding, bias ? bias->binding : ws.binding};
    d.push.set(push::matrix_gemm_split_epilogue{.count = u32(q * c_ext),
                                                .M = u32(p.m),
                                                .N = u32(p.n),
                                                .K = u32(p.k),
                                                .w_off = ws.offset,
                                                .w_stride = u32(w_ext),
                                                .w_row = u32(b.lines_p),
                                                .sa_off = sa.offset,
                                                .sa_stride = u32(a.items > 1 ? a.lines_p : 0),
                                                .sb_off = sb.offset,
                                                .sb_stride = u32(b.items > 1 ? b.lines_p : 0),
                                                .a_off = aw.offset,
                                                .a_stride = u32(p.a.batch_stride),
                                                .b_off = bw.offset,
                                                .b_stride = u32(p.b.batch_stride),
                                                .update = gemm_update(p, q, cw, bias ? &*bias : nullptr)});
    d.groups = {groups_for(q * c_ext, 1024), 1, 1};
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace oa::detail
