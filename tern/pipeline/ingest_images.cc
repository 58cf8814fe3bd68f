// ingest's image-folder source: the encoded files as they are, each decoded once to check it,
// checked on every core in chunks and written in the folder's order (ingest.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "tern/base/error.h"
#include "tern/base/thread_pool.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_convert.h"
#include "tern/data/image_folder.h"
#include "tern/pipeline/ingest_internal.h"

namespace tern::pipeline::ingest_internal {

namespace fs = std::filesystem;
using data::Example;
using data::Feature;

std::vector<std::string> image_folder_class_union(const std::vector<std::string>& roots) {
  std::set<std::string> all;
  for (const std::string& root : roots)
    for (std::string& c : data::image_folder_classes(root)) all.insert(std::move(c));
  return {all.begin(), all.end()};
}

void image_folder_records(const std::vector<std::string>& roots,
                          const std::vector<std::string>& classes, RecordSink& sink) {
  constexpr int64_t kChunk = 256;
  for (const std::string& root : roots) {
    const data::ImageFolder folder = data::list_image_folder(root);
    std::vector<int64_t> label_of;  // folder's class index -> index in `classes`
    for (const std::string& c : folder.class_names)
      label_of.push_back(std::lower_bound(classes.begin(), classes.end(), c) - classes.begin());
    const auto n = static_cast<int64_t>(folder.files.size());
    sink.expect(n);
    std::vector<Example> examples;
    std::vector<std::string> records;
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t count = std::min(kChunk, n - begin);
      examples.assign(static_cast<size_t>(count), Example{});
      records.assign(static_cast<size_t>(count), std::string());
      parallel_for(count, [&](int64_t k) {
        const auto i = static_cast<size_t>(begin + k);
        const std::string& path = folder.files[i];
        std::string bytes = data::read_file_bytes(path);
        const data::ImageFormat format = data::detect_image_format(bytes);
        TERN_CHECK_ARG(format != data::ImageFormat::kUnknown, path, ": not a JPEG or PNG file");
        const data::ImageInfo info = data::read_image_info(bytes, path);
        data::decode_image(bytes, {}, path);  // a corrupt file fails here, not in training
        const int64_t label = label_of[static_cast<size_t>(folder.labels[i])];
        Example ex = data::image_example(bytes, std::string(data::image_format_name(format)),
                                         info.height, info.width, info.channels);
        ex.features["image/class/label"] = Feature::int64s({label});
        ex.features["image/class/text"] = Feature::bytes({classes[static_cast<size_t>(label)]});
        ex.features["image/filename"] = Feature::bytes({fs::relative(path, root).string()});
        records[static_cast<size_t>(k)] = data::serialize_example(ex);
        examples[static_cast<size_t>(k)] = std::move(ex);
      });
      for (int64_t k = 0; k < count; ++k)
        sink.add(records[static_cast<size_t>(k)], examples[static_cast<size_t>(k)],
                 folder.files[static_cast<size_t>(begin + k)]);
    }
  }
}

}  // namespace tern::pipeline::ingest_internal
