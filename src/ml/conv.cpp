// The convolution family in one place: geometry and validation, forward
// lowering and backward lowering of conv_1d, conv_2d, conv_transpose_1d and
// conv_transpose_2d, each declared once (matrix/op_def.hpp).
//
// Every op is reduced to one 2-D "relation" (shaders/ml/conv/geometry.glsl): a
// narrow tensor [N, CN, HN, WN] and a wide tensor [N, CW, HW, WW] linked by a
// weight [CN, CW / groups, KH, KW], narrow position yn and tap kh meeting wide
// position yn * sh - ph + kh * dh. A convolution computes narrow (its output)
// from wide (its input); a transposed convolution computes wide (its output)
// from narrow (its input). So the convolution's input gradient is a transposed
// convolution, the transposed convolution's input gradient a convolution, and
// both weight gradients are one reduction over narrow positions. 1-D ops are
// the 2-D relation with height 1.
#include "oa/ml/conv.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "matrix/cast_lowering.hpp"
#include "matrix/gemm.hpp"
#include "matrix/gemm_coopmat.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/autocast.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/runtime/tuning.hpp"

namespace oa::ml {

namespace {

using namespace detail::op_def;

// The traced attributes: per spatial axis ({length}, or {height, width}).
struct ConvAttributes {
  std::vector<std::int64_t> stride, padding, dilation;
  std::int64_t groups = 1;
  static constexpr auto fields = std::tuple{detail::field("stride", &ConvAttributes::stride), detail::field("padding", &ConvAttributes::padding),
                                            detail::field("dilation", &ConvAttributes::dilation), detail::field("groups", &ConvAttributes::groups)};
};
struct ConvTransposeAttributes {
  std::vector<std::int64_t> stride, padding, output_padding, dilation;
  std::int64_t groups = 1;
  static constexpr auto fields = std::tuple{
      detail::field("stride", &ConvTransposeAttributes::stride), detail::field("padding", &ConvTransposeAttributes::padding),
      detail::field("output_padding", &ConvTransposeAttributes::output_padding),
      detail::field("dilation", &ConvTransposeAttributes::dilation), detail::field("groups", &ConvTransposeAttributes::groups)};
};

// One public call, normalised to two spatial axes {height, width}.
struct Spec {
  const char* name = nullptr;
  bool transposed = false;
  bool one_d = false;
  std::array<std::int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1}, output_padding{0, 0};
  std::int64_t groups = 1;
};

// The narrow/wide relation (see the top of this file); every extent validated.
struct Relation {
  std::int64_t n = 0, cn = 0, hn = 0, wn = 0, cw = 0, hw = 0, ww = 0, kh = 0, kw = 0;
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  std::int64_t weight_count() const { return cn * (cw / groups) * kh * kw; }
};

// Validation with errors that name the op and the argument shapes.
class Check {
 public:
  Check(const Spec& spec, const Matrix& input, const Matrix& weight, const Matrix& bias) : name_(spec.name) {
    shapes_ = fmt::format("input {}, weight {}", input.defined() ? input.shape().to_string() : "undefined",
                          weight.defined() ? weight.shape().to_string() : "undefined");
    if (bias.defined()) shapes_ += fmt::format(", bias {}", bias.shape());
  }
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    oa::fail(ErrorKind::InvalidArgument, "{}: {} ({})", name_, fmt::format(format, std::forward<Args>(args)...), shapes_);
  }
  std::int64_t mul(std::int64_t a, std::int64_t b, const char* what) const {
    std::int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) fail("{} overflows 64-bit arithmetic ({} * {})", what, a, b);
    return r;
  }
  std::int64_t add(std::int64_t a, std::int64_t b, const char* what) const {
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r)) fail("{} overflows 64-bit arithmetic ({} + {})", what, a, b);
    return r;
  }
  // Values the shaders hold as signed 32-bit coordinates.
  void coordinate(std::int64_t v, const char* what) const {
    if (v > std::numeric_limits<std::int32_t>::max())
      fail("{} = {} exceeds what the shaders can index (2^31 - 1)", what, v);
  }
  // Element counts the shaders index with 32-bit offsets.
  void elements(std::int64_t v, const char* what) const {
    if (v > std::numeric_limits<std::uint32_t>::max())
      fail("{} has {} elements, more than the shaders can index (2^32 - 1)", what, v);
  }

 private:
  const char* name_;
  std::string shapes_;
};

const char* axis_name(const Spec& s, int axis) { return s.one_d ? "length" : axis == 0 ? "height" : "width"; }

// Validates a forward call and returns its relation. Throws before anything is
// allocated or recorded.
Relation resolve(const Spec& s, const Matrix& input, const Matrix& weight, const Matrix& bias) {
  const Check check(s, input, weight, bias);
  // apply() checked that the operands are defined, on one engine, and input f32, f16 or bf16.
  detail::require_same_dtype(input, "input", weight, "weight", s.name);
  if (bias.defined()) detail::require_same_dtype(input, "input", bias, "bias", s.name);
  const std::size_t rank = s.one_d ? 3 : 4;
  const char* layout = s.one_d ? "NCL" : "NCHW";
  if (input.rank() != rank) check.fail("input must be {} (rank {}); found rank {}", layout, rank, input.rank());
  if (weight.rank() != rank)
    check.fail("weight must be {} (rank {}); found rank {}", s.transposed ? (s.one_d ? "IOK" : "IOHW") : (s.one_d ? "OIK" : "OIHW"),
               rank, weight.rank());
  for (std::size_t i = 0; i < rank; ++i) {
    if (i > 0 && input.shape()[i] == 0) check.fail("input extent {} is zero", i);  // a batch of 0 is an empty batch
    if (weight.shape()[i] == 0) check.fail("weight extent {} is zero", i);
  }
  const int axes = s.one_d ? 1 : 2;
  for (int a = 0; a < axes; ++a) {
    const int i = s.one_d ? 1 : a;
    if (s.stride[i] < 1) check.fail("stride ({}) must be at least 1; found {}", axis_name(s, a), s.stride[i]);
    if (s.dilation[i] < 1) check.fail("dilation ({}) must be at least 1; found {}", axis_name(s, a), s.dilation[i]);
    if (s.padding[i] < 0) check.fail("padding ({}) must not be negative; found {}", axis_name(s, a), s.padding[i]);
    if (s.output_padding[i] < 0 || (s.output_padding[i] > 0 && s.output_padding[i] >= std::max(s.stride[i], s.dilation[i])))
      check.fail("output_padding ({}) {} must be non-negative and smaller than stride {} or dilation {}", axis_name(s, a),
                 s.output_padding[i], s.stride[i], s.dilation[i]);
  }
  if (s.groups < 1) check.fail("groups must be at least 1; found {}", s.groups);

  const auto& in = input.shape();
  const auto& w = weight.shape();
  const std::int64_t n = in[0], c = in[1];
  const std::int64_t h = s.one_d ? 1 : in[2], wd = in[rank - 1];
  const std::int64_t kh = s.one_d ? 1 : w[2], kw = w[rank - 1];
  const std::int64_t g = s.groups;
  if (c % g != 0) check.fail("input channels {} are not divisible by groups {}", c, g);
  std::int64_t out_c = 0;
  if (!s.transposed) {
    out_c = w[0];
    if (out_c % g != 0) check.fail("output channels {} (weight extent 0) are not divisible by groups {}", out_c, g);
    if (w[1] != c / g)
      check.fail("weight extent 1 must be input channels / groups = {} / {} = {}; found {}", c, g, c / g, w[1]);
  } else {
    if (w[0] != c) check.fail("weight extent 0 must equal the input channels {}; found {}", c, w[0]);
    out_c = check.mul(w[1], g, "output channel count");
  }
  if (bias.defined() && !(bias.rank() == 1 && bias.shape()[0] == out_c))
    check.fail("bias must have shape [{}] (the output channels)", out_c);

  Relation r;
  r.n = n;
  r.groups = g;
  r.kh = kh;
  r.kw = kw;
  r.sh = s.stride[0];
  r.sw = s.stride[1];
  r.ph = s.padding[0];
  r.pw = s.padding[1];
  r.dh = s.dilation[0];
  r.dw = s.dilation[1];
  const std::int64_t in_ext[2] = {h, wd}, k_ext[2] = {kh, kw};
  std::int64_t out_ext[2] = {1, 1};
  for (int i = s.one_d ? 1 : 0; i < 2; ++i) {
    const int a = s.one_d ? 0 : i;
    const std::int64_t span = check.add(check.mul(s.dilation[i], k_ext[i] - 1, "dilated kernel extent"), 1, "dilated kernel extent");
    const std::int64_t pad2 = check.mul(s.padding[i], 2, "padding");
    if (!s.transposed) {
      const std::int64_t padded = check.add(in_ext[i], pad2, "padded input extent");
      if (padded < span)
        check.fail("the dilated kernel ({} {}) does not fit the padded input ({} {})", axis_name(s, a), span, axis_name(s, a),
                   padded);
      out_ext[i] = (padded - span) / s.stride[i] + 1;
    } else {
      // Signed: the output extent may come out zero or negative; never wrap.
      const std::int64_t grown = check.add(check.mul(in_ext[i] - 1, s.stride[i], "transposed output extent"),
                                           check.add(span, s.output_padding[i], "transposed output extent"),
                                           "transposed output extent");
      out_ext[i] = grown - pad2;
      if (out_ext[i] < 1)
        check.fail("the transposed output {} would be {} = ({} - 1) * {} - 2 * {} + {} * ({} - 1) + {} + 1, less than 1",
                   axis_name(s, a), out_ext[i], in_ext[i], s.stride[i], s.padding[i], s.dilation[i], k_ext[i],
                   s.output_padding[i]);
    }
  }
  if (!s.transposed) {
    r.cw = c, r.hw = h, r.ww = wd;
    r.cn = out_c, r.hn = out_ext[0], r.wn = out_ext[1];
  } else {
    r.cn = c, r.hn = h, r.wn = wd;
    r.cw = out_c, r.hw = out_ext[0], r.ww = out_ext[1];
  }
  // Shader limits: every signed coordinate intermediate stays below 2^31, every
  // element offset below 2^32.
  const std::int64_t ext_n[2] = {r.hn, r.wn}, ext_w[2] = {r.hw, r.ww};
  for (int i = 0; i < 2; ++i) {
    std::int64_t bound = check.mul(ext_n[i], s.stride[i], "coordinate bound");
    bound = check.add(bound, check.mul(k_ext[i], s.dilation[i], "coordinate bound"), "coordinate bound");
    bound = check.add(bound, check.mul(check.add(s.padding[i], s.stride[i], "coordinate bound"), 2, "coordinate bound"),
                      "coordinate bound");
    bound = check.add(bound, ext_w[i], "coordinate bound");
    check.coordinate(bound, "the largest coordinate (extent + stride * positions + dilation * taps + padding)");
  }
  check.elements(check.mul(check.mul(check.mul(r.n, r.cn, "narrow size"), r.hn, "narrow size"), r.wn, "narrow size"),
                 s.transposed ? "the input" : "the output");
  check.elements(check.mul(check.mul(check.mul(r.n, r.cw, "wide size"), r.hw, "wide size"), r.ww, "wide size"),
                 s.transposed ? "the output" : "the input");
  check.elements(weight.numel(), "the weight");
  return r;
}

