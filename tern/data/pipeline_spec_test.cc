// Pipeline specs: element functions, sources, training vs evaluation forms, batched parsing,
// determinism across map threads, cardinality arithmetic.
#include "tern/data/pipeline_spec.h"

#include <gtest/gtest.h>

#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::TempDir;

Tensor image_u8(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kU8, Shape{h, w, c});
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<uint8_t>()[i] = static_cast<uint8_t>(i % 251);
  return t;
}

ElementFnSpec fn(ElementFnKind kind) {
  ElementFnSpec f;
  f.kind = kind;
  return f;
}

TEST(ElementFns, ScaleCastNormalizeReshape) {
  Tensor img = image_u8(2, 2, 3);
  Element e =
      apply_element_fn(fn(ElementFnKind::kScale), {img, Tensor::scalar(DType::kI64, 1)}, 0, true);
  ASSERT_EQ(e[0].dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(e[0].data<float>()[5], 5.0f / 255);
  EXPECT_EQ(img.data<uint8_t>()[5], 5);  // the input is left alone

  ElementFnSpec n = fn(ElementFnKind::kNormalize);
  n.mean = {0.0f, 0.5f, 1.0f};
  n.stddev = {1.0f, 0.5f, 2.0f};
  Tensor x = apply_element_fn(n, {img}, 0, true)[0];
  EXPECT_FLOAT_EQ(x.data<float>()[4], (4.0f / 255 - 0.5f) / 0.5f);  // channel 1
  EXPECT_FLOAT_EQ(x.data<float>()[5], (5.0f / 255 - 1.0f) / 2.0f);  // channel 2
  n.mean = {0.1f, 0.2f};
  EXPECT_TERN_ERROR(apply_element_fn(n, {img}, 0, true), ErrorCode::kInvalidArgument,
                    "2 mean values");

  ElementFnSpec c = fn(ElementFnKind::kCast);
  c.dtype = DType::kI32;
  EXPECT_EQ(apply_element_fn(c, {img}, 0, true)[0].dtype(), DType::kI32);
  ElementFnSpec r = fn(ElementFnKind::kReshape);
  r.shape = {12};
  EXPECT_EQ(apply_element_fn(r, {img}, 0, true)[0].shape(), Shape{12});
  r.shape = {5};
  EXPECT_TERN_ERROR(apply_element_fn(r, {img}, 0, true), ErrorCode::kInvalidArgument,
                    "cannot reshape");
  r.component = 3;
  EXPECT_TERN_ERROR(apply_element_fn(r, {img}, 0, true), ErrorCode::kInvalidArgument,
                    "reshape: component 3");
}

TEST(ElementFns, RandomFunctionsHaveDeterministicEvaluationForms) {
  Tensor img = image_u8(8, 8, 1);
  ElementFnSpec crop = fn(ElementFnKind::kRandomCrop);
  crop.height = crop.width = 4;
  ElementFnSpec center = fn(ElementFnKind::kCenterCrop);
  center.height = center.width = 4;
  Tensor eval = apply_element_fn(crop, {img}, 123, false)[0];
  Tensor ref = apply_element_fn(center, {img}, 0, false)[0];
  ASSERT_EQ(eval.shape(), (Shape{4, 4, 1}));
  EXPECT_EQ(tensor_bytes(eval), tensor_bytes(ref));
  EXPECT_EQ(eval.data<uint8_t>()[0], img.data<uint8_t>()[2 * 8 + 2]);
  // Training crops depend on the key only.
  std::set<std::string> crops;
  for (uint64_t k = 0; k < 20; ++k)
    crops.insert(tensor_bytes(apply_element_fn(crop, {img}, k, true)[0]));
  EXPECT_GT(crops.size(), 3u);
  EXPECT_EQ(tensor_bytes(apply_element_fn(crop, {img}, 7, true)[0]),
            tensor_bytes(apply_element_fn(crop, {img}, 7, true)[0]));
  EXPECT_EQ(tensor_bytes(apply_element_fn(fn(ElementFnKind::kRandomFlip), {img}, 9, false)[0]),
            tensor_bytes(img));
  EXPECT_TRUE(element_fn_is_identity_in_eval(ElementFnKind::kRandomContrast));
  EXPECT_FALSE(element_fn_is_identity_in_eval(ElementFnKind::kRandomCrop));
}

TEST(ElementFns, OneHotOfScalarsAndBatches) {
  ElementFnSpec oh = fn(ElementFnKind::kOneHot);
  oh.depth = 3;
  oh.component = 1;
  Element e = apply_element_fn(oh, {Tensor(), Tensor::scalar(DType::kI64, 2)}, 0, true);
  EXPECT_EQ(e[1].shape(), Shape{3});
  EXPECT_EQ(e[1].get(2), 1.0);
  Tensor batch = Tensor::from_vector<int64_t>(Shape{2}, {0, 2});
  Tensor y = apply_element_fn(oh, {Tensor(), batch}, 0, true)[1];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(5), 1.0);
  EXPECT_TERN_ERROR(apply_element_fn(oh, {Tensor(), Tensor::scalar(DType::kI64, 3)}, 0, true),
                    ErrorCode::kInvalidArgument, "outside [0, 3)");
  oh.depth = 0;
  EXPECT_TERN_ERROR(validate_element_fn(oh, "cfg:3"), ErrorCode::kInvalidArgument,
                    "cfg:3: one_hot needs a positive depth");
  EXPECT_TERN_ERROR(element_fn_from_name("onehot"), ErrorCode::kInvalidArgument,
                    "unknown element function");
}

