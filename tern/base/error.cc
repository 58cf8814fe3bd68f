// tern::Error and error code names.
#include "tern/base/error.h"

namespace tern {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kDataLoss:
      return "DataLoss";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kInternal:
      return "Internal";
    case ErrorCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case ErrorCode::kUnimplemented:
      return "Unimplemented";
    case ErrorCode::kCancelled:
      return "Cancelled";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message),
      code_(code),
      message_(message) {}

}  // namespace tern