Shape output_shape(const Spec& s, const Relation& r) {
  const std::int64_t c = s.transposed ? r.cw : r.cn, h = s.transposed ? r.hw : r.hn, w = s.transposed ? r.ww : r.wn;
  return s.one_d ? Shape{r.n, c, w} : Shape{r.n, c, h, w};
}

// ── Lowerings ───────────────────────────────────────────────────────────────

// The push constants every conv kernel shares (shaders/ml/conv/geometry.push.h);
// aux0..2 mean what each kernel documents.
push::ml_conv_geometry relation_push(const Relation& r, bool has_bias, std::uint32_t aux0 = 0, std::uint32_t aux1 = 0,
                                     std::uint32_t aux2 = 0) {
  return {.n = u32(r.n),
          .cn = u32(r.cn),
          .hn = u32(r.hn),
          .wn = u32(r.wn),
          .cw = u32(r.cw),
          .hw = u32(r.hw),
          .ww = u32(r.ww),
          .kh = u32(r.kh),
          .kw = u32(r.kw),
          .sh = u32(r.sh),
          .sw = u32(r.sw),
          .ph = u32(r.ph),
          .pw = u32(r.pw),
          .dh = u32(r.dh),
          .dw = u32(r.dw),
          .groups = u32(r.groups),
          .has_bias = has_bias ? 1u : 0u,
          .aux0 = aux0,
          .aux1 = aux1,
          .aux2 = aux2};
}

// GEMM tiles of the convolution kernels, named as their tuning points name
// them: the implicit GEMM's (shaders/ml/conv/igemm_<BM>x<BN>.comp, point
// conv.igemm_tile) of BM positions x BN channels per workgroup, and the weight
// gradient's (wgrad_<BO>x<BK>.comp, conv.wgrad_tile) of BO output channels x
// BK (c, kh, kw) columns.
struct GemmTile {
  std::string_view kernel, name;
  std::int64_t bm, bn;
};
constexpr GemmTile kGemmTiles[] = {{kernels::ml_conv_igemm_128x128, "128x128", 128, 128},
                                   {kernels::ml_conv_igemm_128x64, "128x64", 128, 64},
                                   {kernels::ml_conv_igemm_128x32, "128x32", 128, 32},
                                   {kernels::ml_conv_igemm_64x16, "64x16", 64, 16},
                                   {kernels::ml_conv_igemm_1024x4, "1024x4", 1024, 4}};
constexpr GemmTile kWgradTiles[] = {{kernels::ml_conv_wgrad_128x128, "128x128", 128, 128},
                                    {kernels::ml_conv_wgrad_64x64, "64x64", 64, 64},
                                    {kernels::ml_conv_wgrad_16x32, "16x32", 16, 32}};

// The tile of `tiles` that the tuning point `point` names for `keys`.
template <std::size_t N>
const GemmTile& chosen_tile(const Engine& engine, std::string_view point, std::span<const std::int64_t> keys,
                            const GemmTile (&tiles)[N]) {
  const std::string_view name = tuning_of(engine)->choose(point, keys);
  return *std::find_if(std::begin(tiles), std::end(tiles), [&](const GemmTile& t) { return t.name == name; });
}

// direct.glsl: 512 outputs per workgroup as a TH x TW tile of TP planes;
// shared capacities mirror the shader.
// The staged input takes 2048 floats (8 KiB), or 4096 where no tile fits that
// (strided images); a specialization constant sizes it.
constexpr std::int64_t kDirectOutputs = 512, kDirectWeightCap = 512;
constexpr std::int64_t kDirectTileCaps[] = {2048, 4096};
constexpr std::int64_t kDirectMaxChannels = 8;  // output channels per group served by direct.glsl

struct DirectTile {
  std::int64_t th = 0, tw = 0, tp = 0;  // output rows, columns, planes
  std::int64_t rows = 0, pitch = 0;     // staged source rows and columns of one plane
  std::int64_t workgroups = 0, cap = 0;  // workgroups; floats of staged input
};

// The direct kernel's tile for `planes` output planes of oh x ow within `cap`
// floats of staged input, or none (tp == 0) where none fits. A 1-D output
// (oh = 1) takes the power-of-two shape with the least work, counted as
// workgroups x (multiply-adds + 2 x staged loads); ties go to wider tiles
// (coalesced rows), then fewer planes; so does an image at most 8 wide. A
// wider image takes 16 x 32 tiles of one plane in 8 KiB: on the H200 the
// other shapes ran 1.3-2x slower on the MobileNetV2 and EfficientNet-B0
// layers of the bench (2026-12-02).
DirectTile direct_tile(const Relation& r, bool wide, std::int64_t ob, std::int64_t planes, std::int64_t cap) {
  const std::int64_t oh = wide ? r.hw : r.hn, ow = wide ? r.ww : r.wn;
  const bool image = oh > 1 && ow > 8;
  if (image && cap != kDirectTileCaps[0]) return {};
  // Rows of at least 32 columns (128 bytes) where the output is that wide.
  std::int64_t tw_min = 8;
  while (tw_min < 32 && tw_min < ow) tw_min *= 2;
  if (image) tw_min = 32;
  DirectTile best;
  double best_cost = 0;
  for (std::int64_t tw = image ? 32 : kDirectOutputs; tw >= tw_min; tw /= 2) {
    for (std::int64_t tp = 1; tp <= (image ? 1 : 8) && tw * tp <= kDirectOutputs; tp *= 2) {
      DirectTile t{kDirectOutputs / (tw * tp), tw, tp};
      if (!wide) {
        t.rows = (t.th - 1) * r.sh + (r.kh - 1) * r.dh + 1;
        t.pitch = (t.tw - 1) * r.sw + (r.kw - 1) * r.dw + 1;
      } else {
        // The tile origin's residue modulo the stride adds at most stride - 1.
        t.rows = (t.th - 1 + (r.kh - 1) * r.dh + r.sh - 1) / r.sh + 1;
        t.pitch = (t.tw - 1 + (r.kw - 1) * r.dw + r.sw - 1) / r.sw + 1;
      }
      if (tp * t.rows * t.pitch > cap || tp * ob * r.kh * r.kw > kDirectWeightCap) continue;
      t.cap = cap;
      t.workgroups = ((oh + t.th - 1) / t.th) * ((ow + t.tw - 1) / t.tw) * ((planes + tp - 1) / tp);
      const std::int64_t staged = (tp * t.rows * t.pitch + 127) / 128 * 128;  // 128 invocations stage
      const double cost = double(t.workgroups) * double(kDirectOutputs * ob * r.kh * r.kw + 2 * staged);
      if (best.tp == 0 || cost < best_cost) {
        best = t;
        best_cost = cost;
      }
    }
  }
  return best;
}

// The depthwise kernels (shaders/ml/conv/depthwise.glsl): items of 4
// consecutive narrow columns of up to 4 rows; register capacities mirror the
// shader. The forward takes one item per invocation, so its rows per item
// shrink until about kDepthwiseFill items remain (enough invocations to fill
// a GPU of 132 multiprocessors).
constexpr std::int64_t kDepthwiseColumns = 4, kDepthwiseMaxRows = 4, kDepthwiseMaxTaps = 64, kDepthwiseMaxSpan = 32;
constexpr std::int64_t kDepthwiseMaxRowsIn = 64;  // wide rows one item walks (unrolled code size)
constexpr std::int64_t kDepthwiseFill = std::int64_t(1) << 18;

// How the depthwise kernels tile a relation: rows per item (0 where they do
// not serve it), strips per row and row groups per plane.
struct DepthwiseTiling {
  std::int64_t rows = 0, strips = 0, row_groups = 0;
  std::int64_t items() const { return strips * row_groups; }  // per plane
};

// The tiling of relation k (narrow from wide) where it is depthwise (one input
// and one output channel per group) and its kernel, strides and dilations fit
// the registers: the most rows per item that leave at least `fill` items.
DepthwiseTiling depthwise_tiling(const Relation& k, std::int64_t fill) {
  if (k.groups != k.cn || k.groups != k.cw) return {};
  const auto rows_in = [&k](std::int64_t rows) { return (rows - 1) * k.sh + (k.kh - 1) * k.dh + 1; };
  const std::int64_t span = (kDepthwiseColumns - 1) * k.sw + (k.kw - 1) * k.dw + 1;
  if (k.kh * k.kw > kDepthwiseMaxTaps || span > kDepthwiseMaxSpan || rows_in(1) > kDepthwiseMaxRowsIn) return {};
  const auto tiling = [&k](std::int64_t rows) {
    return DepthwiseTiling{rows, (k.wn + kDepthwiseColumns - 1) / kDepthwiseColumns, (k.hn + rows - 1) / rows};
  };
  std::int64_t rows = kDepthwiseMaxRows;
  while (rows > 1 && (rows > k.hn || k.n * k.cn * tiling(rows).items() < fill || rows_in(rows) > kDepthwiseMaxRowsIn))
    rows /= 2;
  // Item indices stay 32-bit.
  if (k.n * k.cn * tiling(rows).items() > std::int64_t(std::numeric_limits<std::uint32_t>::max()) - 128) return {};
  return tiling(rows);
}

// Specialization constants 0-6 of the depthwise kernels.
decltype(ComputeDispatch::specialization) depthwise_specialization(const Relation& k, const DepthwiseTiling& t) {
  return {u32(k.kh), u32(k.kw), u32(k.sh), u32(k.sw), u32(k.dh), u32(k.dw), u32(t.rows)};
}

