// padded_batch: like batch, but components may vary in shape (not rank) between elements; each
// is padded at the end of every axis to the padded shape (-1 dims: the batch's largest) with the
// component's padding value. A fixed dim smaller than an element's is an InvalidArgument.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_padded_batch_dataset(DatasetPtr input, int64_t batch_size,
                                     PaddedBatchOptions options);

// Pads and stacks `rows` (exposed for tests and other batching stages).
Element pad_and_stack(const std::vector<Element>& rows, const PaddedBatchOptions& options);

}  // namespace tern::data
