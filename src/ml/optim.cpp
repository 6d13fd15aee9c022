#include "oa/ml/optim.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <numeric>
#include <set>
#include <string_view>

#include "matrix/op_def.hpp"
#include "ml/update_items.hpp"

namespace oa::ml::optim {

namespace {

using namespace detail::op_def;

const char* const kSgdOp = "oa::ml::optim::sgd_step";
const char* const kAdamWOp = "oa::ml::optim::adamw_step";
const char* const kClipOp = "oa::ml::optim::clip_grad_norm";

// Elements per workgroup chunk of ml/optim/sum_squares (its CHUNK).
constexpr std::int64_t kReduceChunk = 2048;
constexpr std::size_t kReduceInputs = 8;

void require_hyper(float value, const char* op, const char* what) {
  if (!std::isfinite(value) || value < 0)
    fail(ErrorKind::InvalidArgument, "{}: {} = {} must be finite and non-negative", op, what, value);
}

// The byte offset of element chunk `c` of a 4-byte-element Matrix.
std::uint64_t offset_of(const detail::ElementChunk& c) { return static_cast<std::uint64_t>(c.begin) * 4; }

// ── The fused update ops ─────────────────────────────────────────────────────
// One op per optimizer step over every parameter that has a gradient: its
// inputs are (parameter, gradient) pairs, its results the parameters, updated
// in place. Their attributes also hold, untraced, per pair the parameter's
// index in the optimizer (`slots`, which indexes the step constants) and its
// state buffers, which the step updates in place as well.
// The lowering is multi-tensor (ml/update_items.hpp): an item is an element
// chunk of a pair (Item::tensor is the pair's index), up to items_per_dispatch
// (UpdateBuffers) a dispatch.

using items::Item;
using items::kItems;

// The (parameter, gradient) pairs of the parameters with a gradient; their
// indices go to `slots`.
std::vector<Matrix> with_gradients(const std::vector<Parameter>& parameters, const std::vector<Matrix>& grads,
                                   std::vector<std::size_t>& slots) {
  std::vector<Matrix> pairs;
  pairs.reserve(2 * parameters.size());
  slots.reserve(parameters.size());
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!grads[i].defined()) continue;
    pairs.push_back(parameters[i].value());
    pairs.push_back(grads[i]);
    slots.push_back(i);
  }
  return pairs;
}

// What every update op reads besides its pairs: per pair the parameter's
// index in the optimizer (`slots`, which indexes the step constants and the
// update counts), the step constants, the update counts and found_inf; or,
// for a step that pushes them (Optimizer::pushes_step_values), per pair its
// step constants and update count, and no buffers.
struct UpdateBuffers {
  std::vector<std::size_t> slots;
  Matrix constants;  // Optimizer::step_constants_
  Matrix counts;     // Optimizer::counts_
  Matrix found_inf;  // GradScaler's, or Optimizer::no_inf_
  std::uint32_t stride = 0;  // step constants per parameter
  bool pushed = false;
  std::vector<float> pushed_constants;  // stride - 1 per pair
  std::vector<float> pushed_counts;     // per pair
  std::size_t items_per_dispatch = kItems;
};

// Appends the bindings of the step constants, the update counts and found_inf:
// the buffers, or (pushed) the gradient range of item 0, never read.
void bind_step_buffers(const UpdateBuffers& b, std::span<const Matrix> pairs, std::span<const Item> items, ComputeDispatch& d) {
  if (b.pushed) {
    for (int i = 0; i < 3; ++i) d.bindings.push_back(items::binding(pairs[2 * items[0].tensor + 1], items[0], runtime::Access::Read));
    return;
  }
  for (const Matrix* m : {&b.constants, &b.counts, &b.found_inf}) d.bindings.push_back(BufferBinding::read(m->storage()));
}

// The element counts and slots of `items` (0 in the unused places).
push::ml_optim_update_items item_push(const UpdateBuffers& b, std::span<const Item> items) {
  std::array<std::uint32_t, kItems> slot{};
  for (std::size_t k = 0; k < items.size(); ++k) slot[k] = static_cast<std::uint32_t>(b.slots[items[k].tensor]);
  return {.n = items::counts(items), .slot = slot};
}