// ml/conv/depthwise computing `dst` from `src` where it serves the problem
// (see the shader's forms): a convolution (narrow from wide) that
// depthwise_tiling accepts; a gather (wide from narrow) at stride 1 as the
// convolution of the narrow tensor with the rotated weight and padding
// (K - 1) * d - p, at strides 2 and 4 (dividing the 4 columns of an item)
// as a gather. Sets the kernel, specialization, push constants and
// workgroups of `d` and returns true where it serves.
bool lower_depthwise(const Relation& r, bool wide, bool has_bias, ComputeDispatch& d) {
  // Tiled as a stride-1 convolution of dst (narrow) from src (wide); for the
  // strided gather only dst's extents and the stride-1 window bounds count.
  Relation k = r;
  if (wide) {
    k.cn = r.cw, k.hn = r.hw, k.wn = r.ww;
    k.cw = r.cn, k.hw = r.hn, k.ww = r.wn;
    k.ph = (r.kh - 1) * r.dh - r.ph;
    k.pw = (r.kw - 1) * r.dw - r.pw;
    k.sh = k.sw = 1;
  }
  const bool rotated = wide && r.sh == 1 && r.sw == 1 && k.ph >= 0 && k.pw >= 0;
  const bool strided = wide && !rotated && kDepthwiseColumns % r.sw == 0;
  if (wide && !rotated && !strided) return false;
  const DepthwiseTiling t = depthwise_tiling(k, kDepthwiseFill);
  if (t.rows == 0) return false;
  d.kernel = kernels::ml_conv_depthwise;
  d.specialization = depthwise_specialization(strided ? r : k, t);
  d.specialization.push_back(strided ? 2u : rotated ? 1u : 0u);  // FORM
  d.specialization.push_back(strided ? u32(r.pw % r.sw) : 0u);   // PW_RES (one pipeline for the other forms)
  d.push.set(relation_push(strided ? r : k, has_bias, u32(t.strips), u32(t.row_groups)));
  d.groups = {detail::groups_for(k.n * k.cn * t.items(), 128), 1, 1};
  return true;
}

// Winograd F(2x2, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2016) for an ungrouped 3x3 relation of stride and
// dilation 1, as a stride-1 correlation of a source with a 3x3 kernel: the
// convolution (narrow from wide), or the gather (wide from narrow) as the
// correlation of the narrow tensor, padded by 2 - padding, with the rotated
// weight transposed. ml/conv/winograd_weight transforms the weight into U
// [16, C, K4] and ml/conv/winograd_input the source's 4x4 tiles (2x2 apart)
// into V [16, C, T4] (C source channels, K output channels, T tiles, K4 and
// T4 rounded up to 4 for vector loads); 16 GEMMs (lower_gemm) give U^T V
// [16, K4, T4], each operand row-major along its GEMM extent; and
// ml/conv/winograd_output turns each tile's 16 products into its 2x2 outputs,
// adds the bias and stores them. Returns false (nothing appended) where it
// does not serve, or where an intermediate exceeds what one binding holds.
bool lower_winograd(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias,
                    const Matrix& dst, std::vector<ComputeDispatch>& out) {
  if (r.groups != 1 || r.kh != 3 || r.kw != 3 || r.sh != 1 || r.sw != 1 || r.dh != 1 || r.dw != 1) return false;
  const std::int64_t c = wide ? r.cn : r.cw, k = wide ? r.cw : r.cn;
  const std::int64_t h = wide ? r.hn : r.hw, w = wide ? r.wn : r.ww;
  const std::int64_t oh = wide ? r.hw : r.hn, ow = wide ? r.ww : r.wn;
  const std::int64_t ph = wide ? 2 - r.ph : r.ph, pw = wide ? 2 - r.pw : r.pw;
  const std::int64_t tiles_w = (ow + 1) / 2, tiles_hw = ((oh + 1) / 2) * tiles_w, tiles = r.n * tiles_hw;
  const std::int64_t tiles_pad = (tiles + 3) / 4 * 4, k_pad = (k + 3) / 4 * 4;
  const Engine& engine = src.engine();
  const std::int64_t limit = std::min<std::int64_t>(std::numeric_limits<std::uint32_t>::max(),
                                                    static_cast<std::int64_t>(engine.device().max_storage_buffer_range / 4));
  for (std::int64_t extent : {c * tiles_pad, c * k_pad, k_pad * tiles_pad})
    if (16 * extent > limit) return false;
  const Matrix u = detail::allocate(engine, Shape{16, c, k_pad});
  const Matrix v = detail::allocate(engine, Shape{16, c, tiles_pad});
  const Matrix products = detail::allocate(engine, Shape{16, k_pad, tiles_pad});
  const push::ml_conv_winograd push{.n = u32(r.n),
                                    .c = u32(c),
                                    .h = u32(h),
                                    .w = u32(w),
                                    .k = u32(k),
                                    .oh = u32(oh),
                                    .ow = u32(ow),
                                    .ph = static_cast<std::int32_t>(ph),
                                    .pw = static_cast<std::int32_t>(pw),
                                    .tiles_w = u32(tiles_w),
                                    .tiles_hw = u32(tiles_hw),
                                    .tiles = u32(tiles),
                                    .tiles_pad = u32(tiles_pad),
                                    .k_pad = u32(k_pad),
                                    .has_bias = bias.defined() ? 1u : 0u,
                                    .wk_stride = u32(wide ? 9 : 9 * c),
                                    .wc_stride = u32(wide ? 9 * k : 9),
                                    .flip = wide ? 1u : 0u};
  // One transform pass: `items` invocations along x (per_group a workgroup) times `rows` workgroups along y.
  const auto transform = [&](std::string_view kernel, std::initializer_list<BufferBinding> bindings, std::int64_t items,
                             std::int64_t per_group, std::int64_t rows) {
    ComputeDispatch d;
    d.kernel = kernel;
    d.bindings = bindings;
    d.push.set(push);
    d.groups = {detail::groups_for(items, per_group), static_cast<std::uint64_t>(rows), 1};
    out.push_back(std::move(d));
  };
  transform(kernels::ml_conv_winograd_weight, {BufferBinding::read(weight.storage()), BufferBinding::write(u.storage())}, k_pad,
            64, c);
  transform(kernels::ml_conv_winograd_input, {BufferBinding::read(src.storage()), BufferBinding::write(v.storage())}, tiles_pad,
            256, c);
  detail::append_gemm(engine,
                      {.batch = 16,
                       .m = k_pad,
                       .n = tiles_pad,
                       .k = c,
                       .trans_a = true,
                       .a = {&u, 0, c * k_pad},
                       .b = {&v, 0, c * tiles_pad},
                       .c = {&products, 0, k_pad * tiles_pad}},
                      out);
  transform(kernels::ml_conv_winograd_output,
            {BufferBinding::read(products.storage()), BufferBinding::read(bias.defined() ? bias.storage() : weight.storage()),
             BufferBinding::write(dst.storage())},
            tiles, 256, k);
  return true;
}

// Whether relation r tiles its wide side with the kernel: stride equal to the
// kernel, no padding, dilation 1, groups 1, and (computing wide from narrow)
// wide extents exactly the narrow ones times the kernel (a convolution may
// leave wide rows and columns past its last patch unread; a gather must
// write them, so it declines those). Each narrow position then meets its
// own KH x KW patch of wide positions and nothing else.
bool patch_applies(const Relation& r, bool wide) {
  if (r.groups != 1 || r.kh != r.sh || r.kw != r.sw || r.ph != 0 || r.pw != 0 || r.dh != 1 || r.dw != 1) return false;
  return !wide || (r.hw == r.hn * r.kh && r.ww == r.wn * r.kw);
}

// Whether the patch lowerings serve relation r (computing wide from narrow
// when `wide`): a patch relation whose intermediates (each as large as the
// narrow or the wide tensor) fit one binding, where the tuning point
// conv.patch chooses patch for it (keys as conv.kernel's).
bool patch_chosen(const Relation& r, bool wide, const Engine& engine, DType dtype) {
  if (r.n == 0 || !patch_applies(r, wide)) return false;
  const std::int64_t positions = r.n * r.hn * r.wn, m = r.cw * r.kh * r.kw;
  if (positions * std::max(m, r.cn) * static_cast<std::int64_t>(size_of(dtype)) >
      static_cast<std::int64_t>(engine.device().max_storage_buffer_range))
    return false;
  const std::int64_t keys[] = {r.n, wide ? r.cw : r.cn, r.groups, wide ? r.hw * r.ww : r.hn * r.wn, r.kh * r.kw, wide ? 1 : 0};
  return tuning_of(engine)->choose("conv.patch", keys) == "patch";
}

// patches [N, HN, WN, CW, KH, KW] ([N * P, M] below) gathered from the wide
// tensor [N, CW, HW, WW] of a patch relation (space-to-depth; rows and
// columns past the last patch are not read).
void space_to_depth(const Relation& r, const Matrix& wide, const Matrix& patches, const char* op, std::vector<ComputeDispatch>& out) {
  detail::strided_copy(op, false, wide.dtype(), wide.storage(), patches.storage(), {r.n, r.hn, r.wn, r.cw, r.kh, r.kw},
                       {r.cw * r.hw * r.ww, r.kh * r.ww, r.kw, r.hw * r.ww, r.ww, 1}, 0, out);
}

// A patch relation (patch_chosen) as one GEMM between rearrangements, for
// any dtype (T = KH * KW taps, P = HN * WN narrow positions, M = CW * T; the
// weight is [CN, M] row-major as stored):
//   narrow from wide (a convolution; the transposed one's input gradient):
//     patches [N * P, M] = space_to_depth(wide); rows [N * P, CN] = patches
//     x weight^T + bias (one GEMM); narrow [N, CN, P] = rows transposed per
//     image;
//   wide from narrow (a transposed convolution; the convolution's input
//     gradient): rows_b [P, M] = narrow_b^T x weight + the bias repeated per
//     tap (a GEMM batched over images); wide = rows rearranged (depth-to-
//     space, one strided copy).
// The GEMM is oriented so that the bias is per column (lower_gemm adds
// bias[n] per column only), which costs the narrow-from-wide direction a
// transpose of its output, the smaller side. A 16-bit relation rounds once,
// in the GEMM.
void lower_patch(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias, const Matrix& dst,
                 const char* op, std::vector<ComputeDispatch>& out) {
  const Engine& engine = src.engine();
  const DType dtype = src.dtype();
  const std::int64_t taps = r.kh * r.kw, p = r.hn * r.wn, m = r.cw * taps;
  const Matrix rows = detail::allocate(engine, Shape{r.n * p, wide ? m : r.cn}, dtype);
  if (!wide) {
    const Matrix patches = detail::allocate(engine, Shape{r.n * p, m}, dtype);
    space_to_depth(r, src, patches, op, out);
    detail::append_gemm(engine,
                        {.m = r.n * p,
                         .n = r.cn,
                         .k = m,
                         .trans_b = true,
                         .a = {&patches},
                         .b = {&weight},
                         .c = {&rows},
                         .bias = bias.defined() ? &bias : nullptr},
                        out);
    detail::transpose_into(engine, op, dtype, rows.storage(), dst.storage(), r.n, p, r.cn, out);
    return;
  }
  Matrix repeated;  // bias[c] at (c, tap)
  if (bias.defined()) {
    repeated = detail::allocate(engine, Shape{m}, dtype);
    detail::strided_copy(op, false, dtype, bias.storage(), repeated.storage(), {r.cw, taps}, {1, 0}, 0, out);
  }
  detail::append_gemm(engine,
                      {.batch = r.n,
                       .m = p,
                       .n = m,
                       .k = r.cn,
                       .trans_a = true,
                       .a = {&src, 0, r.cn * p},
                       .b = {&weight},
                       .c = {&rows, 0, p * m},
                       .bias = bias.defined() ? &repeated : nullptr},
                      out);
  // wide [N, CW, HN, KH, WN, KW] from rows [N, HN, WN, CW, KH, KW].
  detail::strided_copy(op, false, dtype, rows.storage(), dst.storage(), {r.n, r.cw, r.hn, r.kh, r.wn, r.kw},
                       {p * m, taps, r.wn * m, r.kw, m, 1}, 0, out);
}

