// tfrecord_dataset: the records of TFRecord files, in file order, each as a rank-1 u8 tensor
// (tensor_bytes() gives the string back). Corrupt records raise DataLoss naming the file and byte
// offset, or with skip_corrupt are skipped and counted in the stage's `skipped` statistic. Each
// element's origin is its file and record index (0-based, counting the records read, as `tern data
// inspect` numbers them), which parse errors name after any shuffle.
#pragma once

#include <string>
#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/tfrecord_reader.h"

namespace tern::data {

DatasetPtr tfrecord_dataset(std::vector<std::string> files, TFRecordOptions options = {});

}  // namespace tern::data
