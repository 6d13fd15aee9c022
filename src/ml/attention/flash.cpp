// Flash attention: attention geometry and validation, masks, the tiled
// forward (a decoding kernel for at most four query rows) and the backward
// lowerings, fused in two passes or through GEMMs (the flash path of
// scaled_dot_product_attention, sdpa.cpp), and the OpDef of
// scaled_dot_product_attention_causal (packed heads read in place).
#include <algorithm>
#include <cmath>
#include <span>

#include "oa/runtime/tuning.hpp"
#include "matrix/cast_lowering.hpp"
#include "matrix/gemm.hpp"
#include "ml/attention/internal.hpp"
#include "oa/matrix/cast.hpp"

namespace oa::ml {

namespace attention_detail {

void require_mask_dtype(const char* op, const char* arg, const Matrix& mask) {
  detail::require_defined(mask, op, arg);
  if (mask.dtype() != DType::F32 && mask.dtype() != DType::Bool)
    fail(ErrorKind::InvalidArgument, "{}: {} {} must be f32 (additive) or bool (true = attend); found {}", op, arg, mask.shape(),
         to_string(mask.dtype()));
}

void lower_bool_mask(const char* op, const Matrix& mask, const Matrix& values, std::vector<runtime::ComputeDispatch>& dispatches) {
  const std::int64_t n = mask.numel();
  runtime::ComputeDispatch d;
  d.kernel = kernels::ml_attention_bool_mask;
  d.bindings = {runtime::BufferBinding::read(mask.storage()), runtime::BufferBinding::write(values.storage())};
  d.push.set(push::ml_attention_bool_mask{.n = detail::shader_u32(n, "mask element count", op)});
  d.groups = {detail::groups_for((n + 3) / 4, 256), 1, 1};
  dispatches.push_back(std::move(d));
}

ResolvedMask resolve_mask(const char* op, const char* arg, const Matrix& mask) {
  ResolvedMask r;
  r.values = mask;
  if (!mask.defined() || mask.dtype() == DType::F32) return r;
  require_mask_dtype(op, arg, mask);
  r.values = detail::allocate(mask.engine(), mask.shape());
  lower_bool_mask(op, mask, r.values, r.dispatches);
  return r;
}

MaskLayout mask_layout(const char* op, const char* arg, const Matrix& mask, std::int64_t batch, std::int64_t heads, std::int64_t sq, std::int64_t sk,
                       const Shape& scores_shape) {
  require_mask_dtype(op, arg, mask);
  MaskLayout m;
  m.present = true;
  m.heads = heads;
  const std::int64_t rows = checked_mul(checked_mul(batch, heads, "mask batch-heads"), sq, "mask rows");
  if (mask.rank() == 2 && mask.dim(0) == rows && mask.dim(1) == sk) {  // one mask row per score row
    m.sq = sk;
    m.sh = sq * sk;
    m.sb = heads * sq * sk;
  } else {
    // PyTorch broadcasting against the scores, aligned from the last axis: [batch, heads, sq, sk], or
    // [batch, sq, sk] for scores of rank 3 (no heads axis: a mask's third-last axis is the batch's).
    const std::int64_t target[4] = {batch, heads, sq, sk};
    const std::size_t max_rank = std::min<std::size_t>(4, scores_shape.rank());
    static constexpr std::size_t axes4[4] = {0, 1, 2, 3}, axes3[3] = {0, 2, 3};
    const std::size_t* axes = max_rank == 4 ? axes4 : axes3 + (3 - max_rank);
    bool ok = mask.rank() >= 1 && mask.rank() <= max_rank && mask.dim(-1) == sk;
    std::int64_t extent[4] = {1, 1, 1, sk};
    for (std::size_t a = 0; ok && a < mask.rank(); ++a) {
      const std::size_t t = axes[max_rank - mask.rank() + a];
      extent[t] = mask.shape()[a];
      ok = extent[t] == target[t] || extent[t] == 1;
    }
    if (!ok)
      fail(ErrorKind::InvalidArgument,
           "{}: {} {} must broadcast to the scores {} (PyTorch broadcasting, last extent Sk = {}) or be one row per "
           "score row [{}, {}]",
           op, arg, mask.shape(), scores_shape, sk, rows, sk);
    m.sq = extent[2] == 1 ? 0 : sk;
    m.sh = extent[1] == 1 ? 0 : extent[2] * sk;
    m.sb = extent[0] == 1 ? 0 : extent[1] * extent[2] * sk;
  }
  detail::shader_u32(mask.numel(), "mask element count", op);
  return m;
}

void require_attention_dtypes(const char* op, const Matrix& q, const Matrix& k, const Matrix& v) {
  detail::require_defined(q, op, "q");
  detail::require_defined(k, op, "k");
  detail::require_defined(v, op, "v");
  if (!is_floating_point(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail(ErrorKind::InvalidArgument, "{}: q, k and v must have one dtype, f32, f16 or bf16; found q {} {}, k {} {} and v {} {}", op,
         to_string(q.dtype()), q.shape(), to_string(k.dtype()), k.shape(), to_string(v.dtype()), v.shape());
}

AttentionGeometry attention_geometry(const char* op, const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask,
                                     std::optional<float> scale, bool causal, CausalVariant variant) {
  require_attention_dtypes(op, q, k, v);
  detail::require_same_engine(q, "q", k, "k", op);
  detail::require_same_engine(q, "q", v, "v", op);
  if ((q.rank() != 3 && q.rank() != 4) || q.dim(-1) < 1)  // no query rows (B, H or Sq 0) give an empty output
    fail(ErrorKind::InvalidArgument, "{}: q must be [BH, Sq, Dh] or [B, H, Sq, Dh] with Dh >= 1; found {}", op, q.shape());
  AttentionGeometry g;
  g.four_d = q.rank() == 4;
  const int lead = g.four_d ? 2 : 1;  // axes before S
  g.batch = q.dim(0);
  g.heads = g.four_d ? q.dim(1) : 1;
  g.bh = g.batch * g.heads;
  g.sq = q.dim(-2);
  g.dh = q.dim(-1);
  auto same_lead = [&](const Matrix& x) {
    return x.rank() == q.rank() && x.dim(0) == q.dim(0) && (lead == 1 || x.dim(1) == q.dim(1));
  };
  const char* layout = g.four_d ? "[B, H, Sk, Dh]" : "[BH, Sk, Dh]";
  if (!same_lead(k) || k.dim(-1) != g.dh)
    fail(ErrorKind::InvalidArgument, "{}: k must be {} with the batch-heads and Dh of q {} (Sk >= 0); found {}", op, layout,
         q.shape(), k.shape());
  g.sk = k.dim(-2);
  if (!same_lead(v) || v.dim(-2) != g.sk || v.dim(-1) < 1)
    fail(ErrorKind::InvalidArgument, "{}: v must be {} with the batch-heads and Sk of k {} (Dv >= 1); found {}", op,
         g.four_d ? "[B, H, Sk, Dv]" : "[BH, Sk, Dv]", k.shape(), v.shape());
  g.dv = v.dim(-1);
  const std::int64_t rows = checked_mul(g.bh, g.sq, "attention query rows");
  if (mask.defined()) {
    detail::require_same_engine(q, "q", mask, "mask", op);
    const Shape scores = g.four_d ? Shape{g.batch, g.heads, g.sq, g.sk} : Shape{g.bh, g.sq, g.sk};
    g.mask = mask_layout(op, "attn_mask", mask, g.batch, g.heads, g.sq, g.sk, scores);
  }
  detail::shader_u32(q.numel(), "q element count", op);
  detail::shader_u32(k.numel(), "k element count", op);
  detail::shader_u32(v.numel(), "v element count", op);
  detail::shader_u32(checked_mul(rows, g.dv, "attention output element count"), "output element count", op);
  g.scale = scale ? *scale : 1.0f / std::sqrt(static_cast<float>(g.dh));
  if (!std::isfinite(g.scale)) fail(ErrorKind::InvalidArgument, "{}: scale {} is not finite (q {})", op, g.scale, q.shape());
  g.causal = causal;
  g.diag = variant == CausalVariant::UpperLeft ? 0 : g.sk - g.sq;
  return g;
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;
using detail::u32;
using runtime::BufferBinding;
using runtime::ComputeDispatch;

constexpr const char* kPackedCausal = "oa::ml::scaled_dot_product_attention_causal";

// One flash problem: `bh` batch-heads of `heads` heads per batch entry (the
// packed [B*S, H*D] layout when heads > 1, else [BH, S, D]).
struct FlashProblem {
  std::int64_t bh = 0, heads = 1, sq = 0, sk = 0, dh = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false;
  std::int64_t diag = 0;  // causal: query i sees keys j <= i + diag
  MaskLayout mask_layout;
  const Matrix* mask = nullptr;
};

enum class FlashPass { Forward, BackwardQ, BackwardKV };

// The variant of tuning point `point` (oa/runtime/tuning.hpp; keys bh, sq, sk,
// dh, dv, causal) for p.
std::string_view tuned(const Engine& engine, std::string_view point, const FlashProblem& p) {
  return tuning_of(engine)->choose(point, {p.bh, p.sq, p.sk, p.dh, p.dv, p.causal ? 1 : 0});
}

// Whether the fused kernels take the narrow plan (tuning point
// attention.flash_plan): 32 invocations and 16-key tiles, no shrinking for
// occupancy, ranges split for eight busy workgroups, decoding ranges of 128
// keys, as suits a CPU driver's few threads; else the wide plan for a GPU.
bool narrow_plan(const Engine& engine, const FlashProblem& p) { return tuned(engine, "attention.flash_plan", p) == "narrow"; }

// Specialization of one flash kernel: workgroup size, lanes per row, rows per
// shared-memory tile, padded head and value dims (multiples of 4 * lanes), and
// whether a mask is read; the forward's query rows per lane group (ROWS).
struct FlashTiles {
  std::uint32_t threads = 256, lanes = 2, block_n = 32, dk = 64, dv = 64, rows = 1;
  bool masked = false;
  bool narrow = false;  // the narrow plan (narrow_plan)
  std::uint32_t block_m() const { return threads / lanes * rows; }
  std::vector<std::uint32_t> specialization() const { return {threads, lanes, block_n, dk, dv, masked ? 1u : 0u}; }
};

std::uint32_t padded_dim(std::int64_t d) {
  for (std::uint32_t b : {16u, 32u, 64u, 128u, 256u})
    if (d <= b) return b;
  fail(ErrorKind::Internal, "flash attention: head dim {} above {}", d, kMaxFlashDim);
}

// Lanes per row: the fewest (at least 2) that keep the floats a lane holds for
// its rows within `lane_floats` (the forward holds q and o, (Dh + Dv) / lanes
// per row of its lane group; the backward passes two more rows) and within
// the kernels' 16 named vec4 registers per operand (4 * LANES <= DK, DV <=
// 64 * LANES). Budgets measured on the H200 (attention sweep, wall time):
// - forward, one row: 128 (96, 64 and 48 ran 0.92x, 0.81x and 0.69x as fast;
//   256 moves head dim 128's two rows to 2 lanes, 0.95x);
// - forward, two rows: 192 (head dims 80 and 96 then keep 2 lanes: 1.18-1.21x);
// - backward: 256 (against 128, forward + backward at head dims 80-128 ran
//   1.08-1.58x, 32-64 unchanged; 512 ran as 256).
// Wide plan: 256 invocations for the forward, 128 for the backward passes (the
// fastest of 64-512 at 2-8 lanes measured on the H200), halved while that
// leaves too few workgroups to fill the device or more than twice the rows
// there are; narrow plan: 32. Tiles of 32 rows (16 narrow), halved until they fit
// the device's shared memory but not below the forward's chunk of 8 keys.
constexpr std::int64_t kForwardLaneFloats = 128;
constexpr std::int64_t kTwoRowLaneFloats = 192;
constexpr std::int64_t kBackwardLaneFloats = 256;

FlashTiles flash_tiles(const Engine& engine, FlashPass pass, const FlashProblem& p, std::uint32_t lane_group_rows,
                       std::int64_t lane_floats) {
  FlashTiles t;
  t.masked = p.mask_layout.present;
  t.rows = lane_group_rows;
  t.dk = padded_dim(p.dh);
  t.dv = padded_dim(p.dv);
  const std::uint32_t widest = std::max(t.dk, t.dv);
  const std::int64_t held = (pass == FlashPass::Forward ? 1 : 2) * t.rows * (p.dh + p.dv);
  t.lanes = 2;
  while ((held > lane_floats * t.lanes || widest > 64 * t.lanes) && t.lanes < 64) t.lanes *= 2;
  // A row's lanes add their partial sums by subgroup shuffles, so they must
  // lie in one subgroup (4 lanes on some devices).
  t.lanes = std::min(t.lanes, engine.device().subgroup_size);
  if (t.lanes < 2 || widest > 64 * t.lanes)
    fail(ErrorKind::Unsupported, "flash attention: head dims {} / {} need subgroups of at least {} lanes; the device has {}", p.dh,
         p.dv, std::max(2u, (widest + 63) / 64), engine.device().subgroup_size);
  // Forward rows too few to fill a quarter of a workgroup (decoding): more lanes
  // per row, while each still holds a whole vec4 of both head vectors, so a
  // key's dot product is split over up to a subgroup instead of two lanes.
  t.narrow = narrow_plan(engine, p);
  const std::uint32_t forward_threads = t.narrow ? 32u : 256u;
  if (pass == FlashPass::Forward)
    while (2 * t.lanes <= engine.device().subgroup_size && 8 * t.lanes <= std::min(t.dk, t.dv) && 4 * p.sq * t.lanes <= forward_threads)
      t.lanes *= 2;
  // The kernels' widths: the head dims rounded up to whole vec4s of every
  // lane (80 stays 80 at 2 or 4 lanes), not to the power of two that chose the lanes.
  const auto lane_multiple = [&](std::int64_t d) {
    const std::uint32_t step = 4 * t.lanes;
    return (static_cast<std::uint32_t>(d) + step - 1) / step * step;
  };
  t.dk = lane_multiple(p.dh);
  t.dv = lane_multiple(p.dv);
  const std::int64_t rows = pass == FlashPass::BackwardKV ? p.sk : p.sq;
  t.threads = pass == FlashPass::Forward ? forward_threads : t.narrow ? 32u : 128u;
  while (!t.narrow && t.threads > 64 && (p.bh * ((rows + t.block_m() - 1) / t.block_m()) < 256 || t.block_m() >= 2 * rows)) t.threads /= 2;
  t.block_n = t.narrow ? 16u : 32u;
  auto shared_bytes = [&] {
    return t.block_n * (t.dk + t.dv) * 4u + (pass == FlashPass::BackwardKV ? 16u * t.block_n : 0u);
  };
  while (t.block_n > 8 && shared_bytes() > engine.device().max_shared_memory_bytes) t.block_n /= 2;
  if (shared_bytes() > engine.device().max_shared_memory_bytes)
    fail(ErrorKind::Unsupported, "flash attention: head dims {} / {} need {} bytes of shared memory; the device has {}", p.dh, p.dv,
         shared_bytes(), engine.device().max_shared_memory_bytes);
  return t;
}

// Whether `t` keeps its lane groups' rows within `lane_floats` per lane (a
// subgroup narrower than the lanes asked for caps them).
bool within_budget(const FlashTiles& t, FlashPass pass, const FlashProblem& p, std::int64_t lane_floats) {
  return (pass == FlashPass::Forward ? 1 : 2) * t.rows * (p.dh + p.dv) <= lane_floats * t.lanes;
}

// The forward gives each lane group two query rows, so that every key and
// value read from shared memory serves both, when (H200 A/B, wall time)
// - the two rows fit kTwoRowLaneFloats without more lanes per row, or one
//   row already needs 4 or more (a row's dot products then cost shuffles
//   either way): 2 -> 4 lanes at head dim 128 ran 1.01x, 4 -> 8 at 256 1.39x;
// - the query rows fill more than 4 of the taller blocks per head, in
//   workgroups as large as one row's (causal blocks' work grows with their
//   row, and a taller last block is a longer tail: GPT-2 s1024 with 4 blocks
//   ran 0.94x, s4096 with 16 1.08x; a 512-row prefill in 64-invocation
//   workgroups 0.45x).
FlashTiles forward_tiles(const Engine& engine, const FlashProblem& p) {
  const FlashTiles one = flash_tiles(engine, FlashPass::Forward, p, 1, kForwardLaneFloats);
  const FlashTiles two = flash_tiles(engine, FlashPass::Forward, p, 2, kTwoRowLaneFloats);
  const bool fits = within_budget(two, FlashPass::Forward, p, kTwoRowLaneFloats) && (two.lanes == one.lanes || one.lanes >= 4);
  return fits && two.threads == one.threads && p.sq > 4 * std::int64_t{two.block_m()} ? two : one;
}

// The dk/dv pass gives each lane group two key rows (every query and dO read
// from shared memory serves both) for head dims Dh + Dv >= 256, when the
// subgroup has the lanes: on the H200, forward + backward ran 1.06x at head
// dim 128 and 1.18x at 256, but 0.97x at 80-96 and 0.85x at 64.
FlashTiles key_value_tiles(const Engine& engine, const FlashProblem& p) {
  const FlashTiles one = flash_tiles(engine, FlashPass::BackwardKV, p, 1, kBackwardLaneFloats);
  if (p.dh + p.dv < 256) return one;
  const FlashTiles two = flash_tiles(engine, FlashPass::BackwardKV, p, 2, kBackwardLaneFloats);
  return within_budget(two, FlashPass::BackwardKV, p, kBackwardLaneFloats) ? two : one;
}

// A pass whose rows alone would leave the device idle splits the other
// operand's rows (keys in the forward, queries in the dk/dv pass) into
// `count` ranges of `length` (a multiple of the tile's BLOCK_N), one
// workgroup per row block and range, and merges the ranges' partial results
// in a later pass. Idle: fewer than kBusyInvocations working invocations (eight
// workgroups in the narrow plan). Each range holds at least
// kMinRangeTiles tiles (a range reloads its own rows), and the partial
// results, `part_elements` floats per range, stay within the shaders' u32
// offsets and the storage-buffer range.
constexpr float kLog2e = 1.4426950408889634f;  // the shaders' OA_LOG2E
constexpr std::int64_t kBusyInvocations = 131072;  // about half of an H200's resident invocations
constexpr std::int64_t kMinRangeTiles = 4;

struct Ranges {
  std::int64_t count = 1, length = 0;
};

Ranges split_ranges(const Engine& engine, const FlashTiles& t, std::int64_t working_invocations, std::int64_t extent,
                    std::int64_t part_elements) {
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const DeviceInfo& d = engine.device();
  const std::int64_t busy = t.narrow ? 8 * std::int64_t{t.threads} : kBusyInvocations;
  std::int64_t count = std::min(ceil_div(busy, working_invocations), ceil_div(extent, kMinRangeTiles * t.block_n));
  count = std::min<std::int64_t>(std::max<std::int64_t>(count, 1), d.max_workgroup_count[2]);
  Ranges r;
  r.length = ceil_div(ceil_div(extent, count), t.block_n) * t.block_n;
  r.count = ceil_div(extent, r.length);
  const std::int64_t elements = r.count * part_elements;
  if (elements > std::int64_t{UINT32_MAX} || static_cast<std::uint64_t>(elements) * 4 > d.max_storage_buffer_range) r.count = 1;
  if (r.count == 1) r.length = extent;
  return r;
}

// Kernel `f32` or, for 16-bit tensors, its _half build `half` (whose dtype
// constant follows the f32 build's specialization constants: appended to `spec`).
std::string_view tensor_kernel(const Matrix& q, std::string_view f32, std::string_view half, decltype(ComputeDispatch::specialization)& spec) {
  if (q.dtype() == DType::F32) return f32;
  spec.push_back(detail::dtype_code(q.dtype()));
  return half;
}

BufferBinding mask_binding(const FlashProblem& p, const Matrix& fallback) {
  return BufferBinding::read(p.mask_layout.present ? p.mask->storage() : fallback.storage());
}

// The push constants that every flash kernel's layout starts with.
push::ml_attention_flash_problem problem_push(const FlashProblem& p) {
  return {.heads = u32(p.heads),
          .sq = u32(p.sq),
          .sk = u32(p.sk),
          .dh = u32(p.dh),
          .dv = u32(p.dv),
          .scale = p.scale,
          .causal = p.causal ? 1u : 0u,
          .diag = static_cast<std::int32_t>(p.diag),
          .mask_heads = u32(p.mask_layout.heads),
          .mask_sb = u32(p.mask_layout.sb),
          .mask_sh = u32(p.mask_layout.sh),
          .mask_sq = u32(p.mask_layout.sq)};
}

// The pass merging `count` key ranges' partial results (flash_combine.comp)
// into the output, lse and stats.
ComputeDispatch combine_ranges(const FlashProblem& p, std::int64_t count, const std::shared_ptr<runtime::Storage>& o_parts,
                               const std::shared_ptr<runtime::Storage>& ml_parts, const Matrix& out, const Matrix& lse, const Matrix& stats) {
  const std::int64_t rows = p.bh * p.sq;
  ComputeDispatch c;
  c.kernel = kernels::ml_attention_flash_combine;
  c.bindings = {BufferBinding::read(o_parts), BufferBinding::read(ml_parts), BufferBinding::write(out.storage()),
                BufferBinding::write(lse.storage()), BufferBinding::write(stats.storage())};
  const float scale_abs = std::abs(p.scale);
  const bool masked = p.mask_layout.present;
  c.push.set(push::ml_attention_flash_combine{.rows = static_cast<std::uint32_t>(rows),
                                              .sq = static_cast<std::uint32_t>(p.sq),
                                              .dv = static_cast<std::uint32_t>(p.dv),
                                              .heads = static_cast<std::uint32_t>(p.heads),
                                              .ranges = static_cast<std::uint32_t>(count),
                                              .u = masked ? kLog2e : scale_abs * kLog2e,
                                              .lse_scale = masked ? 1.0f : scale_abs});
  c.groups = {detail::groups_for(rows * p.dv, 256), 1, 1};
  return c;
}

// Decoding (flash_decode.comp): at most kDecodeRows query rows, each read with
// the keys and values of one range by a whole workgroup. Lanes per key keep
// four vec4s of q per lane (within a subgroup); 256 invocations (32 in the
// narrow plan, or one per vec4 column of v when there are more); ranges of
// 512 keys, halved down to 64 while fewer than kDecodeGroups workgroups would
// run (128 keys in the narrow plan). Empty when the partial results would
// exceed the shaders' u32 offsets or the storage-buffer range.
constexpr std::int64_t kDecodeRows = 4;
constexpr std::int64_t kDecodeGroups = 2048;

std::optional<FlashTiles> decode_tiles(const Engine& engine, const FlashProblem& p) {
  const DeviceInfo& d = engine.device();
  FlashTiles t;
  t.narrow = narrow_plan(engine, p);
  t.masked = p.mask_layout.present;
  t.dk = padded_dim(p.dh);
  t.dv = padded_dim(p.dv);
  t.lanes = std::min(d.subgroup_size, std::max(2u, t.dk / 16));
  if (t.lanes < 2 || t.dk > 64 * t.lanes) return std::nullopt;  // the tiled forward names what the device lacks
  t.threads = std::max(t.narrow ? 32u : 256u, t.dv / 4);
  t.block_n = t.narrow ? 128u : 512u;
  const auto ranges = [&] { return (p.sk + t.block_n - 1) / t.block_n; };
  while (!t.narrow && t.block_n > 64 && ranges() * p.bh * p.sq < kDecodeGroups) t.block_n /= 2;
  const std::int64_t elements = ranges() * p.bh * p.sq * std::max<std::int64_t>(p.dv, 2);
  if (ranges() > d.max_workgroup_count[0] || elements > std::int64_t{UINT32_MAX} ||
      static_cast<std::uint64_t>(elements) * 4 > d.max_storage_buffer_range)
    return std::nullopt;
  return t;
}

std::vector<ComputeDispatch> lower_flash_forward(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k,
                                                 const Matrix& v, const Matrix& out, const Matrix& lse, const Matrix& stats) {
  const std::int64_t rows = p.bh * p.sq;
  std::vector<ComputeDispatch> ds(1);
  ComputeDispatch& d = ds[0];
  if (const std::optional<FlashTiles> t = p.sq <= kDecodeRows ? decode_tiles(engine, p) : std::nullopt) {
    const std::int64_t count = (p.sk + t->block_n - 1) / t->block_n;
    const auto o_parts = engine.allocate(static_cast<std::uint64_t>(count * rows * p.dv) * 4);
    const auto ml_parts = engine.allocate(static_cast<std::uint64_t>(count * rows) * 8);
    d.specialization = t->specialization();
    d.kernel = tensor_kernel(q, kernels::ml_attention_flash_decode, kernels::ml_attention_flash_decode_half, d.specialization);
    d.bindings = {BufferBinding::read(q.storage()), BufferBinding::read(k.storage()), BufferBinding::read(v.storage()),
                  mask_binding(p, q),               BufferBinding::write(o_parts),  BufferBinding::write(ml_parts)};
    d.push.set(push::ml_attention_flash_forward{.problem = problem_push(p), .key_split = t->block_n, .part_rows = u32(rows)});
    d.groups = {static_cast<std::uint64_t>(count), static_cast<std::uint64_t>(p.bh), static_cast<std::uint64_t>(p.sq)};
    ds.push_back(combine_ranges(p, count, o_parts, ml_parts, out, lse, stats));
    return ds;
  }
  const FlashTiles t = forward_tiles(engine, p);
  const Ranges r = split_ranges(engine, t, rows * t.lanes / t.rows, p.sk, rows * std::max<std::int64_t>(p.dv, 2));
  const bool partial = r.count > 1;
  const auto o_parts = partial ? engine.allocate(static_cast<std::uint64_t>(r.count * rows * p.dv) * 4) : out.storage();
  const auto ml_parts = partial ? engine.allocate(static_cast<std::uint64_t>(r.count * rows) * 8) : stats.storage();
  d.specialization = t.specialization();
  d.specialization.push_back(partial ? 1u : 0u);
  d.specialization.push_back(t.rows);
  d.kernel = tensor_kernel(q, kernels::ml_attention_flash_forward, kernels::ml_attention_flash_forward_half, d.specialization);
  d.bindings = {BufferBinding::read(q.storage()), BufferBinding::read(k.storage()),  BufferBinding::read(v.storage()),
                mask_binding(p, q),               BufferBinding::write(o_parts), BufferBinding::write(lse.storage()),
                BufferBinding::write(ml_parts)};
  d.push.set(push::ml_attention_flash_forward{.problem = problem_push(p),
                                              .key_split = u32(r.length),
                                              .part_rows = u32(partial ? rows : 0)});
  d.groups = {detail::groups_for(p.sq, t.block_m()), static_cast<std::uint64_t>(p.bh), static_cast<std::uint64_t>(r.count)};
  if (partial) ds.push_back(combine_ranges(p, r.count, o_parts, ml_parts, out, lse, stats));
  return ds;
}

// dq pass (also writes delta = rowsum(dO * O) - grad_lse into `delta`
// [BH*Sq]), then the dk/dv pass, from the forward's stats [BH, Sq, 2].
// grad_lse (the log-sum-exp's gradient) may be undefined.
std::vector<ComputeDispatch> lower_flash_backward(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k,
                                                  const Matrix& v, const Matrix& out, const Matrix& stats, const Matrix& grad,
                                                  const Matrix& grad_lse, const Matrix& dq, const Matrix& dk, const Matrix& dv,
                                                  const Matrix& delta) {
  const FlashTiles tq = flash_tiles(engine, FlashPass::BackwardQ, p, 1, kBackwardLaneFloats);
  const FlashTiles tkv = key_value_tiles(engine, p);
  ComputeDispatch dq_pass;
  dq_pass.specialization = tq.specialization();
  dq_pass.kernel =
      tensor_kernel(q, kernels::ml_attention_flash_backward_dq, kernels::ml_attention_flash_backward_dq_half, dq_pass.specialization);
  dq_pass.bindings = {BufferBinding::read(q.storage()),   BufferBinding::read(k.storage()),    BufferBinding::read(v.storage()),
                      mask_binding(p, q),                 BufferBinding::read(out.storage()),  BufferBinding::read(grad.storage()),
                      BufferBinding::read(stats.storage()), BufferBinding::write(dq.storage()), BufferBinding::write(delta.storage()),
                      BufferBinding::read((grad_lse.defined() ? grad_lse : stats).storage())};
  dq_pass.push.set(push::ml_attention_flash_backward_dq{.problem = problem_push(p), .has_lse_grad = grad_lse.defined() ? 1u : 0u});
  dq_pass.groups = {detail::groups_for(p.sq, tq.block_m()), static_cast<std::uint64_t>(p.bh), 1};

  const std::int64_t key_blocks = (p.sk + tkv.block_m() - 1) / tkv.block_m();
  const Ranges r = split_ranges(engine, tkv, key_blocks * p.bh * tkv.threads, p.sq, std::max(k.numel(), v.numel()));
  const auto dk_parts = r.count > 1 ? engine.allocate(static_cast<std::uint64_t>(r.count * k.numel()) * 4) : dk.storage();
  const auto dv_parts = r.count > 1 ? engine.allocate(static_cast<std::uint64_t>(r.count * v.numel()) * 4) : dv.storage();
  ComputeDispatch kv_pass;
  kv_pass.specialization = tkv.specialization();
  kv_pass.specialization.push_back(tkv.rows);
  kv_pass.kernel =
      tensor_kernel(q, kernels::ml_attention_flash_backward_dkv, kernels::ml_attention_flash_backward_dkv_half, kv_pass.specialization);
  kv_pass.bindings = {BufferBinding::read(q.storage()),     BufferBinding::read(k.storage()),    BufferBinding::read(v.storage()),
                      mask_binding(p, q),                   BufferBinding::read(grad.storage()), BufferBinding::read(stats.storage()),
                      BufferBinding::read(delta.storage()), BufferBinding::write(dk_parts),      BufferBinding::write(dv_parts)};
  kv_pass.push.set(push::ml_attention_flash_backward_dkv{.problem = problem_push(p),
                                                          .query_split = u32(r.length),
                                                          .part_k = u32(r.count > 1 ? k.numel() : 0),
                                                          .part_v = u32(r.count > 1 ? v.numel() : 0)});
  kv_pass.groups = {detail::groups_for(p.sk, tkv.block_m()), static_cast<std::uint64_t>(p.bh), static_cast<std::uint64_t>(r.count)};

  std::vector<ComputeDispatch> out_dispatches;
  out_dispatches.push_back(std::move(dq_pass));
  out_dispatches.push_back(std::move(kv_pass));
  if (r.count > 1) {  // the ranges' partial sums, added in range order
    detail::sum_channels(engine, dk_parts, r.count, k.numel(), 1, dk.storage(), out_dispatches);
    detail::sum_channels(engine, dv_parts, r.count, v.numel(), 1, dv.storage(), out_dispatches);
  }
  return out_dispatches;
}

// The GEMM lowerings' query blocks: rows [first, first + rows) of each head
// against keys [0, keys). One block without causality; causal problems take
// blocks of kCausalBlockRows queries, each against only the keys its last
// row sees, so the GEMMs skip most of the hidden half (at 8 blocks they
// compute 9/16 of the scores instead of all). The last block is given every
// key (aligned bottom-right it sees them all anyway; the backward trims it to
// the keys its rows see, visible_keys). On the H200, 256-row blocks
// ran 1.05-1.12x faster than 512 at head dims 64-128 in the backward
// (Gemma's 256: 0.97x).
struct QueryBlock {
  std::int64_t first = 0, rows = 0, keys = 0;
};
constexpr std::int64_t kCausalBlockRows = 256;

// Keys [0, result) hold every key that causal query rows [first, first + rows) see.
std::int64_t visible_keys(const FlashProblem& p, std::int64_t first, std::int64_t rows) {
  return std::clamp<std::int64_t>(first + rows + p.diag, 0, p.sk);
}

std::vector<QueryBlock> query_blocks(const FlashProblem& p) {
  if (!p.causal) return {{0, p.sq, p.sk}};
  std::vector<QueryBlock> blocks;
  for (std::int64_t first = 0; first < p.sq; first += kCausalBlockRows) {
    const std::int64_t rows = std::min(kCausalBlockRows, p.sq - first);
    blocks.push_back({first, rows, visible_keys(p, first, rows)});
  }
  blocks.back().keys = p.sk;
  return blocks;
}

// Score elements per batch-head of the largest of `blocks` (the blocks take
// turns in the same buffers).
std::int64_t block_scores(const std::vector<QueryBlock>& blocks) {
  std::int64_t n = 0;
  for (const QueryBlock& b : blocks) n = std::max(n, b.rows * b.keys);
  return n;
}

// Batch-heads per chunk of the GEMM lowerings: as many as keep one chunk's
// scores within FlashLoweringGuard::score_bytes() (and the storage-buffer
// range); 0 when one head's do not.
std::int64_t gemm_chunk_heads(const Engine& engine, const std::vector<QueryBlock>& blocks, std::int64_t bh) {
  const std::uint64_t per_head = static_cast<std::uint64_t>(std::max<std::int64_t>(block_scores(blocks), 1)) * 4;
  const std::uint64_t budget = std::min<std::uint64_t>(FlashLoweringGuard::score_bytes(), engine.device().max_storage_buffer_range);
  return std::min<std::int64_t>(bh, static_cast<std::int64_t>(budget / per_head));
}

// Whether a pass goes through GEMMs, by `choice` (the guard's) or, for Auto,
// the tuning point `point` (attention.forward_lowering or
// attention.backward_lowering; the H200 table gives the measurements behind
// its rules). They need each head's rows contiguous ([BH, S, D], not packed
// heads) and one head's block of scores within the budget.
bool use_gemm(const Engine& engine, const FlashProblem& p, const std::vector<QueryBlock>& blocks, FlashLowering choice,
              std::string_view point) {
  if (p.heads != 1 || gemm_chunk_heads(engine, blocks, p.bh) < 1) return false;
  switch (choice) {
    case FlashLowering::Fused:
    case FlashLowering::Coopmat:
      return false;
    case FlashLowering::Gemm:
      return true;
    case FlashLowering::Auto:
      break;
  }
  return tuned(engine, point, p) == "gemm";
}

bool use_gemm_backward(const Engine& engine, const FlashProblem& p, const std::vector<QueryBlock>& blocks) {
  return use_gemm(engine, p, blocks, FlashLoweringGuard::backward(), "attention.backward_lowering");
}

bool use_gemm_forward(const Engine& engine, const FlashProblem& p, const std::vector<QueryBlock>& blocks) {
  return use_gemm(engine, p, blocks, FlashLoweringGuard::forward(), "attention.forward_lowering");
}

// Rows [first, first + rows) of operand x, `rows_per_head` x `cols` per
// batch-head, from batch-head h0 on: a batched GEMM operand.
detail::GemmOperand head_rows(const Matrix& x, std::int64_t h0, std::int64_t rows_per_head, std::int64_t cols, std::int64_t first) {
  return {&x, (h0 * rows_per_head + first) * cols, rows_per_head * cols};
}

// Appends c = alpha op(a) op(b) + beta c, [m, n] by depth k, for `batch` batch-heads.
void append_head_gemm(const Engine& engine, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a,
                      bool trans_b, float alpha, float beta, detail::GemmOperand a, detail::GemmOperand b, detail::GemmOperand c,
                      std::vector<ComputeDispatch>& ds) {
  detail::append_gemm(engine,
                      {.batch = batch,
                       .m = m,
                       .n = n,
                       .k = k,
                       .trans_a = trans_a,
                       .trans_b = trans_b,
                       .alpha = alpha,
                       .beta = beta,
                       .a = a,
                       .b = b,
                       .c = c},
                      ds);
}

// The forward through the shared GEMMs, a chunk of batch-heads and one query
// block at a time (the block's scores, [chunk, rows, keys], in one buffer
// that every block reuses): S = sign(scale) q k^T, then
// flash_forward_scores.comp turns S into P in place and writes the rows' lse
// and stats, then out = P v. With 16-bit q, k, v the scores and P are f32
// and P is rounded to their dtype for P v (as torch's math path rounds the
// softmax), which writes the 16-bit out.
std::vector<ComputeDispatch> lower_gemm_forward(const Engine& engine, const FlashProblem& p, const std::vector<QueryBlock>& blocks,
                                                const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& out, const Matrix& lse,
                                                const Matrix& stats) {
  const std::int64_t per = gemm_chunk_heads(engine, blocks, p.bh);
  const bool half = q.dtype() != DType::F32;
  const Matrix scores = detail::allocate(engine, Shape{per, block_scores(blocks)});
  const Matrix probs = half ? detail::allocate(engine, scores.shape(), q.dtype()) : scores;
  std::vector<ComputeDispatch> ds;
  for (std::int64_t h0 = 0; h0 < p.bh; h0 += per) {
    const std::int64_t n = std::min(per, p.bh - h0);
    for (const QueryBlock& b : blocks) {
      const detail::GemmOperand s{&scores, 0, b.rows * b.keys}, pr{&probs, 0, b.rows * b.keys};
      append_head_gemm(engine, n, b.rows, b.keys, p.dh, false, true, p.scale >= 0.0f ? 1.0f : -1.0f, 0.0f,
                       head_rows(q, h0, p.sq, p.dh, b.first), head_rows(k, h0, p.sk, p.dh, 0), s, ds);
      // One row chunk: the scores fit the storage-buffer range.
      append(ds, detail::lower_rows(engine, kSdpa, n * b.rows, b.keys, detail::RowLanes::EightColumns,
                                    [&](ComputeDispatch& d, const detail::RowChunk&) {
                                      d.kernel = kernels::ml_attention_flash_forward_scores;
                                      d.specialization.push_back(p.mask_layout.present ? 1u : 0u);
                                      d.bindings = {BufferBinding::read_write(scores.storage()), mask_binding(p, q),
                                                    BufferBinding::write(lse.storage()), BufferBinding::write(stats.storage())};
                                      d.push.set(push::ml_attention_flash_forward_scores{
                                          .problem = problem_push(p),
                                          .block = {.head0 = u32(h0),
                                                    .query0 = u32(b.first),
                                                    .queries = u32(b.rows),
                                                    .cols = u32(b.keys),
                                                    .rows = u32(n * b.rows)}});
                                    }));
      if (half) detail::cast_dispatches(scores, probs, n * b.rows * b.keys, ds);
      append_head_gemm(engine, n, b.rows, p.dv, b.keys, false, false, 1.0f, 0.0f, pr, head_rows(v, h0, p.sk, p.dv, 0),
                       head_rows(out, h0, p.sq, p.dv, b.first), ds);
    }
  }
  return ds;
}

// The backward through the shared GEMMs, a chunk of batch-heads and one
// query block at a time (the block's scores and their gradients, [chunk,
// rows, keys] each, in two buffers that every block reuses):
// S = sign(scale) q k^T and dP = dO v^T, then flash_backward_scores.comp
// turns them into P and dS = scale * P (dP - delta) in place, then
// dv += P^T dO, dq = dS k, dk += dS^T q. The last block sees the most keys,
// so it goes first and initialises dk and dv (zeros past its keys); the
// earlier ones add to their key prefixes. With 16-bit tensors the scores,
// P, dS and the dk, dv sums are f32 (O and dO widened for the scores pass);
// P and dS are rounded to the tensors' dtype for the gradient GEMMs (as
// torch's math path rounds them), and dk, dv once at the end.
std::vector<ComputeDispatch> lower_gemm_backward(const Engine& engine, const FlashProblem& p, const std::vector<QueryBlock>& blocks,
                                                 const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& out,
                                                 const Matrix& stats, const Matrix& grad, const Matrix& grad_lse, const Matrix& dq,
                                                 const Matrix& dk, const Matrix& dv) {
  const std::int64_t per = gemm_chunk_heads(engine, blocks, p.bh);
  const bool half = q.dtype() != DType::F32;
  const Matrix scores = detail::allocate(engine, Shape{per, block_scores(blocks)});
  const Matrix grads = detail::allocate(engine, Shape{per, block_scores(blocks)});
  const Matrix probs = half ? detail::allocate(engine, scores.shape(), q.dtype()) : scores;
  const Matrix grads_low = half ? detail::allocate(engine, grads.shape(), q.dtype()) : grads;
  const Matrix out_f32 = half ? detail::allocate(engine, out.shape()) : out;
  const Matrix grad_f32 = half ? detail::allocate(engine, grad.shape()) : grad;
  const Matrix dk_sum = half ? detail::allocate(engine, dk.shape()) : dk;
  const Matrix dv_sum = half ? detail::allocate(engine, dv.shape()) : dv;
  std::vector<ComputeDispatch> ds;
  if (half) {
    detail::cast_dispatches(out, out_f32, out.numel(), ds);
    detail::cast_dispatches(grad, grad_f32, grad.numel(), ds);
  }
  for (std::int64_t h0 = 0; h0 < p.bh; h0 += per) {
    const std::int64_t n = std::min(per, p.bh - h0);
    const auto k_rows = head_rows(k, h0, p.sk, p.dh, 0), v_rows = head_rows(v, h0, p.sk, p.dv, 0);
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      const bool last = b == blocks.rbegin();
      // The last block stops at its last row's diagonal (upper-left with Sq < Sk hides the rest), so
      // the backward computes what it computes for k and v cut to the keys the queries see.
      const std::int64_t keys = last ? visible_keys(p, b->first, b->rows) : b->keys;
      const detail::GemmOperand s{&scores, 0, b->rows * keys}, g{&grads, 0, b->rows * keys};
      const detail::GemmOperand pr{&probs, 0, b->rows * keys}, gl{&grads_low, 0, b->rows * keys};
      const auto q_rows = head_rows(q, h0, p.sq, p.dh, b->first), grad_rows = head_rows(grad, h0, p.sq, p.dv, b->first);
      const float accumulate = last ? 0.0f : 1.0f;
      if (last && keys < p.sk) {  // keys no query sees: zero gradients (products of depth 0)
        append_head_gemm(engine, n, p.sk - keys, p.dh, 0, false, false, 1.0f, 0.0f, s, s, head_rows(dk_sum, h0, p.sk, p.dh, keys), ds);
        append_head_gemm(engine, n, p.sk - keys, p.dv, 0, false, false, 1.0f, 0.0f, s, s, head_rows(dv_sum, h0, p.sk, p.dv, keys), ds);
      }
      append_head_gemm(engine, n, b->rows, keys, p.dh, false, true, p.scale >= 0.0f ? 1.0f : -1.0f, 0.0f, q_rows, k_rows, s, ds);
      append_head_gemm(engine, n, b->rows, keys, p.dv, false, true, 1.0f, 0.0f, grad_rows, v_rows, g, ds);
      // One row chunk: the scores fit the storage-buffer range.
      append(ds, detail::lower_rows(engine, kSdpa, n * b->rows, keys, detail::RowLanes::EightColumns,
                                    [&](ComputeDispatch& d, const detail::RowChunk&) {
                                      d.kernel = kernels::ml_attention_flash_backward_scores;
                                      d.specialization.push_back(p.mask_layout.present ? 1u : 0u);
                                      d.bindings = {BufferBinding::read_write(scores.storage()),
                                                    BufferBinding::read_write(grads.storage()),
                                                    BufferBinding::read(out_f32.storage()),
                                                    BufferBinding::read(grad_f32.storage()),
                                                    BufferBinding::read(stats.storage()),
                                                    mask_binding(p, q),
                                                    BufferBinding::read((grad_lse.defined() ? grad_lse : stats).storage())};
                                      d.push.set(push::ml_attention_flash_backward_scores{
                                          .problem = problem_push(p),
                                          .block = {.head0 = u32(h0),
                                                    .query0 = u32(b->first),
                                                    .queries = u32(b->rows),
                                                    .cols = u32(keys),
                                                    .rows = u32(n * b->rows)},
                                          .has_lse_grad = grad_lse.defined() ? 1u : 0u});
                                    }));
      if (half) {
        detail::cast_dispatches(scores, probs, n * b->rows * keys, ds);
        detail::cast_dispatches(grads, grads_low, n * b->rows * keys, ds);
      }
      append_head_gemm(engine, n, keys, p.dv, b->rows, true, false, 1.0f, accumulate, pr, grad_rows,
                       head_rows(dv_sum, h0, p.sk, p.dv, 0), ds);
      append_head_gemm(engine, n, b->rows, p.dh, keys, false, false, 1.0f, 0.0f, gl, k_rows,
                       head_rows(dq, h0, p.sq, p.dh, b->first), ds);
      append_head_gemm(engine, n, keys, p.dh, b->rows, true, false, 1.0f, accumulate, gl, q_rows,
                       head_rows(dk_sum, h0, p.sk, p.dh, 0), ds);
    }
  }
  if (half) {
    detail::cast_dispatches(dk_sum, dk, dk.numel(), ds);
    detail::cast_dispatches(dv_sum, dv, dv.numel(), ds);
  }
  return ds;
}

FlashProblem flash_problem(const AttentionGeometry& g, const Matrix& mask) {
  return {.bh = g.bh,
          .sq = g.sq,
          .sk = g.sk,
          .dh = g.dh,
          .dv = g.dv,
          .scale = g.scale,
          .causal = g.causal,
          .diag = g.diag,
          .mask_layout = g.mask,
          .mask = mask.defined() ? &mask : nullptr};
}

// A tile of the flash kernels that take their softmax's per-row values from
// VK_NV_cooperative_matrix2 (flash_coopmat2.glsl): br rows per workgroup of
// 2 * br invocations, bc rows of the other operand a step.
struct AttentionTile {
  std::string_view name;
  std::uint32_t br, bc;
};
// On workgroup-scope matrices (wgBRxBC).
constexpr AttentionTile kWorkgroupAttentionTiles[] = {
    {"wg64x16", 64, 16}, {"wg64x32", 64, 32}, {"wg64x64", 64, 64}, {"wg128x32", 128, 32}, {"wg128x64", 128, 64}};
// The forward on subgroup-scope matrices, br / 16 subgroups of 32 (sgBRxBC).
constexpr AttentionTile kSubgroupAttentionTiles[] = {{"sg64x32", 64, 32}, {"sg64x64", 64, 64}, {"sg128x32", 128, 32}, {"sg128x64", 128, 64}};

// The tile of `tiles` named `name`, if any.
const AttentionTile* tile_named(std::span<const AttentionTile> tiles, std::string_view name) {
  for (const AttentionTile& t : tiles)
    if (t.name == name) return &t;
  return nullptr;
}
const AttentionTile* workgroup_tile(std::string_view name) { return tile_named(kWorkgroupAttentionTiles, name); }

// Whether tile t serves problem p of q's dtype: f16, Dh = Dv a multiple of 16
// up to 128, and workgroup-scope matrices whose granularities divide both
// products of a step (br x bc x Dh and br x Dh x bc) on 2 * br invocations.
bool workgroup_tile_serves(const Engine& engine, const FlashProblem& p, const AttentionTile& t, const Matrix& q) {
  const DeviceInfo& d = engine.device();
  const auto dh = u32(p.dh);
  const std::uint32_t threads = 2 * t.br;
  return q.dtype() == DType::F16 && p.dh == p.dv && p.dh % 16 == 0 && p.dh <= 128 &&
         d.has_workgroup_cooperative_matrix(DType::F16, DType::F32, t.br, t.bc, dh, threads) &&
         d.has_workgroup_cooperative_matrix(DType::F16, DType::F32, t.br, dh, t.bc, threads) && threads <= d.max_workgroup_invocations &&
         threads <= d.max_workgroup_size[0];
}

decltype(ComputeDispatch::specialization) tile_specialization(const FlashProblem& p, const AttentionTile& t) {
  return {2 * t.br, u32(p.dh), t.br, t.bc, p.mask_layout.present ? 1u : 0u};
}

// The tile of the backward on workgroup-scope tensor-core matrices for p (its
// dq pass also reads O and dO as f16 accumulators, br x Dh):
// the one tuning point attention.coopmat_backward names, or where
// FlashLoweringGuard forces that backward the first that serves; null where
// none serves (or the guard asks for another lowering).
const AttentionTile* backward_tile(const Engine& engine, const FlashProblem& p, const Matrix& q) {
  const FlashLowering choice = FlashLoweringGuard::backward();
  if (choice != FlashLowering::Auto && choice != FlashLowering::Coopmat) return nullptr;
  const auto serves = [&](const AttentionTile& t) {
    return workgroup_tile_serves(engine, p, t, q) &&
           engine.device().has_workgroup_cooperative_matrix(DType::F16, DType::F16, t.br, u32(p.dh), t.bc, 2 * t.br);
  };
  const AttentionTile* tile = workgroup_tile(tuned(engine, "attention.coopmat_backward", p));
  if (tile && serves(*tile)) return tile;
  if (choice == FlashLowering::Coopmat)
    for (const AttentionTile& t : kWorkgroupAttentionTiles)
      if (serves(t)) return &t;
  return nullptr;
}

// The backward on workgroup-scope tensor-core matrices with a tile that
// serves p (flash_backward_dq_coopmat2.comp, then
// flash_backward_dkv_coopmat2.comp), into f32 dq, dk, dv and delta.
std::vector<ComputeDispatch> workgroup_coopmat_backward(const FlashProblem& p, const AttentionTile& tile, const Matrix& q,
                                                        const Matrix& k, const Matrix& v, const Matrix& out, const Matrix& stats,
                                                        const Matrix& grad, const Matrix& grad_lse, const Matrix& dq, const Matrix& dk,
                                                        const Matrix& dv, const Matrix& delta) {
  ComputeDispatch dq_pass;
  dq_pass.kernel = kernels::ml_attention_flash_backward_dq_coopmat2;
  dq_pass.specialization = tile_specialization(p, tile);
  dq_pass.bindings = {BufferBinding::read(q.storage()),   BufferBinding::read(k.storage()),    BufferBinding::read(v.storage()),
                      mask_binding(p, q),                 BufferBinding::read(out.storage()),  BufferBinding::read(grad.storage()),
                      BufferBinding::read(stats.storage()), BufferBinding::write(dq.storage()), BufferBinding::write(delta.storage()),
                      BufferBinding::read((grad_lse.defined() ? grad_lse : stats).storage())};
  dq_pass.push.set(push::ml_attention_flash_backward_dq{.problem = problem_push(p), .has_lse_grad = grad_lse.defined() ? 1u : 0u});
  dq_pass.groups = {detail::groups_for(p.sq, tile.br), static_cast<std::uint64_t>(p.bh), 1};
  ComputeDispatch kv_pass;
  kv_pass.kernel = kernels::ml_attention_flash_backward_dkv_coopmat2;
  kv_pass.specialization = tile_specialization(p, tile);
  kv_pass.bindings = {BufferBinding::read(q.storage()),     BufferBinding::read(k.storage()),    BufferBinding::read(v.storage()),
                      mask_binding(p, q),                   BufferBinding::read(grad.storage()), BufferBinding::read(stats.storage()),
                      BufferBinding::read(delta.storage()), BufferBinding::write(dk.storage()),  BufferBinding::write(dv.storage())};
  kv_pass.push.set(push::ml_attention_flash_backward_dkv{.problem = problem_push(p), .query_split = u32(p.sq), .part_k = 0, .part_v = 0});
  kv_pass.groups = {detail::groups_for(p.sk, tile.br), static_cast<std::uint64_t>(p.bh), 1};
  std::vector<ComputeDispatch> ds;
  ds.push_back(std::move(dq_pass));
  ds.push_back(std::move(kv_pass));
  return ds;
}

// The flash gradients of one problem (delta a temporary), appended to `dispatches`:
// the tensor-core passes where backward_tile gives a tile, else the GEMMs
// where use_gemm_backward says so, else the fused passes. The gradients have
// q's dtype (grad has it too). The fused and tensor-core passes write f32,
// rounded once into 16-bit gradients.
AttentionGradients flash_gradients(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k, const Matrix& v,
                                   const Matrix& out, const Matrix& stats, const Matrix& grad, const Matrix& grad_lse,
                                   std::vector<ComputeDispatch>& dispatches) {
  const DType dtype = q.dtype();
  AttentionGradients g{detail::allocate(engine, q.shape(), dtype), detail::allocate(engine, k.shape(), dtype),
                       detail::allocate(engine, v.shape(), dtype)};
  const AttentionTile* tile = backward_tile(engine, p, q);
  if (const std::vector<QueryBlock> blocks = query_blocks(p); !tile && use_gemm_backward(engine, p, blocks)) {
    append(dispatches, lower_gemm_backward(engine, p, blocks, q, k, v, out, stats, grad, grad_lse, g.q, g.k, g.v));
    return g;
  }
  Matrix delta = detail::allocate(engine, Shape{p.bh * p.sq});
  if (dtype == DType::F32) {
    append(dispatches, lower_flash_backward(engine, p, q, k, v, out, stats, grad, grad_lse, g.q, g.k, g.v, delta));
    return g;
  }
  const AttentionGradients wide{detail::allocate(engine, q.shape()), detail::allocate(engine, k.shape()), detail::allocate(engine, v.shape())};
  if (tile)
    append(dispatches, workgroup_coopmat_backward(p, *tile, q, k, v, out, stats, grad, grad_lse, wide.q, wide.k, wide.v, delta));
  else
    append(dispatches, lower_flash_backward(engine, p, q, k, v, out, stats, grad, grad_lse, wide.q, wide.k, wide.v, delta));
  detail::cast_dispatches(wide.q, g.q, q.numel(), dispatches);
  detail::cast_dispatches(wide.k, g.k, k.numel(), dispatches);
  detail::cast_dispatches(wide.v, g.v, v.numel(), dispatches);
  return g;
}

// The tensor-core forwards for 16-bit q, k, v with Dh = Dv a multiple of 16
// up to 128 and more than kDecodeRows query rows (fewer decode better with
// their keys split), the variants of tuning point attention.coopmat_tile:
// - flash_forward_coopmat.glsl on devices with 16 x 16 x 16 subgroup-scope
//   cooperative matrices of the dtype with f32 accumulators and subgroups of
//   32 or 64: 16 * rf query rows per subgroup, four subgroups, keys in
//   shared tiles of block_n;
// - flash_forward_coopmat2.comp (f16) on devices with workgroup-scope
//   matrices (VK_NV_cooperative_matrix2) whose granularities divide the
//   tile: br query rows per workgroup of 2 * br invocations, keys bc at a
//   time;
// - flash_forward_coopmat_subgroup.comp (f16, the softmax in registers) on
//   devices with 16 x 16 x 16 subgroup-scope f16 matrices with f32
//   accumulators, subgroups of 32 and VK_NV_cooperative_matrix2 (its
//   reductions, conversions, per-element operations and tensor addressing):
//   br query rows per workgroup, 16 per subgroup, keys bc at a time.
// Where the device lacks what a tile needs, the first 16xN / 32xN tile that fits runs.
// Empty where neither serves the problem.
struct CoopAttentionTile {
  std::string_view name;
  std::uint32_t rf, block_n;
};
constexpr CoopAttentionTile kCoopAttentionTiles[] = {{"16x32", 1, 32}, {"32x32", 2, 32}, {"16x64", 1, 64}};
constexpr std::uint32_t kCoopAttentionWarps = 4;
constexpr std::uint64_t kReduceSharedBytes = 2048;  // common/reduce.glsl's two 256-word arrays

// The shared memory of flash_forward_coopmat.glsl: the k and v tiles, each
// subgroup's f32 score scratch and 16-bit probabilities, the row scales.
std::uint64_t coop_attention_shared_bytes(const CoopAttentionTile& t, std::uint64_t d) {
  const std::uint64_t rows = kCoopAttentionWarps * 16 * t.rf;
  return 2 * t.block_n * (d + 8) * 2 + rows * (t.block_n + 4) * 4 + rows * (t.block_n + 8) * 2 + rows * 4 + kReduceSharedBytes;
}

// flash_forward_coopmat2.comp with tile t, where the device and dtype allow it.
// Its row sums are P x ones: the device needs the br x bc x bc product too.
std::optional<ComputeDispatch> workgroup_coopmat_forward(const Engine& engine, const FlashProblem& p, const AttentionTile& t,
                                                         const Matrix& q) {
  if (!workgroup_tile_serves(engine, p, t, q) ||
      !engine.device().has_workgroup_cooperative_matrix(DType::F16, DType::F32, t.br, t.bc, t.bc, 2 * t.br))
    return std::nullopt;
  ComputeDispatch c;
  c.kernel = kernels::ml_attention_flash_forward_coopmat2;
  c.specialization = tile_specialization(p, t);
  c.groups = {detail::groups_for(p.sq, t.br), static_cast<std::uint64_t>(p.bh), 1};
  return c;
}

// flash_forward_coopmat_subgroup.comp with tile t, where the device and
// dtype allow it (coopmat_forward checked the head dims). Its shared memory
// holds one k and one v tile (flash_kv_tiles.glsl).
std::optional<ComputeDispatch> subgroup_coopmat_forward(const Engine& engine, const FlashProblem& p, const AttentionTile& t,
                                                        const Matrix& q) {
  const DeviceInfo& d = engine.device();
  const std::uint32_t threads = 2 * t.br;
  const std::uint64_t shared_bytes = 2 * std::uint64_t{t.bc} * (u32(p.dh) + 8) * 2;
  if (q.dtype() != DType::F16 || d.subgroup_size != 32 || d.workgroup_cooperative_matrix.empty() ||
      !d.has_cooperative_matrix({DType::F16, DType::F16, DType::F32, DType::F32, 16, 16, 16}) || threads > d.max_workgroup_invocations ||
      threads > d.max_workgroup_size[0] || shared_bytes > d.max_shared_memory_bytes)
    return std::nullopt;
  ComputeDispatch c;
  c.kernel = kernels::ml_attention_flash_forward_coopmat_subgroup;
  c.specialization = tile_specialization(p, t);
  c.groups = {detail::groups_for(p.sq, t.br), static_cast<std::uint64_t>(p.bh), 1};
  return c;
}

std::optional<std::vector<ComputeDispatch>> coopmat_forward(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k,
                                                            const Matrix& v, const Matrix& out, const Matrix& lse, const Matrix& stats) {
  const DeviceInfo& d = engine.device();
  const DType dt = q.dtype();
  if ((dt != DType::F16 && dt != DType::BF16) || p.dh != p.dv || p.dh % 16 != 0 || p.dh > 128 || p.sq <= kDecodeRows) return std::nullopt;
  const std::string_view variant = tuned(engine, "attention.coopmat_tile", p);
  std::optional<ComputeDispatch> c;
  if (const AttentionTile* t = workgroup_tile(variant)) c = workgroup_coopmat_forward(engine, p, *t, q);
  if (const AttentionTile* t = tile_named(kSubgroupAttentionTiles, variant)) c = subgroup_coopmat_forward(engine, p, *t, q);
  if (!c) {
    const std::uint32_t threads = kCoopAttentionWarps * d.subgroup_size;
    if ((d.subgroup_size != 32 && d.subgroup_size != 64) || !d.has_cooperative_matrix({dt, dt, DType::F32, DType::F32, 16, 16, 16}) ||
        threads > d.max_workgroup_invocations || threads > d.max_workgroup_size[0])
      return std::nullopt;
    // The tile asked for, else the first that fits.
    const CoopAttentionTile* tile = nullptr;
    for (const CoopAttentionTile& t : kCoopAttentionTiles)
      if (coop_attention_shared_bytes(t, p.dh) <= d.max_shared_memory_bytes && (t.name == variant || !tile)) tile = &t;
    if (!tile) return std::nullopt;
    c.emplace();
    c->kernel = dt == DType::F16 ? kernels::ml_attention_flash_forward_coopmat : kernels::ml_attention_flash_forward_coopmat_bf16;
    c->specialization = {threads, u32(p.dh), tile->block_n, p.mask_layout.present ? 1u : 0u, detail::dtype_code(dt), d.subgroup_size,
                         tile->rf};
    c->groups = {detail::groups_for(p.sq, kCoopAttentionWarps * 16 * tile->rf), static_cast<std::uint64_t>(p.bh), 1};
  }
  c->bindings = {BufferBinding::read(q.storage()), BufferBinding::read(k.storage()),  BufferBinding::read(v.storage()),
                 mask_binding(p, q),               BufferBinding::write(out.storage()), BufferBinding::write(lse.storage()),
                 BufferBinding::write(stats.storage())};
  c->push.set(push::ml_attention_flash_forward{.problem = problem_push(p), .key_split = u32(p.sk), .part_rows = 0});
  std::vector<ComputeDispatch> ds;
  ds.push_back(std::move(*c));
  return ds;
}

// The fused forward (lower_flash_forward) into `out` of q's dtype: the
// kernels write f32, rounded once into a 16-bit out.
std::vector<ComputeDispatch> fused_forward(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k, const Matrix& v,
                                           const Matrix& out, const Matrix& lse, const Matrix& stats) {
  if (out.dtype() == DType::F32) return lower_flash_forward(engine, p, q, k, v, out, lse, stats);
  const Matrix wide = detail::allocate(engine, out.shape());
  std::vector<ComputeDispatch> ds = lower_flash_forward(engine, p, q, k, v, wide, lse, stats);
  detail::cast_dispatches(wide, out, out.numel(), ds);
  return ds;
}

// The flash forward of p into out, lse and stats: the tensor-core kernel where
// FlashLoweringGuard or tuning point attention.coopmat_forward asks for it and
// it serves the problem, else the GEMMs where use_gemm_forward says so, else
// the fused kernels.
std::vector<ComputeDispatch> forward_dispatches(const Engine& engine, const FlashProblem& p, const Matrix& q, const Matrix& k,
                                                const Matrix& v, const Matrix& out, const Matrix& lse, const Matrix& stats) {
  const FlashLowering choice = FlashLoweringGuard::forward();
  if (choice == FlashLowering::Coopmat || (choice == FlashLowering::Auto && tuned(engine, "attention.coopmat_forward", p) == "on"))
    if (std::optional<std::vector<ComputeDispatch>> ds = coopmat_forward(engine, p, q, k, v, out, lse, stats)) return std::move(*ds);
  if (const std::vector<QueryBlock> blocks = query_blocks(p); use_gemm_forward(engine, p, blocks))
    return lower_gemm_forward(engine, p, blocks, q, k, v, out, lse, stats);
  return fused_forward(engine, p, q, k, v, out, lse, stats);
}

// ── scaled_dot_product_attention_causal ──────────────────────────────────────

struct PackedAttributes {
  std::int64_t sequence_length = 0, num_heads = 0;
  static constexpr auto fields = std::tuple{field("sequence_length", &PackedAttributes::sequence_length),
                                            field("num_heads", &PackedAttributes::num_heads)};
};

// The flash problem of packed q, k, v [B*S, D] (heads read in place).
// Throws InvalidArgument (Unsupported past the flash dims) naming the op.
FlashProblem packed_problem(const Matrix& q, const Matrix& k, const Matrix& v, const PackedAttributes& a) {
  const char* op = kPackedCausal;
  const std::int64_t seq_len = a.sequence_length, num_heads = a.num_heads;
  require_attention_dtypes(op, q, k, v);
  detail::require_same_engine(q, "q", k, "k", op);
  detail::require_same_engine(q, "q", v, "v", op);
  if (seq_len < 1 || num_heads < 1)
    fail(ErrorKind::InvalidArgument, "{}: seq_len {} and num_heads {} must be >= 1 (q {})", op, seq_len, num_heads, q.shape());
  if (q.rank() != 2 || q.numel() < 1 || q.dim(0) % seq_len != 0 || q.dim(1) % num_heads != 0)
    fail(ErrorKind::InvalidArgument, "{}: q must be [B*S, D] with rows divisible by seq_len {} and D by num_heads {}; found {}", op,
         seq_len, num_heads, q.shape());
  if (!(k.shape() == q.shape()) || !(v.shape() == q.shape()))
    fail(ErrorKind::InvalidArgument, "{}: q {}, k {} and v {} must have the same shape [B*S, D]", op, q.shape(), k.shape(),
         v.shape());
  detail::shader_u32(q.numel(), "element count", op);
  FlashProblem p;
  p.heads = num_heads;
  p.bh = q.dim(0) / seq_len * num_heads;
  p.sq = p.sk = seq_len;
  p.dh = p.dv = q.dim(1) / num_heads;
  p.scale = 1.0f / std::sqrt(static_cast<float>(p.dh));
  p.causal = true;
  if (p.dh > kMaxFlashDim)
    fail(ErrorKind::Unsupported, "{}: head dim D/H = {} exceeds the flash path's {} (q {})", op, p.dh, kMaxFlashDim, q.shape());
  detail::shader_u32(p.bh * p.sq, "query row count", op);
  return p;
}

// Results: the output [B*S, D] (q's dtype) and the log-sum-exp [B*H, S] (f32,
// no gradient); the softmax stats [B*H, S, 2] (f32) are auxiliary. The
// backward reads q, k, v, the output and the stats.
const detail::Lowering<PackedAttributes> kPackedLowering = [](const OpCall<PackedAttributes>& c, const std::vector<Matrix>& out,
                                                              std::vector<ComputeDispatch>& ds) {
  const Matrix &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2];
  append(ds, forward_dispatches(c.engine, packed_problem(q, k, v, c.attributes), q, k, v, out[0], out[1], out[2]));
};
const Op<PackedAttributes> kPackedOp{
    {.name = kPackedCausal,
     .inputs = {"q", "k", "v"},
     .outputs = 2,
     .infer = [](const OpCall<PackedAttributes>& c) {
       const FlashProblem p = packed_problem(c.inputs[0], c.inputs[1], c.inputs[2], c.attributes);
       return std::vector<OutputSpec>{
           {c.inputs[0].shape(), c.inputs[0].dtype()},
           {Shape{p.bh, p.sq}, DType::F32, false, -1, true},
           {Shape{p.bh, p.sq, 2}, DType::F32, true}};
     },
     .lower = {{DType::F32, kPackedLowering}, {DType::F16, kPackedLowering}, {DType::BF16, kPackedLowering}},
     .saves = [](const OpCall<PackedAttributes>&, const std::vector<bool>&) {
       return Saves{{true, true, true}, {true, false, true}};
     },
     .backward = [](const BackwardCall<PackedAttributes>& c) {
       const Matrix &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &out = c.outputs[0], &stats = c.outputs[2];
       const Matrix grad = matrix::cast(c.grad_outputs[0], q.dtype());
       std::vector<ComputeDispatch> ds;
       AttentionGradients g =
           flash_gradients(grad.engine(), packed_problem(q, k, v, c.attributes), q, k, v, out, stats, grad, Matrix(), ds);
       c.record(ds, {&q, &k, &v, &out, &stats, &grad}, {&g.q, &g.k, &g.v}, detail::attribute_values(c.attributes));
       return std::vector<Matrix>{c.needs[0] ? g.q : Matrix(), c.needs[1] ? g.k : Matrix(), c.needs[2] ? g.v : Matrix()};
     }}};

}  // namespace

namespace attention_detail {

void require_flash_dims(const char* op, const AttentionGeometry& g) {
  if (g.dh > kMaxFlashDim || g.dv > kMaxFlashDim)
    fail(ErrorKind::Unsupported, "{}: the flash path supports head dims up to {}; found Dh {} and Dv {}", op, kMaxFlashDim, g.dh,
         g.dv);
}

void lower_flash_attention(const Engine& engine, const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                           const Matrix& mask, const Matrix& out, const Matrix& lse, const Matrix& stats,
                           std::vector<ComputeDispatch>& dispatches) {
  append(dispatches, forward_dispatches(engine, flash_problem(g, mask), q, k, v, out, lse, stats));
}

AttentionGradients lower_flash_attention_backward(const Engine& engine, const AttentionGeometry& g, const Matrix& q, const Matrix& k,
                                                  const Matrix& v, const Matrix& mask, const Matrix& out, const Matrix& stats,
                                                  const Matrix& grad, const Matrix& grad_lse,
                                                  std::vector<ComputeDispatch>& dispatches) {
  return flash_gradients(engine, flash_problem(g, mask), q, k, v, out, stats, grad, grad_lse, dispatches);
}

}  // namespace attention_detail

Matrix scaled_dot_product_attention_causal(const Matrix& q, const Matrix& k, const Matrix& v, std::int64_t seq_len,
                                           std::int64_t num_heads) {
  return detail::apply(kPackedOp, {q, k, v}, {seq_len, num_heads})[0];
}

}  // namespace oa::ml
