// TF Serving's view of an error: the canonical code names printed in status JSON and error
// wrappers ("OK", "INVALID_ARGUMENT", ...) and the HTTP status each code maps to
// (model_servers/http_server.cc::ToHTTPStatusCode, SERVING.md section 1.6).
#pragma once

#include <optional>
#include <string_view>

#include "tern/base/error.h"

namespace tern::serve {

// "INVALID_ARGUMENT", "NOT_FOUND", ...; nullopt -> "OK".
std::string_view tf_error_code_name(std::optional<ErrorCode> code);

// InvalidArgument / FailedPrecondition / OutOfRange 400, NotFound 404, ResourceExhausted 429,
// Cancelled 499, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, DataLoss / Internal
// 500; nullopt -> 200.
int http_status_of(std::optional<ErrorCode> code);

}  // namespace tern::serve
