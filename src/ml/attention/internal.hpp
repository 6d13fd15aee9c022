#pragma once
// Pieces shared by the attention family's translation units (internal).
#include <iterator>
#include <optional>
#include <vector>

#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/ml/attention.hpp"

namespace oa::ml::attention_detail {

inline constexpr const char* kSdpa = "oa::ml::matrix::scaled_dot_product_attention";
inline constexpr const char* kSoftmax = "oa::ml::matrix::softmax_scaled_masked";
// Largest head or value dim of the flash kernels (16 named vec4 registers per lane, up to 4 lanes per row).
inline constexpr std::int64_t kMaxFlashDim = 256;

// How an additive mask lines up with the rows it is added to.
enum class MaskMode : std::uint32_t {
  None = 0,
  PerRow = 1,     // one mask row per score row
  Broadcast = 2,  // mask row = score row % period
};

// Validated geometry of q [BH, Sq, Dh], k [BH, Sk, Dh], v [BH, Sk, Dv] and
// an optional mask [BH*Sq, Sk] or [Sq, Sk]; everything the kernels index fits
// in 32 bits. Throws InvalidArgument naming `op`.
struct AttentionGeometry {
  std::int64_t bh = 0, sq = 0, sk = 0, dh = 0, dv = 0;
  MaskMode mask_mode = MaskMode::None;
  float scale = 1.0f;
  bool causal = false;
};
AttentionGeometry attention_geometry(const char* op, const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask,
                                     std::optional<float> scale, bool causal);

// Moves the dispatches of `from` to the end of `to`.
inline void append(std::vector<runtime::ComputeDispatch>& to, std::vector<runtime::ComputeDispatch> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// Attributes recorded with every scaled_dot_product_attention op.
std::vector<OpAttribute> sdpa_attributes(float scale, bool causal, const char* path);

// Row softmax y = softmax(x * scale + mask) over rows of `cols` columns, with
// optional bottom-right causal hiding (score row r is query r % sq of Sk = cols
// keys). x and y hold rows * cols elements; the mask (None: ignored) has
// `rows` rows (PerRow) or `period` rows (Broadcast). Chunks rows so that every
// binding fits maxStorageBufferRange.
struct SoftmaxRows {
  std::int64_t rows = 0, cols = 0;
  float scale = 1.0f;
  const Matrix* mask = nullptr;
  MaskMode mask_mode = MaskMode::None;
  std::int64_t period = 0;
  bool causal = false;
  std::int64_t sq = 0;
};
std::vector<runtime::ComputeDispatch> lower_softmax(const Engine& engine, const char* op, const SoftmaxRows& rows, const Matrix& x,
                                                    const Matrix& y);
// dx = scale * y * (dy - rowsum(y * dy)) over rows of `cols` columns.
std::vector<runtime::ComputeDispatch> lower_softmax_backward(const Engine& engine, const char* op, std::int64_t rows,
                                                             std::int64_t cols, float scale, const Matrix& y, const Matrix& dy,
                                                             const Matrix& dx);

// Batched product through the shared GEMM lowering: c = op(a) op(b) + beta * c
// for the layout, a, b, c rank 3 and already validated.
std::vector<runtime::ComputeDispatch> lower_bmm(const Engine& engine, BmmLayout layout, const Matrix& a, const Matrix& b,
                                                const Matrix& c, float beta = 0.0f);

}  // namespace oa::ml::attention_detail
