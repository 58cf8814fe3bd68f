// TFRecord files read in blocks: the bytes of many records at once (through tern/data's
// InputStream: plain, or gzip by its magic bytes), split by tern/format's frame decoder, every
// length and data CRC checked. The records are views into the block, valid until the next call,
// so reading allocates per block, never per record. Used by analyze, apply_transform and the
// bench; a corrupt frame or a truncated tail is a DataLoss naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tern::data {
class InputStream;
}

namespace tern::transform {

class RecordBlocks {
 public:
  // NotFound if `path` cannot be opened. `block_bytes`: how much is read at a time (a longer
  // record grows the block to hold it).
  explicit RecordBlocks(const std::string& path, int64_t block_bytes = int64_t{32} << 20);
  ~RecordBlocks();

  // The next records (at least one), or false at the end of the file.
  bool next(std::vector<std::string_view>& records);
  // The index in the file of records[0] of the last next().
  int64_t first_index() const { return first_index_; }
  // Bytes of the file consumed so far (uncompressed).
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<data::InputStream> in_;
  std::string buf_;
  size_t size_ = 0;   // valid bytes in buf_
  size_t head_ = 0;   // first unconsumed byte in buf_
  int64_t offset_ = 0;  // file offset of buf_[head_]
  int64_t first_index_ = 0, next_index_ = 0;
  bool eof_ = false;
};

}  // namespace tern::transform
