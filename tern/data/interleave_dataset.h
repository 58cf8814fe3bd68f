// interleave: maps each input element to a dataset and cycles over `cycle_length` of them at a
// time, taking `block_length` consecutive elements from each; an exhausted one is replaced by the
// dataset of the next input element (tf.data.Dataset.interleave order). Typical use: files ->
// records, e.g. list_files(...)->interleave(to_tfrecord_dataset, {.cycle_length = 4}).
// Saved state holds each open slot's input element, so `fn` must be deterministic for resume.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_interleave_dataset(DatasetPtr input, InterleaveFn fn, InterleaveOptions options);

}  // namespace tern::data
