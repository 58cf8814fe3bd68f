// ExampleGen: data in the formats users hold (CSV, TFRecord of tf.train.Example, IDX, image
// folders) in, TFRecord files of tf.train.Example out, one folder per split:
//
//   <out_dir>/<split>/data-00000-of-00002.tfrecord, data-00001-of-00002.tfrecord
//
//   std::vector<SplitInfo> splits = ingest({.format = "csv", .paths = {"autos.csv"}}, "out");
//
// Records (docs/pipeline.md "Ingest"):
//   - CSV: one feature per column, named by the header; a column whose every non-empty cell is
//     an integer becomes int64_list, one whose cells are all numbers float_list, anything else
//     bytes_list (the text); `column_types` forces "categorical" (bytes_list) or "numeric". An
//     empty cell leaves the feature out of that Example (missing). Types are decided over every
//     input file, so all splits agree.
//   - TFRecord: the records as they are (each checked to parse as a tf.train.Example).
//   - IDX: images and labels (a labels file is an IDX file of rank 1, paired in order with the
//     images files; or `labels`), written with tern's TF-slim names (tern/data/image_convert.h):
//     image/encoded (the raw u8 pixels), image/format "raw", image/height, image/width,
//     image/channels, image/class/label.
//   - image folders (one subfolder per class, tern/data/image_folder.h): the encoded JPEG / PNG
//     bytes as they are (each decoded once to check it), image/format "jpeg" / "png", the shape,
//     image/class/label, image/class/text and image/filename (relative to the folder).
// Splits: with `split_files`, each split's records come from its own inputs; otherwise every
// record goes to the split its key's stable_hash64 (stable_hash.h: FNV-1a 64 + fmix64) falls in:
// u = (hash >> 11) / 2^53 against the cumulative normalized `ratios`. The key is the bytes of
// feature `split_key` (int64: decimal text; float: shortest round-trip text; bytes: as stored;
// the first value) or, without a split_key, the serialized record. Same input, same split, on
// any machine. Records of a split are dealt to its shards in turn.
//
// Bad input is an error naming the file and line (CSV) or record index (TFRecord, IDX) or file
// (images); what was written is removed again.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::pipeline {

struct IngestOptions {
  std::string format;              // csv | tfrecord | idx | image_folder; "": from the first input
  std::vector<std::string> paths;  // inputs split by hash
  std::string labels;              // idx: the labels of a single images file
  std::map<std::string, std::string> column_types;     // csv: column -> "categorical" | "numeric"
  std::vector<std::pair<std::string, double>> ratios;  // empty: train 0.8, eval 0.2
  std::string split_key;                               // feature hashed; "": the whole record
  std::map<std::string, std::vector<std::string>> split_files;  // split -> its inputs (no hash)
  int shards = 1;                                               // files per split
  char csv_delimiter = ',';
  bool progress = true;  // a ProgressLine on stderr, only when it is a terminal
};

struct SplitInfo {
  std::string name;
  std::vector<std::string> files;  // the shards, in order
  int64_t records = 0;
  int64_t bytes = 0;  // of the files written
};

// Splits in `ratios` order (with split_files: train, eval, then the others by name).
// InvalidArgument for bad options (naming the option), NotFound / DataLoss / InvalidArgument for
// bad input naming the file and line or record.
std::vector<SplitInfo> ingest(const IngestOptions& options, const std::string& out_dir);

// The split index `key` falls in for cumulative bounds (the normalized ratios summed, the last
// one 1): u = (stable_hash64(key) >> 11) / 2^53, the first bound above u.
size_t split_of(std::string_view key, const std::vector<double>& cumulative);

}  // namespace tern::pipeline
