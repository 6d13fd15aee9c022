// Devices and engines: oa.dtype, oa.DeviceInfo, oa.devices(), oa.Engine,
// oa.default_engine(), oa.synchronize().
#include <pybind11/stl.h>

#include <string>
#include <variant>

#include "bindings.hpp"

namespace oa::python {

using namespace py::literals;

void bind_engine(py::module_& m) {
  py::enum_<DType>(m, "dtype", "Element types (torch.float32, float16, bfloat16, int32, bool)")
      .value("float32", DType::F32)
      .value("float16", DType::F16)
      .value("bfloat16", DType::BF16)
      .value("int32", DType::I32)
      .value("bool", DType::Bool)
      .def_property_readonly("is_floating_point", [](DType d) { return is_floating_point(d); })
      .def_property_readonly("itemsize", [](DType d) { return size_of(d); });
  // oa.float32 as torch prints torch.float32: set anew, since def() would add
  // overloads behind py::enum_'s own __repr__ and __str__.
  for (const char* method : {"__repr__", "__str__"})
    m.attr("dtype").attr(method) =
        py::cpp_function([](const py::object& d) { return "oa." + py::str(d.attr("name")).cast<std::string>(); }, py::name(method),
                         py::is_method(m.attr("dtype")));

  py::class_<DeviceInfo>(m, "DeviceInfo", "A Vulkan device and the limits oa's kernels depend on")
      .def_readonly("index", &DeviceInfo::index)
      .def_readonly("name", &DeviceInfo::name)
      .def_property_readonly("type", [](const DeviceInfo& d) { return std::string(to_string(d.type)); })
      .def_readonly("driver_name", &DeviceInfo::driver_name)
      .def_readonly("driver_info", &DeviceInfo::driver_info)
      .def_readonly("api_version", &DeviceInfo::api_version)
      .def_readonly("subgroup_size", &DeviceInfo::subgroup_size)
      .def_readonly("max_shared_memory_bytes", &DeviceInfo::max_shared_memory_bytes)
      .def_readonly("max_storage_buffer_range", &DeviceInfo::max_storage_buffer_range)
      .def_readonly("device_local_bytes", &DeviceInfo::device_local_bytes)
      .def_readonly("unified_memory", &DeviceInfo::unified_memory)
      .def_property_readonly("tensor_cores", [](const DeviceInfo& d) { return !d.cooperative_matrix.empty(); })
      .def("__repr__", [](const DeviceInfo& d) {
        return fmt::format("oa.DeviceInfo(index={}, name='{}', type='{}', driver='{}', api={})", d.index, d.name,
                           to_string(d.type), d.driver_name, d.api_version);
      });

  m.def("devices", &Engine::devices, "Every Vulkan device the loader reports (oa::Engine::devices).");

  py::class_<Engine>(m, "Engine",
                     "Owns one Vulkan device, its memory, queue and kernels (oa::Engine). Work is recorded lazily "
                     "and submitted on a host read, synchronize(), or every 64 dispatches (sooner with OA_EARLY_SUBMISSION=1).")
      .def(py::init([](const std::optional<std::variant<std::int64_t, std::string>>& device,
                       std::optional<bool> validation) {
             EngineOptions options;
             if (device) {
               options.device = std::holds_alternative<std::string>(*device)
                                    ? std::get<std::string>(*device)
                                    : std::to_string(std::get<std::int64_t>(*device));
             }
             options.validation = validation;
             return Engine(options);
           }),
           py::arg("device") = py::none(), py::arg("validation") = py::none(),
           "device: an index or a case-insensitive name substring (default: OA_DEVICE, then the best device); "
           "validation: the Vulkan validation layers (default: OA_VALIDATION=1).")
      .def_property_readonly("device", &Engine::device, py::return_value_policy::reference_internal)
      .def("synchronize", &Engine::synchronize, "Submits the recorded work and waits for all of it.")
      .def("empty_cache", &Engine::empty_cache, "Returns free device memory blocks to the driver.")
      .def("memory_stats",
           [](const Engine& e) {
             const MemoryStats s = e.memory_stats();
             return py::dict("in_use_bytes"_a = s.in_use_bytes, "reserved_bytes"_a = s.reserved_bytes,
                             "peak_in_use_bytes"_a = s.peak_in_use_bytes, "peak_reserved_bytes"_a = s.peak_reserved_bytes,
                             "live_storages"_a = s.live_storages, "blocks"_a = s.blocks, "driver_allocations"_a = s.driver_allocations);
           })
      .def("stats",
           [](const Engine& e) {
             const EngineStats s = e.stats();
             return py::dict("dispatches"_a = s.dispatches, "barriers"_a = s.barriers, "submits"_a = s.submits, "host_waits"_a = s.host_waits,
                             "semantic_ops"_a = s.semantic_ops, "pipelines"_a = s.pipelines);
           })
      .def("__eq__", [](const Engine& a, const Engine& b) { return a == b; }, py::is_operator())  // other types: NotImplemented
      .def("__hash__", [](const Engine& e) { return std::hash<const void*>()(e.state().get()); })
      .def("__repr__", [](const Engine& e) { return fmt::format("oa.Engine(device='{}')", e.device().name); });

  for (const char* name : {"dtype", "DeviceInfo", "Engine"}) m.attr(name).attr("__module__") = "oa";
  m.def("validation_message_count", &validation_message_count,
        "Vulkan validation-layer messages (warnings and errors) seen in this process (OA_VALIDATION=1).");
  m.def("default_engine", &Engine::default_engine,
        "The process-wide engine that tensors are created on unless given one (created on first use).");
  m.def(
      "set_float32_matmul_precision",
      [](const std::string& precision, const std::optional<Engine>& engine) {
        if (precision != "highest" && precision != "high")
          fail(ErrorKind::InvalidArgument,
               "oa.set_float32_matmul_precision: precision '{}' is not 'highest' (FP32 kernels) or 'high' (FP32-accurate "
               "products of split float16 operands on the tensor cores); 'medium' is not implemented",
               precision);
        (engine ? *engine : Engine::default_engine())
            .set_float32_matmul_precision(precision == "high" ? MatmulPrecision::High : MatmulPrecision::Highest);
      },
      py::arg("precision"), py::arg("engine") = py::none(),
      "How float32 matrix products run on `engine` (default: the default engine), as "
      "torch.set_float32_matmul_precision: 'highest' (the default) the FP32 kernels; 'high' three float16 products "
      "of operands split into high and low parts with per-row / per-column power-of-two scales (Ootomo & Yokota, "
      "IJHPCA 2022) on the tensor cores, about FP32's accuracy, where the device has cooperative matrices (elsewhere "
      "the FP32 kernels). Applies to matmul, bmm, linear and the convolutions and attention that lower to the shared "
      "GEMM, and their gradients (oa::Engine::set_float32_matmul_precision). Raises oa.Error (InvalidArgument) for "
      "other strings.");
  m.def(
      "get_float32_matmul_precision",
      [](const std::optional<Engine>& engine) {
        return std::string(to_string((engine ? *engine : Engine::default_engine()).float32_matmul_precision()));
      },
      py::arg("engine") = py::none(), "'highest' or 'high' (torch.get_float32_matmul_precision; see set_float32_matmul_precision).");
  m.def(
      "synchronize", [](const std::optional<Engine>& engine) { (engine ? *engine : Engine::default_engine()).synchronize(); },
      py::arg("engine") = py::none(), "Waits for the work recorded on `engine` (default: the default engine).");
}

}  // namespace oa::python
