#pragma once
// Pieces shared by the attention family's translation units (internal).
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include "matrix/lowering.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/ml/attention.hpp"

namespace oa::ml::attention_detail {

// The declaration of the family's ops (matrix/op_def.hpp).
using namespace detail::op_def;

inline constexpr const char* kSdpa = "oa::ml::scaled_dot_product_attention";
inline constexpr const char* kSoftmax = "oa::ml::softmax_scaled_masked";
// Largest head or value dim of the flash kernels (16 named vec4 registers per lane, up to 4 lanes per row).
inline constexpr std::int64_t kMaxFlashDim = 256;

// How an additive mask lines up with scores [BH, Sq, Sk] (BH = batch *
// heads): score (bh, i, j) reads mask element (bh / heads) * sb +
// (bh % heads) * sh + i * sq + j. A stride of 0 broadcasts that axis, so one
// mask serves every head (or batch entry) without copies.
struct MaskLayout {
  bool present = false;
  std::int64_t heads = 1, sb = 0, sh = 0, sq = 0;
};

// The layout of `mask` (argument `arg` of `op`) for scores [batch * heads, sq, sk]: the mask is
// [batch*heads*sq, sk] (one row per score row) or broadcasts to
// [batch, heads, sq, sk] as PyTorch broadcasts (any of its leading
// extents 1 or missing; its last extent must be sk). Throws InvalidArgument
// naming `op`, the mask and `scores_shape` otherwise.
MaskLayout mask_layout(const char* op, const char* arg, const Matrix& mask, std::int64_t batch, std::int64_t heads, std::int64_t sq, std::int64_t sk,
                       const Shape& scores_shape);

// An attention or softmax mask as the kernels read it: F32 masks as given;
// a Bool mask (true = attend) becomes an additive F32 mask of its own shape
// (0 / -inf; no per-head copy), written by `dispatches`, which the op records
// before its own. Throws InvalidArgument naming `op` and `arg` for other
// dtypes.
struct ResolvedMask {
  Matrix values;
  std::vector<runtime::ComputeDispatch> dispatches;
};
ResolvedMask resolve_mask(const char* op, const char* arg, const Matrix& mask);
// Appends the dispatch that writes the additive F32 form of Bool `mask` into
// `values` (of its shape).
void lower_bool_mask(const char* op, const Matrix& mask, const Matrix& values, std::vector<runtime::ComputeDispatch>& dispatches);
// Throws InvalidArgument naming `op` and `arg` unless mask is F32 or Bool.
void require_mask_dtype(const char* op, const char* arg, const Matrix& mask);

// Validated geometry of q [BH, Sq, Dh] (or [B, H, Sq, Dh]), k, v alike with
// Sk rows, and an optional mask (mask_layout); everything the kernels index
// fits in 32 bits. Throws InvalidArgument naming `op`.
struct AttentionGeometry {
  std::int64_t batch = 0, heads = 1;  // bh = batch * heads; heads = 1 for 3-D inputs
  std::int64_t bh = 0, sq = 0, sk = 0, dh = 0, dv = 0;
  bool four_d = false;  // q, k, v were [B, H, S, D]
  MaskLayout mask;
  float scale = 1.0f;
  bool causal = false;
  std::int64_t diag = 0;  // causal: query i sees keys j <= i + diag (Sk - Sq lower-right, 0 upper-left)
};
AttentionGeometry attention_geometry(const char* op, const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask,
                                     std::optional<float> scale, bool causal, CausalVariant variant);

// Moves the dispatches of `from` to the end of `to`.
inline void append(std::vector<runtime::ComputeDispatch>& to, std::vector<runtime::ComputeDispatch> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// Throws Unsupported naming `op` when g's head or value dim exceeds kMaxFlashDim.
void require_flash_dims(const char* op, const AttentionGeometry& g);

// The flash path of attention geometry g: appends the dispatches that write
// out [.., Sq, Dv], lse [.., Sq] and the softmax stats [.., Sq, 2] from q, k,
// v and `mask` (F32, as the kernels read it, or undefined). Lowered either by
// the fused kernels (flash_forward, or flash_decode for a few query rows) or
// through the shared GEMMs (the scores materialised for a chunk of
// batch-heads at a time, at most FlashLoweringGuard::score_bytes()), as
// FlashLoweringGuard and the rule in flash.cpp choose.
void lower_flash_attention(const Engine& engine, const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                           const Matrix& mask, const Matrix& out, const Matrix& lse, const Matrix& stats,
                           std::vector<runtime::ComputeDispatch>& dispatches);
// Its backward: the gradients of q, k and v from the forward's output and
// stats, the output's gradient and the log-sum-exp's (undefined: zero),
// written by the dispatches appended. Lowered either by the fused kernels
// (flash_backward_dq, then flash_backward_dkv: O(BH Sq) extra memory) or
// through the shared GEMMs (scores and their gradients materialised, at most
// twice FlashLoweringGuard::score_bytes()). Either backward follows either
// forward: both write the same stats.
AttentionGradients lower_flash_attention_backward(const Engine& engine, const AttentionGeometry& g, const Matrix& q, const Matrix& k,
                                                  const Matrix& v, const Matrix& mask, const Matrix& out, const Matrix& stats,
                                                  const Matrix& grad, const Matrix& grad_lse,
                                                  std::vector<runtime::ComputeDispatch>& dispatches);

// A lowering of the flash forward or backward. Auto: the rule in flash.cpp;
// tests force the others to check each on every device. Coopmat (the
// forward only): the tensor-core kernel for 16-bit q, k, v, which falls back
// to Fused where the device or the problem does not allow it.
enum class FlashLowering { Auto, Fused, Gemm, Coopmat };
// 128 MiB of scores (and as much of their gradients) per chunk: a chunk of
// Llama's 2048 x 2048 scores is 8 heads, 2048 GEMM tiles of 128 x 128.
inline constexpr std::uint64_t kGemmScoreBytes = std::uint64_t{128} << 20;
// Scoped choice for this thread (as SdpaBackendGuard) of the forward's and
// the backward's lowering, with the GEMM lowerings' budget for one chunk's
// scores (tests shrink it to make chunks). Gemm falls back to Fused where the
// GEMM lowering cannot serve the problem (packed heads, or one head's scores
// above the budget).
class FlashLoweringGuard {
 public:
  FlashLoweringGuard(FlashLowering forward, FlashLowering backward, std::uint64_t score_bytes = kGemmScoreBytes)
      : previous_{forward_, backward_, score_bytes_} {
    forward_ = forward;
    backward_ = backward;
    score_bytes_ = score_bytes;
  }
  ~FlashLoweringGuard() {
    forward_ = previous_.forward;
    backward_ = previous_.backward;
    score_bytes_ = previous_.score_bytes;
  }
  FlashLoweringGuard(const FlashLoweringGuard&) = delete;
  FlashLoweringGuard& operator=(const FlashLoweringGuard&) = delete;
  static FlashLowering forward() { return forward_; }
  static FlashLowering backward() { return backward_; }
  static std::uint64_t score_bytes() { return score_bytes_; }

 private:
  struct {
    FlashLowering forward, backward;
    std::uint64_t score_bytes;
  } previous_;
  static inline thread_local FlashLowering forward_ = FlashLowering::Auto;
  static inline thread_local FlashLowering backward_ = FlashLowering::Auto;
  static inline thread_local std::uint64_t score_bytes_ = kGemmScoreBytes;
};

// Row softmax y = softmax(x * scale + mask) over rows of `cols` columns, with
// optional causal hiding. Row r is query r % sq of batch-head
// r / sq, against Sk = cols keys; the mask (when mask.present) is read
// through `mask` (MaskLayout). x and y hold rows * cols elements. Lanes and
// chunks (x and y windows within maxStorageBufferRange) come from
// detail::lower_rows, the lowering every row kernel shares.
struct SoftmaxRows {
  std::int64_t rows = 0, cols = 0;
  float scale = 1.0f;
  const Matrix* mask_values = nullptr;
  MaskLayout mask;
  bool causal = false;
  std::int64_t sq = 1;
  std::int64_t diag = 0;  // causal: query i sees keys j <= i + diag
};
std::vector<runtime::ComputeDispatch> lower_softmax(const Engine& engine, const char* op, const SoftmaxRows& rows, const Matrix& x,
                                                    const Matrix& y);
// dx = scale * y * (dy - rowsum(y * dy)) over rows of `cols` columns.
std::vector<runtime::ComputeDispatch> lower_softmax_backward(const Engine& engine, const char* op, std::int64_t rows,
                                                             std::int64_t cols, float scale, const Matrix& y, const Matrix& dy,
                                                             const Matrix& dx);

// Batched product through the shared GEMM lowering: c = op(a) op(b) + beta * c
// for the layout over the last two axes, batched over the leading ones (rank
// >= 3, contiguous, already validated; any extent may be 0).
std::vector<runtime::ComputeDispatch> lower_bmm(const Engine& engine, BmmLayout layout, const Matrix& a, const Matrix& b,
                                                const Matrix& c, float beta = 0.0f);

}  // namespace oa::ml::attention_detail