// The pairs in dispatch order: those that push equal step values (bit for
// bit) next to each other, `starts` true where a run of equal values begins
// (a new dispatch); all in one run when the step reads its values from buffers.
std::vector<std::size_t> dispatch_order(const UpdateBuffers& b, std::size_t pairs, std::vector<bool>& starts) {
  std::vector<std::size_t> order(pairs);
  std::iota(order.begin(), order.end(), std::size_t{0});
  starts.assign(pairs, false);
  if (!b.pushed) return order;
  // Per pair its pushed values as bits: the update count, then the step constants.
  const std::size_t per = b.stride;
  std::vector<std::uint32_t> keys(pairs * per);
  for (std::size_t j = 0; j < pairs; ++j) {
    keys[j * per] = std::bit_cast<std::uint32_t>(b.pushed_counts[j]);
    for (std::size_t c = 1; c < per; ++c) keys[j * per + c] = std::bit_cast<std::uint32_t>(b.pushed_constants[j * (per - 1) + c - 1]);
  }
  auto key = [&](std::size_t j) { return std::span<const std::uint32_t>(keys).subspan(j * per, per); };
  // Usually every pair pushes the same values: one run, in order, with no sort.
  if (std::ranges::all_of(order, [&](std::size_t j) { return std::ranges::equal(key(j), key(0)); })) return order;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return std::ranges::lexicographical_compare(key(i), key(j)); });
  for (std::size_t at = 1; at < pairs; ++at) starts[at] = !std::ranges::equal(key(order[at]), key(order[at - 1]));
  return order;
}

// An update op whose results are the parameters, written in place, and whose
// lowering is `lower(call, items)` for each dispatch of up to
// items_per_dispatch items
// (the dispatch without its workgroup count), then, unless the step pushes
// its values, ml/optim/count_steps over the update counts.
template <class A>
Op<A> update_op(const char* name, std::function<ComputeDispatch(const OpCall<A>&, std::span<const Item>)> lower) {
  return Op<A>({.name = name,
                .inputs = {"parameter", "gradient"},
                .outputs = -1,
                .infer = [](const OpCall<A>& c) {
                  std::vector<OutputSpec> out;
                  out.reserve(c.inputs.size() / 2);
                  for (std::size_t j = 0; j < c.inputs.size(); j += 2)
                    out.push_back({c.inputs[j].shape(), DType::F32, false, static_cast<int>(j)});
                  return out;
                },
                .lower = {{DType::F32,
                           [lower](const OpCall<A>& call, const std::vector<Matrix>&, std::vector<ComputeDispatch>& ds) {
                             const UpdateBuffers& b = call.attributes;
                             std::vector<bool> starts;
                             const std::vector<std::size_t> order = dispatch_order(b, call.inputs.size() / 2, starts);
                             items::batch(
                                 call.engine, order, starts, [&](std::size_t pair) { return call.inputs[2 * pair].numel(); },
                                 b.items_per_dispatch, [&](std::span<const Item> items, std::uint64_t groups) {
                                   ComputeDispatch d = lower(call, items);
                                   d.groups = {groups, 1, 1};
                                   ds.push_back(std::move(d));
                                 });
                             if (b.pushed) return;
                             ComputeDispatch d;
                             d.kernel = kernels::ml_optim_count_steps;
                             d.bindings = {BufferBinding::read_write(b.counts.storage()), BufferBinding::read(b.constants.storage()),
                                           BufferBinding::read(b.found_inf.storage())};
                             d.push.set(push::ml_optim_count_steps{.n = static_cast<std::uint32_t>(b.counts.numel()), .stride = b.stride});
                             d.groups = {1, 1, 1};
                             ds.push_back(std::move(d));
                           }}},
                .variadic = true});
}

struct SgdAttributes : UpdateBuffers {
  float lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  std::vector<Matrix> momentum_buffers;  // per pair; undefined without momentum
  static constexpr auto fields = std::tuple{field("lr", &SgdAttributes::lr), field("momentum", &SgdAttributes::momentum),
                                            field("dampening", &SgdAttributes::dampening),
                                            field("weight_decay", &SgdAttributes::weight_decay),
                                            field("nesterov", &SgdAttributes::nesterov)};
};

const Op<SgdAttributes> kSgdStep = update_op<SgdAttributes>(
    kSgdOp, [](const OpCall<SgdAttributes>& call, std::span<const Item> items) {
      const SgdAttributes& a = call.attributes;
      const bool momentum = a.momentum != 0;
      ComputeDispatch d;
      d.kernel = kernels::ml_optim_sgd_step;
      d.specialization = {momentum ? 1u : 0u, a.nesterov ? 1u : 0u, a.pushed ? 1u : 0u};
      for (std::size_t k = 0; k < kItems; ++k) {
        const Item& it = items::at(items, k);
        const Matrix& p = call.inputs[2 * it.tensor];
        d.bindings.push_back(items::binding(p, it, runtime::Access::ReadWrite));
        d.bindings.push_back(items::binding(call.inputs[2 * it.tensor + 1], it, runtime::Access::Read));
        d.bindings.push_back(items::binding(momentum ? a.momentum_buffers[it.tensor] : p, it, runtime::Access::ReadWrite));
      }
      bind_step_buffers(a, call.inputs, items, d);
      const std::size_t j = items[0].tensor;
      d.push.set(push::ml_optim_sgd_step{.momentum = a.momentum,
                                         .dampening = a.dampening,
                                         .weight_decay = a.weight_decay,
                                         .count = a.pushed ? a.pushed_counts[j] : 0.0f,
                                         .lr = a.pushed ? a.pushed_constants[j] : 0.0f,
                                         .items = item_push(a, items)});
      return d;
    });

