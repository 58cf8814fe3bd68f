// `tern data inspect | convert | bench`: conversions round-trip (IDX -> TFRecord -> tensors, IDX ->
// image folder, folder -> TFRecord -> folder), inspect describes each format, pipelines parse into
// the stages they name, and the command line reports usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/base/error.h"
#include "tern/data/data.h"
#include "tools/tern/commands.h"
#include "tools/tern/data_tools.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tern_data_cmd_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_idx_u8(const std::string& path, const std::vector<uint32_t>& dims,
                  const std::vector<uint8_t>& data) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((d >> s) & 0xff);
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  std::ofstream(path, std::ios::binary) << out;
}

// 12 images of 6x5, label i % 3, pixel values from the index.
void write_idx(const TempDir& dir) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < 12; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 3));
    for (int p = 0; p < 30; ++p) images.push_back(static_cast<uint8_t>(i * 20 + p * 3));
  }
  write_idx_u8(dir.file("images.idx"), {12, 6, 5}, images);
  write_idx_u8(dir.file("labels.idx"), {12}, labels);
}

int run(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd_data(static_cast<int>(argv.size()), argv.data());
}

TEST(DataConvert, IdxToTFRecordParsesBackToTheSamePixels) {
  TempDir dir;
  write_idx(dir);
  ConvertResult r = data_convert(dir.file("images.idx"), dir.file("out.tfrecord"),
                                 {.labels = dir.file("labels.idx"), .compression = "gzip"});
  EXPECT_EQ(r.written, 12);
  const Tensor images = data::read_idx(dir.file("images.idx"));
  data::DatasetPtr ds = data::parse_example(
      data::tfrecord_dataset({dir.file("out.tfrecord")}, {.compression = data::Compression::kGzip}),
      {data::fixed_len_feature("image/encoded", data::FeatureKind::kBytes),
       data::fixed_len_feature("image/class/label", data::FeatureKind::kInt64)});
  std::vector<data::Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 12u);
  for (size_t i = 0; i < all.size(); ++i) {
    const Tensor img = data::decode_image(data::tensor_bytes(all[i][0]));
    EXPECT_EQ(img.type().to_string(), "u8[6, 5, 1]");
    EXPECT_TRUE(
        bitwise_equal(img.reshape(Shape{6, 5}),
                      images.slice_rows(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1)
                          .reshape(Shape{6, 5})));
    EXPECT_EQ(all[i][1].get(0), static_cast<double>(i % 3));
  }
  // Raw bytes reinterpret straight into the image shape.
  data_convert(dir.file("images.idx"), dir.file("raw.tfrecord"),
               {.labels = dir.file("labels.idx"), .image_format = "raw"});
  data::FeatureSpec raw =
      data::fixed_len_feature("image/encoded", data::FeatureKind::kBytes, {6, 5, 1});
  data::Element first =
      *data::parse_example(data::tfrecord_dataset({dir.file("raw.tfrecord")}), {raw})
           ->make_iterator()
           .next();
  EXPECT_TRUE(
      bitwise_equal(first[0].reshape(Shape{6, 5}), images.slice_rows(0, 1).reshape(Shape{6, 5})));
}

TEST(DataConvert, IdxToImageFolderAndBack) {
  TempDir dir;
  write_idx(dir);
  const std::string folder = dir.file("folder");
  ConvertOptions o{.labels = dir.file("labels.idx"),
                   .image_format = "jpeg",
                   .height = 16,
                   .width = 16,
                   .channels = 3,
                   .class_names = {"zero", "one", "two"}};
  EXPECT_EQ(data_convert(dir.file("images.idx"), folder, o).written, 12);
  data::ImageFolder f = data::list_image_folder(folder);
  EXPECT_EQ(f.class_names, (std::vector<std::string>{"one", "two", "zero"}));
  ASSERT_EQ(f.files.size(), 12u);
  EXPECT_EQ(data::read_image_file(f.files[0]).type().to_string(), "u8[16, 16, 3]");
  EXPECT_TRUE(fs::exists(folder + "/zero/00.jpg"));
  EXPECT_TRUE(fs::exists(folder + "/two/11.jpg"));
  // Folder -> TFRecord keeps the files' bytes; TFRecord -> folder writes them back unchanged.
  EXPECT_EQ(data_convert(folder, dir.file("f.tfrecord"), {}).written, 12);
  EXPECT_EQ(data_convert(dir.file("f.tfrecord"), dir.file("back"), {}).written, 12);
  data::ImageFolder back = data::list_image_folder(dir.file("back"));
  EXPECT_EQ(back.class_names, f.class_names);
  ASSERT_EQ(back.files.size(), f.files.size());
  for (size_t i = 0; i < f.files.size(); ++i) {
    EXPECT_EQ(data::read_file_bytes(back.files[i]), data::read_file_bytes(f.files[i])) << i;
  }
  EXPECT_THROW(data_convert(dir.file("images.idx"), dir.file("x"), {}), Error);  // no labels
  EXPECT_THROW(data_convert(folder, dir.file("y"), {}), Error);                  // folder->folder
}

