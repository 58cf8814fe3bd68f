// compute_statistics: the files read once by the calling thread in blocks of whole TFRecord
// frames; workers (one per core, a tern ThreadPool) check each frame's CRCs, walk its Example in
// place and summarize the block; block summaries are merged in file order (statistics.h).
#include "tern/pipeline/statistics.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>

#include "tern/base/error.h"
#include "tern/base/progress_line.h"
#include "tern/base/terminal.h"
#include "tern/base/thread_pool.h"
#include "tern/data/input_stream.h"
#include "tern/format/crc32c.h"
#include "tern/format/tfrecord_frame.h"
#include "tern/pipeline/stats_accumulator.h"

namespace tern::pipeline {

using stats_internal::StatsAccumulator;

std::string_view feature_type_name(FeatureType type) {
  switch (type) {
    case FeatureType::kInt:
      return "int";
    case FeatureType::kFloat:
      return "float";
    case FeatureType::kBytes:
      return "bytes";
    case FeatureType::kImage:
      return "image";
  }
  return "float";
}

std::optional<FeatureType> parse_feature_type(std::string_view name) {
  for (FeatureType t :
       {FeatureType::kInt, FeatureType::kFloat, FeatureType::kBytes, FeatureType::kImage})
    if (feature_type_name(t) == name) return t;
  return std::nullopt;
}

const FeatureStatistics* DatasetStatistics::find(std::string_view name) const {
  auto it =
      std::lower_bound(features.begin(), features.end(), name,
                       [](const FeatureStatistics& f, std::string_view n) { return f.name < n; });
  return it != features.end() && it->name == name ? &*it : nullptr;
}

std::string value_text(std::string_view bytes) {
  // Valid UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
  auto sequence_length = [&](size_t i) -> size_t {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) return 1;
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return 0;
    }
    if (i + n > bytes.size()) return 0;
    const auto c1 = static_cast<unsigned char>(bytes[i + 1]);
    if (c1 < lo || c1 > hi) return 0;
    for (size_t k = 2; k < n; ++k) {
      const auto ck = static_cast<unsigned char>(bytes[i + k]);
      if (ck < 0x80 || ck > 0xbf) return 0;
    }
    return n;
  };
  bool valid = true;
  for (size_t i = 0; i < bytes.size() && valid;) {
    const size_t n = sequence_length(i);
    valid = n > 0;
    i += n;
  }
  if (valid) return std::string(bytes);
  std::string out;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = sequence_length(i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      const auto c = static_cast<unsigned char>(bytes[i++]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

namespace {

void check_options(const StatisticsOptions& o) {
  TERN_CHECK_ARG(o.top_k >= 0 && o.top_k <= 100000,
                 "statistics: top_k must be in [0, 100000], got ", o.top_k);
  TERN_CHECK_ARG(o.histogram_bins >= 1 && o.histogram_bins <= 10000,
                 "statistics: histogram_bins must be in [1, 10000], got ", o.histogram_bins);
  TERN_CHECK_ARG(o.max_value_counts >= 0, "statistics: max_value_counts must be >= 0");
  TERN_CHECK_ARG(o.max_exact_values >= 0, "statistics: max_exact_values must be >= 0");
  TERN_CHECK_ARG(o.max_distinct_numbers >= 0, "statistics: max_distinct_numbers must be >= 0");
  TERN_CHECK_ARG(o.max_decoded_images >= 0, "statistics: max_decoded_images must be >= 0");
  TERN_CHECK_ARG(o.sketch_relative_accuracy > 0 && o.sketch_relative_accuracy < 0.5,
                 "statistics: sketch_relative_accuracy must be in (0, 0.5), got ",
                 o.sketch_relative_accuracy);
  TERN_CHECK_ARG(o.block_bytes >= 4096 && o.block_bytes <= (int64_t{1} << 30),
                 "statistics: block_bytes must be in [4096, 2^30], got ", o.block_bytes);
  for (double q : o.quantiles)
    TERN_CHECK_ARG(q >= 0 && q <= 1, "statistics: quantile ", q, " is not in [0, 1]");
  const std::string problem = thread_count_problem(o.threads, /*zero_ok=*/true);
  TERN_CHECK_ARG(problem.empty(), "statistics: threads ", problem);
}

// Whole TFRecord frames of one file, read by the calling thread.
struct Block {
  std::string data;
  size_t size = 0;           // bytes of whole frames at the start of `data`
  size_t file = 0;           // index into the file list
  int64_t offset = 0;        // (uncompressed) offset of data[0] in the file
  int64_t first_record = 0;  // index in its file of the first record
  int64_t first_global = 0;  // index over every file
  int64_t seq = 0;           // merge order
};

class StatisticsRun {
 public:
  StatisticsRun(const std::vector<std::string>& files, const StatisticsOptions& o)
      : files_(files), o_(o), total_(o) {}

  DatasetStatistics run() {
    const int threads = o_.threads > 0 ? o_.threads : std::max(1, available_cores());
    for (int i = 0; i < threads + 2; ++i) free_.push_back(std::make_unique<Block>());
    std::optional<ThreadPool> workers;
    try {
      workers.emplace(threads);
      for (int i = 0; i < threads; ++i) workers->schedule([this] { work(); });
      produce();
    } catch (...) {
      fail(std::current_exception());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    workers.reset();  // joins them
    if (error_) std::rethrow_exception(error_);
    TERN_CHECK(next_merge_ == blocks_, "merged ", next_merge_, " of ", blocks_, " blocks");
    DatasetStatistics out = total_.finish();
    out.files = files_;
    out.bytes = bytes_;
    return out;
  }

 private:
  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = e;
    }
    cv_.notify_all();
  }

  std::unique_ptr<Block> take_free() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || error_; });
    if (error_) return nullptr;
    std::unique_ptr<Block> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }

  void produce() {
    std::optional<ProgressLine> line;
    if (o_.progress && is_interactive_terminal(STDERR_FILENO))
      line.emplace(std::cerr, "statistics", "records", -1, true);
    int64_t total_bytes = 0;
    for (const std::string& f : files_) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(f, ec);
      if (!ec) total_bytes += static_cast<int64_t>(size);
    }
    std::string tail;
    int64_t global = 0;
    for (size_t fi = 0; fi < files_.size(); ++fi) {
      const std::string& path = files_[fi];
      std::unique_ptr<data::InputStream> in =
          data::InputStream::open(path, data::Compression::kAuto);
      int64_t offset = 0, record = 0;
      size_t target = static_cast<size_t>(o_.block_bytes);
      tail.clear();
      while (true) {
        std::unique_ptr<Block> b = take_free();
        if (!b) return;
        b->data.resize(std::max(target, tail.size()));
        std::memcpy(b->data.data(), tail.data(), tail.size());
        const size_t want = b->data.size() - tail.size();
        const size_t got = in->read(b->data.data() + tail.size(), want);
        const bool eof = got < want;
        if (eof) {
          char probe;
          in->read(&probe, 1);  // a compressed stream cut short reports it here (DataLoss)
        }
        const size_t filled = tail.size() + got;
        bytes_ += static_cast<int64_t>(got);
        // Whole frames from the start; the rest waits for the next read.
        size_t p = 0;
        int64_t records = 0;
        target = static_cast<size_t>(o_.block_bytes);
        while (filled - p >= format::kTFRecordHeaderBytes) {
          uint64_t length;
          uint32_t stored;
          std::memcpy(&length, b->data.data() + p, 8);
          std::memcpy(&stored, b->data.data() + p + 8, 4);
          if (format::crc32c_mask(format::crc32c(b->data.data() + p, 8)) != stored)
            throw_error(ErrorCode::kDataLoss, path, ": corrupt TFRecord at ",
                        in->describe_offset(offset + static_cast<int64_t>(p)),
                        ": length CRC mismatch");
          if (length > format::kTFRecordMaxLength)
            throw_error(ErrorCode::kDataLoss, path, ": corrupt TFRecord at ",
                        in->describe_offset(offset + static_cast<int64_t>(p)), ": length ", length,
                        " over the limit");
          const size_t frame = format::kTFRecordHeaderBytes + static_cast<size_t>(length) +
                               format::kTFRecordFooterBytes;
          if (filled - p < frame) {
            target = std::max(target, frame);
            break;
          }
          p += frame;
          ++records;
        }
        tail.assign(b->data.data() + p, filled - p);
        if (eof && !tail.empty())
          throw_error(ErrorCode::kDataLoss, path, ": truncated TFRecord at ",
                      in->describe_offset(offset + static_cast<int64_t>(p)), " (", tail.size(),
                      " bytes of an incomplete record at the end of the file)");
        if (records > 0) {
          if (decode_stride_ < 0) decode_stride_ = image_stride(records, p, total_bytes);
          b->size = p;
          b->file = fi;
          b->offset = offset;
          b->first_record = record;
          b->first_global = global;
          {
            std::lock_guard<std::mutex> lock(mu_);
            b->seq = blocks_++;
            ready_.push_back(std::move(b));
          }
          cv_.notify_all();
          offset += static_cast<int64_t>(p);
          record += records;
          global += records;
          if (line) line->update(global);
        } else {
          std::lock_guard<std::mutex> lock(mu_);
          free_.push_back(std::move(b));
        }
        if (eof) break;
      }
    }
  }

  // Decode every k-th PNG / JPEG image, k from the record count the first block suggests.
  int64_t image_stride(int64_t records, size_t bytes, int64_t total_bytes) const {
    if (o_.max_decoded_images == 0) return 0;
    const double estimate = static_cast<double>(records) * static_cast<double>(total_bytes) /
                            static_cast<double>(std::max<size_t>(bytes, 1));
    return std::max<int64_t>(
        1, static_cast<int64_t>(estimate / static_cast<double>(o_.max_decoded_images)) + 1);
  }

  // A worker: blocks until the producer is done; every exception ends up in error_.
  void work() {
    try {
      work_blocks();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  void work_blocks() {
    while (true) {
      std::unique_ptr<Block> b;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !ready_.empty() || done_ || error_; });
        if (error_ || ready_.empty()) return;
        b = std::move(ready_.front());
        ready_.pop_front();
      }
      StatsAccumulator acc(o_);
      try {
        summarize(*b, acc);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        const int64_t seq = b->seq;
        free_.push_back(std::move(b));
        pending_.emplace(seq, std::move(acc));
        while (!pending_.empty() && pending_.begin()->first == next_merge_) {
          total_.merge(std::move(pending_.begin()->second));
          pending_.erase(pending_.begin());
          ++next_merge_;
        }
      }
      cv_.notify_all();
    }
  }

  void summarize(const Block& b, StatsAccumulator& acc) const {
    const std::string& path = files_[b.file];
    const std::string_view data(b.data.data(), b.size);
    size_t p = 0;
    int64_t record = b.first_record, global = b.first_global;
    while (p < data.size()) {
      const format::TFRecordFrame frame = format::tfrecord_decode(data.substr(p));
      if (!frame.ok())
        throw_error(ErrorCode::kDataLoss, path, ": corrupt TFRecord at byte offset ",
                    b.offset + static_cast<int64_t>(p), " (record ", record, "): ", frame.problem);
      const bool decode = decode_stride_ > 0 && global % decode_stride_ == 0;
      try {
        acc.add_record(frame.data, static_cast<size_t>(b.offset) + p + format::kTFRecordHeaderBytes,
                       path, decode);
      } catch (const Error& e) {
        throw Error(e.code(),
                    str_cat(e.message(), " (record ", record, ": not a tf.train.Example)"));
      }
      p += static_cast<size_t>(frame.frame_bytes());
      ++record, ++global;
    }
  }

  const std::vector<std::string>& files_;
  const StatisticsOptions& o_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Block>> free_;
  std::deque<std::unique_ptr<Block>> ready_;
  std::map<int64_t, StatsAccumulator> pending_;
  StatsAccumulator total_;
  int64_t blocks_ = 0, next_merge_ = 0, bytes_ = 0;
  int64_t decode_stride_ = -1;  // set by the producer before the first block is handed out
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace

DatasetStatistics compute_statistics(const std::vector<std::string>& tfrecord_files,
                                     const StatisticsOptions& options) {
  check_options(options);
  return StatisticsRun(tfrecord_files, options).run();
}

}  // namespace tern::pipeline