struct AdamWAttributes : UpdateBuffers {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool decoupled = true, amsgrad = false;
  std::int64_t step = 0;
  std::vector<Matrix> exp_avg, exp_avg_sq, max_exp_avg_sq;  // per pair; max_exp_avg_sq with amsgrad only
  static constexpr auto fields = std::tuple{field("lr", &AdamWAttributes::lr), field("beta1", &AdamWAttributes::beta1),
                                            field("beta2", &AdamWAttributes::beta2), field("eps", &AdamWAttributes::eps),
                                            field("weight_decay", &AdamWAttributes::weight_decay),
                                            field("decoupled", &AdamWAttributes::decoupled),
                                            field("amsgrad", &AdamWAttributes::amsgrad), field("step", &AdamWAttributes::step)};
};

// Adam's and AdamW's step (shaders/ml/optim/adamw_step.comp): up to
// OA_ADAM_ITEMS items a dispatch; with amsgrad up to OA_ADAM_AMSGRAD_ITEMS,
// whose running maxima take the places of the last two items' buffers.
const Op<AdamWAttributes> kAdamWStep = update_op<AdamWAttributes>(
    kAdamWOp, [](const OpCall<AdamWAttributes>& call, std::span<const Item> items) {
      const AdamWAttributes& a = call.attributes;
      ComputeDispatch d;
      d.kernel = kernels::ml_optim_adamw_step;
      d.specialization = {a.pushed ? 1u : 0u, a.decoupled ? 0u : 1u, a.amsgrad ? 1u : 0u};
      const std::size_t places = a.amsgrad ? OA_ADAM_AMSGRAD_ITEMS : OA_ADAM_ITEMS;
      for (std::size_t k = 0; k < places; ++k) {
        const Item& it = items::at(items, k);
        d.bindings.push_back(items::binding(call.inputs[2 * it.tensor], it, runtime::Access::ReadWrite));
        d.bindings.push_back(items::binding(call.inputs[2 * it.tensor + 1], it, runtime::Access::Read));
        d.bindings.push_back(items::binding(a.exp_avg[it.tensor], it, runtime::Access::ReadWrite));
        d.bindings.push_back(items::binding(a.exp_avg_sq[it.tensor], it, runtime::Access::ReadWrite));
      }
      if (a.amsgrad) {
        for (std::size_t k = 0; k < places; ++k) {
          const Item& it = items::at(items, k);
          d.bindings.push_back(items::binding(a.max_exp_avg_sq[it.tensor], it, runtime::Access::ReadWrite));
        }
        // The places left of the last two items' buffers, never read.
        while (d.bindings.size() < 4 * OA_ADAM_ITEMS)
          d.bindings.push_back(items::binding(call.inputs[2 * items[0].tensor + 1], items[0], runtime::Access::Read));
      }
      bind_step_buffers(a, call.inputs, items, d);
      const std::size_t j = items[0].tensor;
      d.push.set(push::ml_optim_adamw_step{.beta1 = a.beta1,
                                           .beta2 = a.beta2,
                                           .eps = a.eps,
                                           .log_beta1 = static_cast<float>(std::log(double(a.beta1))),
                                           .log_beta2 = static_cast<float>(std::log(double(a.beta2))),
                                           .count = a.pushed ? a.pushed_counts[j] : 0.0f,
                                           .lr = a.pushed ? a.pushed_constants[2 * j + 1] : 0.0f,
                                           .decay = a.pushed ? a.pushed_constants[2 * j] : 0.0f,
                                           .items = item_push(a, items)});
      return d;
    });

// What a missing (`here` true) or unexpected state tensor `name` says about
// amsgrad, whose running maxima only its optimizers keep.
std::string amsgrad_hint(std::string_view name, bool here) {
  if (!name.ends_with(".max_exp_avg_sq")) return "";
  return here ? " (this optimizer has amsgrad on; the state was saved with it off)"
              : " (the state was saved with amsgrad on; this optimizer has it off)";
}

std::int64_t parse_int(const Metadata& md, const std::string& key, const std::string& file, const char* op) {
  const auto it = md.find(key);
  if (it == md.end()) fail(ErrorKind::InvalidArgument, "{}: '{}': metadata '{}' is missing", op, file, key);
  std::int64_t v = 0;
  const auto& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0)
    fail(ErrorKind::InvalidArgument, "{}: '{}': metadata '{}' = '{}' is not a step count", op, file, key, s);
  return v;
}

