// from_generator: a source backed by a C++ callable. `make_generator` is called once per
// iterator and returns the generator, which yields elements until it returns nullopt.
// Restoring a saved position re-creates the generator and discards the elements already
// produced, so resume is exact when the generator is deterministic.
#pragma once

#include <functional>
#include <optional>

#include "tern/data/dataset.h"

namespace tern::data {

using Generator = std::function<std::optional<Element>()>;

DatasetPtr from_generator(std::function<Generator()> make_generator,
                          int64_t cardinality = kUnknownCardinality);

}  // namespace tern::data