// 40 Examples {image: 4 raw bytes [2, 2, 1], label: i}, over two files.
std::vector<std::string> write_records(const TempDir& dir) {
  for (int f = 0; f < 2; ++f) {
    TFRecordWriter w(dir.file("r" + std::to_string(f) + ".tfrecord"));
    for (int i = f * 20; i < f * 20 + 20; ++i) {
      Example ex;
      ex.features["image"] = Feature::bytes({std::string(4, static_cast<char>(i))});
      ex.features["label"] = Feature::int64s({i});
      w.write(serialize_example(ex));
    }
    w.close();
  }
  return {dir.file("r*.tfrecord")};
}

PipelineSpec record_spec(bool batched_parse, int64_t parallel) {
  PipelineSpec spec;
  spec.source.kind = SourceKind::kTFRecord;
  spec.source.seed = 5;
  spec.source.parallel_reads = 2;
  spec.source.features = {fixed_len_feature("image", FeatureKind::kBytes, {2, 2, 1}),
                          fixed_len_feature("label", FeatureKind::kInt64)};
  spec.source.features[0].dtype = DType::kU8;
  ElementFnSpec scale;
  spec.transforms.push_back(shuffle_transform(16, 3));
  if (batched_parse) spec.transforms.push_back(batch_transform(8));
  spec.transforms.push_back(parse_transform(parallel));
  spec.transforms.push_back(map_transform(scale, parallel));
  if (!batched_parse) spec.transforms.push_back(batch_transform(8));
  spec.transforms.push_back(prefetch_transform());
  return spec;
}

std::vector<int64_t> labels_of(const DatasetPtr& ds, uint64_t epoch) {
  std::vector<int64_t> out;
  Iterator it = ds->make_iterator(epoch);
  while (auto b = it.next()) {
    EXPECT_EQ((*b)[0].dtype(), DType::kF32);
    for (int64_t i = 0; i < (*b)[1].num_elements(); ++i) {
      out.push_back(static_cast<int64_t>((*b)[1].get(i)));
      EXPECT_FLOAT_EQ((*b)[0].get(i * 4),
                      static_cast<float>(out.back()) / 255);  // image matches label
    }
  }
  return out;
}

