// BufferedResult: one produced-ahead outcome held by an asynchronous stage (prefetch, parallel
// map): an element, an error to rethrow in order, or the end of the input; saved and restored
// with the stage.
#pragma once

#include <exception>
#include <optional>
#include <string_view>

#include "tern/data/element.h"
#include "tern/data/iterator_state.h"

namespace tern::data {

struct BufferedResult {
  std::optional<Element> value;  // set for an element
  std::exception_ptr error;      // set for an error
  bool end = false;              // the input is exhausted

  // Returns the element, rethrows the error, or nullopt at the end.
  std::optional<Element> take();
};

// Errors are stored as (code, message); exceptions that are not tern::Error become Internal.
void save_result(StateWriter& w, std::string_view key, const BufferedResult& result);
BufferedResult restore_result(StateReader& r, std::string_view key);

}  // namespace tern::data
