// shuffle: keeps a buffer of `buffer_size` elements and returns a uniformly drawn one, refilling
// from the input (tf.data semantics: buffer_size >= the dataset size gives a full shuffle).
// Draws come from a Philox stream seeded by `seed`, mixed with the iteration's epoch key when
// reshuffle_each_iteration is set, so every epoch differs and every run repeats.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_shuffle_dataset(DatasetPtr input, int64_t buffer_size, uint64_t seed,
                                bool reshuffle_each_iteration);

}  // namespace tern::data