TEST(DataInspect, DescribesEachFormat) {
  TempDir dir;
  write_idx(dir);
  data_convert(dir.file("images.idx"), dir.file("out.tfrecord"),
               {.labels = dir.file("labels.idx")});
  std::ostringstream tf, idx, csv;
  data_inspect(dir.file("out.tfrecord"), {.records = 1}, tf);
  EXPECT_NE(tf.str().find("TFRecord (uncompressed), 12 records"), std::string::npos) << tf.str();
  EXPECT_NE(tf.str().find("image/encoded      bytes_list  [png 6x5x1"), std::string::npos)
      << tf.str();
  EXPECT_NE(tf.str().find("image/class/label: int64_list, 1 value each  -> FixedLen []"),
            std::string::npos)
      << tf.str();
  data_inspect(dir.file("images.idx"), {.records = 2}, idx);
  EXPECT_NE(idx.str().find("IDX u8[12, 6, 5], 12 records"), std::string::npos) << idx.str();
  EXPECT_NE(idx.str().find("record 1: u8[6, 5], min 20, max 107"), std::string::npos) << idx.str();
  std::ofstream(dir.file("t.csv")) << "a,b,c\n1,2.5,x\n2,,y\n3,4,\"z,w\"\n";
  data_inspect(dir.file("t.csv"), {.records = 1}, csv);
  EXPECT_NE(csv.str().find("3 rows after the header, 3 columns"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("b: float, 1 empty"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find("c: string"), std::string::npos) << csv.str();
  {
    data::TFRecordWriter w(dir.file("seq.tfrecord"));
    data::SequenceExample ex;
    ex.context["id"] = data::Feature::int64s({7});
    ex.feature_lists["frames"] = {data::Feature::floats({1, 2}), data::Feature::floats({3, 4})};
    w.write(data::serialize_sequence_example(ex));
    w.write("not a protobuf \xff\xff");
    w.close();
  }
  std::ostringstream seq;
  data_inspect(dir.file("seq.tfrecord"), {}, seq);
  EXPECT_NE(seq.str().find("2 records"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("tf.train.SequenceExample"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("frames  2 steps of float_list"), std::string::npos) << seq.str();
  EXPECT_NE(seq.str().find("record 1: 17 bytes, not a tf.train.Example"), std::string::npos)
      << seq.str();
  std::ofstream(dir.file("junk.bin")) << "just some bytes here";
  std::ostringstream junk;
  EXPECT_THROW(data_inspect(dir.file("junk.bin"), {}, junk), Error);
}

TEST(DataBench, PipelinesFuseImageStagesAndCountRows) {
  TempDir dir;
  write_idx(dir);
  data_convert(dir.file("images.idx"), dir.file("folder"),
               {.labels = dir.file("labels.idx"), .height = 12, .width = 12, .channels = 3});
  Pipeline p = build_pipeline("images " + dir.file("folder") +
                                  " | shuffle 8 | decode | crop 8 8 | flip | normalize mean=0.5 "
                                  "std=0.25 | batch 5 | prefetch",
                              {.map_threads = 2, .seed = 3});
  EXPECT_EQ(p.stages,
            (std::vector<std::string>{"images(12 files, 3 classes)", "shuffle 8",
                                      "map(decode+crop+flip+normalize)", "batch 5", "prefetch"}));
  EXPECT_TRUE(p.batched);
  BenchResult r = bench_pipeline(p, 2);
  EXPECT_EQ(r.rows, 24);
  EXPECT_EQ(r.batches, 6);
  EXPECT_NE(r.stats.find("ParallelMap"), std::string::npos);
  std::vector<data::Element> a = p.dataset->make_iterator().take();
  EXPECT_EQ(data::element_signature(a[0]), "(f32[5, 8, 8, 3], i64[5])");
  // Out-of-order image stages run as separate maps.
  Pipeline q = build_pipeline("idx " + dir.file("images.idx") + " | flip | crop 4 4", {});
  EXPECT_EQ(q.stages, (std::vector<std::string>{"idx", "map(flip)", "map(crop)"}));
  EXPECT_EQ(data::element_signature(*q.dataset->make_iterator().next()), "(u8[4, 4, 1])");
  EXPECT_THROW(build_pipeline("images " + dir.file("folder") + " | crop 4 4", {}), Error);
  EXPECT_THROW(build_pipeline("idx " + dir.file("images.idx") + " | zoom 2", {}), Error);
  EXPECT_THROW(build_pipeline("batch 4", {}), Error);
  EXPECT_THROW(build_pipeline("idx " + dir.file("images.idx") + " | batch x", {}), Error);
}

TEST(DataCommand, UsageAndDispatch) {
  TempDir dir;
  write_idx(dir);
  EXPECT_EQ(run({"data"}), 2);
  EXPECT_EQ(run({"data", "--help"}), 0);
  EXPECT_EQ(run({"data", "frobnicate"}), 2);
  EXPECT_EQ(run({"data", "inspect"}), 106);  // CLI11: required argument missing
  EXPECT_EQ(run({"data", "inspect", dir.file("images.idx"), "-n", "1"}), 0);
  EXPECT_EQ(run({"data", "convert", dir.file("images.idx"), dir.file("o"), "--labels",
                 dir.file("labels.idx"), "--size", "7x9"}),
            0);
  EXPECT_EQ(
      data::read_image_file(data::list_image_folder(dir.file("o")).files[0]).type().to_string(),
      "u8[7, 9, 1]");
  EXPECT_EQ(run({"data", "convert", dir.file("images.idx"), dir.file("p"), "--size", "x"}), 2);
  EXPECT_EQ(run({"data", "bench", "idx " + dir.file("images.idx") + " | batch 4", "--epochs", "1"}),
            0);
}

}  // namespace
}  // namespace tern::tools