TEST(PipelineSpec, TFRecordTrainingIsSeededAndEvaluationIsOrdered) {
  TempDir dir;
  std::vector<std::string> files = write_records(dir);
  DatasetPtr train1 = build_input_pipeline(record_spec(false, 1), files, PipelineMode::kTrain);
  DatasetPtr train4 = build_input_pipeline(record_spec(false, 4), files, PipelineMode::kTrain);
  DatasetPtr batched = build_input_pipeline(record_spec(true, 4), files, PipelineMode::kTrain);
  std::vector<int64_t> order = labels_of(train1, 0);
  ASSERT_EQ(order.size(), 40u);
  EXPECT_NE(order, testing::iota(0, 40));
  EXPECT_EQ(labels_of(train4, 0), order);   // 1 or 4 parse threads: the same order
  EXPECT_EQ(labels_of(batched, 0), order);  // batch-then-parse: the same elements
  EXPECT_NE(labels_of(train1, 1), order);   // another epoch, another order
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, testing::iota(0, 40));
  // Evaluation: no shuffle, files in name order read interleaved (parallel_reads = 2).
  std::vector<int64_t> eval =
      labels_of(build_input_pipeline(record_spec(false, 2), files, PipelineMode::kEval), 0);
  ASSERT_EQ(eval.size(), 40u);
  EXPECT_EQ(eval[0], 0);
  EXPECT_EQ(eval[1], 20);
  EXPECT_EQ(count_source_elements(record_spec(false, 1).source, files, PipelineMode::kTrain), 40);
}

void expect_exact_resume(const DatasetPtr& ds);

TEST(PipelineSpec, IteratorStateResumesExactly) {
  // Mid-epoch save and restore over every kind of stage the specs build: shuffled file list,
  // interleave, record shuffle, batched parse on threads, a random map (keyed), prefetch.
  TempDir dir;
  std::vector<std::string> files = write_records(dir);
  for (bool batched : {false, true}) {
    PipelineSpec spec = record_spec(batched, 2);
    if (!batched) {
      ElementFnSpec flip;
      flip.kind = ElementFnKind::kRandomFlip;
      spec.transforms.insert(spec.transforms.begin() + 2, map_transform(flip, 2));  // after parse
    }
    expect_exact_resume(build_input_pipeline(spec, files, PipelineMode::kTrain));
  }
}

void expect_exact_resume(const DatasetPtr& ds) {
  std::vector<int64_t> all = labels_of(ds, 3);
  Iterator it = ds->make_iterator(3);
  std::vector<int64_t> head;
  for (int i = 0; i < 2; ++i) {
    Element b = *it.next();
    for (int64_t k = 0; k < b[1].num_elements(); ++k)
      head.push_back(static_cast<int64_t>(b[1].get(k)));
  }
  std::string state = it.save_state();
  Iterator resumed = ds->make_iterator(3);
  resumed.restore_state(state);
  std::vector<int64_t> rest = head;
  while (auto b = resumed.next()) {
    for (int64_t k = 0; k < (*b)[1].num_elements(); ++k)
      rest.push_back(static_cast<int64_t>((*b)[1].get(k)));
  }
  EXPECT_EQ(rest, all);
}

TEST(PipelineSpec, ErrorsNameTheTransform) {
  TempDir dir;
  std::vector<std::string> files = write_records(dir);
  PipelineSpec spec = record_spec(false, 0);
  ElementFnSpec crop;
  crop.kind = ElementFnKind::kRandomCrop;
  crop.height = crop.width = 3;  // larger than the 2x2 images
  spec.transforms.insert(spec.transforms.begin() + 2, map_transform(crop, 0));
  spec.transforms[2].origin = "cfg.toml:12 (data.transforms[2])";
  Iterator it = build_input_pipeline(spec, files, PipelineMode::kTrain)->make_iterator();
  EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument,
                    "cfg.toml:12 (data.transforms[2]): random_crop");
  spec.source.kind = SourceKind::kCsv;
  EXPECT_TERN_ERROR(apply_transforms(from_elements({}), spec, PipelineMode::kEval),
                    ErrorCode::kInvalidArgument, "needs a tfrecord source");
  EXPECT_TERN_ERROR(
      build_source(record_spec(false, 0).source, {dir.file("none*")}, PipelineMode::kEval),
      ErrorCode::kNotFound, "none*");
}

