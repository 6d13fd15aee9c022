#pragma once
// What every fuzz target shares: one engine for the whole run, the input
// written to a file for the readers, and the rule that a call either returns
// or throws oa::Error (any other exception, an Internal error, a
// validation-layer message or a leaked storage aborts, which libFuzzer
// reports with the input that caused it).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "oa/oa.hpp"

namespace oa::fuzz {

[[noreturn]] inline void die(const std::string& why) {
  std::fprintf(stderr, "fuzz: %s\n", why.c_str());
  std::fflush(stderr);
  std::abort();
}

// The run's engine on lavapipe with the validation layers on. Its memory is
// capped at 256 MiB, so that huge decoded shapes end in ResourceExhausted
// rather than in a driver allocation libFuzzer's malloc limit would flag.
inline const Engine& engine() {
  static const Engine e([] {
    EngineOptions o;
    o.validation = true;
    o.memory_limit_bytes = std::uint64_t{256} << 20;
    return o;
  }());
  return e;
}

// A file of this process holding the input (the readers take paths).
inline std::filesystem::path write_input(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("oa-fuzz-" + std::to_string(::getpid()) + ".bin");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) die("cannot write " + path.string());
  return path;
}

// Runs f(); an oa::Error other than Internal is an accepted outcome. Afterwards
// the engine must hold no more storages than before and the validation layers
// must have stayed silent.
template <typename F>
void expect_return_or_error(F&& f) {
  (void)engine().device_check_record();  // made on first use, then held by the engine: not a leak of f's
  const std::uint64_t storages = engine().memory_stats().live_storages;
  const std::uint64_t messages = validation_message_count();
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Internal) die(std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    die(std::string("an exception that is not oa::Error: ") + e.what());
  }
  // Storages freed while the GPU may still use them are released once it is
  // done. An index out of range that f's ops found on the device is reported
  // here (OutOfRange: a valid outcome).
  try {
    engine().synchronize();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfRange) throw;
  }
  if (validation_message_count() != messages) die("validation-layer message");
  const std::uint64_t after = engine().memory_stats().live_storages;
  if (after != storages) die("leaked storages: " + std::to_string(storages) + " before, " + std::to_string(after) + " after");
}

}  // namespace oa::fuzz