// A contiguous f32 range of one storage: an input of a reduction level.
struct Segment {
  std::shared_ptr<runtime::Storage> storage;
  std::uint64_t offset_bytes = 0;
  std::int64_t count = 0;
};

// One dispatch of ml/optim/sum_squares over up to 8 segments.
ComputeDispatch reduce_dispatch(std::span<const Segment> inputs, bool square, bool final, std::shared_ptr<runtime::Storage> out,
                                std::int64_t groups) {
  ComputeDispatch d;
  d.kernel = kernels::ml_optim_sum_squares;
  d.specialization = {square ? 1u : 0u, final ? 1u : 0u};
  for (std::size_t j = 0; j < kReduceInputs; ++j) {
    const Segment& s = j < inputs.size() ? inputs[j] : inputs[0];  // unused slots repeat input 0 with count 0
    d.bindings.push_back(BufferBinding::read(s.storage, s.offset_bytes, static_cast<std::uint64_t>(s.count) * 4));
  }
  d.bindings.push_back(BufferBinding::write(std::move(out)));
  std::array<std::uint32_t, kReduceInputs> counts{};  // 0 in the unused slots
  for (std::size_t j = 0; j < inputs.size(); ++j) counts[j] = detail::shader_u32(inputs[j].count, "gradient piece", kClipOp);
  d.push.set(push::ml_optim_sum_squares{.count_lo = std::array{counts[0], counts[1], counts[2], counts[3]},
                                        .count_hi = std::array{counts[4], counts[5], counts[6], counts[7]}});
  d.groups = {static_cast<std::uint64_t>(groups), 1, 1};
  return d;
}

struct ClipAttributes {
  float max_norm = 0;
  static constexpr auto fields = std::tuple{field("max_norm", &ClipAttributes::max_norm)};
};

// The global norm of the gradients, by a tree of sum_squares passes, then
// every gradient scaled by min(1, max_norm / (norm + 1e-6)) in place, kItems
// element chunks a dispatch.
void lower_clip(const OpCall<ClipAttributes>& call, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
  const Engine& engine = call.engine;
  const Matrix& norm = out[0];
  std::vector<Segment> level;
  for (const auto& g : call.inputs)
    for (const auto& c : detail::element_chunks(engine, g.numel())) level.push_back({g.storage(), offset_of(c), c.count});
  bool square = true;
  for (;;) {
    std::int64_t total = 0;
    for (const auto& s : level) total += s.count;
    if (level.size() <= kReduceInputs && total <= kReduceChunk) {
      ds.push_back(reduce_dispatch(level, square, true, norm.storage(), 1));
      break;
    }
    std::vector<Segment> next;
    for (std::size_t at = 0; at < level.size(); at += kReduceInputs) {
      const std::span<const Segment> group(level.data() + at, std::min(kReduceInputs, level.size() - at));
      std::int64_t chunks = 0;
      for (const auto& s : group) chunks += detail::groups_for(s.count, kReduceChunk);
      auto partial = engine.allocate(static_cast<std::uint64_t>(chunks) * 4);
      ds.push_back(reduce_dispatch(group, square, false, partial, chunks));
      next.push_back({std::move(partial), 0, chunks});
    }
    level = std::move(next);
    square = false;
  }
  items::batch(engine, call.inputs, [&](std::span<const Item> items, std::uint64_t groups) {
    ComputeDispatch d;
    d.kernel = kernels::ml_optim_scale_by_norm;
    for (std::size_t k = 0; k < kItems; ++k) {
      const Item& it = items::at(items, k);
      d.bindings.push_back(items::binding(call.inputs[it.tensor], it, runtime::Access::ReadWrite));
    }
    d.bindings.push_back(BufferBinding::read(norm.storage()));
    d.push.set(push::ml_optim_scale_by_norm{.max_norm = call.attributes.max_norm, .items = items::item_counts(items)});
    d.groups = {groups, 1, 1};
    ds.push_back(std::move(d));
  });
}

// Result: the norm []; the gradients are auxiliary outputs, scaled in place.
const Op<ClipAttributes> kClipGradNorm{{.name = kClipOp,
                                        .inputs = {"gradient"},
                                        .infer = [](const OpCall<ClipAttributes>& c) {
                                          std::vector<OutputSpec> out{{Shape{}}};
                                          for (std::size_t j = 0; j < c.inputs.size(); ++j)
                                            out.push_back({c.inputs[j].shape(), DType::F32, true, static_cast<int>(j)});
                                          return out;
                                        },
                                        .lower = {{DType::F32, lower_clip}},
                                        .variadic = true}};

}  // namespace

// ── Optimizer ────────────────────────────────────────────────────────────────

