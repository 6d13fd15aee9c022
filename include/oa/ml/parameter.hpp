#pragma once
// oa::ml::Parameter: a named leaf of the autograd graph (torch.nn.Parameter).
//
// A Parameter owns its value, an f32 Matrix that requires gradients, and the
// gradient that backward accumulates into it. It is a handle: copies share the
// value, the gradient and the version, so the same Parameter used several
// times in a forward pass accumulates one gradient.
//
// Versions: every in-place update of the value bumps the version of its
// storage: assign() and write() here; an optimizer that updates the value with
// a kernel calls value().storage()->bump_version(). A backward whose forward
// saved the value before such an update throws FailedPrecondition naming the
// Parameter (see oa/matrix/autograd.hpp).
#include <cstdint>
#include <span>
#include <string>

#include "oa/matrix/autograd.hpp"

namespace oa::ml {

class Parameter {
 public:
  Parameter() = default;  // undefined; defined() is false
  // A Parameter named `name` whose value takes over `initial`'s storage (no
  // copy, no history; update it through the Parameter from then on). Throws
  // InvalidArgument for an empty name or an undefined or non-f32 `initial`.
  Parameter(std::string name, const Matrix& initial);

  // The Parameter whose value() is `value` (a handle sharing it, as copies
  // do), for code that holds values only (the Python bindings hand
  // optimizers the tensors that modules return). Throws InvalidArgument when
  // `value` is not a Parameter's value: undefined, or not a named leaf.
  static Parameter of(const Matrix& value);
  // The Parameter of `leaf`, as torch.optim takes any leaf tensor: of(leaf)
  // for a Parameter's value, else an unnamed f32 leaf that requires gradients
  // becomes a Parameter named `name` in place (the returned handle and `leaf`
  // share value, gradient and version). Throws InvalidArgument for anything
  // else: a result of an op, a tensor that does not require gradients, a
  // dtype other than f32, an empty name.
  static Parameter of_leaf(const Matrix& leaf, std::string name);

  bool defined() const { return value_.defined(); }
  const std::string& name() const;
  // Renames the Parameter (every handle sees the new name). Modules use it to
  // give their parameters hierarchical names as they are composed. Throws
  // InvalidArgument for an empty name or an undefined Parameter.
  void set_name(std::string name) const;
  // The value: a leaf that requires gradients (unless set_requires_grad(false)).
  const Matrix& value() const { return value_; }
  const Shape& shape() const { return value_.shape(); }
  // The gradient accumulated by backward since the last zero_grad (undefined if none).
  Matrix grad() const { return oa::grad(value_); }
  void zero_grad() const { oa::zero_grad(value_); }
  bool requires_grad() const { return oa::requires_grad(value_); }
  void set_requires_grad(bool value) const { oa::set_requires_grad(value_, value); }
  // Storage version, bumped by every in-place update.
  std::uint64_t version() const { return value_.version(); }

  // Copies `source` into the value on the GPU and bumps the version. Throws
  // InvalidArgument naming the Parameter on a shape, dtype or engine mismatch.
  void assign(const Matrix& source) const;
  // Overwrites the value from the host and bumps the version. Throws
  // InvalidArgument when values.size() differs from the element count.
  void write(std::span<const float> values) const;

 private:
  Matrix value_;
};

}  // namespace oa::ml
