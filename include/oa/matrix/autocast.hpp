#pragma once
// Autocast: mixed precision as a scoped, per-thread policy (torch.autocast).
//
// While an AutocastGuard enables it on a thread, every op called on that
// thread has its floating inputs cast by the one generic apply
// (src/matrix/op_def.hpp) according to ONE table, autocast_policy(op name),
// looked up once per op when the op is declared (not on each call):
//   Lower    the GEMM family (matmul, matmul_nt, linear, bmm, bmm_nt, bmm_tn),
//            the convolutions (conv_1d, conv_2d, conv_transpose_1d,
//            conv_transpose_2d) and attention (scaled_dot_product_attention
//            and its packed causal form): f32 inputs are cast to the scope's
//            dtype (F16 or BF16), so the op runs on the tensor cores where the
//            device has them and its result has that dtype (torch.autocast's
//            "lower_precision_fp" list). A detached input (an attention
//            mask) is left as it is, and so is linear's f32 bias: the GEMM
//            adds it to its f32 accumulators before rounding, and its
//            gradient is summed in f32 (torch casts the bias too; keeping
//            it saves a cast each step and a rounding of the gradient).
//   F32      softmax, log_softmax, the norms, the losses, the reductions,
//            exp/log/pow-like ops, and the recurrent cells (no 16-bit
//            lowering yet: move them to Lower when one lands): 16-bit
//            inputs are widened to f32 (torch's "fp32" list).
//   Promote  every op not listed: mixed floating inputs are widened to the
//            widest (f16 with bf16 gives f32, as torch's type promotion), and
//            to f32 where the op has no lowering for that dtype, so that a
//            16-bit result of a Lower op flows into any op. The elementwise
//            ops (GELU, add, mul, ...), sum_to and the attention head
//            permutations (split_heads, merge_heads, split_qkv_heads) have
//            16-bit lowerings, as do permute, slice and expand, so a 16-bit
//            projection reaches attention and the next projection without a
//            cast, and max, min, argmax and argmin keep a 16-bit input's
//            dtype (they reduce in f32 and round once, as torch.amax does);
//            concat, chunk and split take every dtype (16-bit operands stay
//            16-bit, as torch.cat under autocast), and the indexing ops
//            (index_select, gather, ...) are f32, and widen.
//   Keep     oa::matrix::cast itself: never touched.
// Integer and bool inputs (indices, masks) and absent optional inputs are
// never cast. The casts are oa::matrix::cast ops (each its own semantic op),
// so autograd flows through them: a leaf's gradient arrives in its own dtype
// (f32 master weights get f32 gradients). Within the outermost enabled scope
// the cast of a leaf that requires a gradient (a Parameter's value) is cached
// per target dtype while the leaf's version is unchanged, so a weight used
// several times (an RNN's steps, tied embeddings) is cast once per scope, as
// torch.autocast's cast cache; the cache is dropped when that scope ends. An
// op none of whose inputs need a cast runs as it would outside the scope.
//
// Backward (oa::backward) runs with autocast disabled: the backward rules run
// in the dtypes the forward saved, as torch's autograd engine does. Enable
// autocast around the forward pass and the loss, not around backward or the
// optimizer step (as PyTorch recommends).
//
// State: per thread (a scope on one thread does not affect another), not per
// engine.
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "oa/core/dtype.hpp"

namespace oa {

enum class AutocastPolicy { Lower, F32, Promote, Keep };

// The policy table's entry for an op, by its semantic name
// ("oa::ml::linear"): Promote for an op the table does not list. Throws
// nothing. Source: the op lists of torch/csrc/autograd/autocast_mode.cpp.
AutocastPolicy autocast_policy(std::string_view op);
// The table itself: every listed op with its policy (static storage).
std::span<const std::pair<std::string_view, AutocastPolicy>> autocast_table();

// The dtype ops cast to under Lower on this thread: F16 or BF16 inside an
// enabled scope, nullopt when autocast is off. Throws nothing. Source:
// torch.is_autocast_enabled() with torch.get_autocast_dtype().
std::optional<DType> autocast_dtype();

// Enables autocast to `dtype` on this thread while alive (or, with `enabled`
// false, disables it, as torch.autocast(enabled=False) inside another scope);
// the destructor restores the previous state, so scopes nest; `dtype` is
// ignored when disabling. The cast cache lives as long as the outermost
// enabled scope. Throws InvalidArgument (naming oa::AutocastGuard) when enabled with a dtype
// other than F16 or BF16.
// Source: torch.autocast(device_type, dtype, enabled, cache_enabled=True).
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
};

}  // namespace oa