Optimizer::Optimizer(std::vector<Parameter> parameters, float lr, const char* kind, std::size_t constants_per_parameter)
    : parameters_(std::move(parameters)),
      lr_(lr),
      kind_(kind),
      constants_per_parameter_(constants_per_parameter) {
  const std::string op = fmt::format("oa::ml::optim::{}", kind);
  if (parameters_.empty()) fail(ErrorKind::InvalidArgument, "{}: no parameters to optimize", op);
  std::set<const runtime::Storage*> values;
  std::map<std::string, int> uses;
  for (const auto& p : parameters_) {
    if (!p.defined()) fail(ErrorKind::InvalidArgument, "{}: an undefined Parameter was given", op);
    if (!values.insert(p.value().storage().get()).second) fail(ErrorKind::InvalidArgument, "{}: parameter '{}' is given twice", op, p.name());
    if (!(p.value().engine() == parameters_[0].value().engine()))
      fail(ErrorKind::InvalidArgument, "{}: parameter '{}' lives on another engine than '{}'", op, p.name(), parameters_[0].name());
    ++uses[p.name()];
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const std::string& name = parameters_[i].name();
    state_names_.push_back(uses[name] > 1 ? fmt::format("{}@{}", name, i) : name);
  }
  set_lr(lr);
  const Engine& engine = parameters_[0].value().engine();
  const auto n = static_cast<std::int64_t>(parameters_.size());
  step_constants_ = Matrix::zeros({static_cast<std::int64_t>(constants_per_parameter_ + 1) * n}, engine);
  counts_ = Matrix::zeros({n}, engine);
  host_counts_.assign(parameters_.size(), 0);
  no_inf_ = Matrix::zeros(Shape{}, engine);
}

void Optimizer::set_lr(float lr) {
  require_hyper(lr, fmt::format("oa::ml::optim::{}", kind_).c_str(), "lr");
  lr_ = lr;
}

void Optimizer::write_step_constants(const std::vector<std::size_t>& updated) {
  if (!counts_on_device_) {
    counts_.write(std::vector<float>(host_counts_.begin(), host_counts_.end()));
    counts_on_device_ = true;
  }
  const std::size_t stride = constants_per_parameter_ + 1;
  std::vector<float> all(stride * parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) step_constants(i, std::span<float>(all).subspan(i * stride, constants_per_parameter_));
  for (auto i : updated) all[(i + 1) * stride - 1] = 1.0f;
  step_constants_.write(all);
}

bool Optimizer::pushes_step_values(const Matrix& found_inf, const std::vector<std::size_t>& updated, std::vector<float>& constants,
                                   std::vector<float>& counts) {
  if (found_inf.defined() || parameters_[0].value().engine().capturing()) return false;
  if (counts_on_device_) {  // after steps with found_inf: their counts, once
    const std::vector<float> device = counts_.to_vector();
    host_counts_.assign(device.begin(), device.end());
    counts_on_device_ = false;
  }
  constants.resize(updated.size() * constants_per_parameter_);
  counts.reserve(updated.size());
  for (std::size_t j = 0; j < updated.size(); ++j) {
    step_constants(updated[j], std::span<float>(constants).subspan(j * constants_per_parameter_, constants_per_parameter_));
    counts.push_back(static_cast<float>(host_counts_[updated[j]]));
  }
  return true;
}

void Optimizer::run_step(const std::vector<std::size_t>& updated, bool pushed, const std::function<void()>& record) {
  const Engine& engine = parameters_[0].value().engine();
  const bool capturing = engine.capturing();
  if (!capturing && !pushed) write_step_constants(updated);
  if (!updated.empty()) record();
  // In a capture nothing runs yet: each replay takes the constants of its own
  // step (the learning rate set before it) and counts it.
  if (capturing) {
    engine.on_replay([this, updated] {
      write_step_constants(updated);
      ++steps_;
    });
    return;
  }
  if (pushed)
    for (auto i : updated) ++host_counts_[i];
  ++steps_;
}

std::vector<std::int64_t> Optimizer::parameter_steps() const {
  if (!counts_on_device_) return host_counts_;
  const std::vector<float> counts = counts_.to_vector();
  return {counts.begin(), counts.end()};
}

void Optimizer::zero_grad() const {
  for (const auto& p : parameters_) p.zero_grad();
}

std::vector<Matrix> Optimizer::checked_gradients(const char* op, const Matrix& found_inf, Matrix& flag) const {
  if (found_inf.defined() && (found_inf.dtype() != DType::F32 || found_inf.numel() != 1 || found_inf.rank() != 0 ||
                              !(found_inf.engine() == parameters_[0].value().engine())))
    fail(ErrorKind::InvalidArgument, "{}: found_inf must be f32 [] on the parameters' engine; found {} {}", op,
         to_string(found_inf.dtype()), found_inf.shape());
  flag = found_inf.defined() ? found_inf : no_inf_;
  std::vector<Matrix> grads;
  grads.reserve(parameters_.size());
  for (const auto& p : parameters_) {
    Matrix g = p.grad();
    if (g.defined() && (g.dtype() != DType::F32 || !(g.shape() == p.shape())))
      fail(ErrorKind::InvalidArgument, "{}: the gradient of parameter '{}' is {} {}; the parameter is f32 {}", op, p.name(),
           to_string(g.dtype()), g.shape(), p.shape());
    if (g.defined() && !(g.engine() == p.value().engine()))
      fail(ErrorKind::InvalidArgument, "{}: the gradient of parameter '{}' lives on another engine", op, p.name());
    grads.push_back(std::move(g));
  }
  return grads;
}