// The weight gradient of a patch relation as one GEMM: dw [CN, M] = the
// narrow tensor permuted to [CN, N * P] x space_to_depth(wide) [N * P, M],
// its long K split where few tiles would leave the GPU idle (lower_gemm).
// dw is f32, or the operands' 16-bit dtype (rounded once).
void lower_patch_weight_grad(const Relation& r, const Matrix& narrow, const Matrix& wide, const Matrix& dw, const char* op,
                             std::vector<ComputeDispatch>& out) {
  const Engine& engine = narrow.engine();
  const DType dtype = narrow.dtype();
  const std::int64_t p = r.hn * r.wn, m = r.cw * r.kh * r.kw;
  const Matrix patches = detail::allocate(engine, Shape{r.n * p, m}, dtype);
  space_to_depth(r, wide, patches, op, out);
  Matrix channels_first = narrow;  // [CN, N * P]; one image is that already
  if (r.n > 1) {
    channels_first = detail::allocate(engine, Shape{r.cn, r.n * p}, dtype);
    detail::permute_into(op, dtype, narrow.storage(), Shape{r.n, r.cn, p}, channels_first.storage(), {1, 0, 2}, out);
  }
  detail::append_gemm(engine, {.m = r.cn, .n = m, .k = r.n * p, .a = {&channels_first}, .b = {&patches}, .c = {&dw}}, out);
}

// Computes `dst` (narrow when !wide, wide when wide) from `src` through the
// weight; adds bias when defined; `op` names the call in errors. A
// convolution with one output position over the whole input is one GEMM; a
// patch relation takes lower_patch where the tuning point conv.patch says
// so. Otherwise the tuning point conv.kernel names the
// first kernel to try in the order winograd (ungrouped 3x3 problems of
// stride and dilation 1), depthwise (problems that fit the depthwise
// kernel), direct (other grouped convolutions with few output channels per
// group), then the implicit GEMM, whose tile conv.igemm_tile names; a kernel
// that does not serve the problem passes it to the next.
std::vector<ComputeDispatch> lower_conv(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias,
                                        const Matrix& dst, const char* op) {
  if (r.n == 0) return {};  // an empty batch
  // A convolution whose window covers the whole (unpadded) input has one
  // output position: narrow [N, CN] = wide [N, CW*KH*KW] weight [CN, CW*KH*KW]^T
  // (+ bias), one GEMM, which splits its long K where few output tiles would
  // leave the GPU idle (the implicit GEMM does not). A DCGAN discriminator's
  // last layer, or the input gradient of a transposed convolution of a 1 x 1
  // input (a DCGAN generator's first layer).
  if (!wide && r.groups == 1 && r.hn == 1 && r.wn == 1 && r.kh == r.hw && r.kw == r.ww && r.ph == 0 && r.pw == 0 &&
      r.dh == 1 && r.dw == 1) {
    const std::int64_t k = r.cw * r.kh * r.kw;
    std::vector<ComputeDispatch> out;
    detail::append_gemm(src.engine(),
                        {.m = r.n,
                         .n = r.cn,
                         .k = k,
                         .trans_b = true,
                         .a = {&src, 0, r.n * k},
                         .b = {&weight, 0, r.cn * k},
                         .c = {&dst, 0, r.n * r.cn},
                         .bias = bias.defined() ? &bias : nullptr},
                        out);
    return out;
  }
  if (patch_chosen(r, wide, src.engine(), src.dtype())) {
    std::vector<ComputeDispatch> out;
    lower_patch(r, wide, src, weight, bias, dst, op, out);
    return out;
  }
  const std::int64_t cols = wide ? r.cw / r.groups : r.cn / r.groups;
  // The tuning points' keys: batch, output channels per group, groups, output
  // positions per image and channel, kernel taps, and 1 for the transposed
  // direction (conv_transpose's forward, a convolution's input gradient).
  const std::shared_ptr<const Tuning> tuning = tuning_of(src.engine());
  const std::int64_t keys[] = {r.n, cols, r.groups, wide ? r.hw * r.ww : r.hn * r.wn, r.kh * r.kw, wide ? 1 : 0};
  const std::string_view first = tuning->choose("conv.kernel", keys);
  if (first == "winograd") {
    std::vector<ComputeDispatch> out;
    if (lower_winograd(r, wide, src, weight, bias, dst, out)) return out;
  }
  const BufferBinding bias_binding = BufferBinding::read(bias.defined() ? bias.storage() : weight.storage());
  ComputeDispatch d;
  d.bindings = {BufferBinding::read(src.storage()), BufferBinding::read(weight.storage()), bias_binding,
                BufferBinding::write(dst.storage())};
  if ((first == "winograd" || first == "depthwise") && lower_depthwise(r, wide, bias.defined(), d)) return {std::move(d)};
  if (first != "igemm" && r.groups > 1 && cols <= kDirectMaxChannels) {
    const std::int64_t ob = cols == 1 ? 1 : 4;
    const std::int64_t planes = r.n * r.groups * ((cols + ob - 1) / ob);
    DirectTile t;
    for (std::int64_t cap : kDirectTileCaps)
      if (t.tp == 0) t = direct_tile(r, wide, ob, planes, cap);
    if (t.tp > 0) {
      const std::int64_t tiles_x = ((wide ? r.ww : r.wn) + t.tw - 1) / t.tw;
      d.kernel = ob == 1 ? kernels::ml_conv_direct_ob1 : kernels::ml_conv_direct_ob4;
      d.specialization = {wide ? 1u : 0u, u32(t.tw), u32(t.tp), u32(t.cap)};
      d.push.set(relation_push(r, bias.defined(), u32(t.rows), u32(t.pitch), u32(tiles_x)));
      d.groups = {static_cast<std::uint64_t>(t.workgroups / ((planes + t.tp - 1) / t.tp)),
                  static_cast<std::uint64_t>((planes + t.tp - 1) / t.tp), 1};
      return {std::move(d)};
    }
  }
  const GemmTile& t = chosen_tile(src.engine(), "conv.igemm_tile", keys, kGemmTiles);
  std::int64_t positions, phases = 1;
  if (!wide) {
    positions = r.n * r.hn * r.wn;
  } else {
    positions = r.n * ((r.hw + r.sh - 1) / r.sh) * ((r.ww + r.sw - 1) / r.sw);
    phases = std::min(r.sh, r.hw) * std::min(r.sw, r.ww);  // phases past the extent are empty
  }
  d.kernel = t.kernel;
  d.specialization = {wide ? 1u : 0u};
  d.push.set(relation_push(r, bias.defined()));
  d.groups = {detail::groups_for(positions, t.bm), detail::groups_for(cols, t.bn),
              static_cast<std::uint64_t>(r.groups * phases)};
  return {std::move(d)};
}

// Splits of a long reduction: about `workgroups` workgroups in all (enough to
// fill a large GPU), at most 64 partial results, each split at least
// `min_per_split` items.
std::int64_t split_count(std::int64_t tiles, std::int64_t items, std::int64_t min_per_split, std::int64_t workgroups) {
  const std::int64_t want = std::max<std::int64_t>(1, workgroups / std::max<std::int64_t>(tiles, 1));
  return std::clamp<std::int64_t>(std::min(want, items / min_per_split), 1, 64);
}

// Sums `splits` partial results of `count` floats into `dst`.
ComputeDispatch lower_reduce(const Matrix& partials, std::int64_t splits, std::int64_t count, const Matrix& dst) {
  ComputeDispatch d;
  d.kernel = kernels::ml_conv_reduce;
  d.bindings = {BufferBinding::read(partials.storage()), BufferBinding::write(dst.storage())};
  d.push.set(push::ml_conv_reduce{.count = u32(count), .splits = u32(splits)});
  d.groups = {detail::groups_for(count, 256), 1, 1};
  return d;
}

// Allocates the partial sums of `splits` splits of a weight gradient of
// `count` floats (scratch), or returns dw itself for one split.
Matrix weight_grad_target(const Matrix& dw, std::int64_t splits, std::int64_t count, const char* op,
                          std::vector<Matrix>& scratch) {
  if (splits == 1) return dw;
  detail::shader_u32(splits * count, "weight-gradient partial sums", op);
  scratch.push_back(detail::allocate(dw.engine(), Shape{splits, count}));
  return scratch.back();
}

// dW of a depthwise relation through ml/conv/depthwise_wgrad where
// depthwise_tiling serves it: one workgroup per channel and split, about 2048
// workgroups in all (16 per multiprocessor of a large GPU), each split at
// least 256 items; items of the most rows (the splits give the parallelism).
// Returns false where it does not serve.
bool lower_depthwise_weight_grad(const Relation& r, const Matrix& narrow, const Matrix& wide, const Matrix& dw, const char* op,
                                 std::vector<ComputeDispatch>& out, std::vector<Matrix>& scratch) {
  const DepthwiseTiling t = depthwise_tiling(r, 0);
  if (t.rows == 0) return false;
  const std::int64_t items = r.n * t.items(), count = r.weight_count();
  std::int64_t splits = split_count(r.cn, items, 256, 2048);
  const std::int64_t per_split = (items + splits - 1) / splits;
  splits = (items + per_split - 1) / per_split;
  const Matrix target = weight_grad_target(dw, splits, count, op, scratch);
  ComputeDispatch d;
  d.kernel = kernels::ml_conv_depthwise_wgrad;
  d.bindings = {BufferBinding::read(narrow.storage()), BufferBinding::read(wide.storage()), BufferBinding::write(target.storage())};
  d.specialization = depthwise_specialization(r, t);
  d.push.set(relation_push(r, false, u32(t.strips), u32(t.row_groups), u32(per_split)));
  d.groups = {static_cast<std::uint64_t>(splits), static_cast<std::uint64_t>(r.cn), 1};
  out.push_back(std::move(d));
  if (splits > 1) out.push_back(lower_reduce(target, splits, count, dw));
  return true;
}

