#pragma once
// Optimizers, gradient clipping and learning-rate schedules (oa::ml::optim).
//
// SGD, Adam and AdamW update every parameter with one fused kernel,
// multi-tensor as PyTorch's foreach/fused optimizers: each dispatch updates
// up to 8 parameters (6 with amsgrad; or maxStorageBufferRange pieces of a
// very large one), so a step over many small parameters costs a few
// dispatches; no host round trip, no temporaries. A plain step puts only
// parameters with equal update counts in one dispatch. A step is one
// semantic op ("oa::ml::optim::sgd_step", or "oa::ml::optim::adamw_step" for
// Adam and AdamW) spanning those dispatches. Parameters whose gradient is
// undefined are skipped, as PyTorch
// skips parameters whose .grad is None. step() bumps the version of every
// parameter it updates, so a backward that saved an old value refuses to run.
//
// A plain step() passes the learning rate and each parameter's update count
// (Adam's bias corrections, SGD's first update) to the kernels as push
// constants; the counts stay on the host. A step with found_inf, or one
// captured in a StepGraph (oa/runtime/graph.hpp), instead reads them from
// device memory: the learning rate is written there in stream order (no
// wait), the counts live there and one more dispatch advances them, so a
// captured step stays exact on replay (inside a capture step() records the
// update only, and each replay first writes the learning rate set before it
// and counts it in steps()). The optimizer must outlive the graph's replays.
// The first plain step after such steps reads their counts back once (a
// host read). Both forms compute the same updates bit for bit.
//
// Loss scaling (oa/ml/amp.hpp): step(found_inf) reads GradScaler's found-inf
// flag on the device and, where it is nonzero, changes nothing (parameters,
// state and update counts), with no host read, as torch's fused optimizers
// take found_inf; steps() still counts the call.
//
// State (momentum_buffer, exp_avg, exp_avg_sq, max_exp_avg_sq) lives in Matrices on the
// parameters' engine, created as zeros with the optimizer. save_state /
// load_state write and read it as safetensors, named "<parameter>.<buffer>",
// with metadata "optimizer", "lr", "step" (steps taken) and "<parameter>.step"
// (steps that updated that parameter), <parameter> being the parameter's
// name in state_names().
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/checkpoint.hpp"
#include "oa/ml/parameter.hpp"

namespace oa::ml::optim {

// The part every optimizer shares: parameters, learning rate, step counts,
// zero_grad and state checkpoints.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient. Throws InvalidArgument,
  // before recording anything, when a gradient's shape, dtype or engine
  // differs from its parameter's (naming the parameter).
  void step() { step(Matrix()); }
  // The same, except that nothing changes where `found_inf` (f32 [], nonzero
  // after an inf or NaN gradient: GradScaler::found_inf()) is nonzero when
  // the step runs on the device; undefined: step(). Besides step()'s errors,
  // throws InvalidArgument for a found_inf that is not f32 [] on the
  // parameters' engine. Source: torch's fused AdamW/SGD step(found_inf=...).
  virtual void step(const Matrix& found_inf) = 0;
  // Clears every parameter's gradient (Parameter::zero_grad).
  void zero_grad() const;

  float lr() const { return lr_; }
  // The learning rate of the next step (changing it every step costs one
  // small write). Throws InvalidArgument for a negative or non-finite lr.
  void set_lr(float lr);
  // step() calls so far (a step skipped for found_inf included).
  std::int64_t steps() const { return steps_; }
  // Updates applied to each parameter, in parameter order: its step() calls
  // with a gradient and found_inf zero. A host read (waits for the device).
  std::vector<std::int64_t> parameter_steps() const;
  const std::vector<Parameter>& parameters() const { return parameters_; }
  // The name of each parameter in state() and the checkpoint, in parameter
  // order: its name, or "<name>@<i>" (i its position in parameters()) where
  // several parameters share a name, as a list gathered from two modules
  // (torch keys an optimizer's state by position alone).
  const std::vector<std::string>& state_names() const { return state_names_; }

  // The state Matrices, "<parameter>.<buffer>", in parameter order.
  virtual NamedMatrices state() const = 0;
  // Writes state() and the metadata to `path` (see oa/ml/checkpoint.hpp).
  void save_state(const std::filesystem::path& path) const;
  // Reads a file written by save_state of an optimizer of the same kind over
  // parameters of the same names and shapes: restores the state in place, the
  // step counts and the learning rate. Throws InvalidArgument naming the file
  // and the fault (another optimizer kind, missing or malformed metadata, or
  // a missing, extra or mismatched state tensor) before changing anything.
  void load_state(const std::filesystem::path& path);
  // The same from memory (what state(), lr(), steps() and parameter_steps()
  // give, as torch's optimizer.load_state_dict): `tensors` must hold exactly
  // state()'s names, each with the same shape and dtype on the parameters'
  // engine; they are copied into the state on the device (versions bumped).
  // Throws InvalidArgument naming the fault before changing anything: a
  // missing, extra, repeated or mismatched tensor, a negative or non-finite
  // lr, negative steps, or parameter_steps of another count than the
  // parameters or outside [0, steps].
  void load_state(const NamedMatrices& tensors, float lr, std::int64_t steps, const std::vector<std::int64_t>& parameter_steps);