void Optimizer::save_state(const std::filesystem::path& path) const {
  Metadata md{{"optimizer", kind_}, {"lr", fmt::format("{}", lr_)}, {"step", std::to_string(steps_)}};
  const std::vector<std::int64_t> per = parameter_steps();
  for (std::size_t i = 0; i < parameters_.size(); ++i) md[state_names_[i] + ".step"] = std::to_string(per[i]);
  save_safetensors(path, state(), md);
}

void Optimizer::load_state(const std::filesystem::path& path) {
  const char* op = "oa::ml::optim::Optimizer::load_state";
  const std::string file = path.string();
  const Metadata md = read_safetensors_metadata(path);
  const auto kind = md.find("optimizer");
  if (kind == md.end() || kind->second != kind_)
    fail(ErrorKind::InvalidArgument, "{}: '{}' holds the state of optimizer '{}', not '{}'", op, file,
         kind == md.end() ? "(none)" : kind->second, kind_);
  float lr = 0;
  const auto lr_it = md.find("lr");
  const std::string lr_text = lr_it == md.end() ? "" : lr_it->second;
  const auto [end, ec] = std::from_chars(lr_text.data(), lr_text.data() + lr_text.size(), lr);
  if (lr_it == md.end() || ec != std::errc() || end != lr_text.data() + lr_text.size() || !std::isfinite(lr) || lr < 0)
    fail(ErrorKind::InvalidArgument, "{}: '{}': metadata 'lr' = '{}' is not a learning rate", op, file, lr_text);
  const std::int64_t steps = parse_int(md, "step", file, op);
  std::vector<std::int64_t> per(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) per[i] = parse_int(md, state_names_[i] + ".step", file, op);
  restore(load_safetensors(path, parameters_[0].value().engine()).tensors, lr, steps, per, "'" + file + "'");
}

void Optimizer::load_state(const NamedMatrices& tensors, float lr, std::int64_t steps,
                           const std::vector<std::int64_t>& parameter_steps) {
  restore(tensors, lr, steps, parameter_steps, "the given state");
}

void Optimizer::restore(const NamedMatrices& tensors, float lr, std::int64_t steps, const std::vector<std::int64_t>& per,
                        const std::string& source) {
  const char* op = "oa::ml::optim::Optimizer::load_state";
  if (!std::isfinite(lr) || lr < 0) fail(ErrorKind::InvalidArgument, "{}: {}: lr = {} is not a learning rate", op, source, lr);
  if (steps < 0) fail(ErrorKind::InvalidArgument, "{}: {}: step = {} is negative", op, source, steps);
  if (per.size() != parameters_.size())
    fail(ErrorKind::InvalidArgument, "{}: {}: {} parameter step counts for {} parameters", op, source, per.size(), parameters_.size());
  for (std::size_t i = 0; i < per.size(); ++i)
    if (per[i] < 0 || per[i] > steps)
      fail(ErrorKind::InvalidArgument, "{}: {}: parameter '{}' has {} updates, outside [0, step = {}]", op, source,
           parameters_[i].name(), per[i], steps);
  const NamedMatrices targets = state();
  std::map<std::string_view, const Matrix*> given;
  for (const auto& [name, m] : tensors)
    if (!given.emplace(name, &m).second) fail(ErrorKind::InvalidArgument, "{}: {}: tensor '{}' is given twice", op, source, name);
  const Engine& engine = parameters_[0].value().engine();
  for (const auto& [name, target] : targets) {
    const auto it = given.find(name);
    if (it == given.end())
      fail(ErrorKind::InvalidArgument, "{}: {}: state tensor '{}' ({} {}) is missing{}", op, source, name, to_string(target.dtype()),
           target.shape(), amsgrad_hint(name, true));
    const Matrix& m = *it->second;
    if (!m.defined() || !(m.shape() == target.shape()) || m.dtype() != target.dtype() || !(m.engine() == engine))
      fail(ErrorKind::InvalidArgument, "{}: {}: state tensor '{}' is {}; the optimizer's is {} {} on the parameters' engine", op,
           source, name, m.defined() ? fmt::format("{} {}", to_string(m.dtype()), m.shape()) : std::string("undefined"),
           to_string(target.dtype()), target.shape());
    given.erase(it);
  }
  if (!given.empty())
    fail(ErrorKind::InvalidArgument, "{}: {}: tensor '{}' matches no state tensor of this optimizer{}", op, source, given.begin()->first,
         amsgrad_hint(given.begin()->first, false));
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Matrix& target = targets[i].second;
    const auto from = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.first == targets[i].first; });
    engine.copy(*from->second.storage(), 0, *target.storage(), 0, static_cast<std::uint64_t>(target.numel()) * size_of(target.dtype()));
    target.storage()->bump_version();
  }
  lr_ = lr;
  steps_ = steps;
  host_counts_ = per;
  counts_on_device_ = false;
}