TEST(PipelineSpec, IdxAndCsvSources) {
  TempDir dir;
  std::string images = {0, 0, 0x08, 3, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6};
  std::string labels = {0, 0, 0x08, 1, 0, 0, 0, 3, 7, 8, 9};
  testing::write_file(dir.file("i.idx"), images);
  testing::write_file(dir.file("l.idx"), labels);
  SourceSpec idx;
  idx.kind = SourceKind::kIdx;
  std::vector<Element> rows =
      build_source(idx, {dir.file("i.idx"), dir.file("l.idx")}, PipelineMode::kEval)
          ->make_iterator()
          .take();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][0].shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(rows[2][0].get(1), 6);
  EXPECT_EQ(rows[2][1].dtype(), DType::kI64);
  EXPECT_EQ(rows[2][1].get(0), 9);

  testing::write_file(dir.file("a.csv"), "a,b,y\n1,2,0\n3,,1\n");
  SourceSpec csv;
  csv.kind = SourceKind::kCsv;
  csv.csv.columns = {{DType::kF32, 0.0}, {DType::kF32, -1.0}, {DType::kI64, std::nullopt}};
  csv.label_column = 2;
  rows = build_source(csv, {dir.file("*.csv")}, PipelineMode::kEval)->make_iterator().take();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][0].shape(), Shape{2});
  EXPECT_EQ(rows[1][0].get(1), -1.0);
  EXPECT_EQ(rows[1][1].get(0), 1);
  EXPECT_EQ(count_source_elements(csv, {dir.file("*.csv")}, PipelineMode::kTrain), 2);
}

TEST(PipelineSpec, ImageFolderSplitsResizesAndReshuffles) {
  TempDir dir;
  for (std::string cls : {"cat", "dog"}) {
    std::filesystem::create_directories(dir.file("root/" + cls));
    for (int i = 0; i < 10; ++i) {
      Tensor img(DType::kU8, Shape{6, 4, 3});
      for (int64_t k = 0; k < img.num_elements(); ++k)
        img.data<uint8_t>()[k] = static_cast<uint8_t>(i * 10 + k % 3);
      write_file_bytes(dir.file("root/" + cls + "/" + std::to_string(i) + ".png"), encode_png(img));
    }
  }
  SourceSpec s;
  s.kind = SourceKind::kImageDir;
  s.image_height = 3;
  s.image_width = 2;
  s.validation_split = 0.25;
  s.seed = 11;
  DatasetPtr train = build_source(s, {dir.file("root")}, PipelineMode::kTrain);
  DatasetPtr held = build_source(s, {dir.file("root")}, PipelineMode::kEval);
  EXPECT_EQ(train->cardinality(), 15);
  EXPECT_EQ(held->cardinality(), 5);
  std::vector<Element> rows = train->make_iterator().take();
  EXPECT_EQ(rows[0][0].type().to_string(), "u8[3, 2, 3]");
  EXPECT_NE(testing::scalars(rows, 1),
            testing::scalars(train->make_iterator(1).take(), 1));  // reshuffled
  s.categorical = true;
  rows = build_source(s, {dir.file("root")}, PipelineMode::kEval)->make_iterator().take();
  EXPECT_EQ(rows[0][1].shape(), Shape{2});
}

TEST(PipelineSpec, TransformedCardinality) {
  PipelineSpec spec;
  spec.transforms = {shuffle_transform(10, 1), batch_transform(8)};
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kTrain), 13);
  spec.transforms[1].drop_remainder = true;
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kTrain), 12);
  TransformSpec take;
  take.kind = TransformKind::kTake;
  take.size = 5;
  TransformSpec shard;
  shard.kind = TransformKind::kShard;
  shard.num_shards = 3;
  shard.index = 1;
  spec.transforms.insert(spec.transforms.begin(), shard);  // 100 -> 33
  spec.transforms.push_back(take);                         // 33 / 8 = 4 -> 4
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kTrain), 4);
  TransformSpec repeat;
  repeat.kind = TransformKind::kRepeat;
  repeat.apply_to = ApplyTo::kTrain;
  repeat.size = -1;
  spec.transforms.insert(spec.transforms.begin(), repeat);
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kTrain), 5);  // endless, then take 5
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kEval), 4);
  TransformSpec unbatch;
  unbatch.kind = TransformKind::kUnbatch;
  spec.transforms.push_back(unbatch);
  EXPECT_EQ(transformed_cardinality(100, spec, PipelineMode::kEval), kUnknownCardinality);
}

}  // namespace
}  // namespace tern::data
