#pragma once
// One declaration per op (internal to the library). An OpDef gives an op's
// name (its C++ name), its typed attributes, its validation and output shapes,
// its lowering per dtype and its backward rule; apply() derives from it the
// contract, the semantic record and the autograd node, so an op is written
// once. Model: MLX's primitives (a class per primitive with eval and vjp) and
// PyTorch's native_functions.yaml with derivatives.yaml.
//
//   struct ClampAttributes {
//     float low = 0, high = 0;
//     static constexpr auto fields = std::tuple{field("low", &ClampAttributes::low), field("high", &ClampAttributes::high)};
//   };
//   const Op<ClampAttributes> kClamp{{.name = "oa::matrix::clamp", .inputs = {"x"}, .infer = ..., .lower = ..., ...}};
//   Matrix clamp(const Matrix& x, float low, float high) { return apply(kClamp, {x}, {low, high})[0]; }
//
// Under autocast, apply() first casts the inputs as the policy table says
// (oa/matrix/autocast.hpp) and applies the op to the cast inputs.
// apply() checks, before anything is allocated or recorded, that every input
// is defined (or optional and absent) and on the first input's engine and that a lowering exists for
// the first input's dtype (InvalidArgument naming the op and the argument);
// infer() does the op's own checks. Then it allocates the outputs, records
// the lowering's dispatches as one semantic op (attributes from the fields),
// bumps the versions of the inputs that writes() names and, when an input
// requires a gradient and the op has a backward rule, records one autograd
// node that holds what saves() names. An op without inputs (a generator) runs
// on the engine given to apply(). An oa::Error that the lowering throws (a
// device limit its plan meets, such as a GEMM operand past
// maxStorageBufferRange) is thrown again of its kind with the op's name
// before its message (oa::with_context), so it names the op that was called.
//
// An op that updates operands in place (an optimizer step) declares outputs
// with OutputSpec::in_place and no backward; variadic ops take their inputs
// in repeated groups. Public explicit-backward functions run the op's backward
// rule through apply_backward().
#include <algorithm>
#include <deque>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "matrix/lowering.hpp"
#include "oa/matrix/autocast.hpp"
#include "oa/matrix/autograd.hpp"

namespace oa::detail {

// ── Typed attributes ─────────────────────────────────────────────────────────

// One attribute: its name in traces and contracts, and the member holding it.
template <class S, class T>
struct Field {
  using Type = T;
  const char* name;
  T S::*member;
};
template <class S, class T>
constexpr Field<S, T> field(const char* name, T S::*member) {
  return {name, member};
}

// Members of an attributes struct not named in `fields` are not traced: the
// lowering may read through them what the op does not list as operands (an
// optimizer's state buffers) or per-call choices (whether a result is
// differentiable).
struct NoAttributes {
  static constexpr std::tuple<> fields{};
};

template <class T>
constexpr AttributeType attribute_type() {
  if constexpr (std::is_same_v<T, bool>) return AttributeType::Bool;
  else if constexpr (std::is_integral_v<T>) return AttributeType::Int;
  else if constexpr (std::is_floating_point_v<T>) return AttributeType::Float;
  else if constexpr (std::is_same_v<T, std::string>) return AttributeType::String;
  else {
    static_assert(std::is_same_v<T, std::vector<std::int64_t>>, "an attribute is bool, an integer, a float, a string or int64s");
    return AttributeType::Ints;
  }
}

template <class T>
OpAttributeValue attribute_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(v);
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return v;
}

template <class A>
std::vector<AttributeSpec> attribute_specs() {
  std::vector<AttributeSpec> out;
  std::apply([&](const auto&... f) { (out.push_back({f.name, attribute_type<typename std::remove_cvref_t<decltype(f)>::Type>()}), ...); },
             A::fields);
  return out;
}

template <class A>
std::vector<OpAttribute> attribute_values(const A& a) {
  std::vector<OpAttribute> out;
  out.reserve(std::tuple_size_v<std::remove_cvref_t<decltype(A::fields)>>);
  std::apply([&](const auto&... f) { (out.push_back({f.name, attribute_value(a.*(f.member))}), ...); }, A::fields);
  return out;
}

// ── The declaration ──────────────────────────────────────────────────────────

