// The tensor-core GEMM lowering: matrix/gemm_coopmat (GL_KHR_cooperative_matrix)
// for f16 A and B, matrix/gemm_coopmat_bf16 for bf16, with f32 accumulation
// and an f32 or 16-bit C, chosen by the device's cooperative-matrix configurations.
#include <algorithm>
#include <stdexcept>

#include "matrix/gemm_coopmat.hpp"

#include "matrix/cast_lowering.hpp"

namespace oa::detail {

namespace {

// The variants of the tuning point gemm.coopmat_tile. 128x128w4 is the
// 128x128 tile on 4 subgroups (64 x 64 each): two such workgroups fit an SM.
constexpr CoopTile kCoopTiles[] = {
    {"128x256", 128, 256, 32, 2, 4, 1},    {"256x128", 256, 128, 32, 4, 2, 1},       {"128x256k48", 128, 256, 48, 2, 4, 1},
    {"128x128", 128, 128, 32, 2, 4, 2},    {"128x128w4k64", 128, 128, 64, 2, 2, 1}, {"64x64", 64, 64, 32, 2, 2, 2},
};
constexpr const CoopTile& coop_tile(std::string_view name) {
  for (const CoopTile& t : kCoopTiles)
    if (t.name == name) return t;
  throw std::logic_error("gemm_coopmat: no such tile");  // a compile-time error in the constants below
}
// The wide tile's longer K step (48) takes 40 KiB of shared memory; the
// 32-step one (27 KiB) serves devices with less.
constexpr const CoopTile& kCoopWide = coop_tile("128x256k48");
constexpr const CoopTile& kCoopWideShort = coop_tile("128x256");
constexpr const CoopTile& kCoopLarge = coop_tile("128x128");
constexpr const CoopTile& kCoopSmall = coop_tile("64x64");

// The wide tiles' invocations each hold 128 accumulator registers, so about
// one workgroup runs per SM: kCoopWideBusy of them keep an H200 busy.
constexpr std::int64_t kCoopWideBusy = 128;
// Below kGemmBusyGroups tiles, a long K splits (partial products summed by
// matrix/gemm_epilogue); a short one takes the small tile.
constexpr std::int64_t kCoopSplitMinK = 256;
constexpr std::int64_t kCoopLongK = 2048;
constexpr std::int64_t kCoopMaxSplits = 8;

std::uint32_t threads(const DeviceInfo& d, const CoopTile& t) { return t.wm * t.wn * d.subgroup_size; }

// The shared stages of both operand tiles as stored (rows padded by 8 halves),
// as shaders/matrix/gemm_coopmat.glsl declares them.
std::uint64_t shared_bytes(const CoopTile& t, bool trans_a, bool trans_b) {
  const std::uint64_t a = trans_a ? t.bk * (t.bm + 8) : t.bm * (t.bk + 8);
  const std::uint64_t b = trans_b ? t.bn * (t.bk + 8) : t.bk * (t.bn + 8);
  return 2 * t.stages * (a + b);
}

bool fits(const DeviceInfo& d, const CoopTile& t, const GemmProblem& p) {
  const std::uint32_t n = threads(d, t);
  // Every invocation copies whole uvec4s (8 halves) of each tile; the
  // epilogue's 16 x 16 f32 scratch per subgroup lies over the tiles.
  const bool even_copies = (t.bm * t.bk / 8) % n == 0 && (t.bn * t.bk / 8) % n == 0 && t.bm * t.bk / 8 >= n;
  const std::uint64_t bytes = shared_bytes(t, p.trans_a, p.trans_b);
  return d.subgroup_size > 0 && even_copies && n <= d.max_workgroup_invocations && n <= d.max_workgroup_size[0] &&
         bytes <= d.max_shared_memory_bytes && bytes >= std::uint64_t{t.wm} * t.wn * 1024;
}

}  // namespace

bool has_coop_gemm(const DeviceInfo& d, DType in) { return d.has_cooperative_matrix({in, in, DType::F32, DType::F32, 16, 16, 16}); }

// The tile of gemm.coopmat_tile: a fixed one where the device can run it,
// else (busy) a wide tile, then the large one, where enough of them keep the
// device busy or K is long (and split_k: it splits), then the small one.
const CoopTile* choose_coop_tile(const Tuning& tuning, const DeviceInfo& d, const GemmProblem& p, bool split_k) {
  const std::string_view variant = tuning.choose("gemm.coopmat_tile", {p.batch, p.m, p.n, p.k});
  for (const CoopTile& t : kCoopTiles)
    if (variant == t.name && fits(d, t, p)) return &t;
  for (const auto& [t, busy] : {std::pair{&kCoopWide, kCoopWideBusy}, {&kCoopWideShort, kCoopWideBusy}, {&kCoopLarge, kGemmBusyGroups}})
    if (p.m > t->bm / 2 && p.n > t->bn / 2 && fits(d, *t, p) &&
        (gemm_tile_count(p, t->bm, t->bn) >= busy || (split_k && p.k >= kCoopLongK)))
      return t;
  const bool large = p.m > 64 && p.n > 64 && fits(d, kCoopLarge, p);
  if (fits(d, kCoopSmall, p)) return &kCoopSmall;
  return large ? &kCoopLarge : nullptr;
}

std::vector<std::uint32_t> coop_specialization(const DeviceInfo& d, const CoopTile& t, const CoopLayout& l) {
  return {threads(d, t), t.bm,      t.bn,       t.bk,  t.wm,          t.wn,     l.trans_a, l.trans_b,
          l.vec_a,       l.vec_b,   l.direct_c, d.subgroup_size, t.stages, l.c_dt,   l.bias_dt};
}

std::optional<std::vector<runtime::ComputeDispatch>> lower_gemm_coopmat(const Engine& engine, const GemmProblem& p) {
  const DeviceInfo& dev = engine.device();
  const DType in = p.a.matrix->dtype(), out_dtype = p.c.matrix->dtype();
  const DType bias_dtype = p.bias ? p.bias->dtype() : DType::F32;
  if ((in != DType::F16 && in != DType::BF16) || p.k == 0 || (out_dtype != DType::F32 && out_dtype != in) ||
      (bias_dtype != DType::F32 && bias_dtype != out_dtype) || !has_coop_gemm(dev, in))
    return std::nullopt;
  const std::shared_ptr<const Tuning> tuning = tuning_of(engine);
  const CoopTile* tile = choose_coop_tile(*tuning, dev, p);
  if (!tile) return std::nullopt;
  const CoopTile& t = *tile;
  const std::int64_t gx = ceil_div(p.n, t.bn), gy = ceil_div(p.m, t.bm);
  const GemmSplitK sk = gemm_split_k(p.k, gemm_tile_count(p, t.bm, t.bn), gemm_busy_groups(*tuning, p, kGemmBusyGroups),
                                      kCoopSplitMinK, kCoopMaxSplits, t.bk);
  const std::int64_t splits = sk.splits, a_ext = p.m * p.k, b_ext = p.k * p.n, c_ext = p.m * p.n;
  const bool vec_a = (p.trans_a ? p.m : p.k) % 8 == 0 && p.a.offset % 8 == 0 && p.a.batch_stride % 8 == 0;
  const bool vec_b = (p.trans_b ? p.k : p.n) % 8 == 0 && p.b.offset % 8 == 0 && p.b.batch_stride % 8 == 0;
  // Split-K partial products are f32 whatever C's dtype (append_gemm_tiles' epilogue rounds them into C).
  const bool c16 = out_dtype != DType::F32, c16_direct = c16 && splits == 1;
  // A direct store writes 16-byte rows: 4 f32 or 8 16-bit elements (split-K partials are f32 and aligned).
  const std::int64_t row_quad = c16_direct ? 8 : 4;
  const bool direct_c =
      p.n % row_quad == 0 && (splits > 1 || (p.c.offset % row_quad == 0 && p.c.batch_stride % row_quad == 0));
  const std::string_view kernel = in == DType::F16 ? kernels::matrix_gemm_coopmat : kernels::matrix_gemm_coopmat_bf16;
  const std::vector<std::uint32_t> spec =
      coop_specialization(dev, t,
                          {.trans_a = p.trans_a,
                           .trans_b = p.trans_b,
                           .vec_a = vec_a,
                           .vec_b = vec_b,
                           .direct_c = direct_c,
                           .c_dt = c16_direct ? dtype_code(out_dtype) : 0u,
                           .bias_dt = c16_direct ? dtype_code(bias_dtype) : 0u});

  // A 16-bit C element that shares its word with one outside the block is stored by read-modify-write atomics.
  const runtime::Access c_access = p.beta != 0.0f || c16 ? runtime::Access::ReadWrite : runtime::Access::Write;
  std::optional<ElementWindow> bias;
  if (p.bias) bias = gemm_window(*p.bias, 0, p.n, runtime::Access::Read);
  // window_batch counts 4-byte words: a 16-bit operand's item spans at most
  // (stride + 1) / 2 words apart and extent / 2 + 1 words.
  const auto words = [](bool half, std::int64_t stride, std::int64_t ext) {
    return half ? BatchSpan{(stride + 1) / 2, ext / 2 + 1} : BatchSpan{stride, ext};
  };
  const std::int64_t per = window_batch(engine, {words(true, p.a.batch_stride, a_ext),
                                                 words(true, p.b.batch_stride, b_ext),
                                                 words(c16, p.c.batch_stride, c_ext),
                                                 {splits > 1 ? splits * c_ext : 0, splits * c_ext}});
  std::vector<runtime::ComputeDispatch> out;
  for (std::int64_t b0 = 0; b0 < p.batch; b0 += per) {
    const std::int64_t q = std::min(per, p.batch - b0);
    auto halves = [&](const GemmOperand& o, std::int64_t ext) {
      return gemm_window(*o.matrix, o.offset + b0 * o.batch_stride, (q - 1) * o.batch_stride + ext, runtime::Access::Read);
    };
    const auto a = halves(p.a, a_ext), b = halves(p.b, b_ext);
    const auto c = gemm_window(*p.c.matrix, p.c.offset + b0 * p.c.batch_stride, (q - 1) * p.c.batch_stride + c_ext, c_access);
    append_gemm_tiles(engine, p, {kernel, spec, gx, gy, sk}, q, a, b, c, bias ? &*bias : nullptr, out);
  }
  return out;
}

}  // namespace oa::detail
