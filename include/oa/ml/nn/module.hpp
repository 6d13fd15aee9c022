#pragma once
// oa::ml::nn::Module: the base of neural-network layers (torch.nn.Module).
//
// A Module owns named parameters (oa::ml::Parameter, trained by optimizers),
// named buffers (state that is saved but not trained, such as BatchNorm's
// running statistics) and named child modules. Names are hierarchical: the
// parameter `weight` of the child `qkv` of the child `attn` of the child `0` of
// the child `blocks` is `blocks.0.attn.qkv.weight`, exactly as PyTorch's
// named_parameters() and state_dict() spell it. Every listing walks the tree
// depth first in registration order: a module's own entries, then each
// child's (PyTorch's order).
//
// Parameter names: a Parameter is named as it is registered ("weight"), and
// renamed with the child's name as prefix whenever its module is registered as
// a child ("qkv.weight", then "attn.qkv.weight", ...), so that the Parameters
// of the root module carry exactly the names named_parameters() gives them
// (optimizers name their state after Parameter::name(), and reject
// duplicates). A Parameter reached along several paths (tied weights) is
// listed once, under its first name, by named_parameters() and parameters(),
// and counted once by parameter_count(); named_tensors() lists every path.
//
// Modules are created with std::make_shared and shared as children (no naked
// new); they are neither copyable nor movable, since their parameters are
// handles that optimizers hold.
//
// Mode: a module starts in training mode; train(bool) and eval() set the mode
// of the whole subtree. Dropout and BatchNorm2d behave differently in the two
// modes (as in PyTorch).
//
// Errors: oa::Error(InvalidArgument) naming the module type and the entry for an
// empty name, a name containing '.', a name already used by a parameter,
// buffer or child of the same module, an undefined value or child.
#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/checkpoint.hpp"
#include "oa/ml/parameter.hpp"

namespace oa::ml::nn {

// Name-value pairs in a fixed order, as oa::ml's checkpoint functions
// (save_safetensors, load_safetensors_into) take them.
using oa::ml::NamedMatrices;

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's computation. Each subclass documents its shapes.
  virtual Matrix forward(const Matrix& input) = 0;
  Matrix operator()(const Matrix& input) { return forward(input); }

  // The computation of a module with several inputs (attention's query, key,
  // value and masks; an undefined Matrix stands for an optional input left
  // out), in the order the subclass documents. The default takes exactly one
  // input and calls forward(input); otherwise it throws InvalidArgument
  // naming the module type and the input count.
  virtual Matrix forward_inputs(std::span<const Matrix> inputs);
  // module(a, b, ...): forward_inputs({a, b, ...}).
  template <typename... Rest>
    requires(sizeof...(Rest) >= 1 && (std::convertible_to<const Rest&, const Matrix&> && ...))
  Matrix operator()(const Matrix& first, const Rest&... rest) {
    const std::array<Matrix, 1 + sizeof...(Rest)> inputs{first, rest...};
    return forward_inputs(inputs);
  }

  // The type's name, as PyTorch prints it ("Linear", "Conv2d", ...).
  virtual std::string type_name() const = 0;

  // Sets training mode on this module and every descendant.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

  // Parameters (own, then each child's, recursively) with hierarchical names;
  // each distinct Parameter once.
  std::vector<std::pair<std::string, Parameter>> named_parameters() const;
  std::vector<Parameter> parameters() const;
  // Buffers with hierarchical names.
  NamedMatrices named_buffers() const;
  // state_dict(): per module its parameters' values, then its buffers, then
  // each child's entries, recursively. Load a checkpoint into a model with
  // load_safetensors_into(path, model.named_tensors()): the Matrices are the
  // model's own storage, overwritten in place.
  NamedMatrices named_tensors() const;
  // Direct children and all descendants (the root excluded) with their names.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;
  // The total element count of all parameters.
  std::int64_t parameter_count() const;
  // Clears the gradient of every parameter.
  void zero_grad() const;
  // Makes `p` this module's own parameter `name` (torch's `module.name = p`):
  // forward computes with p from then on. A Parameter set on two modules is
  // tied: one leaf, whose gradient sums both uses, listed once by
  // named_parameters() (under its first path) and under every path by
  // named_tensors(). Throws InvalidArgument, naming the module type and the
  // parameter, when p is undefined, `name` is not an own parameter, p's shape,
  // dtype or engine differs from the current value's (both shapes named), or
  // the module cannot rebind it (rebind_parameter returned false); nothing
  // changes then.
  void set_parameter(const std::string& name, const Parameter& p);

 protected:
  Module() = default;

  // Registers a trainable parameter named `name` that takes over `initial`'s
  // storage; returns it (a handle sharing the registered one).
  Parameter register_parameter(const std::string& name, const Matrix& initial);
  // Registers a buffer; returns the registered handle (in-place updates of
  // it, e.g. running statistics, are what named_tensors() exposes).
  Matrix register_buffer(const std::string& name, const Matrix& value);
  // Points the handle a subclass keeps of its own parameter `name` at `p`
  // (set_parameter has checked both) and returns true; a subclass whose
  // forward reads handles it keeps must override it. The default returns
  // false: set_parameter then refuses.
  virtual bool rebind_parameter(const std::string& name, const Parameter& p);
  // Registers a child; returns it with its own type. The child's parameters
  // are renamed "<name>.<their path>" now (Parameter::name, which errors and
  // optimizer state use); parameters a child gains after this keep the name
  // relative to it, so fill a container (Sequential) before registering it.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }

 private:
  void check_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const;
  void collect_tensors(const std::string& prefix, bool parameters, bool buffers, NamedMatrices& out) const;

  bool training_ = true;
  std::vector<std::pair<std::string, Parameter>> parameters_;
  NamedMatrices buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace oa::ml::nn