// An output. An auxiliary output (after the op's results: statistics such as
// a norm's per-row rstd) is written by the lowering and read by the backward
// only: the caller, the trace and the autograd graph see the results alone.
// An in-place output is input `in_place` itself, written by the lowering (not
// allocated; its version is bumped after recording; such an op has no
// backward): a result when the trace lists it as an output (an optimizer's
// parameters), auxiliary when not (clip_grad_norm's gradients). A no_grad
// result is returned and traced but is not an output of the autograd node:
// the backward gets no gradient for it.
struct OutputSpec {
  Shape shape;
  DType dtype = DType::F32;
  bool auxiliary = false;
  int in_place = -1;
  bool no_grad = false;
};

// One call of an op: its inputs (defined, on one engine) and attributes.
template <class A>
struct OpCall {
  const char* name;
  std::span<const Matrix> inputs;
  const A& attributes;
  const Engine& engine;
};

// What a backward rule reads, per input and per output.
struct Saves {
  std::vector<bool> inputs, outputs;
};

// One backward call: the saved inputs and outputs (auxiliary ones included;
// undefined where saves() did not name them), every input's shape and dtype
// (the dtype its gradient must have), the gradients of the results (no_grad
// ones left out) and which input gradients are needed.
template <class A>
struct BackwardCall {
  const char* name;
  const A& attributes;
  const std::vector<Matrix>& inputs;
  const std::vector<Matrix>& outputs;
  const std::vector<Shape>& input_shapes;
  const std::vector<DType>& input_dtypes;
  const std::vector<Matrix>& grad_outputs;
  const std::vector<bool>& needs;
  // Records `dispatches` as the semantic op "<name> backward" over the given
  // operands (undefined ones, such as unsaved inputs or gradients not needed,
  // are left out) with `traced` as its attributes (attribute_values(attributes)
  // to repeat the forward's): record(ds, {gy, x, w}, grads).
  void record(std::span<const runtime::ComputeDispatch> dispatches, const std::vector<Matrix>& in, const std::vector<Matrix>& out,
              std::vector<OpAttribute> traced = {}) const {
    SemanticOp op = semantic_op(std::move(traced));
    op.inputs.reserve(in.size());
    for (const auto& m : in)
      if (m.defined()) op.inputs.push_back(m.shape());
    op.outputs.reserve(out.size());
    for (const auto& m : out)
      if (m.defined()) op.outputs.push_back(m.shape());
    grad_outputs[0].engine().record(std::move(op), dispatches);
  }
  void record(std::span<const runtime::ComputeDispatch> dispatches, std::initializer_list<const Matrix*> in,
              std::initializer_list<const Matrix*> out, std::vector<OpAttribute> traced = {}) const {
    SemanticOp op = semantic_op(std::move(traced));
    op.inputs.reserve(in.size());
    for (const Matrix* m : in)
      if (m->defined()) op.inputs.push_back(m->shape());
    op.outputs.reserve(out.size());
    for (const Matrix* m : out)
      if (m->defined()) op.outputs.push_back(m->shape());
    grad_outputs[0].engine().record(std::move(op), dispatches);
  }

 private:
  SemanticOp semantic_op(std::vector<OpAttribute> traced) const {
    SemanticOp op;
    op.name = name;
    op.backward = true;
    op.attributes = std::move(traced);
    return op;
  }
};

template <class A>
using Lowering = std::function<void(const OpCall<A>&, const std::vector<Matrix>& outputs, std::vector<runtime::ComputeDispatch>&)>;

// One lowering for every dtype (an op that moves elements as bits).
template <class A>
std::vector<std::pair<DType, Lowering<A>>> every_dtype(const Lowering<A>& lowering) {
  std::vector<std::pair<DType, Lowering<A>>> out;
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) out.emplace_back(d, lowering);
  return out;
}

// An input: its argument name, whether it may be an undefined Matrix (an
// absent optional operand, such as a norm's weight), whether it is detached:
// no gradient flows to it (an attention mask), so it gets no edge in the
// autograd graph and never makes the op record a node, and whether autocast's
// Lower policy keeps its dtype (a detached input, or a bias that the lowering
// adds to its f32 accumulators: `keeps_f32`).
struct InputSpec {
  InputSpec(const char* n, bool opt = false, bool det = false, bool keeps = false)  // NOLINT: implicit, so {"x", "w"} lists inputs
      : name(n), optional(opt), detached(det), keeps_f32(keeps) {}
  const char* name;
  bool optional;
  bool detached;
  bool keeps_f32;
};

