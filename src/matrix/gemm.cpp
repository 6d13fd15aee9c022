#include "matrix/gemm.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "matrix/cast_lowering.hpp"
#include "matrix/lowering.hpp"

namespace oa::detail {

namespace {

using runtime::Access;
using runtime::BufferBinding;
using runtime::ComputeDispatch;

// A workgroup's C tile (bm x bn), its K step, each invocation's register
// block (tm x tn) and the block of C that consecutive invocations cover
// (wm x wn, matrix/gemm.glsl; 0 x 0: the whole tile). The tiles of 4-row
// register blocks put each 32 consecutive invocations (one NVIDIA subgroup)
// on a 16-row block, whose shared-memory reads touch few distinct quads.
struct Tile {
  std::uint32_t bm, bn, bk, tm, tn, wm = 0, wn = 0;
};
constexpr Tile kLarge{128, 128, 16, 8, 8};
constexpr Tile kWide{64, 128, 16, 4, 8, 16, 64};
constexpr Tile kMedium{64, 64, 16, 4, 4, 16, 32};
constexpr Tile kSmall{32, 32, 16, 4, 4, 16, 32};
// The large tile with each 32 consecutive invocations (one NVIDIA subgroup)
// on a 32 x 64 block of C: gemm.tile "128x128w", which the Hopper table
// chooses for large GEMMs (M >= 2048, N >= 1024, K >= 1024).
constexpr Tile kLargeWarp{128, 128, 16, 8, 8, 32, 64};
// 64x128 on 128 invocations of 8x8, each subgroup on a 32 x 64 block.
constexpr Tile kWideWarp{64, 128, 16, 8, 8, 32, 64};
// 32 rows on 128 invocations of 4x8: for GEMMs of 17-32 rows (a batch of
// decoding tokens), whose 64-row tiles spend half their multiply-adds on rows
// past M.
constexpr Tile kNarrow{32, 128, 16, 4, 8, 16, 64};
// The fixed tiles by their gemm.tile variant names.
constexpr std::pair<std::string_view, const Tile*> kFixedTiles[] = {{"128x128", &kLarge},      {"64x128", &kWide},
                                                                    {"64x64", &kMedium},       {"32x32", &kSmall},
                                                                    {"128x128w", &kLargeWarp}, {"64x128w8", &kWideWarp},
                                                                    {"32x128", &kNarrow}};

// The tile of the tuning point gemm.tile (oa/runtime/tuning.hpp): a fixed
// tile where the device can run it, else the largest tile that keeps
// kGemmBusyGroups workgroups busy (busy-square: of the square tiles; the H200
// table leaves the 64x128 tile out above K = 1024), then 64x64 tiles, then
// 32x32. A K split (gemm.split_k "busy") then fills the device where even
// those are too few.
constexpr std::int64_t kSplitMinK = 128;  // K per split at least
constexpr std::int64_t kMaxSplits = 16;

// matrix/gemm_skinny, for M <= kSkinnyRows (where gemm.skinny says so): 256
// invocations per workgroup, a strip of kSkinnyStrip columns, K ranges that
// are multiples of kSkinnyStep. The op reads B once, so it splits K until
// about four workgroups per SM stream B.
constexpr std::int64_t kSkinnyRows = 16;
constexpr std::uint32_t kSkinnyThreads = 256;
constexpr std::int64_t kSkinnyStrip = 128, kSkinnyStep = 32;
constexpr std::int64_t kSkinnyBusyGroups = 512;
constexpr std::int64_t kSkinnySplitMinK = 256;
constexpr std::int64_t kSkinnyMaxSplits = 32;

std::uint32_t threads(const Tile& t) { return (t.bm / t.tm) * (t.bn / t.tn); }
std::uint64_t shared_bytes(const Tile& t) { return std::uint64_t{t.bk} * (t.bm + 4 + t.bn + 4) * 4; }
bool fits(const DeviceInfo& d, const Tile& t) {
  return shared_bytes(t) <= d.max_shared_memory_bytes && threads(t) <= d.max_workgroup_invocations && threads(t) <= d.max_workgroup_size[0];
}

const Tile& choose_tile(const Tuning& tuning, const DeviceInfo& d, const GemmProblem& p) {
  const std::string_view variant = tuning.choose("gemm.tile", {p.batch, p.m, p.n, p.k});
  for (const auto& [name, t] : kFixedTiles)
    if (variant == name && fits(d, *t)) return *t;
  for (const Tile* t : {&kLarge, &kWide})
    if (p.m > t->bm / 2 && p.n > t->bn / 2 && (t != &kWide || variant != "busy-square") && fits(d, *t) &&
        gemm_tile_count(p, t->bm, t->bn) >= kGemmBusyGroups)
      return *t;
  if (p.m > 32 && p.n > 32 && fits(d, kMedium)) return kMedium;
  return kSmall;
}

bool skinny(const Tuning& tuning, const DeviceInfo& d, const GemmProblem& p) {
  return p.m <= kSkinnyRows && kSkinnyThreads <= d.max_workgroup_invocations && kSkinnyThreads <= d.max_workgroup_size[0] &&
         tuning.choose("gemm.skinny", {p.batch, p.m, p.n, p.k}) == "skinny";
}

template <typename... Args>
[[noreturn]] void inconsistent(const GemmProblem& p, fmt::format_string<Args...> why, Args&&... args) {
  fail(ErrorKind::Internal, "oa::detail::lower_gemm: {} (batch {}, M {}, N {}, K {}, trans_a {}, trans_b {})",
       fmt::format(why, std::forward<Args>(args)...), p.batch, p.m, p.n, p.k, p.trans_a, p.trans_b);
}

// Checks that `m` is defined, on `engine` and f32 or (when `half` is not f32) of dtype `half`.
void check_matrix(const Engine& engine, const GemmProblem& p, const Matrix* m, const char* name, DType half) {
  if (!m || !m->defined()) inconsistent(p, "operand {} is missing", name);
  if (m->dtype() != DType::F32 && m->dtype() != half)
    inconsistent(p, "operand {} {} is {}, not f32{}{}", name, m->shape(), to_string(m->dtype()), half == DType::F32 ? "" : " or ",
                 half == DType::F32 ? "" : to_string(half));
  if (!(m->engine() == engine)) inconsistent(p, "operand {} {} lives on another engine", name, m->shape());
}

// Checks that every batch item of `o` (extent words each) lies inside its matrix.
void check_operand(const Engine& engine, const GemmProblem& p, const GemmOperand& o, const char* name, std::int64_t extent, DType half) {
  check_matrix(engine, p, o.matrix, name, half);
  std::int64_t last = 0;
  if (o.offset < 0 || o.batch_stride < 0 || __builtin_mul_overflow(p.batch - 1, o.batch_stride, &last) ||
      __builtin_add_overflow(last, o.offset, &last) || __builtin_add_overflow(last, extent, &last) || last > o.matrix->numel())
    inconsistent(p, "operand {} (offset {}, batch stride {}, {} elements per item) exceeds its {} elements {}", name, o.offset,
                 o.batch_stride, extent, o.matrix->numel(), o.matrix->shape());
}

}  // namespace

std::int64_t gemm_busy_groups(const Tuning& tuning, const GemmProblem& p, std::int64_t busy) {
  return tuning.choose("gemm.split_k", {p.batch, p.m, p.n, p.k}) == "busy" ? busy : 0;
}

GemmSplitK gemm_split_k(std::int64_t k, std::int64_t groups, std::int64_t busy, std::int64_t min_k, std::int64_t max_splits,
                        std::int64_t step) {
  if (groups >= busy || k < 2 * min_k) return {1, ceil_div(k, step) * step};
  const std::int64_t want = std::min({ceil_div(busy, groups), k / min_k, max_splits});
  const std::int64_t kchunk = ceil_div(ceil_div(k, want), step) * step;
  return {ceil_div(k, kchunk), kchunk};
}

ElementWindow gemm_window(const Matrix& m, std::int64_t first, std::int64_t count, Access access) {
  if (m.dtype() == DType::F32) return element_window(m.storage(), first, count, access);
  ElementWindow w = element_window(m.storage(), first / 2, (first + count + 1) / 2 - first / 2, access);
  w.offset = w.offset * 2 + u32(first % 2);
  return w;
}

push::matrix_gemm_update gemm_update(const GemmProblem& p, std::int64_t q, const ElementWindow& c, const ElementWindow* bias) {
  return {.c_off = c.offset,
          .c_stride = u32(q > 1 ? p.c.batch_stride : 0),
          .bias_off = bias ? bias->offset : 0,
          .alpha = p.alpha,
          .beta = p.beta,
          .has_bias = bias ? 1u : 0u};
}

ComputeDispatch gemm_epilogue(const GemmProblem& p, std::int64_t q, std::uint32_t splits, const ElementWindow& w, const ElementWindow& c,
                              const ElementWindow* bias) {
  const std::int64_t count = q * p.m * p.n;
  ComputeDispatch d;
  const DType c_dtype = p.c.matrix->dtype(), bias_dtype = p.bias ? p.bias->dtype() : DType::F32;
  if (c_dtype == DType::F32 && bias_dtype == DType::F32) {
    d.kernel = kernels::matrix_gemm_epilogue;
  } else {
    d.kernel = kernels::matrix_gemm_epilogue_half;
    d.specialization = {dtype_code(c_dtype), dtype_code(bias_dtype)};
  }
  d.bindings = {w.binding, c.binding, bias ? bias->binding : w.binding};
  d.push.set(push::matrix_gemm_epilogue{
      .count = u32(count), .MN = u32(p.m * p.n), .N = u32(p.n), .splits = splits, .w_off = w.offset, .update = gemm_update(p, q, c, bias)});
  d.groups = {groups_for(count, 1024), 1, 1};
  return d;
}

void append_gemm_tiles(const Engine& engine, const GemmProblem& p, const GemmTiles& t, std::int64_t q, const ElementWindow& a,
                       const ElementWindow& b, const ElementWindow& c, const ElementWindow* bias, std::vector<ComputeDispatch>& out) {
  const std::int64_t splits = t.split.splits, c_ext = p.m * p.n;
  std::optional<ElementWindow> work;
  if (splits > 1)
    work = element_window(engine.allocate(static_cast<std::uint64_t>(splits * q * c_ext) * 4), 0, splits * q * c_ext, Access::Write);
  const ElementWindow& dst = work ? *work : c;
  ComputeDispatch d;
  d.kernel = t.kernel;
  d.specialization = t.spec;
  d.bindings = {a.binding, b.binding, dst.binding, bias && !work ? bias->binding : a.binding};
  auto stride = [&](const GemmOperand& o) { return u32(q > 1 ? o.batch_stride : 0); };
  // Split-K partials go to `work` ([splits, q, m, n], plain products); the epilogue then applies alpha, beta and bias.
  const push::matrix_gemm_problem problem{.M = u32(p.m),
                                          .N = u32(p.n),
                                          .K = u32(p.k),
                                          .splits = u32(splits),
                                          .kchunk = u32(t.split.kchunk),
                                          .a_off = a.offset,
                                          .a_stride = stride(p.a),
                                          .b_off = b.offset,
                                          .b_stride = stride(p.b),
                                          .c_off = work ? 0u : c.offset,
                                          .c_stride = work ? u32(c_ext) : stride(p.c),
                                          .c_split_stride = work ? u32(q * c_ext) : 0u,
                                          .bias_off = work || !bias ? 0u : bias->offset,
                                          .alpha = work ? 1.0f : p.alpha,
                                          .beta = work ? 0.0f : p.beta,
                                          .has_bias = !work && bias ? 1u : 0u};
  if (t.push)
    t.push(d, problem);
  else
    d.push.set(push::matrix_gemm{.gemm = problem});
  d.groups = {static_cast<std::uint64_t>(t.gx), static_cast<std::uint64_t>(t.gy), static_cast<std::uint64_t>(q * splits)};
  out.push_back(std::move(d));
  if (work) {
    ElementWindow partials = *work;
    partials.binding.access = Access::Read;
    out.push_back(gemm_epilogue(p, q, u32(splits), partials, c, bias));
  }
}

std::vector<ComputeDispatch> lower_gemm(const Engine& engine, const GemmProblem& p) {
  if (p.batch < 0 || p.m < 0 || p.n < 0 || p.k < 0) inconsistent(p, "negative extent");
  if (p.batch == 0 || p.m == 0 || p.n == 0) return {};
  const std::int64_t a_ext = p.m * p.k, b_ext = p.k * p.n, c_ext = p.m * p.n;
  // The 16-bit dtype of A and B (f32 when they are f32), which C and the bias may also have.
  // With K = 0, A and B are not read: C's or the bias's 16-bit dtype stands in.
  DType half = DType::F32;
  auto half_of = [](const Matrix* m) {
    return m && m->defined() && (m->dtype() == DType::F16 || m->dtype() == DType::BF16) ? m->dtype() : DType::F32;
  };
  if (p.k > 0) {
    half = half_of(p.a.matrix);
    check_operand(engine, p, p.a, "A", a_ext, half);
    check_operand(engine, p, p.b, "B", b_ext, half);
    if (p.b.matrix->dtype() != p.a.matrix->dtype())
      inconsistent(p, "A {} is {} but B {} is {}", p.a.matrix->shape(), to_string(p.a.matrix->dtype()), p.b.matrix->shape(),
                   to_string(p.b.matrix->dtype()));
  } else {
    for (const Matrix* m : {p.c.matrix, p.bias})
      if (half_of(m) != DType::F32) half = half_of(m);
  }
  check_operand(engine, p, p.c, "C", c_ext, half);
  if (p.bias) {
    check_matrix(engine, p, p.bias, "bias", half);
    if (p.bias->numel() != p.n) inconsistent(p, "bias {} does not hold N = {} elements", p.bias->shape(), p.n);
  }
  const DeviceInfo& dev = engine.device();
  const std::int64_t range_words = static_cast<std::int64_t>(dev.max_storage_buffer_range / 4) - 64;
  const std::int64_t half_bytes = static_cast<std::int64_t>(size_of(half));
  const std::int64_t c_bytes = static_cast<std::int64_t>(size_of(p.c.matrix->dtype()));
  for (auto [name, ext, bytes] : {std::tuple{"A", a_ext, half_bytes}, std::tuple{"B", b_ext, half_bytes}, std::tuple{"C", c_ext, c_bytes}})
    if (ext * bytes > range_words * 4)
      fail(ErrorKind::ResourceExhausted,
           "GEMM (batch {}, M {}, N {}, K {}): one {} operand of {} bytes exceeds this device's maxStorageBufferRange ({} "
           "bytes)",
           p.batch, p.m, p.n, p.k, name, ext * bytes, dev.max_storage_buffer_range);

  // A 16-bit C element is stored into its word by read-modify-write atomics.
  const Access c_access = p.beta != 0.0f || c_bytes == 2 ? Access::ReadWrite : Access::Write;
  std::vector<ComputeDispatch> out;
  std::optional<ElementWindow> bias;
  if (p.bias) bias = gemm_window(*p.bias, 0, p.n, Access::Read);

  if (p.k == 0) {
    const std::int64_t per = window_batch(engine, {{p.c.batch_stride, c_ext}});
    for (std::int64_t b0 = 0; b0 < p.batch; b0 += per) {
      const std::int64_t q = std::min(per, p.batch - b0);
      const auto c = gemm_window(*p.c.matrix, p.c.offset + b0 * p.c.batch_stride, (q - 1) * p.c.batch_stride + c_ext, c_access);
      const auto none = element_window(p.c.matrix->storage(), 0, 0, Access::Read);
      out.push_back(gemm_epilogue(p, q, 0, none, c, bias ? &*bias : nullptr));
    }
    return out;
  }

  // 16-bit A and B run on the tensor cores where the device has cooperative
  // matrices for them: straight into C (f32 or A's dtype) with an f32 bias or
  // one of C's dtype, else (an f32 C with a 16-bit bias) into an f32 scratch
  // that the 16-bit epilogue scales, adds to and rounds into C. Elsewhere
  // they take the _half kernels: the same tiles and f32 arithmetic, widening
  // each element as it is loaded; their dtype codes follow the f32 kernel's
  // constants.
  const bool half_in = half != DType::F32;
  if (!half_in && engine.float32_matmul_precision() == MatmulPrecision::High)
    if (auto split = lower_gemm_split_f16(engine, p)) return std::move(*split);
  if (half_in)
    if (auto tensor_cores = lower_gemm_coopmat(engine, p)) return std::move(*tensor_cores);
  if (half_in && (p.c.matrix->dtype() != DType::F32 || (p.bias && p.bias->dtype() != DType::F32))) {
    const Matrix scratch = allocate(engine, Shape{p.batch * c_ext});
    GemmProblem products = p;
    products.alpha = 1.0f;
    products.beta = 0.0f;
    products.bias = nullptr;
    products.c = {&scratch, 0, c_ext};
    if (auto tensor_cores = lower_gemm_coopmat(engine, products)) {
      out = std::move(*tensor_cores);
      const std::int64_t per = window_batch(engine, {{p.c.batch_stride, c_ext}, {c_ext, c_ext}});
      for (std::int64_t b0 = 0; b0 < p.batch; b0 += per) {
        const std::int64_t q = std::min(per, p.batch - b0);
        const auto w = element_window(scratch.storage(), b0 * c_ext, q * c_ext, Access::Read);
        const auto c = gemm_window(*p.c.matrix, p.c.offset + b0 * p.c.batch_stride, (q - 1) * p.c.batch_stride + c_ext, c_access);
        out.push_back(gemm_epilogue(p, q, 1, w, c, bias ? &*bias : nullptr));
      }
      return out;
    }
  }
  const bool vec_a = (p.trans_a ? p.m : p.k) % 4 == 0 && p.a.offset % 4 == 0 && p.a.batch_stride % 4 == 0;
  const bool vec_b = (p.trans_b ? p.k : p.n) % 4 == 0 && p.b.offset % 4 == 0 && p.b.batch_stride % 4 == 0;
  // The kernel, its specialization, workgroups per item and split (x, y) and the K split.
  std::string_view kernel;
  std::vector<std::uint32_t> spec;
  std::int64_t gx = 0, gy = 1;
  GemmSplitK sk{};
  const std::shared_ptr<const Tuning> tuning = tuning_of(engine);
  if (skinny(*tuning, dev, p)) {
    gx = ceil_div(p.n, kSkinnyStrip);
    sk = gemm_split_k(p.k, p.batch * gx, gemm_busy_groups(*tuning, p, kSkinnyBusyGroups), kSkinnySplitMinK, kSkinnyMaxSplits, kSkinnyStep);
    kernel = half_in ? kernels::matrix_gemm_skinny_half : kernels::matrix_gemm_skinny;
    spec = {u32(p.m), p.trans_a, p.trans_b, !p.trans_a && vec_a, vec_b};
    if (half_in)
      spec.insert(spec.end(),
                  {dtype_code(half), sk.splits > 1 ? 0u : dtype_code(p.c.matrix->dtype()), p.bias ? dtype_code(p.bias->dtype()) : 0u});
  } else {
    const Tile& t = choose_tile(*tuning, dev, p);
    gx = ceil_div(p.n, t.bn);
    gy = ceil_div(p.m, t.bm);
    sk = gemm_split_k(p.k, gemm_tile_count(p, t.bm, t.bn), gemm_busy_groups(*tuning, p, kGemmBusyGroups), kSplitMinK, kMaxSplits, t.bk);
    const bool vec_c = p.n % 4 == 0 && (sk.splits > 1 || (p.c.offset % 4 == 0 && p.c.batch_stride % 4 == 0));
    kernel = half_in ? kernels::matrix_gemm_half : kernels::matrix_gemm;
    spec = {threads(t), t.bm, t.bn, t.bk, t.tm, t.tn, p.trans_a, p.trans_b, vec_a, vec_b, vec_c, t.wm, t.wn};
    if (half_in)
      spec.insert(spec.end(),
                  {dtype_code(half), sk.splits > 1 ? 0u : dtype_code(p.c.matrix->dtype()), p.bias ? dtype_code(p.bias->dtype()) : 0u});
  }
  const std::int64_t splits = sk.splits;

  const std::int64_t per = window_batch(
      engine,
      {{p.a.batch_stride, a_ext}, {p.b.batch_stride, b_ext}, {p.c.batch_stride, c_ext}, {splits > 1 ? splits * c_ext : 0, splits * c_ext}});
  for (std::int64_t b0 = 0; b0 < p.batch; b0 += per) {
    const std::int64_t q = std::min(per, p.batch - b0);
    auto window = [&](const GemmOperand& o, std::int64_t ext, Access access) {
      return gemm_window(*o.matrix, o.offset + b0 * o.batch_stride, (q - 1) * o.batch_stride + ext, access);
    };
    const auto a = window(p.a, a_ext, Access::Read), b = window(p.b, b_ext, Access::Read);
    const auto c = window(p.c, c_ext, c_access);
    append_gemm_tiles(engine, p, {kernel, spec, gx, gy, sk}, q, a, b, c, bias ? &*bias : nullptr, out);
  }
  return out;
}

void append_gemm(const Engine& engine, const GemmProblem& p, std::vector<ComputeDispatch>& ds) {
  std::vector<ComputeDispatch> more = lower_gemm(engine, p);
  ds.insert(ds.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

}  // namespace oa::detail
