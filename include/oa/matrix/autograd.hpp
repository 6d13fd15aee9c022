#pragma once
// Define-by-run reverse-mode autograd (the PyTorch autograd model: a tape of
// Nodes built while ops run, walked once in reverse by backward).
//
// What records: an op whose inputs include a Matrix that requires gradients
// (a leaf marked with set_requires_grad, a Parameter, or the result of another
// recorded op), while gradient mode is on (no NoGradGuard alive on this
// thread), appends one Node to the graph: the semantic op's name, the values it
// saved, and its backward rule. Nothing records otherwise. The Node's edges
// point at the Nodes that produced the inputs, or at the leaves themselves; the
// outputs of the op point at the Node (so the graph lives as long as some
// output of it, or a Node downstream of it, is alive).
//
// Differentiable so far: the elementwise ops (a broadcast operand's gradient
// is summed back to its shape), Matrix::reshape, transpose, matmul,
// matmul_nt, sum, mean, max (ties share the gradient evenly, as torch.amax),
// sum_all, mean_all, max_all and sum_to, the layout and concat families
// (permute, slice, expand, concat, chunk, split), and the float operands of
// index_select, gather, scatter_add, where and masked_fill (not their i32
// indices or bool masks); argmax is not (its output is I32).
//
// backward(loss) walks the graph from `loss` in reverse topological order and
// records the backward work on the GPU like forward work (no host round trip);
// each backward appears in the semantic trace as "<op> backward" (a rule may
// also call public ops, e.g. oa::matrix::sum_to for a broadcast operand, which
// keep their own names; a view's backward records nothing). Gradients reach
// leaves through grad(x); a value used several times gets the sum,
// accumulated in place after the first contribution.
//
// Gradient slots: the first contribution to a slot is adopted by reference
// (no copy); the second allocates one buffer holding the sum (recorded as
// "oa::matrix::add"); every further contribution is added in place into that
// buffer ("oa::autograd::accumulate", no allocation). A gradient has its
// input's dtype; f16 and bf16 contributions (which reach only values made by
// oa::matrix::cast, leaves being f32) add in f32 and round once, into a new
// buffer each time. Leaf gradients persist
// and accumulate across backward calls until zero_grad; distinct leaves never
// share a gradient buffer with each other or with a user-supplied
// output_gradient (a shared first contribution is copied once).
//
// Memory: a Node holds its saved values until backward has run it; after
// backward the graph is released (saved values freed) unless retain_graph is
// set. A second backward over a released graph throws FailedPrecondition.
// Intermediate gradients are freed as soon as the Node that consumes them has
// run. Storage returns to the allocator once the GPU has finished with it.
//
// Versions: every saved value remembers its storage version; if the storage
// was written in place after the forward pass (Matrix::write, an optimizer
// step), backward throws FailedPrecondition naming the value (a Parameter's
// name when it has one) and the op that saved it. Ops save only what their
// needed gradients read (x * w with only w requiring grad saves x, not w).
//
// Errors in backward are atomic for leaves: if backward throws, no leaf
// gradient changes. Without retain_graph the Nodes that already ran are
// released, so run the forward pass again before another backward.
//
// Threads: gradient mode is per thread; one graph must not be built or walked
// from several threads at once.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::autograd {

struct Node;

}  // namespace oa::autograd

namespace oa {

// Autograd state of one Matrix handle (MatrixImpl::autograd). Created lazily;
// a Matrix without it neither requires gradients nor has history.
struct AutogradMeta {
  bool requires_grad = false;              // a leaf that wants a gradient
  std::shared_ptr<autograd::Node> grad_fn; // the Node that produced this value (null for leaves)
  std::uint32_t output_index = 0;          // which output of grad_fn
  Matrix grad;                             // accumulated gradient of a leaf (undefined until backward)
  bool grad_owned = false;                 // `grad` is a buffer autograd may add into in place
  std::string name;                        // a Parameter's name (carried to reshaped views), for messages
  // register_grad_ready_hook's hooks, by id, in registration order.
  std::vector<std::pair<std::uint64_t, std::function<void(const Matrix&)>>> grad_ready_hooks;
};

}  // namespace oa

namespace oa::autograd {

// A value saved for backward together with its storage version at save time.
// It holds the same storage without the value's history (no reference cycle
// through an op's own output). An undefined Matrix may be saved (an absent
// optional operand); get() returns it as is.
class SavedValue {
 public:
  SavedValue() = default;
  explicit SavedValue(const Matrix& m);
  // The saved Matrix; throws FailedPrecondition if it was modified in place
  // since it was saved, or if the graph was released.
  const Matrix& get() const;
  void release() { value_ = Matrix(); released_ = true; }

