// Tests for the CSV source: types, defaults, quoting, malformed rows naming file:line, resume.
#include "tern/data/csv_dataset.h"

#include <gtest/gtest.h>

#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::TempDir;
using testing::write_file;

CsvOptions three_columns() {
  return {.columns = {{.dtype = DType::kI32, .default_value = -1},
                      {.dtype = DType::kF32, .default_value = 0.5},
                      {.as_bytes = true}}};
}

TEST(Csv, TypedColumnsDefaultsAndQuotes) {
  TempDir dir;
  write_file(dir.file("a.csv"),
             "id,score,name\n"
             "1,2.5,plain\n"
             ",,\"with, comma\"\r\n"
             "\n"
             "3, 7 ,\"say \"\"hi\"\"\nsecond line\"\n"
             "4,1e3,\n");
  std::vector<Element> rows =
      csv_dataset({dir.file("a.csv")}, three_columns())->make_iterator().take();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0][0].type(), (TensorType{DType::kI32, Shape{}}));
  EXPECT_EQ(rows[0][0].get(0), 1);
  EXPECT_EQ(rows[0][1].get(0), 2.5);
  EXPECT_EQ(tensor_bytes(rows[0][2]), "plain");
  EXPECT_EQ(rows[1][0].get(0), -1);   // default
  EXPECT_EQ(rows[1][1].get(0), 0.5);  // default
  EXPECT_EQ(tensor_bytes(rows[1][2]), "with, comma");
  EXPECT_EQ(rows[2][1].get(0), 7);
  EXPECT_EQ(tensor_bytes(rows[2][2]), "say \"hi\"\nsecond line");
  EXPECT_EQ(rows[3][1].get(0), 1000);
  EXPECT_EQ(tensor_bytes(rows[3][2]), "");
}

TEST(Csv, SelectColumnsNoHeaderAndGzip) {
  TempDir dir;
  write_file(dir.file("b.csv.gz"), testing::gzip_bytes("1;2;x\n3;4;y"));
  CsvOptions o = three_columns();
  o.header = false;
  o.delimiter = ';';
  o.select_columns = {2, 0};
  std::vector<Element> rows = csv_dataset({dir.file("b.csv.gz")}, o)->make_iterator().take();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(tensor_bytes(rows[1][0]), "y");
  EXPECT_EQ(rows[1][1].get(0), 3);
}

TEST(Csv, MalformedRowsNameFileAndLine) {
  TempDir dir;
  const std::string f = dir.file("bad.csv");
  CsvOptions o = three_columns();
  auto first_error = [&](const std::string& text) {
    write_file(f, text);
    return csv_dataset({f}, o)->make_iterator();
  };
  {
    Iterator it = first_error("h\n1,2,a\n1,2\n");
    it.next();
    EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument,
                      "bad.csv:3: expected 3 fields, found 2");
  }
  EXPECT_TERN_ERROR(first_error("h\n1,abc,x\n").next(), ErrorCode::kInvalidArgument,
                    "bad.csv:2 column 1: 'abc' is not a number");
  EXPECT_TERN_ERROR(first_error("h\n99999999999,1,x\n").next(), ErrorCode::kInvalidArgument,
                    "out of range for i32");
  EXPECT_TERN_ERROR(first_error("h\n1.5,1,x\n").next(), ErrorCode::kInvalidArgument,
                    "'1.5' is not an integer");
  EXPECT_TERN_ERROR(first_error("h\n1,2,\"open\n").next(), ErrorCode::kDataLoss,
                    "bad.csv:2: unterminated quoted field");
  EXPECT_TERN_ERROR(first_error("h\n1,2,\"q\"x\n").next(), ErrorCode::kDataLoss,
                    "after a closing quote");
  EXPECT_TERN_ERROR(first_error("h\n1,2,a\"b\n").next(), ErrorCode::kDataLoss,
                    "quote inside an unquoted field");
  o.columns[0].default_value.reset();
  EXPECT_TERN_ERROR(first_error("h\n,2,x\n").next(), ErrorCode::kInvalidArgument,
                    "bad.csv:2: column 0 is empty and has no default");
  EXPECT_TERN_ERROR(csv_dataset({f}, {.columns = {{}}, .select_columns = {3}}),
                    ErrorCode::kInvalidArgument, "selected column 3");
}

TEST(Csv, ParsesScalarTypes) {
  EXPECT_EQ(parse_csv_scalar(" true ", DType::kBool, "x").get(0), 1);
  EXPECT_EQ(parse_csv_scalar("-7", DType::kI64, "x").get(0), -7);
  EXPECT_EQ(parse_csv_scalar("+255", DType::kU8, "x").get(0), 255);
  EXPECT_TERN_ERROR(parse_csv_scalar("256", DType::kU8, "here"), ErrorCode::kInvalidArgument,
                    "here: 256 is out of range for u8");
  EXPECT_EQ(parse_csv_scalar("-2.25", DType::kF64, "x").get(0), -2.25);
  EXPECT_TERN_ERROR(parse_csv_scalar("", DType::kF32, "x"), ErrorCode::kInvalidArgument, "number");
}

TEST(Csv, ResumesAcrossFiles) {
  TempDir dir;
  write_file(dir.file("1.csv"), "a,b,c\n1,1,\"x\ny\"\n2,2,z\n");
  write_file(dir.file("2.csv"), "a,b,c\n3,3,w\n4,4,v\n");
  DatasetPtr ds = csv_dataset({dir.file("1.csv"), dir.file("2.csv")}, three_columns());
  for (int cut = 0; cut <= 4; ++cut) {
    Iterator it = ds->make_iterator();
    it.take(cut);
    Iterator resumed = ds->make_iterator();
    resumed.restore_state(it.save_state());
    std::vector<int64_t> rest = testing::scalars(resumed.take());
    EXPECT_EQ(rest, testing::iota(cut + 1, 5)) << cut;
  }
  // Line numbers stay right after a resume past a multi-line field.
  write_file(dir.file("3.csv"), "a,b,c\n1,1,\"x\ny\"\n2,2,z\n3,zz,q\n");
  DatasetPtr bad = csv_dataset({dir.file("3.csv")}, three_columns());
  Iterator it = bad->make_iterator();
  it.take(1);
  Iterator resumed = bad->make_iterator();
  resumed.restore_state(it.save_state());
  resumed.next();
  EXPECT_TERN_ERROR(resumed.next(), ErrorCode::kInvalidArgument, "3.csv:5 column 1");
}

}  // namespace
}  // namespace tern::data