// ── SGD ──────────────────────────────────────────────────────────────────────

Sgd::Sgd(std::vector<Parameter> parameters, SgdOptions options) : Optimizer(std::move(parameters), options.lr, "sgd", 1), options_(options) {
  const char* op = "oa::ml::optim::sgd";
  require_hyper(options_.momentum, op, "momentum");
  require_hyper(options_.dampening, op, "dampening");
  require_hyper(options_.weight_decay, op, "weight_decay");
  if (options_.nesterov && (options_.momentum <= 0 || options_.dampening != 0))
    fail(ErrorKind::InvalidArgument, "{}: nesterov needs momentum > 0 and dampening 0 (momentum {}, dampening {})", op,
         options_.momentum, options_.dampening);
  if (options_.momentum != 0)
    for (const auto& p : parameters_) momentum_.push_back(Matrix::zeros(p.shape(), p.value().engine()));
}

void Sgd::step_constants(std::size_t, std::span<float> out) const { out[0] = lr_; }

void Sgd::step(const Matrix& found_inf) {
  SgdAttributes a;
  const std::vector<Matrix> grads = checked_gradients(kSgdOp, found_inf, a.found_inf);
  const bool momentum = options_.momentum != 0;
  a.lr = lr_, a.momentum = options_.momentum, a.dampening = options_.dampening, a.weight_decay = options_.weight_decay;
  a.nesterov = options_.nesterov;
  const std::vector<Matrix> pairs = with_gradients(parameters_, grads, a.slots);
  for (auto i : a.slots) a.momentum_buffers.push_back(momentum ? momentum_[i] : Matrix());
  a.constants = step_constants_, a.counts = counts_, a.stride = static_cast<std::uint32_t>(constants_per_parameter_ + 1);
  a.pushed = pushes_step_values(found_inf, a.slots, a.pushed_constants, a.pushed_counts);
  run_step(a.slots, a.pushed, [&] {
    detail::apply(kSgdStep, pairs, a);
    if (momentum)
      for (const auto& m : a.momentum_buffers) m.storage()->bump_version();
  });
}

NamedMatrices Sgd::state() const {
  NamedMatrices out;
  for (std::size_t i = 0; i < momentum_.size(); ++i) out.emplace_back(state_names_[i] + ".momentum_buffer", momentum_[i]);
  return out;
}

// ── Adam and AdamW ───────────────────────────────────────────────────────────

AdamFamily::AdamFamily(std::vector<Parameter> parameters, float lr, const char* kind, Hyper hyper)
    : Optimizer(std::move(parameters), lr, kind, 2), hyper_(hyper) {
  const std::string op = fmt::format("oa::ml::optim::{}", kind);
  require_hyper(hyper_.eps, op.c_str(), "eps");
  require_hyper(hyper_.weight_decay, op.c_str(), "weight_decay");
  for (auto [beta, name] : {std::pair{hyper_.beta1, "beta1"}, std::pair{hyper_.beta2, "beta2"}})
    if (!(beta >= 0 && beta < 1)) fail(ErrorKind::InvalidArgument, "{}: {} = {} is outside [0, 1)", op, name, beta);
  for (const auto& p : parameters_) {
    exp_avg_.push_back(Matrix::zeros(p.shape(), p.value().engine()));
    exp_avg_sq_.push_back(Matrix::zeros(p.shape(), p.value().engine()));
    if (hyper_.amsgrad) max_exp_avg_sq_.push_back(Matrix::zeros(p.shape(), p.value().engine()));
  }
}

void AdamFamily::step_constants(std::size_t, std::span<float> out) const {
  out[0] = hyper_.decoupled ? static_cast<float>(1.0 - double(lr_) * hyper_.weight_decay) : hyper_.weight_decay;
  out[1] = lr_;
}

