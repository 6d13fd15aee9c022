#include "oa/ml/parameter.hpp"

#include "matrix/lowering.hpp"

namespace oa::ml {

Parameter::Parameter(std::string name, const Matrix& initial) {
  if (name.empty()) fail(ErrorKind::InvalidArgument, "oa::ml::Parameter: the name is empty");
  detail::require_f32(initial, "oa::ml::Parameter", name.c_str());
  value_ = detach(initial);
  oa::set_requires_grad(value_);
  value_.impl()->autograd->name = std::move(name);
}

Parameter Parameter::of(const Matrix& value) {
  if (!value.defined()) fail(ErrorKind::InvalidArgument, "oa::ml::Parameter::of: the value is undefined");
  const auto& a = value.impl()->autograd;
  if (!a || a->name.empty() || !autograd::grad_fn_name(value).empty())
    fail(ErrorKind::InvalidArgument, "oa::ml::Parameter::of: a {} {} that is not a Parameter's value (not a named leaf)",
         to_string(value.dtype()), value.shape());
  Parameter p;
  p.value_ = value;
  return p;
}

Parameter Parameter::of_leaf(const Matrix& leaf, std::string name) {
  if (leaf.defined() && leaf.impl()->autograd && !leaf.impl()->autograd->name.empty()) return of(leaf);
  if (!leaf.defined() || leaf.dtype() != DType::F32 || !oa::requires_grad(leaf) || !autograd::grad_fn_name(leaf).empty())
    fail(ErrorKind::InvalidArgument,
         "oa::ml::Parameter::of_leaf: {} is not an f32 leaf that requires gradients (requires_grad {}, computed by an op: {})",
         leaf.defined() ? fmt::format("a {} {}", to_string(leaf.dtype()), leaf.shape()) : std::string("an undefined value"),
         leaf.defined() && oa::requires_grad(leaf), leaf.defined() && !autograd::grad_fn_name(leaf).empty());
  if (name.empty()) fail(ErrorKind::InvalidArgument, "oa::ml::Parameter::of_leaf: the name is empty");
  leaf.impl()->autograd->name = std::move(name);
  Parameter p;
  p.value_ = leaf;
  return p;
}

const std::string& Parameter::name() const {
  if (!value_.defined()) fail(ErrorKind::InvalidArgument, "oa::ml::Parameter: use of an undefined Parameter");
  return value_.impl()->autograd->name;
}

void Parameter::set_name(std::string name) const {
  this->name();  // rejects an undefined Parameter
  if (name.empty()) fail(ErrorKind::InvalidArgument, "oa::ml::Parameter::set_name: the name is empty");
  value_.impl()->autograd->name = std::move(name);
}

void Parameter::assign(const Matrix& source) const {
  const std::string& n = name();
  detail::require_f32(source, "oa::ml::Parameter::assign", "source");
  detail::require_same_engine(value_, "the parameter", source, "source", "oa::ml::Parameter::assign");
  if (!(source.shape() == value_.shape()))
    fail(ErrorKind::InvalidArgument, "oa::ml::Parameter::assign: source {} does not match Parameter '{}' {}", source.shape(), n,
         value_.shape());
  if (source.storage() != value_.storage())
    value_.engine().copy(*source.storage(), 0, *value_.storage(), 0, static_cast<std::uint64_t>(value_.numel()) * 4);
  value_.storage()->bump_version();
}

void Parameter::write(std::span<const float> values) const {
  name();  // rejects an undefined Parameter
  value_.write(values);
}

}  // namespace oa::ml
