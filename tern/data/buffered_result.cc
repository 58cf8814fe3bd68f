// BufferedResult: delivery and state encoding.
#include "tern/data/buffered_result.h"

#include "tern/base/error.h"

namespace tern::data {
namespace {

enum Kind : int64_t { kKindValue = 0, kKindError = 1, kKindEnd = 2 };

}  // namespace

std::optional<Element> BufferedResult::take() {
  if (error) std::rethrow_exception(error);
  if (end) return std::nullopt;
  return std::move(value);
}

void save_result(StateWriter& w, std::string_view key, const BufferedResult& result) {
  StateWriter::Scope scope(w, key);
  if (result.error) {
    w.write_int("kind", kKindError);
    ErrorCode code = ErrorCode::kInternal;
    std::string message;
    try {
      std::rethrow_exception(result.error);
    } catch (const Error& e) {
      code = e.code();
      message = e.message();
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "unknown exception";
    }
    w.write_int("code", static_cast<int64_t>(code));
    w.write_string("message", message);
  } else if (result.end) {
    w.write_int("kind", kKindEnd);
  } else {
    w.write_int("kind", kKindValue);
    w.write_element("value", *result.value);
  }
}

BufferedResult restore_result(StateReader& r, std::string_view key) {
  StateReader::Scope scope(r, key);
  BufferedResult out;
  const int64_t kind = r.read_int("kind");
  if (kind == kKindError) {
    const int64_t code = r.read_int("code");
    if (code < 0 || code > static_cast<int64_t>(ErrorCode::kInternal)) {
      throw_error(ErrorCode::kDataLoss, "iterator state: bad error code ", code);
    }
    out.error =
        std::make_exception_ptr(Error(static_cast<ErrorCode>(code), r.read_string("message")));
  } else if (kind == kKindEnd) {
    out.end = true;
  } else if (kind == kKindValue) {
    out.value = r.read_element("value");
  } else {
    throw_error(ErrorCode::kDataLoss, "iterator state: bad buffered result kind ", kind);
  }
  return out;
}

}  // namespace tern::data
