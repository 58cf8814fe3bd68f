// repeat: the input `count` times (count < 0: forever). Each pass gets its own epoch key, so a
// reshuffling shuffle below it changes order every pass. A pass that yields nothing ends the
// repeat, so repeating an empty dataset forever terminates.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_repeat_dataset(DatasetPtr input, int64_t count);

}  // namespace tern::data
