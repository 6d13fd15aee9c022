#include "oa/ml/nn/module.hpp"

#include <algorithm>
#include <unordered_set>

#include "oa/core/error.hpp"

namespace oa::ml::nn {

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Matrix Module::forward_inputs(std::span<const Matrix> inputs) {
  if (inputs.size() != 1)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: forward takes one input; {} were given", type_name(), inputs.size());
  return forward(inputs[0]);
}

void Module::check_name(const std::string& name, const char* what) const {
  if (name.empty()) fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: a {} name is empty", type_name(), what);
  if (name.find('.') != std::string::npos)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: {} name '{}' contains '.' (the separator of hierarchical names)",
         type_name(), what, name);
  bool used = false;
  for (const auto& e : parameters_) used = used || e.first == name;
  for (const auto& e : buffers_) used = used || e.first == name;
  for (const auto& e : children_) used = used || e.first == name;
  if (used) fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: {} name '{}' is already registered", type_name(), what, name);
}

Parameter Module::register_parameter(const std::string& name, const Matrix& initial) {
  check_name(name, "parameter");
  Parameter p(name, initial);
  parameters_.emplace_back(name, p);
  return p;
}

void Module::set_parameter(const std::string& name, const Parameter& p) {
  const auto entry = std::ranges::find(parameters_, name, &std::pair<std::string, Parameter>::first);
  if (entry == parameters_.end())
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: set_parameter: '{}' is not a parameter of this module", type_name(), name);
  if (!p.defined())
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: set_parameter: the new Parameter for '{}' is undefined", type_name(), name);
  const Matrix &old = entry->second.value(), &value = p.value();
  if (!(value.shape() == old.shape()) || value.dtype() != old.dtype())
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: set_parameter: parameter '{}' is {} {}, the new Parameter '{}' is {} {}",
         type_name(), name, to_string(old.dtype()), old.shape(), p.name(), to_string(value.dtype()), value.shape());
  detail::require_same_engine(old, "the old parameter", value, "the new Parameter", ("oa::ml::nn::" + type_name() + ": set_parameter").c_str());
  if (!rebind_parameter(name, p))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: set_parameter: parameter '{}' cannot be replaced in this module",
         type_name(), name);
  entry->second = p;
}

bool Module::rebind_parameter(const std::string&, const Parameter&) { return false; }

Matrix Module::register_buffer(const std::string& name, const Matrix& value) {
  check_name(name, "buffer");
  detail::require_defined(value, ("oa::ml::nn::" + type_name()).c_str(), name.c_str());
  buffers_.emplace_back(name, value);
  return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_name(name, "child module");
  if (!child) fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: child module '{}' is null", type_name(), name);
  child->train(training_);
  // Parameters this module already reaches (a child registered twice: tied weights) keep their first name.
  std::unordered_set<const MatrixImpl*> known;
  for (const auto& entry : named_parameters()) known.insert(entry.second.value().impl().get());
  for (const auto& [path, p] : child->named_parameters())
    if (!known.contains(p.value().impl().get())) p.set_name(name + "." + path);
  children_.emplace_back(name, std::move(child));
}

void Module::collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const {
  for (const auto& [name, p] : parameters_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out);
}

void Module::collect_tensors(const std::string& prefix, bool parameters, bool buffers, NamedMatrices& out) const {
  if (parameters)
    for (const auto& [name, p] : parameters_) out.emplace_back(prefix + name, p.value());
  if (buffers)
    for (const auto& [name, b] : buffers_) out.emplace_back(prefix + name, b);
  for (const auto& [name, child] : children_) child->collect_tensors(prefix + name + ".", parameters, buffers, out);
}

std::vector<std::pair<std::string, Parameter>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Parameter>> all, out;
  collect_parameters("", all);
  std::unordered_set<const MatrixImpl*> seen;
  for (auto& entry : all)
    if (seen.insert(entry.second.value().impl().get()).second) out.push_back(std::move(entry));
  return out;
}

std::vector<Parameter> Module::parameters() const {
  std::vector<Parameter> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

NamedMatrices Module::named_buffers() const {
  NamedMatrices out;
  collect_tensors("", false, true, out);
  return out;
}

NamedMatrices Module::named_tensors() const {
  NamedMatrices out;
  collect_tensors("", true, true, out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [name, child] : children_) {
    out.emplace_back(name, child);
    for (auto& [sub, m] : child->named_modules()) out.emplace_back(name + "." + sub, m);
  }
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& [name, p] : named_parameters()) n += p.value().numel();
  return n;
}

void Module::zero_grad() const {
  for (const auto& [name, p] : named_parameters()) p.zero_grad();
}

}  // namespace oa::ml::nn