 protected:
  // Throws InvalidArgument for no parameters, an undefined one, the same
  // parameter twice, parameters on different engines, or a bad lr; `kind` names the
  // optimizer in messages and metadata ("sgd", "adam", "adamw").
  // `constants_per_parameter`: how many floats step_constants() gives (one
  // more, the updated flag that ml/optim/count_steps reads, follows them).
  Optimizer(std::vector<Parameter> parameters, float lr, const char* kind, std::size_t constants_per_parameter);
  // The gradients of the parameters, undefined where there is none, and
  // found_inf or no_inf_; throws as step(found_inf).
  std::vector<Matrix> checked_gradients(const char* op, const Matrix& found_inf, Matrix& flag) const;
  // The constants of parameter i's next update (the learning rate) that its
  // kernel reads from step_constants_.
  virtual void step_constants(std::size_t i, std::span<float> out) const = 0;
  // Whether this step pushes its values to the update kernels instead of
  // reading buffers: a step without found_inf outside a capture, which then
  // writes nothing and runs no count kernel (the update counts are kept on
  // the host until a step with found_inf or a capture needs them on the
  // device). If so, `constants` gets step_constants() and `counts` the update
  // count of each parameter in `updated`.
  bool pushes_step_values(const Matrix& found_inf, const std::vector<std::size_t>& updated, std::vector<float>& constants,
                          std::vector<float>& counts);
  // One step updating the parameters `updated`: writes step_constants_
  // (outside a capture, unless `pushed`), calls `record` (which records the
  // update) and counts the step; inside a capture each replay does the
  // writing and counting.
  void run_step(const std::vector<std::size_t>& updated, bool pushed, const std::function<void()>& record);

  std::vector<Parameter> parameters_;
  std::vector<std::string> state_names_;
  float lr_;
  std::int64_t steps_ = 0;
  const char* kind_;
  std::size_t constants_per_parameter_;
  Matrix step_constants_;  // step_constants() and the updated flag of every parameter, in order
  Matrix counts_;          // f32 [parameters]: updates applied to each parameter (on the device)
  Matrix no_inf_;          // f32 [] zero: found_inf of a step without a GradScaler
  std::vector<std::int64_t> host_counts_;  // the same, current while !counts_on_device_
  bool counts_on_device_ = false;          // counts_ is current (and host_counts_ may be stale)

 private:
  // Uploads the host's update counts if counts_ is stale, then the step constants.
  void write_step_constants(const std::vector<std::size_t>& updated);
  // Both load_state forms; `source` names where the state came from in errors.
  void restore(const NamedMatrices& tensors, float lr, std::int64_t steps, const std::vector<std::int64_t>& parameter_steps,
               const std::string& source);
};

// torch.optim.SGD.
struct SgdOptions {
  float lr = 1e-3f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// With d = grad + weight_decay * p: when momentum != 0, the buffer becomes
// b = d on a parameter's first update and b = momentum * b + (1 - dampening) * d
// after, and d becomes d + momentum * b (nesterov) or b; then p = p - lr * d.
// State: "<name>.momentum_buffer" when momentum != 0.
class Sgd final : public Optimizer {
 public:
  // Throws InvalidArgument for lr, momentum, dampening or weight_decay that is
  // negative or non-finite, and for nesterov without momentum > 0 and
  // dampening == 0 (as PyTorch), besides the Optimizer checks.
  Sgd(std::vector<Parameter> parameters, SgdOptions options = {});
  using Optimizer::step;
  void step(const Matrix& found_inf) override;
  NamedMatrices state() const override;
  // The options given (options().lr is the initial rate; lr() the current one).
  const SgdOptions& options() const { return options_; }

 private:
  // lr.
  void step_constants(std::size_t i, std::span<float> out) const override;

  SgdOptions options_;
  std::vector<Matrix> momentum_;  // per parameter; empty without momentum
};

// torch.optim.Adam.
struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool amsgrad = false;
};

// torch.optim.AdamW.
struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  bool amsgrad = false;
};

