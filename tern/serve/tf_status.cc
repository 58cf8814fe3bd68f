// Error code names and HTTP statuses as TF Serving uses them.
#include "tern/serve/tf_status.h"

namespace tern::serve {

std::string_view tf_error_code_name(std::optional<ErrorCode> code) {
  if (!code) return "OK";
  switch (*code) {
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case ErrorCode::kDataLoss:
      return "DATA_LOSS";
    case ErrorCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case ErrorCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kInternal:
      return "INTERNAL";
    case ErrorCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case ErrorCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case ErrorCode::kCancelled:
      return "CANCELLED";
  }
  return "UNKNOWN";
}

int http_status_of(std::optional<ErrorCode> code) {
  if (!code) return 200;
  switch (*code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kOutOfRange:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kResourceExhausted:
      return 429;
    case ErrorCode::kCancelled:
      return 499;
    case ErrorCode::kUnimplemented:
      return 501;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kDeadlineExceeded:
      return 504;
    case ErrorCode::kDataLoss:
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace tern::serve
