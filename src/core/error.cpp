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

}  // namespace oa