template <class A>
struct OpDef {
  const char* name;               // the C++ name, "oa::matrix::exp"
  std::vector<InputSpec> inputs;  // in order (the arity); the first is required
  int outputs = 1;  // results, not counting auxiliary outputs; -1: as infer() gives
  // The op's own checks (throwing InvalidArgument naming the op, the argument
  // and the shapes) and the shape and dtype of each output.
  std::function<std::vector<OutputSpec>(const OpCall<A>&)> infer;
  // The lowering for each dtype of the first input; an op without inputs has one.
  std::vector<std::pair<DType, Lowering<A>>> lower;
  // What the backward reads given the needed gradients; null: nothing.
  std::function<Saves(const OpCall<A>&, const std::vector<bool>& needs)> saves;
  // One gradient per input (undefined where not needed); null: not differentiable.
  std::function<std::vector<Matrix>(const BackwardCall<A>&)> backward;
  // Which inputs the lowering writes in place (batch_norm's running
  // statistics in training); apply() bumps their versions after recording, so
  // that a backward which saved one refuses. Null: none.
  std::function<std::vector<bool>(const OpCall<A>&)> writes;
  // The inputs repeat: `inputs` names one group (an optimizer's parameter and
  // gradient), given once or more; the contract's arity is variadic.
  bool variadic = false;
};

// An OpDef with its contract registered (at static initialisation), and what
// apply() reads of it on every call under autocast, resolved once here.
template <class A>
struct Op {
  OpDef<A> def;
  AutocastPolicy autocast;      // the op's entry in the autocast table
  unsigned lowered_dtypes = 0;  // bit i: a lowering for DType i
  unsigned kept_inputs = 0;  // bit i: autocast's Lower keeps def.inputs[i]'s dtype (detached)
  unsigned f32_inputs = 0;   // bit i: ... when it is f32 (keeps_f32)
  explicit Op(OpDef<A> d) : def(std::move(d)), autocast(autocast_policy(def.name)) {
    for (const auto& l : def.lower) lowered_dtypes |= 1u << static_cast<unsigned>(l.first);
    for (std::size_t i = 0; i < def.inputs.size() && i < 32; ++i)
      if (def.inputs[i].detached) kept_inputs |= 1u << i;
    for (std::size_t i = 0; i < def.inputs.size() && i < 32; ++i)
      if (def.inputs[i].keeps_f32) f32_inputs |= 1u << i;
    bool variadic = def.variadic;  // the semantic op lists the inputs given
    for (const auto& in : def.inputs) variadic = variadic || in.optional;
    register_contract({def.name, variadic ? -1 : static_cast<int>(def.inputs.size()), def.outputs, attribute_specs<A>()});
  }
};

// ── The one generic apply ────────────────────────────────────────────────────

// Autocast (oa/matrix/autocast.hpp): whether a scope is enabled on this
// thread, and the inputs of an op cast as its `policy` says, given the dtypes
// it has lowerings for (bit i: DType i), the inputs Lower leaves as they are
// (bit i: input i of each group; an attention mask) and those it leaves when
// they are f32 (a linear's bias). False
// when no input needs a cast.
bool autocast_active();
bool autocast_inputs(AutocastPolicy policy, std::span<const Matrix> inputs, unsigned lowered_dtypes, unsigned kept_inputs, unsigned f32_inputs,
                     std::size_t group, std::vector<Matrix>& out);

// A dispatch list for one apply() call, reused by later calls on the same
// thread (one list per nesting level: a lowering may apply other ops), so that
// a warm call allocates none. Emptied on scope exit, which drops the
// dispatches' references to their storages.
class DispatchScratch {
 public:
  DispatchScratch() : list_(take()) {}
  ~DispatchScratch() {
    list_.clear();
    if (list_.capacity() > kKeep) list_ = {};
    --depth();
  }
  DispatchScratch(const DispatchScratch&) = delete;
  DispatchScratch& operator=(const DispatchScratch&) = delete;
  std::vector<runtime::ComputeDispatch>& list() { return list_; }

 private:
  static constexpr std::size_t kKeep = 1024;  // larger lists are freed, not kept
  static std::size_t& depth() {
    thread_local std::size_t d = 0;
    return d;
  }
  static std::vector<runtime::ComputeDispatch>& take() {
    thread_local std::deque<std::vector<runtime::ComputeDispatch>> lists;  // stable addresses as it grows
    if (lists.size() == depth()) lists.emplace_back();
    return lists[depth()++];
  }
  std::vector<runtime::ComputeDispatch>& list_;
};

