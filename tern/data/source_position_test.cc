// Source positions (element.h): every element carries the file and record (or line) it came from,
// through shuffle, interleave, batch, unbatch, zip, parallel map and iterator save / restore, and
// errors about one record name them (bad-input report F18: a bad record at index 37 was
// "tf.train.Example record 13" after shuffling, with no file).
#include <gtest/gtest.h>

#include <stdexcept>

#include "tern/data/csv_dataset.h"
#include "tern/data/example_dataset.h"
#include "tern/data/iterator_state.h"
#include "tern/data/list_files_dataset.h"
#include "tern/data/test_util.h"
#include "tern/data/tfrecord_dataset.h"
#include "tern/data/tfrecord_writer.h"

namespace tern::data {
namespace {

using testing::TempDir;

// A record with an int64 "label" and a float "x"; `bad` makes the label a float.
std::string record(int64_t i, bool bad = false) {
  Example ex;
  ex.features["x"] = Feature::floats({static_cast<float>(i)});
  ex.features["label"] = bad ? Feature::floats({1.5f}) : Feature::int64s({i % 3});
  return serialize_example(ex);
}

// `n` records, the one at `bad_index` (if >= 0) with a float label.
void write_records(const std::string& path, int64_t n, int64_t bad_index = -1) {
  TFRecordWriter w(path);
  for (int64_t i = 0; i < n; ++i) w.write(record(i, i == bad_index));
  w.close();
}

std::vector<FeatureSpec> specs() {
  return {fixed_len_feature("x", FeatureKind::kFloat),
          fixed_len_feature("label", FeatureKind::kInt64)};
}

std::string error_of(const DatasetPtr& ds) {
  try {
    Iterator it = ds->make_iterator();
    while (it.next()) {
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// F18: the bad record is record 37 of b.tfrecord, read through two interleaved files, a shuffle,
// batching and a parallel batched parse (the fused batch + parse of pipeline specs) or a
// per-record parse: the error names the file and record 37, not its position after shuffling.
TEST(SourcePosition, ParseErrorsNameTheFileAndRecordAfterShuffling) {
  TempDir dir;
  write_records(dir.file("a.tfrecord"), 50);
  write_records(dir.file("b.tfrecord"), 50, /*bad_index=*/37);
  const DatasetPtr records =
      list_files({dir.file("*.tfrecord")})
          ->interleave([](const Element& e) { return tfrecord_dataset({tensor_bytes(e[0])}); },
                       {.cycle_length = 2})
          ->shuffle(100, /*seed=*/7);
  const std::string want = "tf.train.Example at " + dir.file("b.tfrecord") + " record 37";
  for (int64_t parallel : {0, 2}) {
    SCOPED_TRACE(str_cat("parallel ", parallel));
    const std::string batched = error_of(
        parse_example_batched(records, 16, specs(), false, {.num_parallel_calls = parallel}));
    EXPECT_NE(batched.find(want + ", feature 'label': expected int64_list, got float_list"),
              std::string::npos)
        << batched;
    const std::string single =
        error_of(parse_example(records, specs(), {.num_parallel_calls = parallel}));
    EXPECT_NE(single.find(want + ", feature 'label'"), std::string::npos) << single;
  }
}

// Records from memory (no file) are named by their index there, also after a shuffle.
TEST(SourcePosition, InMemoryRecordsAreNamedByTheirIndex) {
  std::vector<Element> rows;
  for (int64_t i = 0; i < 50; ++i) rows.push_back({bytes_tensor(record(i, i == 37))});
  const std::string error =
      error_of(parse_example(from_elements(rows)->shuffle(50, 3)->map([](Element e) {
        return e;  // a map between keeps the position
      }),
                             specs()));
  EXPECT_NE(error.find("tf.train.Example at element 37, feature 'label'"), std::string::npos)
      << error;
  EXPECT_EQ(error.find("(at "), std::string::npos) << "named twice: " << error;
}

// Positions of CSV rows ("file:line") survive shuffle, batch, unbatch and zip, and a map error
// about one element names it.
TEST(SourcePosition, CsvRowsKeepFileAndLineThroughTheTransforms) {
  TempDir dir;
  std::string text = "a,b\n";
  for (int i = 0; i < 20; ++i) text += str_cat(i, ",", i * 2, "\n");
  testing::write_file(dir.file("t.csv"), text);
  CsvOptions o;
  o.columns = {{.dtype = DType::kI64}, {.dtype = DType::kI64}};
  const DatasetPtr rows = csv_dataset({dir.file("t.csv")}, o);
  Iterator it = zip({rows->shuffle(20, 5)->batch(4)->unbatch(), range(0, 100)})->make_iterator();
  int checked = 0;
  while (std::optional<Element> e = it.next()) {
    const int64_t value = static_cast<int64_t>((*e)[0].get(0));  // row `value` is on line value + 2
    ASSERT_EQ(e->origin.size(), 1u);
    EXPECT_EQ(describe_position(e->origin[0]), str_cat(dir.file("t.csv"), ":", value + 2));
    ++checked;
  }
  EXPECT_EQ(checked, 20);
  Iterator batches = rows->batch(8)->make_iterator();
  const Element b = *batches.next();
  ASSERT_EQ(b.origin.size(), 8u);
  EXPECT_EQ(row_position(b, 5), dir.file("t.csv") + ":7");
  const std::string error = error_of(rows->shuffle(20, 1)->map(
      [](Element e) {
        if (e[0].get(0) == 13) throw_error(ErrorCode::kInvalidArgument, "thirteen");
        return Element{e[1]};  // a new element: the map gives it the input's position
      },
      {.num_parallel_calls = 2}));
  EXPECT_NE(error.find("thirteen (at " + dir.file("t.csv") + ":15)"), std::string::npos) << error;
}

// A shuffle buffer saved mid-epoch and restored in a fresh iterator still knows where its
// elements came from (the file names travel in the blob, not this process's file ids).
TEST(SourcePosition, PositionsSurviveIteratorSaveAndRestore) {
  TempDir dir;
  write_records(dir.file("r.tfrecord"), 30, /*bad_index=*/21);
  const DatasetPtr ds =
      parse_example(tfrecord_dataset({dir.file("r.tfrecord")})->shuffle(30, 9), specs());
  Iterator it = ds->make_iterator();
  ASSERT_NO_THROW(it.next());  // the buffer holds the other 29 records now, record 21 among them
  const std::string blob = it.save_state();
  Iterator restored = ds->make_iterator();
  restored.restore_state(blob);
  std::string error;
  try {
    while (restored.next()) {
    }
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("at " + dir.file("r.tfrecord") + " record 21"), std::string::npos) << error;
}

// Entries added later (an element's origin, a TFRecord's record index) are read only when there:
// blobs saved before them still restore.
TEST(SourcePosition, StateEntriesAddedLaterAreOptional) {
  StateWriter w;
  {
    StateWriter::Scope s(w, "stage");
    w.write_int("offset", 5);
  }
  const std::string blob = w.finish();
  StateReader r(blob);
  StateReader::Scope s(r, "stage");
  EXPECT_FALSE(r.next_key_is("record"));
  EXPECT_FALSE(r.next_key_is("off"));
  EXPECT_TRUE(r.next_key_is("offset"));
  EXPECT_EQ(r.read_int("offset"), 5);
  EXPECT_FALSE(r.next_key_is("offset")) << "at the end";
}

TEST(SourcePosition, DescribeAndRows) {
  const int32_t f = source_file_id("/d/x.tfrecord");
  EXPECT_EQ(source_file_id("/d/x.tfrecord"), f);
  EXPECT_EQ(source_file_name(f), "/d/x.tfrecord");
  EXPECT_EQ(describe_position(SourcePosition::record(f, 37)), "/d/x.tfrecord record 37");
  EXPECT_EQ(describe_position(SourcePosition::line(source_file_id("t.csv"), 9)), "t.csv:9");
  EXPECT_EQ(describe_position(SourcePosition::element(5)), "element 5");
  EXPECT_EQ(describe_position(SourcePosition::whole_file(source_file_id("c/\x1b[2J.png"))),
            "c/\\x1b[2J.png");
  EXPECT_EQ(describe_position({}), "");
  ElementOrigin o;
  o.push_back(SourcePosition::element(1));
  o.push_back(SourcePosition::element(2));
  EXPECT_EQ(o.size(), 2u);
  EXPECT_EQ(o.row(1, 2).index, 2);
  EXPECT_FALSE(o.row(1, 3).known()) << "rows that do not line up name nothing";
  o.push_back({});
  EXPECT_TRUE(o.empty()) << "an unknown row makes the whole origin unknown";
}

}  // namespace
}  // namespace tern::data