void AdamFamily::step(const Matrix& found_inf) {
  AdamWAttributes a;
  const std::vector<Matrix> grads = checked_gradients(kAdamWOp, found_inf, a.found_inf);
  a.lr = lr_, a.beta1 = hyper_.beta1, a.beta2 = hyper_.beta2, a.eps = hyper_.eps, a.weight_decay = hyper_.weight_decay;
  a.decoupled = hyper_.decoupled, a.amsgrad = hyper_.amsgrad;
  a.items_per_dispatch = hyper_.amsgrad ? OA_ADAM_AMSGRAD_ITEMS : OA_ADAM_ITEMS;
  a.step = steps_ + 1;
  const std::vector<Matrix> pairs = with_gradients(parameters_, grads, a.slots);
  for (auto i : a.slots) {
    a.exp_avg.push_back(exp_avg_[i]);
    a.exp_avg_sq.push_back(exp_avg_sq_[i]);
    if (hyper_.amsgrad) a.max_exp_avg_sq.push_back(max_exp_avg_sq_[i]);
  }
  a.constants = step_constants_, a.counts = counts_, a.stride = static_cast<std::uint32_t>(constants_per_parameter_ + 1);
  a.pushed = pushes_step_values(found_inf, a.slots, a.pushed_constants, a.pushed_counts);
  run_step(a.slots, a.pushed, [&] {
    detail::apply(kAdamWStep, pairs, a);
    for (const auto* buffers : {&a.exp_avg, &a.exp_avg_sq, &a.max_exp_avg_sq})
      for (const auto& m : *buffers) m.storage()->bump_version();
  });
}

NamedMatrices AdamFamily::state() const {
  NamedMatrices out;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    out.emplace_back(state_names_[i] + ".exp_avg", exp_avg_[i]);
    out.emplace_back(state_names_[i] + ".exp_avg_sq", exp_avg_sq_[i]);
    if (hyper_.amsgrad) out.emplace_back(state_names_[i] + ".max_exp_avg_sq", max_exp_avg_sq_[i]);
  }
  return out;
}

Adam::Adam(std::vector<Parameter> parameters, AdamOptions options)
    : AdamFamily(std::move(parameters), options.lr, "adam",
                 {options.beta1, options.beta2, options.eps, options.weight_decay, options.amsgrad, false}),
      options_(options) {}

AdamW::AdamW(std::vector<Parameter> parameters, AdamWOptions options)
    : AdamFamily(std::move(parameters), options.lr, "adamw",
                 {options.beta1, options.beta2, options.eps, options.weight_decay, options.amsgrad, true}),
      options_(options) {}

// ── Gradient clipping ────────────────────────────────────────────────────────

Matrix clip_grad_norm(const std::vector<Matrix>& gradients, float max_norm) {
  if (!std::isfinite(max_norm) || max_norm < 0)
    fail(ErrorKind::InvalidArgument, "{}: max_norm = {} must be finite and non-negative", kClipOp, max_norm);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    detail::require_f32(gradients[i], kClipOp, fmt::format("gradient {}", i).c_str());
    detail::require_same_engine(gradients[0], "gradient 0", gradients[i], fmt::format("gradient {}", i).c_str(), kClipOp);
    total += gradients[i].numel();
  }
  if (total == 0) return Matrix::zeros(Shape{}, gradients.empty() ? Engine::default_engine() : gradients[0].engine());
  return detail::apply(kClipGradNorm, gradients, {max_norm})[0];
}

Matrix clip_grad_norm(const std::vector<Parameter>& parameters, float max_norm) {
  std::vector<Matrix> grads;
  for (const auto& p : parameters) {
    Matrix g = p.grad();
    if (g.defined()) grads.push_back(std::move(g));
  }
  return clip_grad_norm(grads, max_norm);
}

// ── Schedules ────────────────────────────────────────────────────────────────

double warmup_cosine_lr(std::int64_t step, double base_lr, std::int64_t warmup_steps, std::int64_t total_steps, double min_lr) {
  if (step < 0 || warmup_steps < 0 || total_steps <= warmup_steps || !(min_lr >= 0 && min_lr <= base_lr))
    fail(ErrorKind::InvalidArgument,
         "oa::ml::optim::warmup_cosine_lr: step {}, warmup {}, total {}, base_lr {}, min_lr {} (need step >= 0, 0 <= warmup < total, "
         "0 <= min_lr <= base_lr)",
         step, warmup_steps, total_steps, base_lr, min_lr);
  if (step < warmup_steps) return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  if (step >= total_steps) return min_lr;
  const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

double step_decay_lr(std::int64_t step, double base_lr, std::int64_t step_size, double gamma) {
  if (step < 0 || step_size < 1 || !(gamma > 0 && gamma <= 1))
    fail(ErrorKind::InvalidArgument, "oa::ml::optim::step_decay_lr: step {}, step_size {}, gamma {} (need step >= 0, step_size >= 1, "
         "0 < gamma <= 1)", step, step_size, gamma);
  return base_lr * std::pow(gamma, static_cast<double>(step / step_size));
}

}  // namespace oa::ml::optim