// dW (shape of the weight) from the narrow tensor (the convolution's output
// gradient or the transposed convolution's input) and the wide tensor.
// Depthwise relations that fit its registers use the depthwise kernel; other
// few weights per output channel (small groups, depthwise with wide strides
// or dilations) a per-channel reduction, the rest a tiled GEMM; all split
// long position ranges into partial sums that a second pass adds in a fixed
// order.
void lower_weight_grad(const Relation& r, const Matrix& narrow, const Matrix& wide, const Matrix& dw, const char* op,
                       std::vector<ComputeDispatch>& out, std::vector<Matrix>& scratch) {
  if (lower_depthwise_weight_grad(r, narrow, wide, dw, op, out, scratch)) return;
  const std::int64_t cng = r.cn / r.groups, k = (r.cw / r.groups) * r.kh * r.kw;
  const std::int64_t positions = r.n * r.hn * r.wn, count = r.weight_count();
  // Per-channel reduction (ml/conv/wgrad_small<MAXK>): K <= 16 weights, or a
  // depthwise kernel of 26 to 64 taps (7 x 7; 5 x 5 ran faster on the tiled path).
  const bool depthwise = cng == 1 && r.cw == r.groups;
  const std::int64_t small_k = k <= 16 ? 16 : depthwise && k > 25 && k <= 64 ? 64 : 0;
  const bool small = small_k > 0;
  // Output channels per workgroup of the per-channel reduction: 4 of one group
  // share their wide values (ml/conv/wgrad_small16x4).
  const std::int64_t block = small_k == 16 && r.groups == 1 ? 4 : 1, blocks = (r.cn + block - 1) / block;
  // shaders/ml/conv/wgrad_<BO>x<BK>.comp: BO output channels x BK (c, kh, kw)
  // columns, as the tuning point conv.wgrad_tile names it.
  const std::int64_t keys[] = {cng, k, positions};
  const GemmTile& t = chosen_tile(dw.engine(), "conv.wgrad_tile", keys, kWgradTiles);
  constexpr std::int64_t kRm = 16;  // positions per step of wgrad.glsl
  const std::int64_t tiles = small ? blocks : detail::groups_for(k, t.bn) * detail::groups_for(cng, t.bm) * r.groups;
  // The per-channel reduction has one workgroup per channel and split: aim
  // for 2048 of them (about 16 per SM on a large GPU).
  std::int64_t splits = split_count(tiles, positions, small ? 1024 : 4 * kRm, small ? 2048 : 512);
  std::int64_t chunk = (positions + splits - 1) / splits;
  if (!small) chunk = (chunk + kRm - 1) / kRm * kRm;
  splits = (positions + chunk - 1) / chunk;
  const Matrix target = weight_grad_target(dw, splits, count, op, scratch);
  ComputeDispatch d;
  d.bindings = {BufferBinding::read(narrow.storage()), BufferBinding::read(wide.storage()), BufferBinding::write(target.storage())};
  d.push.set(relation_push(r, false, u32(splits), u32(chunk), u32(count)));
  if (small) {
    d.kernel = small_k == 64 ? kernels::ml_conv_wgrad_small64 : block == 4 ? kernels::ml_conv_wgrad_small16x4 : kernels::ml_conv_wgrad_small16;
    d.groups = {static_cast<std::uint64_t>(splits), static_cast<std::uint64_t>(blocks), 1};
  } else {
    d.kernel = t.kernel;
    d.groups = {detail::groups_for(k, t.bn), detail::groups_for(cng, t.bm), static_cast<std::uint64_t>(r.groups * splits)};
  }
  out.push_back(std::move(d));
  if (splits > 1) out.push_back(lower_reduce(target, splits, count, dw));
}

// db[c] = sum of dy[n, c, positions].
void lower_bias_grad(const Matrix& dy, std::int64_t channels, std::int64_t positions, const Matrix& db,
                     std::vector<ComputeDispatch>& out, std::vector<Matrix>& scratch) {
  const std::int64_t batch = dy.shape()[0], total = batch * positions;
  std::int64_t splits = split_count(channels, total, 4096, 512);
  const std::int64_t per_split = (total + splits - 1) / splits;
  splits = (total + per_split - 1) / per_split;
  Matrix target = db;
  if (splits > 1) {
    target = detail::allocate(db.engine(), Shape{splits, channels});
    scratch.push_back(target);
  }
  ComputeDispatch d;
  d.kernel = kernels::ml_conv_bias_grad;
  d.bindings = {BufferBinding::read(dy.storage()), BufferBinding::write(target.storage())};
  d.push.set(push::ml_conv_bias_grad{.channels = u32(channels),
                                     .positions = u32(positions),
                                     .batch = u32(batch),
                                     .per_split = u32(per_split)});
  d.groups = {static_cast<std::uint64_t>(channels), static_cast<std::uint64_t>(splits), 1};
  out.push_back(std::move(d));
  if (splits > 1) out.push_back(lower_reduce(target, splits, channels, db));
}

// ── 16-bit lowering ─────────────────────────────────────────────────────────
//
// F16 and BF16 convolutions run as GEMMs (detail::lower_gemm: on the tensor
// cores where the device has cooperative matrices, else with f32 arithmetic
// on 16-bit loads) over chunks of images in the column layout of
// ml/conv/columns_half: rows (input channel, tap row, tap column) by columns
// (image, narrow position). Per chunk and group g (Kg = R / groups rows of
// the R = CW * KH * KW, Q columns):
//   narrow from wide: cols = im2col(wide) (16-bit); rows = W_g cols_g (f32);
//                     narrow = rows + bias, rounded once;
//   wide from narrow: rows = gather(narrow) (16-bit); cols = W_g^T rows_g
//                     (f32); wide = col2im(cols) + bias, rounded once;
//   weight gradient:  dW_g += rows_g cols_g^T over the chunks, in f32.
// Every shape, depthwise and tiny channel counts included, takes this path.

// Each chunk's workspaces and windows stay near this many bytes: enough
// columns per chunk that its GEMM fills a large GPU without a K split.
constexpr std::int64_t kHalfChunkBytes = std::int64_t(256) << 20;

// Images per chunk for a pass that binds buffers of `image_bytes` bytes per
// image: as many as fit kHalfChunkBytes and keep each buffer within the
// device's maxStorageBufferRange (at least 1), spread evenly over the chunks
// that takes (16 images in 8 and 8, not 15 and 1). Where a 16-bit tensor has
// an odd element count per image, chunks hold an even number of images (but
// the last), so every chunk starts on a whole 32-bit word. Throws
// ResourceExhausted naming `op` when the smallest chunk's buffer exceeds
// maxStorageBufferRange.
std::int64_t half_chunk(const Relation& r, const Engine& engine, const char* op, std::initializer_list<std::int64_t> image_bytes) {
  std::int64_t total = 0, largest = 0;
  for (std::int64_t b : image_bytes) {
    total += b;
    largest = std::max(largest, b);
  }
  const std::int64_t range = static_cast<std::int64_t>(engine.device().max_storage_buffer_range) - 256;
  std::int64_t q = std::clamp<std::int64_t>(std::min(kHalfChunkBytes / total, range / std::max<std::int64_t>(largest, 1)), 1, r.n);
  q = detail::ceil_div(r.n, detail::ceil_div(r.n, q));
  const bool odd = (r.cn * r.hn * r.wn) % 2 != 0 || (r.cw * r.hw * r.ww) % 2 != 0;
  if (odd && q < r.n) q = std::max<std::int64_t>(2, q / 2 * 2);
  if (q * largest > range)
    fail(ErrorKind::ResourceExhausted, "{}: a 16-bit chunk of {} image(s) needs a buffer of {} bytes, more than this device's "
         "maxStorageBufferRange ({} bytes)", op, q, q * largest, engine.device().max_storage_buffer_range);
  return q;
}

// The 32-bit words holding 16-bit elements [first, first + count) of m; first is even.
detail::ElementWindow half_window(const Matrix& m, std::int64_t first, std::int64_t count, Access access) {
  return detail::element_window(m.storage(), first / 2, (count + 1) / 2, access);
}

// One pass of ml/conv/columns_half over a chunk of q images (see the shader),
// writing `count` elements of dst.
ComputeDispatch columns_pass(std::uint32_t mode, const Relation& r, std::int64_t q, DType dtype, const detail::ElementWindow& src,
                             const Matrix& bias, const Matrix& weight, const detail::ElementWindow& dst, std::int64_t count) {
  Relation chunk = r;
  chunk.n = q;
  ComputeDispatch d;
  d.kernel = kernels::ml_conv_columns_half;
  d.specialization = {mode, dtype == DType::F16 ? 1u : 2u};
  d.bindings = {src.binding, BufferBinding::read(bias.defined() ? bias.storage() : weight.storage()), dst.binding};
  d.push.set(relation_push(chunk, bias.defined(), src.offset, dst.offset, u32(count)));
  d.groups = {detail::groups_for((count + 7) / 8, 256), 1, 1};  // 8 elements an invocation
  return d;
}

