#pragma once
// Define-by-run reverse-mode autograd.
//
// What records: an op whose inputs include a Matrix that requires gradients
// (a leaf marked with set_requires_grad, a Parameter, or the result of another
// recorded op), while gradient mode is on (no NoGradGuard alive on this
// thread), appends one Node to the graph: the semantic op's name, the values it
// saved, and its backward rule. Nothing records otherwise.
//
// backward(loss) walks the graph from `loss` in reverse topological order and
// records the backward work on the GPU like forward work (no host round trip);
// each backward appears in the semantic trace as "<op> backward". Gradients
// reach leaves through grad(x); a value used several times gets the sum,
// accumulated in place after the first contribution.
//
// Memory: a Node holds its saved values until backward has run it; after
// backward the graph is released (saved values freed) unless retain_graph is
// set. A second backward over a released graph throws FailedPrecondition.
//
// Versions: every saved value remembers its storage version; if the storage
// was written in place after the forward pass (Matrix::write, an optimizer
// step), backward throws FailedPrecondition naming the value (a Parameter's
// name when it has one).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::autograd {

struct Node;

// A value saved for backward together with its version at save time.
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
  std::string label_;
  bool released_ = false;
};

// Backward rule: receives the gradient of every output (an undefined Matrix
// for an output that got none is replaced by zeros) and `needs[i]`, whether
// input i wants a gradient; returns one Matrix per input (undefined where not
// needed). Runs with gradient mode off.
using BackwardFn = std::function<std::vector<Matrix>(const std::vector<Matrix>& grad_outputs, const std::vector<bool>& needs)>;

// True when gradient mode is on and any of `inputs` requires a gradient.
bool needs_record(std::initializer_list<const Matrix*> inputs);
bool needs_record(const std::vector<Matrix>& inputs);

// Records a Node for op `name` with the given inputs and outputs (outputs must
// be fresh results of the op). No-op unless needs_record(inputs).
void record(const std::string& name, const std::vector<Matrix>& inputs, const std::vector<Matrix>& outputs, BackwardFn backward);

// Sums `contribution` into the gradient slot `slot` (in place once the slot owns its buffer).
void accumulate(Matrix& slot, bool& owned, const Matrix& contribution);

}  // namespace oa::autograd

namespace oa {

// Marks a leaf as requiring gradients (returns the same handle).
const Matrix& set_requires_grad(const Matrix& m, bool requires = true);
bool requires_grad(const Matrix& m);

// Backward from a scalar `loss` (numel 1; seeds with 1) or from any `output`
// with an explicit `output_gradient` of the same shape. Throws InvalidArgument
// for a non-scalar loss without gradient or a shape mismatch; FailedPrecondition
// when `output` does not require grad, the graph was released, or a saved
// value was modified.
void backward(const Matrix& loss, bool retain_graph = false);
void backward(const Matrix& output, const Matrix& output_gradient, bool retain_graph = false);

// Gradient accumulated into a leaf (undefined Matrix if none).
Matrix grad(const Matrix& leaf);
// Clears the leaf's gradient.
void zero_grad(const Matrix& leaf);

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

}  // namespace oa
