// Helpers shared by the tern/pipeline tests: a temp folder, Examples written to TFRecord files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tern/data/example_proto.h"
#include "tern/data/tfrecord_writer.h"

namespace tern::pipeline::testing {

// A fresh directory under the temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tern_pipeline_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_examples(const std::string& path, const std::vector<data::Example>& examples) {
  data::TFRecordWriter w(path);
  for (const data::Example& e : examples) w.write(data::serialize_example(e));
  w.close();
}

inline data::Example example(data::Features features) {
  return data::Example{std::move(features)};
}

}  // namespace tern::pipeline::testing
