// The oa command line.
#include <CLI/CLI.hpp>
#include <iostream>

#include "oa/oa.hpp"

namespace {

void print_device(const oa::DeviceInfo& d, bool chosen) {
  fmt::print("{} [{}] {} ({}), driver {} {}, Vulkan {}\n", chosen ? "*" : " ", d.index, d.name, oa::to_string(d.type),
             d.driver_name, d.driver_info, d.api_version);
}

int info() {
  auto devices = oa::Engine::devices();
  oa::Engine engine = oa::Engine::default_engine();
  const auto& d = engine.device();
  fmt::print("oa {} — Vulkan devices ({}; * = chosen, override with OA_DEVICE=<index or name>):\n", OA_VERSION, devices.size());
  for (auto& dev : devices) print_device(dev, dev.index == d.index);
  fmt::print("\nengine device: {}\n", d.name);
  fmt::print("  subgroup size                {}\n", d.subgroup_size);
  fmt::print("  shared memory per workgroup  {} bytes\n", d.max_shared_memory_bytes);
  fmt::print("  max workgroup count          {} x {} x {}\n", d.max_workgroup_count[0], d.max_workgroup_count[1],
             d.max_workgroup_count[2]);
  fmt::print("  max workgroup size           {} x {} x {} ({} invocations)\n", d.max_workgroup_size[0], d.max_workgroup_size[1],
             d.max_workgroup_size[2], d.max_workgroup_invocations);
  fmt::print("  max push constants           {} bytes\n", d.max_push_constants_bytes);
  fmt::print("  max storage buffer range     {} bytes\n", d.max_storage_buffer_range);
  fmt::print("  max memory allocation        {} bytes\n", d.max_memory_allocation_bytes);
  fmt::print("  device-local memory          {:.1f} GiB\n", static_cast<double>(d.device_local_bytes) / (1ull << 30));
  fmt::print("  timestamps                   {}{}\n", d.timestamps ? "yes" : "no",
             d.timestamps ? fmt::format(" ({} ns per tick)", d.timestamp_period_ns) : "");
  fmt::print("  unified memory               {}\n", d.unified_memory ? "yes" : "no");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oa: a GPU-first machine-learning matrix engine on Vulkan"};
  app.require_subcommand(1);
  auto* info_cmd = app.add_subcommand("info", "List Vulkan devices and the chosen engine's limits");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*info_cmd) return info();
  } catch (const oa::Error& e) {
    std::cerr << "oa: " << e.message() << "\n";
    return 1;
  }
  return 0;
}