 private:
  Matrix value_;
  std::uint64_t version_ = 0;
  std::string name_;  // the Parameter's name, for get()'s error (formatted only then)
  bool released_ = false;
};

// Backward rule: receives the gradient of every output (an undefined Matrix
// for an output that got none is replaced by zeros) and `needs[i]`, whether
// input i wants a gradient; returns one Matrix per input (undefined where not
// needed, or where the gradient is identically zero), each of its input's
// shape. Runs with gradient mode off. A rule must hold forward values only
// through SavedValue (a Matrix captured directly could keep its own Node alive
// and escapes the version check).
using BackwardFn = std::function<std::vector<Matrix>(const std::vector<Matrix>& grad_outputs, const std::vector<bool>& needs)>;

// True when gradient mode is on and any of `inputs` requires a gradient.
bool needs_record(std::initializer_list<const Matrix*> inputs);
bool needs_record(const std::vector<Matrix>& inputs);

// Records a Node for op `name` with the given inputs and outputs (outputs must
// be fresh results of the op: Internal error otherwise). No-op unless
// needs_record(inputs); an op may test needs_record first to skip building
// its saved values. Undefined inputs (absent optional operands) get no edge.
void record(const std::string& name, const std::vector<Matrix>& inputs, const std::vector<Matrix>& outputs, BackwardFn backward);

// Sums `contribution` into the gradient slot `slot`: an undefined slot adopts
// it by reference (owned = false); a slot that does not own its buffer gets a
// fresh one holding the sum (owned = true); an owned slot is added into in
// place (its version is bumped). Throws InvalidArgument on a shape mismatch.
void accumulate(Matrix& slot, bool& owned, const Matrix& contribution);

// Name of the op whose Node produced `m` ("oa::matrix::mul"), or "" for a leaf
// or a value without history.
std::string grad_fn_name(const Matrix& m);

}  // namespace oa::autograd

namespace oa {

// Marks a leaf as requiring gradients, or not when `value` is false (returns
// the same handle). Copies of the handle share the flag. Throws
// InvalidArgument for an undefined Matrix or one of no floating dtype (f32,
// f16 and bf16 may require gradients, as torch's floating dtypes; a leaf's
// gradient has its dtype), and for `value` false on
// a value that has history (use detach); `value` true on such a value changes
// nothing.
const Matrix& set_requires_grad(const Matrix& m, bool value = true);
bool requires_grad(const Matrix& m);

// Backward from a scalar `loss` (numel 1; seeds with 1) or from any `output`
// with an explicit `output_gradient` of the same shape (equivalently, the
// gradient of sum(output * output_gradient)). loss, output and
// output_gradient are f32, f16 or bf16: the seed (1, or output_gradient cast
// as torch's engine casts it) takes the output's dtype. Throws InvalidArgument
// for an undefined operand, another dtype, a non-scalar loss without
// gradient, or a shape or engine mismatch; FailedPrecondition when `output` does not require grad, the
// graph was released (checked before any work is recorded), or a saved value
// was modified (the message names the value and the op that saved it).
void backward(const Matrix& loss, bool retain_graph = false);
void backward(const Matrix& output, const Matrix& output_gradient, bool retain_graph = false);

// Gradient accumulated into a leaf (undefined Matrix if none). The returned
// handle has no history.
Matrix grad(const Matrix& leaf);
// Clears the leaf's gradient (to undefined, like PyTorch's set_to_none); the
// next backward adopts its first contribution without a copy.
void zero_grad(const Matrix& leaf);
// Replaces the leaf's accumulated gradient with `gradient` (shared, not
// copied; the next backward adds into a copy), as assigning torch's
// Tensor.grad. Throws InvalidArgument for an undefined operand, a leaf that
// does not require grad or has history, or a shape, dtype or engine mismatch.
void set_grad(const Matrix& leaf, const Matrix& gradient);

// Calls `hook(gradient)` during every backward whose graph reaches `leaf`, as
// soon as that backward's gradient of it is complete (every Node that
// contributes to it has run), while later Nodes have still to run:
// data-parallel training starts a bucket's all-reduce from it. `gradient` is
// this call's contribution, of the leaf's shape; grad(leaf) still holds what
// earlier calls accumulated (the contribution is added at the end of
// backward). Hooks run in registration order with gradient mode off; one that
// throws aborts backward (no leaf gradient changes). A backward that gives
// the leaf no gradient does not call it. Returns an id for
// remove_grad_ready_hook. Throws InvalidArgument for a leaf that does not
// require grad or has history. After torch's
// Tensor.register_post_accumulate_grad_hook, called before the accumulation.
std::uint64_t register_grad_ready_hook(const Matrix& leaf, std::function<void(const Matrix& gradient)> hook);
// Removes a hook by the id register_grad_ready_hook returned (an unknown id is ignored).
void remove_grad_ready_hook(const Matrix& leaf, std::uint64_t id);

// The same value without history (shares storage; requires_grad false).
Matrix detach(const Matrix& m);

// While alive on this thread, ops record nothing.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();
// Sets this thread's gradient mode until set again (torch.set_grad_enabled
// called as a function); a NoGradGuard alive restores its own previous mode.
void set_grad_enabled(bool enabled);

}  // namespace oa
