// Standard base64 (RFC 4648 section 4, '+' and '/', '=' padding), as TF Serving's {"b64": ...}
// values use it. Decoding follows absl::Base64Unescape: whitespace is not allowed, padding may be
// omitted, the web-safe alphabet ('-', '_') is rejected.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tern::serve {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not valid standard base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tern::serve
