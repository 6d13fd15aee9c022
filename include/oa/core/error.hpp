#pragma once
// oa::Error: the one exception type oa throws. Its message names the operation,
// the argument and the shapes involved.
#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace oa {

enum class ErrorKind {
  InvalidArgument,     // bad shapes, ranks, extents, options
  OutOfRange,          // an index outside its axis, found on the device (Engine::register_device_check)
  FailedPrecondition,  // state forbids the call (released graph, stale saved value)
  ResourceExhausted,   // device memory or a device limit ran out
  Unsupported,         // the device or build lacks a needed feature
  Device,              // the Vulkan loader or driver failed
  Communication,       // an MPI collective failed or timed out (oa::dist)
  Internal,            // a bug in oa
};

std::string_view to_string(ErrorKind kind);

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message);
  ErrorKind kind() const noexcept { return kind_; }
  const char* what() const noexcept override { return what_.c_str(); }
  // The message without the "[Kind] " prefix.
  std::string_view message() const noexcept { return std::string_view(what_).substr(prefix_); }

 private:
  ErrorKind kind_;
  std::string what_;
  std::size_t prefix_;
};

// `e` again, of its kind, with `context` (the op or module whose work raised
// it: "oa::ml::nn::LSTM") and ": " before its message, unless the message
// already starts with `context` (followed by ':' or ' '): "oa::ml::nn::LSTM:
// oa::ml::linear: GEMM (...) exceeds ...". A composite rethrows the errors of
// what it runs so, and every op those of its lowering.
Error with_context(const Error& e, std::string_view context);

// Throws Error(kind, fmt::format(format, args...)).
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace oa
