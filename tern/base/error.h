// tern::Error: the one exception type tern throws, with a code and a message that names the
// culprit.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tern {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kOutOfRange,
  kDataLoss,
  kResourceExhausted,
  kFailedPrecondition,
  kUnavailable,
  kInternal,
  kDeadlineExceeded,
  kUnimplemented,
  kCancelled,
};

std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }
  // The message without the "CodeName: " prefix.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

// Concatenates anything streamable: str_cat("op ", name, " shape ", shape).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void throw_error(ErrorCode code, const Args&... args) {
  throw Error(code, str_cat(args...));
}

}  // namespace tern

// Precondition on user-controlled input: throws InvalidArgument with the streamed message.
#define TERN_CHECK_ARG(cond, ...)                                                       \
  do {                                                                                  \
    if (!(cond)) ::tern::throw_error(::tern::ErrorCode::kInvalidArgument, __VA_ARGS__); \
  } while (0)

// Internal invariant: a violation is a tern bug, reported as Internal (never an abort).
#define TERN_CHECK(cond, ...)                                                          \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::tern::throw_error(::tern::ErrorCode::kInternal, __FILE__, ":", __LINE__, ": ", \
                          "check failed: " #cond " ", ##__VA_ARGS__);                  \
  } while (0)
