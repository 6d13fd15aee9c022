// The extension module oa._oa; the package oa (python/oa) re-exports it.
#include "bindings.hpp"

PYBIND11_MODULE(_oa, m) {
  namespace op = oa::python;
  m.doc() = "oa's C++ engine: tensors (oa::Matrix), autograd and the functional ops";
  op::bind_errors(m);
  op::bind_engine(m);
  op::TensorClass tensor(m, "Tensor",
                         "An n-dimensional array (rank 0..8) on one Engine (oa::Matrix). Tensors are handles: "
                         "copies share the value and its autograd identity.");
  op::bind_tensor(m, tensor);
  op::bind_autograd(m, tensor);
  op::bind_indexing(m, tensor);
  auto functional = m.def_submodule("functional", "The functional ops (oa.nn.functional)");
  op::bind_functional(functional, tensor);
  op::bind_one_hot(functional);
  auto nn = m.def_submodule("nn", "The C++ layers behind oa.nn's modules");
  op::bind_nn(nn, tensor);
  op::bind_optim(m);
  op::bind_data(m);
}
