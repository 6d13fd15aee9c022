#include "oa/core/error.hpp"

namespace oa {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "InvalidArgument";
    case ErrorKind::OutOfRange: return "OutOfRange";
    case ErrorKind::FailedPrecondition: return "FailedPrecondition";
    case ErrorKind::ResourceExhausted: return "ResourceExhausted";
    case ErrorKind::Unsupported: return "Unsupported";
    case ErrorKind::Device: return "Device";
    case ErrorKind::Communication: return "Communication";
    case ErrorKind::Internal: return "Internal";
  }
  return "Unknown";
}

Error::Error(ErrorKind kind, std::string message) : kind_(kind) {
  what_ = fmt::format("[{}] ", to_string(kind));
  prefix_ = what_.size();
  what_ += message;
}

Error with_context(const Error& e, std::string_view context) {
  const std::string_view m = e.message();
  const bool named = m.starts_with(context) && m.size() > context.size() && (m[context.size()] == ':' || m[context.size()] == ' ');
  return named ? e : Error(e.kind(), fmt::format("{}: {}", context, m));
}

}  // namespace oa
