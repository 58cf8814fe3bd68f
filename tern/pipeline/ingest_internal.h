// The record sources of ingest (ingest.h), one per input format, feeding a RecordSink that picks
// the split and writes the shards. Internal to tern/pipeline: ingest.cc, ingest_csv.cc,
// ingest_images.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/example_proto.h"
#include "tern/pipeline/ingest.h"

namespace tern::pipeline::ingest_internal {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // One serialized tf.train.Example and its parsed form (for the split key); `where` names it
  // in errors ("file:line", "file record 12").
  virtual void add(std::string_view record, const data::Example& example,
                   const std::string& where) = 0;
  // Expected records of the current input (for the progress line), -1 if unknown.
  virtual void expect(int64_t records) = 0;
};

// --- CSV (ingest_csv.cc) ---
enum class CsvType : uint8_t { kInt, kFloat, kBytes };

struct CsvSchema {
  std::vector<std::string> columns;  // the header
  std::vector<CsvType> types;        // one per column
};

// The header of every file (the same in all), and each column's type over every cell of every
// file, forced types applied. `options` gives column_types and the delimiter.
CsvSchema infer_csv_schema(const std::vector<std::string>& files, const IngestOptions& options);
void csv_records(const std::vector<std::string>& files, const CsvSchema& schema,
                 const IngestOptions& options, RecordSink& sink);

// --- TFRecord and IDX (ingest.cc) ---
void tfrecord_records(const std::vector<std::string>& files, RecordSink& sink);
// Images files (rank 3 or 4) paired in order with labels files (rank 1) among `files`, or with
// `labels` for a single images file.
void idx_records(const std::vector<std::string>& files, const std::string& labels,
                 RecordSink& sink);

// --- image folders (ingest_images.cc) ---
// The sorted union of the class subfolders of every root: the labels every split shares.
std::vector<std::string> image_folder_class_union(const std::vector<std::string>& roots);
void image_folder_records(const std::vector<std::string>& roots,
                          const std::vector<std::string>& classes, RecordSink& sink);

// The split key of an Example: feature `name`'s first value as bytes (int64 in decimal, float
// in its shortest round-trip form). InvalidArgument naming `where` if the feature is absent.
std::string split_key_bytes(const data::Example& example, const std::string& name,
                            const std::string& where);

}  // namespace tern::pipeline::ingest_internal
