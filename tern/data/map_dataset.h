// map: applies a C++ function to every element, on the consumer's thread or on a small pool of
// workers (MapOptions::num_parallel_calls, kAutotune), in input order unless deterministic=false.
// A result without an origin takes its input's, and a function's tern::Error about one element
// gets " (at <its source position>)" appended (element.h).
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_map_dataset(DatasetPtr input, MapFn fn, MapOptions options);

}  // namespace tern::data