// Returns the results; `auxiliary`, when given, receives the auxiliary outputs.
// `generator_engine`: the engine of an op without inputs (ignored otherwise).
// The lowering for `m`'s dtype (an op computes in its first input's dtype);
// throws InvalidArgument naming the op, the argument and the dtypes it takes.
template <class A>
const Lowering<A>& lowering_for(const OpDef<A>& def, const Matrix& m, std::string_view argument) {
  for (const auto& [dtype, fn] : def.lower)
    if (dtype == m.dtype()) return fn;
  std::string supported;
  for (const auto& l : def.lower) supported += (supported.empty() ? "" : ", ") + std::string(to_string(l.first));
  fail(ErrorKind::InvalidArgument, "{}: {} must be {}; found {} {}", def.name, argument, supported, to_string(m.dtype()), m.shape());
}

// The inputs are read, not copied: only an autograd node keeps them.
template <class A>
std::vector<Matrix> apply(const Op<A>& op, std::span<const Matrix> inputs, const A& attributes = {},
                          std::vector<Matrix>* auxiliary = nullptr, const Engine* generator_engine = nullptr) {
  const OpDef<A>& def = op.def;
  const std::size_t group = std::max<std::size_t>(def.inputs.size(), 1);
  if (def.variadic ? inputs.empty() || inputs.size() % group != 0 : inputs.size() != def.inputs.size())
    fail(ErrorKind::Internal, "{}: called with {} inputs; it takes {}{}", def.name, inputs.size(), def.inputs.size(),
         def.variadic ? " per group" : "");
  if (inputs.empty() && (!generator_engine || def.lower.size() != 1))
    fail(ErrorKind::Internal, "{}: an op without inputs needs an engine and one lowering", def.name);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = def.inputs[i % group];
    if (!inputs[i].defined() && spec.optional) continue;
    require_defined(inputs[i], def.name, spec.name);
    if (i > 0 && !(inputs[i].engine() == inputs[0].engine()))
      fail(ErrorKind::InvalidArgument, "{}: {} {} lives on another engine than {} {}", def.name, spec.name, inputs[i].shape(),
           def.inputs[0].name, inputs[0].shape());
  }
  if (!inputs.empty() && autocast_active()) {
    std::vector<Matrix> cast_inputs;
    if (autocast_inputs(op.autocast, inputs, op.lowered_dtypes, op.kept_inputs, op.f32_inputs, group, cast_inputs))
      return apply(op, std::span<const Matrix>(cast_inputs), attributes, auxiliary);
  }
  const Engine& engine = inputs.empty() ? *generator_engine : inputs[0].engine();
  const Lowering<A>* lowering = inputs.empty() ? &def.lower[0].second : &lowering_for(def, inputs[0], def.inputs[0].name);
  const OpCall<A> call{def.name, inputs, attributes, engine};
  const std::vector<OutputSpec> specs = def.infer(call);
  std::vector<Matrix> outputs;
  outputs.reserve(specs.size());
  for (const auto& s : specs) {
    if (s.in_place >= static_cast<int>(inputs.size()))
      fail(ErrorKind::Internal, "{}: output in place of input {} of {}", def.name, s.in_place, inputs.size());
    outputs.push_back(s.in_place >= 0 ? inputs[static_cast<std::size_t>(s.in_place)] : allocate(engine, s.shape, s.dtype));
  }
  {
    DispatchScratch scratch;
    std::vector<runtime::ComputeDispatch>& dispatches = scratch.list();
    if (def.variadic) dispatches.reserve(inputs.size() / group);
    try {
      (*lowering)(call, outputs, dispatches);
    } catch (const Error& e) {  // a device limit met by a kernel's plan (a GEMM's operand): name the op
      throw with_context(e, def.name);
    }
    SemanticOp sop;
    sop.name = def.name;
    sop.inputs.reserve(inputs.size());
    for (const auto& m : inputs)
      if (m.defined()) sop.inputs.push_back(m.shape());
    sop.outputs.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!specs[i].auxiliary) sop.outputs.push_back(outputs[i].shape());
    sop.attributes = attribute_values(attributes);
    engine.record(std::move(sop), dispatches);
  }
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].in_place >= 0) outputs[i].storage()->bump_version();
  if (def.writes) {
    const std::vector<bool> written = def.writes(call);
    for (std::size_t i = 0; i < written.size(); ++i)
      if (written[i] && inputs[i].defined()) inputs[i].storage()->bump_version();
  }
  // The autograd node's inputs (edges) leave out detached inputs.
  // Only results that can take a gradient are recorded (an i32 cast's takes none).
  bool record = def.backward && grad_enabled() &&
                std::any_of(specs.begin(), specs.end(), [](const OutputSpec& s) { return !s.auxiliary && !s.no_grad; });
  if (record) {
    record = false;
    for (std::size_t i = 0; i < inputs.size() && !record; ++i)
      record = !def.inputs[i % group].detached && inputs[i].defined() && requires_grad(inputs[i]);
  }
  if (record) {
    std::vector<Matrix> edges(inputs.begin(), inputs.end()), differentiable;
    std::vector<bool> needs;
    std::vector<Shape> shapes;  // [] for an absent input
    std::vector<DType> dtypes;  // f32 for an absent input
    for (std::size_t i = 0; i < edges.size(); ++i) {
      if (def.inputs[i % group].detached) edges[i] = Matrix();
      needs.push_back(edges[i].defined() && requires_grad(edges[i]));
      shapes.push_back(inputs[i].defined() ? inputs[i].shape() : Shape{});
      dtypes.push_back(inputs[i].defined() ? inputs[i].dtype() : DType::F32);
    }
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!specs[i].auxiliary && !specs[i].no_grad) differentiable.push_back(outputs[i]);
    const Saves saves = def.saves ? def.saves(call, needs) : Saves{};
    auto keep = [](std::span<const Matrix> ms, const std::vector<bool>& which) {
      std::vector<autograd::SavedValue> out;
      for (std::size_t i = 0; i < ms.size(); ++i)
        out.push_back(i < which.size() && which[i] ? autograd::SavedValue(ms[i]) : autograd::SavedValue());
      return out;
    };
    autograd::record(def.name, edges, differentiable,
                     [&def, attributes, saved_in = keep(inputs, saves.inputs), saved_out = keep(outputs, saves.outputs),
                      shapes = std::move(shapes), dtypes = std::move(dtypes)](const std::vector<Matrix>& gy,
                                                                              const std::vector<bool>& needed) {
                       auto get = [](const std::vector<autograd::SavedValue>& vs) {
                         std::vector<Matrix> out;
                         for (const auto& v : vs) out.push_back(v.get());
                         return out;
                       };
                       const std::vector<Matrix> in = get(saved_in), out = get(saved_out);
                       return def.backward(BackwardCall<A>{def.name, attributes, in, out, shapes, dtypes, gy, needed});
                     });
  }
  std::vector<Matrix> results;
  results.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].auxiliary) results.push_back(std::move(outputs[i]));
    else if (auxiliary) auxiliary->push_back(std::move(outputs[i]));
  }
  return results;
}
template <class A>
std::vector<Matrix> apply(const Op<A>& op, std::initializer_list<Matrix> inputs, const A& attributes = {},
                          std::vector<Matrix>* auxiliary = nullptr, const Engine* generator_engine = nullptr) {
  return apply(op, std::span<const Matrix>(inputs.begin(), inputs.size()), attributes, auxiliary, generator_engine);
}