// What Adam and AdamW share: Adam's moments with bias correction (Kingma &
// Ba 2015), eps outside the square root, and AMSGrad (Reddi et al., "On the
// Convergence of Adam and Beyond", ICLR 2018) as torch computes them; at the
// parameter's t-th update, with d the gradient as the weight decay leaves it:
//   m = beta1 * m + (1 - beta1) * d,   v = beta2 * v + (1 - beta2) * d^2
//   amsgrad: v_max = max(v_max, v), and v_max stands for v below
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Both record the one op "oa::ml::optim::adamw_step" (its attribute
// `decoupled` tells AdamW from Adam). State: "<name>.exp_avg",
// "<name>.exp_avg_sq" and, with amsgrad, "<name>.max_exp_avg_sq" (all f32,
// zeros at first, as torch's).
class AdamFamily : public Optimizer {
 public:
  using Optimizer::step;
  void step(const Matrix& found_inf) override;
  NamedMatrices state() const override;

 protected:
  // The hyperparameters besides lr; `decoupled`: AdamW's decay, else Adam's L2 term.
  struct Hyper {
    float beta1, beta2, eps, weight_decay;
    bool amsgrad, decoupled;
  };
  // Throws InvalidArgument for a negative or non-finite lr, eps or
  // weight_decay, or betas outside [0, 1), besides the Optimizer checks;
  // `kind` names the optimizer ("adam", "adamw").
  AdamFamily(std::vector<Parameter> parameters, float lr, const char* kind, Hyper hyper);

 private:
  // AdamW: 1 - lr * weight_decay, Adam: weight_decay; then lr (the kernel
  // takes the bias corrections from the update count).
  void step_constants(std::size_t i, std::span<float> out) const override;

  Hyper hyper_;
  std::vector<Matrix> exp_avg_;
  std::vector<Matrix> exp_avg_sq_;
  std::vector<Matrix> max_exp_avg_sq_;  // per parameter with amsgrad; empty without
};

// torch.optim.Adam: weight decay as an L2 term of the gradient,
// d = grad + weight_decay * p, computed inside the fused update (the
// parameter's gradient is left as it was). Errors: as AdamFamily's.
class Adam final : public AdamFamily {
 public:
  Adam(std::vector<Parameter> parameters, AdamOptions options = {});
  // The options given (options().lr is the initial rate; lr() the current one).
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
};

// torch.optim.AdamW: decoupled weight decay (Loshchilov & Hutter, "Decoupled
// Weight Decay Regularization", ICLR 2019), p = p * (1 - lr * weight_decay)
// before the update, with d = grad. Errors: as AdamFamily's.
class AdamW final : public AdamFamily {
 public:
  AdamW(std::vector<Parameter> parameters, AdamWOptions options = {});
  // The options given (options().lr is the initial rate; lr() the current one).
  const AdamWOptions& options() const { return options_; }

 private:
  AdamWOptions options_;
};

// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, L2):
// total = sqrt(sum over all gradients of sum(g^2)); every gradient is scaled
// in place by min(max_norm / (total + 1e-6), 1) (its version is bumped).
// The total is reduced on the GPU by a deterministic tree (no atomics) and the
// scale is applied there without a host read; the result is the total norm as
// a Matrix [] that the caller may read. Parameters without a gradient are
// skipped; with none at all the result is 0 and nothing is recorded.
// Semantic op "oa::ml::optim::clip_grad_norm". Throws InvalidArgument for a
// negative or non-finite max_norm, a non-f32 or undefined gradient, or
// gradients on different engines.
Matrix clip_grad_norm(const std::vector<Parameter>& parameters, float max_norm);
// The same over gradient Matrices themselves (each must be defined and f32).
Matrix clip_grad_norm(const std::vector<Matrix>& gradients, float max_norm);

// ── Learning-rate schedules: host-side functions of the step (0-based) ───────

// Linear warmup, then half a cosine down to min_lr (as transformers'
// get_cosine_schedule_with_warmup, plus a floor):
//   step < warmup:          base_lr * step / warmup
//   warmup <= step < total: min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2
//   step >= total:          min_lr
// Throws InvalidArgument for step < 0, warmup < 0, total <= warmup, or
// min_lr outside [0, base_lr].
double warmup_cosine_lr(std::int64_t step, double base_lr, std::int64_t warmup_steps, std::int64_t total_steps,
                        double min_lr = 0.0);

// torch.optim.lr_scheduler.StepLR: base_lr * gamma^floor(step / step_size).
// Throws InvalidArgument for step < 0, step_size < 1 or gamma outside (0, 1].
double step_decay_lr(std::int64_t step, double base_lr, std::int64_t step_size, double gamma = 0.1);

}  // namespace oa::ml::optim
