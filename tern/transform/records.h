// TFRecord files read in blocks: the bytes of many records at once (through tern/data's
// InputStream: plain, or gzip by its magic bytes), split into frames (tern/format's framing: u64
// length | masked CRC32C of the length | data | masked CRC32C of the data). The records are views
// into the block, valid until the next call, so reading allocates per block, never per record.
// A bad length CRC, a length over 1 GiB or a truncated tail is a DataLoss naming the file and the
// byte offset. The data CRCs are checked while splitting, or (DataCrc::kDeferred) later by
// check_data_crcs over any range of the block's records, so that analyze checks them on every
// core: the CRC of the bytes is most of the work of reading them.
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
  enum class DataCrc { kChecked, kDeferred };

  // NotFound if `path` cannot be opened. `block_bytes`: how much is read at a time (a longer
  // record grows the block to hold it).
  explicit RecordBlocks(const std::string& path, int64_t block_bytes = int64_t{32} << 20,
                        DataCrc data_crc = DataCrc::kChecked);
  ~RecordBlocks();

  // The next records (at least one), or false at the end of the file.
  bool next(std::vector<std::string_view>& records);
  // kDeferred: checks the data CRCs of records [begin, end) of the last next() (thread-safe: any
  // ranges at once); DataLoss naming the file and the record's byte offset.
  void check_data_crcs(size_t begin, size_t end) const;
  // The index in the file of records[0] of the last next().
  int64_t first_index() const { return first_index_; }
  // Bytes of the file consumed so far (uncompressed).
  int64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void corrupt(int64_t at, const std::string& problem) const;

  std::string path_;
  DataCrc data_crc_;
  std::unique_ptr<data::InputStream> in_;
  std::string buf_;
  size_t size_ = 0;     // valid bytes in buf_
  size_t head_ = 0;     // first unconsumed byte in buf_
  int64_t offset_ = 0;  // file offset of buf_[head_]
  int64_t first_index_ = 0, next_index_ = 0;
  bool eof_ = false;
  // kDeferred: per record of the last block, its stored (masked) data CRC and its frame's offset.
  std::vector<std::string_view> records_;
  std::vector<uint32_t> stored_crcs_;
  std::vector<int64_t> offsets_;
};

}  // namespace tern::transform
