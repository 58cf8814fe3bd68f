// IDX files (the MNIST format; docs/formats.md, "IDX"): magic 00 00 <type> <rank>, rank big-endian
// u32 dims, then the data big-endian, row-major. Types: 0x08 u8, 0x09 i8, 0x0B i16 (read as i32:
// tern has no i16), 0x0C i32, 0x0D f32, 0x0E f64. Gzip-compressed files are detected by their 1f 8b
// magic. A truncated, oversized or corrupt file is a DataLoss naming the file and the byte offset.
#pragma once

#include <string>
#include <vector>

#include "tern/data/dataset.h"

namespace tern::data {

struct IdxOptions {
  // Largest accepted data size; a header claiming more is rejected before anything is allocated.
  int64_t max_bytes = int64_t{4} << 30;
};

// The whole file as one tensor with the header's shape.
Tensor read_idx(const std::string& path, const IdxOptions& options = {});

// Rows of the files' tensors as elements, one component per file (all must have the same
// number of rows): idx_dataset({images, labels}) yields (u8[28, 28], u8[]) for MNIST.
DatasetPtr idx_dataset(const std::vector<std::string>& paths, const IdxOptions& options = {});

}  // namespace tern::data
