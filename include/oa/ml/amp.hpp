#pragma once
// Dynamic loss scaling for F16 training (oa::ml::amp), torch.amp.GradScaler
// semantics (Micikevicius et al., "Mixed Precision Training", ICLR 2018):
//
//   oa::ml::amp::GradScaler scaler;
//   { oa::AutocastGuard autocast(oa::DType::F16); loss = loss_fn(model(x), y); }
//   oa::backward(scaler.scale(loss));   // gradients of loss * scale
//   scaler.unscale_(optimizer);         // optional: before clipping gradients
//   scaler.step(optimizer);             // skipped on the device after an inf/NaN
//   scaler.update();                    // back off or grow the scale
//
// The scale, the growth tracker and the found-inf flag live on the device and
// every decision is taken there: no host read per step, so a step with the
// scaler can be captured in a StepGraph (oa/runtime/graph.hpp). BF16 has f32's
// exponent range and needs no scaler; a disabled scaler (enabled = false)
// passes everything through, so one training loop serves every precision.
// The master weights and the optimizer state stay f32 (oa/ml/optim.hpp).
//
// One found-inf flag per scaler: with several optimizers, an inf or NaN in
// any gradient unscaled before an optimizer's step skips that step too
// (torch keeps a flag per optimizer; unscale_ all of them before stepping any
// and the two agree except that oa skips them all).
#include <cstdint>
#include <optional>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/optim.hpp"

namespace oa::ml::amp {

struct GradScalerOptions {
  float init_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  std::int64_t growth_interval = 2000;
  bool enabled = true;
};

// The scaler's state as a checkpoint keeps it (torch's state_dict: "scale",
// "_growth_tracker").
struct GradScalerState {
  float scale = 65536.0f;
  std::int64_t growth_tracker = 0;  // clean steps in a row since the last change of scale
};

class GradScaler {
 public:
  // Its device state lives on `engine` (the default engine when not given):
  // scale f32 [] = init_scale, growth tracker i32 [] = 0, found_inf f32 [] = 0.
  // Throws InvalidArgument (naming oa::ml::amp::GradScaler) for init_scale
  // not finite and positive, growth_factor <= 1, backoff_factor outside
  // (0, 1), or growth_interval outside [1, 2^31 - 1].
  explicit GradScaler(GradScalerOptions options = {}, std::optional<Engine> engine = {});
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;

  // loss * scale (loss of any shape, f32, on the scaler's engine; the result
  // has loss's shape and history); loss itself when disabled. Throws
  // InvalidArgument for an undefined, non-f32 loss or one on another engine.
  // Source: torch.amp.GradScaler.scale.
  Matrix scale(const Matrix& loss) const;
  // Multiplies every gradient of the optimizer's parameters by 1 / scale in
  // place, in one semantic op ("oa::ml::amp::unscale_grads", one dispatch per
  // gradient), and sets found_inf where any of them holds an inf or NaN.
  // Nothing when disabled or no parameter has a gradient. Throws
  // FailedPrecondition when called twice for one optimizer before update(),
  // or after step() for it; InvalidArgument for gradients on another engine.
  // Source: torch.amp.GradScaler.unscale_.
  void unscale_(optim::Optimizer& optimizer);
  // unscale_(optimizer) unless already done, then optimizer.step(found_inf):
  // the update is skipped on the device after an inf or NaN (parameters,
  // state and update counts unchanged). Disabled: optimizer.step(). Throws
  // FailedPrecondition when called twice for one optimizer before update().
  // Source: torch.amp.GradScaler.step.
  void step(optim::Optimizer& optimizer);
  // On the device ("oa::ml::amp::update_scale", one dispatch): after found_inf
  // scale *= backoff_factor and the tracker restarts; otherwise the tracker
  // counts the step and, at growth_interval clean steps in a row, scale *=
  // growth_factor (kept only if finite) and the tracker restarts. Clears
  // found_inf. Nothing when disabled. Throws FailedPrecondition when no
  // unscale_ or step ran since the last update (torch: "No inf checks were
  // recorded prior to update."). Source: torch.amp.GradScaler.update.
  void update();

  bool enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }
  // The current scale (a host read); 1 when disabled. Source: get_scale().
  float get_scale() const;
  // f32 [] on the device: nonzero after unscale_ found an inf or NaN, until update().
  const Matrix& found_inf() const { return found_inf_; }
  // The scale and growth tracker (a host read) and their restoration, for
  // checkpoints. load_state throws InvalidArgument for a scale not finite and
  // positive or a negative tracker. Source: state_dict / load_state_dict.
  GradScalerState state() const;
  void load_state(const GradScalerState& state);

 private:
  GradScalerOptions options_;
  Matrix scale_, growth_tracker_, found_inf_;
  // The optimizers unscaled and stepped since the last update().
  std::vector<const optim::Optimizer*> unscaled_, stepped_;
};

}  // namespace oa::ml::amp