// The 16-bit counterpart of lower_conv: dst (narrow when !wide, wide when
// wide) from src through the weight, plus the bias when defined; all four of
// one dtype.
void lower_conv_half(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias, const Matrix& dst,
                     const char* op, std::vector<ComputeDispatch>& out) {
  if (r.n == 0) return;  // an empty batch
  const Engine& engine = src.engine();
  const DType dtype = src.dtype();
  const std::int64_t p = r.hn * r.wn, rows = r.cw * r.kh * r.kw, kg = rows / r.groups, cng = r.cn / r.groups;
  const std::int64_t narrow_image = r.cn * p, wide_image = r.cw * r.hw * r.ww;
  // 16-bit columns or rows, and their f32 product.
  const std::int64_t half_rows = wide ? r.cn : rows, f32_rows = wide ? rows : r.cn;
  const std::int64_t q = half_chunk(r, engine, op, {2 * narrow_image, 2 * wide_image, 2 * half_rows * p, 4 * f32_rows * p});
  const Matrix half = detail::allocate(engine, Shape{half_rows * q * p}, dtype);
  const Matrix product = detail::allocate(engine, Shape{f32_rows * q * p});
  const std::int64_t src_image = wide ? narrow_image : wide_image, dst_image = wide ? wide_image : narrow_image;
  for (std::int64_t n0 = 0; n0 < r.n; n0 += q) {
    const std::int64_t qc = std::min(q, r.n - n0), cols = qc * p;
    out.push_back(columns_pass(wide ? 1 : 0, r, qc, dtype, half_window(src, n0 * src_image, qc * src_image, Access::Read), Matrix(),
                               weight, half_window(half, 0, half_rows * cols, Access::Write), half_rows * cols));
    detail::GemmProblem g{.batch = r.groups, .m = wide ? kg : cng, .n = cols, .k = wide ? cng : kg, .trans_a = wide};
    g.a = {&weight, 0, cng * kg};
    g.b = {&half, 0, (wide ? cng : kg) * cols};
    g.c = {&product, 0, (wide ? kg : cng) * cols};
    detail::append_gemm(engine, g, out);
    out.push_back(columns_pass(wide ? 3 : 2, r, qc, dtype, detail::element_window(product.storage(), 0, f32_rows * cols, Access::Read),
                               bias, weight, half_window(dst, n0 * dst_image, qc * dst_image, Access::Write), qc * dst_image));
  }
}

// Channels last needs K and the positions below this (ml/conv/igemm_coopmat's float quotients).
constexpr std::int64_t kChannelsLastLimit = std::int64_t{1} << 22;

// A 16-bit convolution of groups 1 as one implicit GEMM per image on the
// tensor cores, ml/conv/igemm_coopmat(_bf16), its B operand gathered on the
// fly from the input image, its C written into the output image with
// bias[m] per output channel, rounded once:
//   narrow from wide (!wide): C_b [CN, HN * WN] = W [CN, CW * KH * KW] x
//     cols_b, cols_b the im2col of wide image b;
//   wide from narrow (wide; the shader's transposed gather): C_b
//     [CW, HW * WW] = Wt [CW, CN * KH * KW] x rows_b, Wt the weight permuted
//     to [CW, CN, KH, KW] by one strided copy, rows_b gathered from narrow
//     image b.
// Where the gathered side's channels are a multiple of 8, it runs channels
// last (as cuDNN's NHWC kernels): the input is transposed to [N, H, W, C]
// and the weight's columns reordered to (tap, channel) first, so that the
// gather reads 8 channels of a pixel at once ([CN, T, CW] forward, Wt
// [CW, T, CN] wide from narrow; matrix/transpose, three dispatches in all).
// Its tile is the tensor-core GEMM's (gemm.coopmat_tile) for that problem,
// never split in K. Appends its dispatches and returns true where the device
// has the dtype's cooperative matrices, the tuning point conv.half_forward
// chooses implicit (its key `transposed` is 1 for wide from narrow), a tile
// fits, the geometry's extents fit 16 bits and (wide from narrow) the stride
// is 1; else false, appending nothing.
bool lower_conv_half_implicit(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias,
                              const Matrix& dst, const char* op, std::vector<ComputeDispatch>& out) {
  const Engine& engine = src.engine();
  const DeviceInfo& dev = engine.device();
  const DType dtype = src.dtype();
  if (r.n == 0 || r.groups != 1 || !detail::has_coop_gemm(dev, dtype)) return false;
  // The transposed gather at stride s multiplies s^2 - 1 of every s^2 taps as
  // zeros and loses the 8-element reads: 4-50x slower than the columns path
  // on an H100 (DCGAN, U-Net up-convolutions, the ResNet-50 stem's input
  // gradient), so it runs at stride 1 only.
  if (wide && (r.sh != 1 || r.sw != 1)) return false;
  for (std::int64_t v : {r.kh, r.kw, r.sh, r.sw, r.ph, r.pw, r.dh, r.dw})
    if (v > 0xffff) return false;
  const std::shared_ptr<const Tuning> tuning = tuning_of(engine);
  // Output channels and positions, input channels and extents.
  const std::int64_t m = wide ? r.cw : r.cn, p = wide ? r.hw * r.ww : r.hn * r.wn, c = wide ? r.cn : r.cw;
  const std::int64_t in_h = wide ? r.hn : r.hw, in_w = wide ? r.wn : r.ww, k = c * r.kh * r.kw;
  const std::int64_t keys[] = {r.n, m, r.groups, p, r.kh * r.kw, wide ? 1 : 0};
  if (tuning->choose("conv.half_forward", keys) != "implicit") return false;
  // Channels last where whole uvec4s of channels are read and the shader's quotients are exact, but for an
  // unpadded 1x1 stride-1 problem that reduces channels: its NCHW gather reads whole quads already, and
  // transposing its larger input cost more than the gather saved (ResNet-50's 256 -> 64 on an H200).
  const bool contiguous = r.kh * r.kw == 1 && r.sh == 1 && r.sw == 1 && r.ph == 0 && r.pw == 0;
  const bool last = c % 8 == 0 && !(contiguous && c > m) && k < kChannelsLastLimit && p < kChannelsLastLimit;
  const detail::CoopTile* tile = detail::choose_coop_tile(*tuning, dev, {.batch = r.n, .m = m, .n = p, .k = k, .trans_b = last}, false);
  if (!tile) return false;
  const std::int64_t out_image = m * p, in_image = c * in_h * in_w, taps = r.kh * r.kw;
  Matrix a = weight, b_image = src;
  if (last) {  // the input image [C, H, W] -> [H, W, C]; the weight's k (c, tap) -> (tap, c)
    b_image = detail::allocate(engine, Shape{r.n * in_image}, dtype);
    detail::transpose_into(engine, op, dtype, src.storage(), b_image.storage(), r.n, c, in_h * in_w, out);
    a = detail::allocate(engine, Shape{m * k}, dtype);
    if (wide)  // weight [CN, CW, T] -> Wt [CW, T, CN]
      detail::transpose_into(engine, op, dtype, weight.storage(), a.storage(), 1, r.cn, r.cw * taps, out);
    else  // weight [CN, CW, T] -> [CN, T, CW]
      detail::transpose_into(engine, op, dtype, weight.storage(), a.storage(), r.cn, r.cw, taps, out);
  } else if (wide) {  // weight [CN, CW, T] -> Wt [CW, CN, T]
    a = detail::allocate(engine, Shape{m * k}, dtype);
    detail::strided_copy(op, false, dtype, weight.storage(), a.storage(), {r.cw, r.cn, taps}, {taps, r.cw * taps, 1}, 0, out);
  }
  // Every chunk's output starts at a multiple of out_image elements: with
  // P a multiple of 8, C's rows and images stay on whole uvec4s.
  const std::uint32_t code = detail::dtype_code(dtype);
  std::vector<std::uint32_t> spec =
      detail::coop_specialization(dev, *tile, {.trans_b = last, .vec_a = k % 8 == 0, .direct_c = p % 8 == 0, .c_dt = code, .bias_dt = code});
  spec.push_back(wide ? 1u : 0u);  // TRANSPOSED
  const std::string_view kernel = dtype == DType::F16 ? kernels::ml_conv_igemm_coopmat : kernels::ml_conv_igemm_coopmat_bf16;
  const auto pair = [](std::int64_t h, std::int64_t w) { return u32(h | (w << 16)); };
  // Images per dispatch: their windows of the input and output fit maxStorageBufferRange (words of 16-bit pairs).
  const std::int64_t per = detail::window_batch(engine, {{(in_image + 1) / 2, in_image / 2 + 1}, {(out_image + 1) / 2, out_image / 2 + 1}});
  const detail::ElementWindow aw = detail::gemm_window(a, 0, m * k, Access::Read);
  std::optional<detail::ElementWindow> bias_window;
  if (bias.defined()) bias_window = detail::gemm_window(bias, 0, m, Access::Read);
  for (std::int64_t n0 = 0; n0 < r.n; n0 += per) {
    const std::int64_t q = std::min(per, r.n - n0);
    const detail::ElementWindow b = detail::gemm_window(b_image, n0 * in_image, q * in_image, Access::Read);
    // A 16-bit element sharing its word with one outside the block is stored by atomics.
    const detail::ElementWindow cw = detail::gemm_window(dst, n0 * out_image, q * out_image, Access::ReadWrite);
    ComputeDispatch d;
    d.kernel = kernel;
    d.specialization = spec;
    d.bindings = {aw.binding, b.binding, cw.binding, bias_window ? bias_window->binding : aw.binding};
    d.push.set(push::ml_conv_igemm_coopmat{.gemm = {.M = u32(m),
                                                    .N = u32(p),
                                                    .K = u32(k),
                                                    .splits = 1,
                                                    .kchunk = u32(k),
                                                    .a_off = aw.offset,
                                                    .a_stride = 0,
                                                    .b_off = b.offset,
                                                    .b_stride = u32(in_image),
                                                    .c_off = cw.offset,
                                                    .c_stride = u32(out_image),
                                                    .c_split_stride = 0,
                                                    .bias_off = bias_window ? bias_window->offset : 0u,
                                                    .alpha = 1.0f,
                                                    .beta = 0.0f,
                                                    .has_bias = bias_window ? 1u : 0u},
                                           .in_h = u32(in_h),
                                           .in_w = u32(in_w),
                                           .out_w = u32(wide ? r.ww : r.wn),
                                           .kernel_hw = pair(r.kh, r.kw),
                                           .stride_hw = pair(r.sh, r.sw),
                                           .padding_hw = pair(r.ph, r.pw),
                                           .dilation_hw = pair(r.dh, r.dw),
                                           .positions = u32(p)});
    d.groups = {detail::groups_for(p, tile->bn), detail::groups_for(m, tile->bm), static_cast<std::uint64_t>(q)};
    out.push_back(std::move(d));
  }
  return true;
}

// A 16-bit convolution (dst narrow when !wide, wide when wide): lower_patch
// where conv.patch chooses it, the implicit GEMM where
// lower_conv_half_implicit takes it, else the columns path.
void lower_conv_half_any(const Relation& r, bool wide, const Matrix& src, const Matrix& weight, const Matrix& bias,
                         const Matrix& dst, const char* op, std::vector<ComputeDispatch>& out) {
  if (patch_chosen(r, wide, src.engine(), src.dtype())) return lower_patch(r, wide, src, weight, bias, dst, op, out);
  if (!lower_conv_half_implicit(r, wide, src, weight, bias, dst, op, out)) lower_conv_half(r, wide, src, weight, bias, dst, op, out);
}

