// apply_transform: decode a batch of raw records, run the graph, write x and label per record.
#include "tern/transform/apply.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <span>
#include <unordered_map>

#include "tern/base/error.h"
#include "tern/data/example_proto.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/runtime.h"
#include "tern/serve/rebatch.h"
#include "tern/transform/raw_batch.h"
#include "tern/transform/records.h"

namespace tern::transform {

namespace fs = std::filesystem;

namespace {

// Row i of `src` ([n, ...]) into row i of a [batch, ...] tensor; the rows past n stay zero.
Tensor padded(const Tensor& src, int64_t batch) {
  if (src.shape().dim(0) == batch) return src;
  std::vector<int64_t> dims = src.shape().dims();
  dims[0] = batch;
  Tensor out(src.dtype(), Shape(dims));
  std::memset(out.raw_data(), 0, out.nbytes());
  std::memcpy(out.raw_data(), src.raw_data(), src.nbytes());
  return out;
}

}  // namespace

int64_t apply_transform(const TransformArtifact& a, const std::vector<std::string>& inputs,
                        const std::string& out_path, const ApplyOptions& o) {
  TERN_CHECK_ARG(o.batch_size >= 1, "apply_transform: batch_size must be >= 1");
  TERN_CHECK_ARG(a.graph != nullptr, "apply_transform: the artifact has no graph");
  runtime::initialize();
  runtime::VariableStore vars;
  std::unique_ptr<ir::Graph> g = serve::rebatch(*a.graph, o.batch_size);
  std::unique_ptr<runtime::Executable> exe = runtime::Executable::compile(*g, vars);
  const RawDecoder decoder(a.spec, /*keep_strings=*/false);
  std::vector<int> input_index;
  for (const auto& f : decoder.features()) input_index.push_back(exe->input_index(f.name));
  const bool has_label = !a.spec.label.empty();
  std::unordered_map<std::string, int64_t> label_index;
  if (has_label && a.analysis.label.bytes) {
    for (size_t k = 0; k < a.analysis.label.vocabulary.size(); ++k)
      label_index[a.analysis.label.vocabulary[k].first] = static_cast<int64_t>(k);
  }
  const int64_t dim = a.output_dim;

  const fs::path out(out_path);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  const std::string tmp = str_cat(out_path, ".tmp-", ::getpid());
  int64_t written = 0;
  try {
    data::TFRecordWriter writer(tmp);
    data::Example ex;
    std::vector<std::string_view> records;
    RawBatch raw;
    for (const std::string& file : inputs) {
      RecordBlocks blocks(file);
      while (blocks.next(records)) {
        for (size_t begin = 0; begin < records.size(); begin += static_cast<size_t>(o.batch_size)) {
          const size_t n = std::min(records.size() - begin, static_cast<size_t>(o.batch_size));
          const int64_t first = blocks.first_index() + static_cast<int64_t>(begin);
          decoder.decode(std::span<const std::string_view>(records).subspan(begin, n), file, first,
                         raw);
          for (size_t j = 0; j < raw.columns.size(); ++j)
            exe->feed_at(input_index[j], padded(raw.columns[j].values, o.batch_size));
          exe->run();
          const Tensor x = exe->output_host(0);
          const float* xs = x.data<float>();
          for (size_t i = 0; i < n; ++i) {
            ex.features.clear();
            ex.features[kOutputFeature] =
                data::Feature::floats(std::vector<float>(xs + i * dim, xs + (i + 1) * dim));
            if (has_label) {
              const int64_t record = first + static_cast<int64_t>(i);
              int64_t label = 0;
              if (raw.label_is_bytes) {
                auto it = label_index.find(raw.label_strings[i]);
                if (it == label_index.end())
                  throw_error(ErrorCode::kInvalidArgument, record_where(file, record), ": label '",
                              a.spec.label, "' is '", raw.label_strings[i],
                              "', a class the training split does not have");
                label = it->second;
              } else {
                if (a.analysis.label.bytes)
                  throw_error(ErrorCode::kInvalidArgument, record_where(file, record), ": label '",
                              a.spec.label, "' is an int64_list; the training split's are bytes");
                label = raw.label_ints.data<int64_t>()[i];
                if (label < 0 || label >= a.analysis.label.num_classes)
                  throw_error(ErrorCode::kInvalidArgument, record_where(file, record), ": label '",
                              a.spec.label, "' is ", label, "; the training split's classes are 0 .. ",
                              a.analysis.label.num_classes - 1);
              }
              ex.features[kLabelFeature] = data::Feature::int64s({label});
            }
            writer.write(data::serialize_example(ex));
            ++written;
          }
        }
      }
    }
    writer.flush(/*durable=*/true);
    writer.close();
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, out_path);
  return written;
}

}  // namespace tern::transform