// Runs the backward rule of `op` outside autograd, for a public
// explicit-backward function: `inputs` and `outputs` as saves() would keep
// them (undefined where the rule does not read them), the gradients of the
// results and which input gradients to make. The caller validates.
template <class A>
std::vector<Matrix> apply_backward(const Op<A>& op, const std::vector<Matrix>& inputs, const std::vector<Matrix>& outputs,
                                   const std::vector<Matrix>& grad_outputs, const std::vector<bool>& needs, const A& attributes = {}) {
  // The first operand given carries the dtype the forward computed in.
  for (std::size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
    const bool is_input = i < inputs.size();
    const Matrix& m = is_input ? inputs[i] : outputs[i - inputs.size()];
    if (!m.defined()) continue;
    (void)lowering_for(op.def, m, is_input && i < op.def.inputs.size() ? op.def.inputs[i].name : "the saved output");
    break;
  }
  std::vector<Shape> shapes;  // [] for an absent input
  std::vector<DType> dtypes;  // f32 for an absent input
  for (const auto& m : inputs) {
    shapes.push_back(m.defined() ? m.shape() : Shape{});
    dtypes.push_back(m.defined() ? m.dtype() : DType::F32);
  }
  return op.def.backward(BackwardCall<A>{op.def.name, attributes, inputs, outputs, shapes, dtypes, grad_outputs, needs});
}

// The names an op definition file (src/matrix, src/ml) writes unqualified:
// `using namespace detail::op_def;` in its anonymous namespace brings them in.
namespace op_def {
using detail::apply;
using detail::BackwardCall;
using detail::ceil_div;
using detail::every_dtype;
using detail::field;
using detail::NoAttributes;
using detail::Op;
using detail::OpCall;
using detail::OutputSpec;
using detail::Saves;
using detail::u32;
using runtime::Access;
using runtime::BufferBinding;
using runtime::ComputeDispatch;
using runtime::Storage;
}  // namespace op_def

}  // namespace oa::detail
