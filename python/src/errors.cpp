// oa::Error as Python exceptions: oa.Error, and one subclass per ErrorKind that
// also derives from the matching built-in exception, raised with the message.
#include "bindings.hpp"

namespace oa::python {
namespace {

struct KindClass {
  ErrorKind kind;
  const char* name;
  PyObject* builtin;
  const char* doc;
};

// Filled once at import; the module keeps the classes alive.
PyObject* g_classes[static_cast<int>(ErrorKind::Internal) + 1] = {};

}  // namespace

void bind_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc("oa.Error", "An error of oa's C++ engine (oa::Error).", PyExc_Exception, nullptr);
  if (!base) throw py::error_already_set();
  m.attr("Error") = py::reinterpret_steal<py::object>(base);
  const KindClass kinds[] = {
      {ErrorKind::InvalidArgument, "InvalidArgumentError", PyExc_ValueError, "Bad shapes, ranks, extents, dtypes or options."},
      {ErrorKind::OutOfRange, "OutOfRangeError", PyExc_IndexError,
       "An index tensor held an index outside its axis (found when the GPU ran the op, raised at a later synchronize or host read)."},
      {ErrorKind::FailedPrecondition, "FailedPreconditionError", PyExc_RuntimeError,
       "State forbids the call (a released graph, a value modified after it was saved for backward)."},
      {ErrorKind::ResourceExhausted, "ResourceExhaustedError", PyExc_MemoryError,
       "Device memory or a device limit ran out."},
      {ErrorKind::Unsupported, "UnsupportedError", PyExc_RuntimeError, "The device or build lacks a needed feature."},
      {ErrorKind::Device, "DeviceError", PyExc_RuntimeError, "The Vulkan loader or driver failed."},
      {ErrorKind::Communication, "CommunicationError", PyExc_RuntimeError,
       "An MPI collective of oa::dist failed, or a peer rank did not join it in time."},
      {ErrorKind::Internal, "InternalError", PyExc_RuntimeError, "A bug in oa."},
  };
  for (const auto& k : kinds) {
    const std::string qualified = std::string("oa.") + k.name;
    py::tuple bases = py::make_tuple(py::handle(base), py::handle(k.builtin));
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), k.doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    m.attr(k.name) = py::reinterpret_steal<py::object>(cls);
    g_classes[static_cast<int>(k.kind)] = cls;
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(g_classes[static_cast<int>(e.kind())], std::string(e.message()).c_str());
    }
  });
}

}  // namespace oa::python