// Split-K bounds of the implicit weight gradient, whose K (the batch's output
// positions) is long and whose C (the weight) is small.
constexpr std::int64_t kWgradSplitMinK = 1024;
constexpr std::int64_t kWgradMaxSplits = 16;

// The 16-bit weight gradient of groups 1 as one tensor-core implicit GEMM
// over the whole batch, channels last (ml/conv/igemm_coopmat, MODE 2): the
// output gradient permuted to [CN, N, P] (one strided copy), the wide input
// transposed to [N, H, W, CW], then dWt [CN, T * CW] = dY' x cols (K split
// into f32 partials summed by matrix/gemm_epilogue), transposed back to
// [CN, CW, T]. Returns that f32 gradient, or an undefined Matrix (appending
// nothing) where the device lacks the dtype's cooperative matrices, the
// tuning point conv.half_wgrad chooses columns, CW is not a multiple of 8,
// the extents pass the shader's limits or no tile fits.
Matrix lower_weight_grad_half_implicit(const Relation& r, const Matrix& narrow, const Matrix& wide, const char* op,
                                       std::vector<ComputeDispatch>& out) {
  const Engine& engine = narrow.engine();
  const DeviceInfo& dev = engine.device();
  const DType dtype = narrow.dtype();
  const std::int64_t p = r.hn * r.wn, taps = r.kh * r.kw, k = r.n * p, n = taps * r.cw, wide_image = r.cw * r.hw * r.ww;
  if (r.n == 0 || r.groups != 1 || r.cw % 8 != 0 || !detail::has_coop_gemm(dev, dtype) || k >= kChannelsLastLimit ||
      n >= kChannelsLastLimit)
    return Matrix();
  for (std::int64_t v : {r.kh, r.kw, r.sh, r.sw, r.ph, r.pw, r.dh, r.dw})
    if (v > 0xffff) return Matrix();
  // Each operand in one binding.
  const auto words = static_cast<std::int64_t>(dev.max_storage_buffer_range / 4) - 64;
  if (r.cn * k / 2 + 1 > words || r.n * wide_image / 2 + 1 > words) return Matrix();
  const std::shared_ptr<const Tuning> tuning = tuning_of(engine);
  const std::int64_t keys[] = {r.n, r.cn, r.groups, p, taps, 0};
  if (tuning->choose("conv.half_wgrad", keys) != "implicit") return Matrix();
  const Matrix dy = detail::allocate(engine, Shape{r.cn * k}, dtype), cols = detail::allocate(engine, Shape{r.n * wide_image}, dtype);
  const Matrix dwt = detail::allocate(engine, Shape{r.cn * n}), dw = detail::allocate(engine, Shape{r.cn * n});
  detail::GemmProblem g{.m = r.cn, .n = n, .k = k};
  g.a = {&dy};
  g.b = {&cols};
  g.c = {&dwt};
  const detail::CoopTile* tile = detail::choose_coop_tile(*tuning, dev, g, true);
  if (!tile) return Matrix();
  detail::permute_into(op, dtype, narrow.storage(), Shape{r.n, r.cn, p}, dy.storage(), {1, 0, 2}, out);
  detail::transpose_into(engine, op, dtype, wide.storage(), cols.storage(), r.n, r.cw, r.hw * r.ww, out);
  const detail::GemmSplitK split = detail::gemm_split_k(k, detail::gemm_tile_count(g, tile->bm, tile->bn),
                                                        detail::gemm_busy_groups(*tuning, g, detail::kGemmBusyGroups),
                                                        kWgradSplitMinK, kWgradMaxSplits, tile->bk);
  std::vector<std::uint32_t> spec = detail::coop_specialization(dev, *tile, {.vec_a = k % 8 == 0, .direct_c = n % 4 == 0});
  spec.push_back(2);  // MODE: weight gradient
  const auto pair = [](std::int64_t h, std::int64_t w) { return u32(h | (w << 16)); };
  const auto push = [&](ComputeDispatch& d, const push::matrix_gemm_problem& problem) {
    d.push.set(push::ml_conv_igemm_coopmat{.gemm = problem,
                                           .in_h = u32(r.hw),
                                           .in_w = u32(r.ww),
                                           .out_w = u32(r.wn),
                                           .kernel_hw = pair(r.kh, r.kw),
                                           .stride_hw = pair(r.sh, r.sw),
                                           .padding_hw = pair(r.ph, r.pw),
                                           .dilation_hw = pair(r.dh, r.dw),
                                           .positions = u32(p)});
  };
  const std::string_view kernel = dtype == DType::F16 ? kernels::ml_conv_igemm_coopmat : kernels::ml_conv_igemm_coopmat_bf16;
  detail::append_gemm_tiles(engine, g,
                            {kernel, spec, detail::ceil_div(n, tile->bn), detail::ceil_div(r.cn, tile->bm), split, push}, 1,
                            detail::gemm_window(dy, 0, r.cn * k, Access::Read), detail::gemm_window(cols, 0, r.n * wide_image, Access::Read),
                            detail::gemm_window(dwt, 0, r.cn * n, Access::Write), nullptr, out);
  detail::transpose_into(engine, op, DType::F32, dwt.storage(), dw.storage(), r.cn, taps, r.cw, out);
  return dw;
}

// The 16-bit counterpart of lower_weight_grad: the weight gradient (shape
// `weight`) from the narrow and wide tensors of one dtype. Returns the matrix
// it writes: the gradient in that dtype where one chunk holds the batch (one
// GEMM rounds straight into it), else its f32 sum over the chunks, for the
// caller to round. Takes lower_weight_grad_half_implicit where it applies.
Matrix lower_weight_grad_half(const Relation& r, const Matrix& narrow, const Matrix& wide, const Shape& weight, const char* op,
                              std::vector<ComputeDispatch>& out) {
  if (Matrix dw = lower_weight_grad_half_implicit(r, narrow, wide, op, out); dw.defined()) return dw.reshape(weight.to_vector());
  const Engine& engine = narrow.engine();
  const DType dtype = narrow.dtype();
  const std::int64_t p = r.hn * r.wn, rows = r.cw * r.kh * r.kw, kg = rows / r.groups, cng = r.cn / r.groups;
  const std::int64_t narrow_image = r.cn * p, wide_image = r.cw * r.hw * r.ww;
  const std::int64_t q = half_chunk(r, engine, op, {2 * narrow_image, 2 * wide_image, 2 * rows * p, 2 * r.cn * p});
  const Matrix cols = detail::allocate(engine, Shape{rows * q * p}, dtype);
  const Matrix gathered = detail::allocate(engine, Shape{r.cn * q * p}, dtype);
  const Matrix target = detail::allocate(engine, weight, q >= r.n ? dtype : DType::F32);
  for (std::int64_t n0 = 0; n0 < r.n; n0 += q) {
    const std::int64_t qc = std::min(q, r.n - n0), q_cols = qc * p;
    out.push_back(columns_pass(0, r, qc, dtype, half_window(wide, n0 * wide_image, qc * wide_image, Access::Read), Matrix(), narrow,
                               half_window(cols, 0, rows * q_cols, Access::Write), rows * q_cols));
    out.push_back(columns_pass(1, r, qc, dtype, half_window(narrow, n0 * narrow_image, qc * narrow_image, Access::Read), Matrix(),
                               narrow, half_window(gathered, 0, r.cn * q_cols, Access::Write), r.cn * q_cols));
    detail::GemmProblem g{.batch = r.groups, .m = cng, .n = kg, .k = q_cols, .trans_b = true, .beta = n0 > 0 ? 1.0f : 0.0f};
    g.a = {&gathered, 0, cng * q_cols};
    g.b = {&cols, 0, kg * q_cols};
    g.c = {&target, 0, cng * kg};
    detail::append_gemm(engine, g, out);
  }
  return target;
}

// The Spec of a call of `name` with attributes `a`.
template <class A>
Spec spec_of(const char* name, bool one_d, const A& a) {
  auto axes = [one_d](const std::vector<std::int64_t>& v, std::int64_t pad) {
    return one_d ? std::array<std::int64_t, 2>{pad, v[0]} : std::array<std::int64_t, 2>{v[0], v[1]};
  };
  Spec s;
  s.name = name;
  s.one_d = one_d;
  s.stride = axes(a.stride, 1);
  s.padding = axes(a.padding, 0);
  s.dilation = axes(a.dilation, 1);
  if constexpr (std::is_same_v<A, ConvTransposeAttributes>) {
    s.transposed = true;
    s.output_padding = axes(a.output_padding, 0);
  }
  s.groups = a.groups;
  return s;
}

// The F16 / BF16 forward lowering of a conv op (lower_conv_half_any; wide
// from narrow for a transposed one).
template <class A>
detail::Lowering<A> half_lowering(bool one_d) {
  return [one_d](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    const Spec s = spec_of(c.name, one_d, c.attributes);
    const Relation r = resolve(s, c.inputs[0], c.inputs[1], c.inputs[2]);
    lower_conv_half_any(r, s.transposed, c.inputs[0], c.inputs[1], c.inputs[2], out[0], c.name, ds);
  };
}

// The backward of a 16-bit call: the gradients in the inputs' dtype, the
// weight's summed over the batch in f32 (by one GEMM where patch_chosen) and
// the bias's summed in f32, each rounded once.
template <class A>
std::vector<Matrix> backward_half(const BackwardCall<A>& c, const Spec& s) {
  const Matrix &x = c.inputs[0], &w = c.inputs[1];
  const DType dtype = x.dtype();
  const Matrix dy = matrix::cast(c.grad_outputs[0], dtype);
  const Relation r = resolve(s, x, w, Matrix());
  const Engine& engine = dy.engine();
  const std::int64_t channels = dy.shape()[1];
  // The bias gradient's f32 sums read an f32 copy of dy.
  const Matrix dy32 = c.needs[2] ? matrix::cast(dy, DType::F32) : Matrix();
  std::vector<Matrix> grads(3);
  Matrix dw, db_sum;
  std::vector<ComputeDispatch> ds;
  std::vector<Matrix> scratch;
  if (c.needs[0]) {
    grads[0] = detail::allocate(engine, x.shape(), dtype);
    lower_conv_half_any(r, !s.transposed, dy, w, Matrix(), grads[0], s.name, ds);
  }
  if (c.needs[1]) {
    const Matrix &narrow = s.transposed ? x : dy, &wide = s.transposed ? dy : x;
    if (patch_chosen(r, s.transposed, engine, dtype)) {
      dw = detail::allocate(engine, w.shape(), dtype);
      lower_patch_weight_grad(r, narrow, wide, dw, s.name, ds);
    } else {
      dw = lower_weight_grad_half(r, narrow, wide, w.shape(), s.name, ds);
    }
  }
  if (c.needs[2]) {
    db_sum = detail::allocate(engine, Shape{channels});
    lower_bias_grad(dy32, channels, dy.numel() / (dy.shape()[0] * channels), db_sum, ds, scratch);
  }
  c.record(ds, {&x, &w, &dy}, {&grads[0], &dw, &db_sum}, detail::attribute_values(c.attributes));
  if (dw.defined()) grads[1] = matrix::cast(dw, dtype);
  if (db_sum.defined()) grads[2] = matrix::cast(db_sum, dtype);
  return grads;
}

// conv_1d / conv_2d (A = ConvAttributes) or conv_transpose_1d / _2d (A =
// ConvTransposeAttributes) over input, weight and the optional bias. The
// backward gives the gradients of input, weight and bias (where needed) from
// the output gradient as one backward op with the forward's attributes.
template <class A>
detail::Op<A> conv_op(const char* name, bool one_d) {
  return detail::Op<A>(
      {.name = name,
       .inputs = {"input", "weight", {"bias", true}},
       .infer = [one_d](const OpCall<A>& c) {
         const Spec s = spec_of(c.name, one_d, c.attributes);
         return std::vector<detail::OutputSpec>{
             {output_shape(s, resolve(s, c.inputs[0], c.inputs[1], c.inputs[2])), c.inputs[0].dtype()}};
       },
       .lower = {{DType::F32,
                  [one_d](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                    const Spec s = spec_of(c.name, one_d, c.attributes);
                    const Relation r = resolve(s, c.inputs[0], c.inputs[1], c.inputs[2]);
                    const auto d = lower_conv(r, s.transposed, c.inputs[0], c.inputs[1], c.inputs[2], out[0], c.name);
                    ds.insert(ds.end(), d.begin(), d.end());
                  }},
                 {DType::F16, half_lowering<A>(one_d)},
                 {DType::BF16, half_lowering<A>(one_d)}},
       .saves = [](const OpCall<A>&, const std::vector<bool>&) { return detail::Saves{{true, true, false}, {}}; },
       .backward = [one_d](const BackwardCall<A>& c) {
         const Matrix &x = c.inputs[0], &w = c.inputs[1], &dy = c.grad_outputs[0];
         const Engine& engine = dy.engine();
         if (x.shape()[0] == 0) {  // an empty batch: zero weight and bias gradients, no dispatch
           std::vector<Matrix> grads{c.needs[0] ? detail::allocate(engine, x.shape(), x.dtype()) : Matrix(),
                                     c.needs[1] ? detail::zeros(engine, w.shape(), x.dtype()) : Matrix(),
                                     c.needs[2] ? detail::zeros(engine, Shape{dy.shape()[1]}, x.dtype()) : Matrix()};
           c.record({}, {&x, &w, &dy}, {&grads[0], &grads[1], &grads[2]}, detail::attribute_values(c.attributes));
           return grads;
         }
         if (x.dtype() != DType::F32) return backward_half(c, spec_of(c.name, one_d, c.attributes));
         const Spec s = spec_of(c.name, one_d, c.attributes);
         const Relation r = resolve(s, x, w, Matrix());  // as in the forward: the bias does not enter it
         std::vector<Matrix> grads(3);
         std::vector<ComputeDispatch> ds;
         std::vector<Matrix> scratch;
         if (c.needs[0]) {
           grads[0] = detail::allocate(engine, x.shape());
           const auto d = lower_conv(r, !s.transposed, dy, w, Matrix(), grads[0], s.name);
           ds.insert(ds.end(), d.begin(), d.end());
         }
         if (c.needs[1]) {
           grads[1] = detail::allocate(engine, w.shape());
           // Narrow side: the convolution's output gradient or the transposed convolution's input.
           const Matrix &narrow = s.transposed ? x : dy, &wide = s.transposed ? dy : x;
           if (patch_chosen(r, s.transposed, engine, DType::F32))
             lower_patch_weight_grad(r, narrow, wide, grads[1], s.name, ds);
           else
             lower_weight_grad(r, narrow, wide, grads[1], s.name, ds, scratch);
         }
         if (c.needs[2]) {
           const std::int64_t channels = dy.shape()[1];
           grads[2] = detail::allocate(engine, Shape{channels});
           lower_bias_grad(dy, channels, dy.numel() / (dy.shape()[0] * channels), grads[2], ds, scratch);
         }
         c.record(ds, {&x, &w, &dy}, {&grads[0], &grads[1], &grads[2]}, detail::attribute_values(c.attributes));
         return grads;
       }});
}

const auto kConv1d = conv_op<ConvAttributes>("oa::ml::conv_1d", true);
const auto kConv2d = conv_op<ConvAttributes>("oa::ml::conv_2d", false);
const auto kConvTranspose1d = conv_op<ConvTransposeAttributes>("oa::ml::conv_transpose_1d", true);
const auto kConvTranspose2d = conv_op<ConvTransposeAttributes>("oa::ml::conv_transpose_2d", false);

std::vector<std::int64_t> list(const std::array<std::int64_t, 2>& a) { return {a[0], a[1]}; }

// Channels per group, input and output, up to which a 16-bit grouped
// convolution runs the f32 kernels between casts.
constexpr std::int64_t kHalfGroupChannels = 16;

// Applies a conv op. A 16-bit grouped convolution with few channels per
// group (16-bit operands, or f32 ones under autocast; depthwise included)
// runs the F32 op between casts, rounding its result once: its kernels
// (depthwise, direct, the implicit GEMM) serve all groups in one dispatch,
// where the 16-bit lowering runs one GEMM per group (on the H200 the F32
// kernels ran ResNeXt's 32 groups of 4 and of 16 channels 5.4x and 3.7x
// faster than those GEMMs; depthwise would be M = 1 products). Operands of
// mixed dtypes go to the op, which refuses them.
template <class A>
Matrix apply_conv(const detail::Op<A>& op, const Matrix& input, const Matrix& weight, const Matrix& bias, const A& attributes) {
  const bool one_dtype = input.defined() && weight.defined() && weight.dtype() == input.dtype() &&
                         (!bias.defined() || bias.dtype() == input.dtype());
  const std::optional<DType> autocast = autocast_dtype();
  const DType dtype = one_dtype && input.dtype() == DType::F32 && autocast ? *autocast : input.dtype();
  // input [N, C, ...]; weight [O, C / groups, ...], or [C, O / groups, ...] transposed.
  const std::int64_t g = attributes.groups;
  const auto few = [g](std::int64_t extent) { return extent % g == 0 && extent / g <= kHalfGroupChannels; };
  const bool few_per_group = one_dtype && g > 1 && input.rank() >= 2 && weight.rank() >= 2 && few(input.shape()[1]) &&
                             few(weight.shape()[0]) && weight.shape()[1] <= kHalfGroupChannels;
  if (!few_per_group || (dtype != DType::F16 && dtype != DType::BF16)) return detail::apply(op, {input, weight, bias}, attributes)[0];
  // The op's checks on the operands as given (infer records nothing), before their casts are recorded.
  const Matrix given[] = {input, weight, bias};
  (void)op.def.infer(detail::OpCall<A>{op.def.name, given, attributes, input.engine()});
  const AutocastGuard off(dtype, false);
  const auto f32 = [](const Matrix& m) { return m.defined() ? matrix::cast(m, DType::F32) : m; };
  return matrix::cast(detail::apply(op, {f32(input), f32(weight), f32(bias)}, attributes)[0], dtype);
}

}  // namespace

Matrix conv_1d(const Matrix& input, const Matrix& weight, const Matrix& bias, const Conv1dOptions& o) {
  return apply_conv(kConv1d, input, weight, bias, {{o.stride}, {o.padding}, {o.dilation}, o.groups});
}

Matrix conv_1d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride, std::int64_t padding,
               std::int64_t dilation) {
  return conv_1d(input, weight, bias, Conv1dOptions{stride, padding, dilation, 1});
}

Matrix conv_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, const Conv2dOptions& o) {
  return apply_conv(kConv2d, input, weight, bias, {list(o.stride), list(o.padding), list(o.dilation), o.groups});
}

Matrix conv_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride, std::int64_t padding,
               std::int64_t groups) {
  return conv_2d(input, weight, bias, Conv2dOptions{{stride, stride}, {padding, padding}, {1, 1}, groups});
}

Matrix conv_transpose_1d(const Matrix& input, const Matrix& weight, const Matrix& bias, const ConvTranspose1dOptions& o) {
  return apply_conv(kConvTranspose1d, input, weight, bias, {{o.stride}, {o.padding}, {o.output_padding}, {o.dilation}, o.groups});
}

Matrix conv_transpose_1d(const Matrix& input, const Matrix& weight, std::int64_t stride, std::int64_t padding,
                         std::int64_t dilation) {
  return conv_transpose_1d(input, weight, Matrix(), ConvTranspose1dOptions{stride, padding, 0, dilation, 1});
}

Matrix conv_transpose_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, const ConvTranspose2dOptions& o) {
  return apply_conv(kConvTranspose2d, input, weight, bias,
                    {list(o.stride), list(o.padding), list(o.output_padding), list(o.dilation), o.groups});
}

Matrix conv_transpose_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride,
                         std::int64_t padding) {
  return conv_transpose_2d(input, weight, bias, ConvTranspose2dOptions{{stride, stride}, {padding, padding}, {0, 0}, {1, 1}, 1});
}

namespace {
Matrix value_or_none(const Parameter& p) { return p.defined() ? p.value() : Matrix(); }
}  // namespace

Matrix conv_1d(const Matrix& input, const Parameter& weight, const Parameter& bias, const Conv1dOptions& options) {
  return conv_1d(input, weight.value(), value_or_none(bias), options);
}

Matrix conv_2d(const Matrix& input, const Parameter& weight, const Parameter& bias, const Conv2dOptions& options) {
  return conv_2d(input, weight.value(), value_or_none(bias), options);
}

Matrix conv_transpose_1d(const Matrix& input, const Parameter& weight, const Parameter& bias,
                         const ConvTranspose1dOptions& options) {
  return conv_transpose_1d(input, weight.value(), value_or_none(bias), options);
}

Matrix conv_transpose_2d(const Matrix& input, const Parameter& weight, const Parameter& bias,
                         const ConvTranspose2dOptions& options) {
  return conv_transpose_2d(input, weight.value(), value_or_none(bias), options);
}

}  // namespace oa::ml
