// The last findings of the bad-input report (BAD-INPUTS-2026-11-23) through the `tern` commands:
// F18, errors about one record name its file and record (or line) after shuffling and batching,
// also when a kernel finds the bad value; F24, text from files (CSV fields, class names, TOML
// strings and keys, tf.Example feature names) reaches messages escaped, never raw.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/base/error.h"
#include "tern/data/example_proto.h"
#include "tern/data/image_codec.h"
#include "tern/data/tfrecord_writer.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

// The message of the tern::Error `cmd` throws ("" if none).
std::string error_of(std::vector<std::string> args, int (*cmd)(int, char**)) {
  try {
    run(std::move(args), cmd);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class BadInputSources : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = str_cat(::testing::TempDir(), "/tern_bad_input_src_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  // A config over `source_lines` ([data] keys) with an mlp of 8 units and 2 classes.
  std::string config(const std::string& data, const std::string& model = "") const {
    const std::string path = file("cfg.toml");
    std::ofstream(path) << (model.empty() ? "[model]\nname = \"mlp\"\n[model.args]\nunits = [8]\n"
                                          : model)
                        << "[data]\nnum_classes = 2\n"
                        << data << "[training]\nepochs = 1\nbatch_size = 8\nthreads = 1\n"
                        << "[output]\ndir = \"" << dir_ << "/run\"\n";
    return path;
  }

  std::string dir_;
};

// --- F18 ---

// 60 records of (x: 4 floats, label: int64 0/1); the one at `bad` has a float label.
void write_tfrecord(const std::string& path, int bad) {
  data::TFRecordWriter w(path);
  for (int i = 0; i < 60; ++i) {
    data::Example ex;
    ex.features["x"] = data::Feature::floats({1.0f * i, 2, 3, 4});
    ex.features["label"] =
        i == bad ? data::Feature::floats({0.5f}) : data::Feature::int64s({i % 2});
    w.write(data::serialize_example(ex));
  }
  w.close();
}

// The report's case: a bad record at index 37 of a shuffled, batched, parallel-parsed TFRecord
// was "tf.train.Example record 13", naming no file.
TEST_F(BadInputSources, F18TFRecordErrorsNameTheFileAndRecord) {
  write_tfrecord(file("train.tfrecord"), 37);
  write_tfrecord(file("test.tfrecord"), -1);
  const std::string cfg =
      config("source = \"tfrecord\"\ntrain_files = \"" + file("train.tfrecord") +
             "\"\ntest_files = \"" + file("test.tfrecord") +
             "\"\ninput = \"x\"\nlabel = \"label\"\n"
             "[data.features]\nx = {type = \"float\", shape = [4]}\nlabel = {type = \"int64\"}\n"
             "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 100\n"
             "[[data.transforms]]\nop = \"batch\"\nsize = 8\n"
             "[[data.transforms]]\nop = \"parse\"\nparallel = 2\n");
  const std::string error = error_of({"train", cfg, "--quiet"}, cmd_train);
  EXPECT_NE(error.find("tf.train.Example at " + file("train.tfrecord") +
                       " record 37, feature 'label': expected int64_list, got float_list"),
            std::string::npos)
      << error;
}

// CSV rows of 4 float columns and a label; row `bad_row` (0-based, on line bad_row + 2) gets
// `bad_label`, or `bad_token` in column 1.
void write_csv(const std::string& path, int rows, int bad_row, const std::string& bad_label,
               const std::string& bad_token = "") {
  std::ofstream os(path);
  os << "t0,t1,t2,t3,label\n";
  for (int r = 0; r < rows; ++r) {
    const bool bad = r == bad_row;
    os << r % 5 << "," << (bad && !bad_token.empty() ? bad_token : std::to_string((r + 1) % 5))
       << ",2,3," << (bad && !bad_label.empty() ? bad_label : std::to_string(r % 2)) << "\n";
  }
}

std::string csv_data(const std::string& train, const std::string& test) {
  return "source = \"csv\"\ntrain_files = \"" + train + "\"\ntest_files = \"" + test +
         "\"\n[data.csv]\ncolumns = [\"float\", \"float\", \"float\", \"float\", \"int64\"]\n";
}

// A label out of range: "row 3 of a batch", now with the file and line, after the shuffle.
TEST_F(BadInputSources, F18CsvLabelErrorsNameTheFileAndLine) {
  write_csv(file("train.csv"), 40, /*bad_row=*/25, "7");
  write_csv(file("test.csv"), 16, -1, "");
  const std::string cfg = config(csv_data(file("train.csv"), file("test.csv")) +
                                 "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 40\n");
  EXPECT_TERN_ERROR(run({"train", cfg, "--quiet"}, cmd_train), ErrorCode::kInvalidArgument,
                    "label 7 at " + file("train.csv") + ":27 (row ");
}

// An embedding id out of range is found by the kernel, on a batch ("id 50 at position 24"); the
// training step names the batch row and where that row came from.
TEST_F(BadInputSources, F18EmbeddingErrorsNameTheBatchRowAndItsLine) {
  write_csv(file("train.csv"), 40, /*bad_row=*/21, "", "50");
  write_csv(file("test.csv"), 16, -1, "");
  const std::string cfg =
      config(csv_data(file("train.csv"), file("test.csv")) +
                 "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 40\n",
             "[model]\nname = \"transformer_classifier\"\n[model.args]\nvocab_size = 5\n"
             "num_layers = 1\nd_model = 8\nnum_heads = 2\nff_dim = 8\n");
  const std::string error = error_of({"train", cfg, "--quiet"}, cmd_train);
  EXPECT_NE(error.find("embedding: id 50 at position "), std::string::npos) << error;
  EXPECT_NE(error.find("of the batch: " + file("train.csv") + ":23)"), std::string::npos) << error;
}

// --- F24 ---

// Each text from a file, with a NUL and with an ESC, is shown escaped (\x00, \x1b).
const std::vector<std::pair<std::string, std::string>> kRawAndEscaped = {
    {std::string("a\0b", 3), "a\\x00b"}, {"a\x1b[2Jb", "a\\x1b[2Jb"}};

TEST_F(BadInputSources, F24CsvFieldsAreEscaped) {
  for (const auto& [raw, shown] : kRawAndEscaped) {
    write_csv(file("train.csv"), 10, 3, "", raw);
    write_csv(file("test.csv"), 10, 3, "", raw);
    const std::string cfg = config(csv_data(file("train.csv"), file("test.csv")));
    const std::string error = error_of({"train", cfg, "--quiet"}, cmd_train);
    EXPECT_NE(error.find(file("test.csv") + ":5 column 1: '" + shown + "' is not a number"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find(raw), std::string::npos) << "raw bytes in: " << error;
  }
}

TEST_F(BadInputSources, F24TomlStringsAndKeysAreEscaped) {
  // TOML writes them as \u0000 and \u001b; the messages show \x00 and \x1b.
  for (const auto& [toml, shown] : std::vector<std::pair<std::string, std::string>>{
           {"a\\u0000b", "a\\x00b"}, {"a\\u001b[2Jb", "a\\x1b[2Jb"}}) {
    std::ofstream(file("m.toml")) << "[model]\nname = \"" << toml << "\"\n";
    std::string error = error_of({"train", file("m.toml")}, cmd_train);
    EXPECT_NE(error.find("'" + shown + "'"), std::string::npos) << error;
    EXPECT_EQ(error.find('\0'), std::string::npos);
    EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
    std::ofstream(file("k.toml")) << "[model]\nname = \"mlp\"\n\"" << toml << "\" = 1\n";
    error = error_of({"train", file("k.toml")}, cmd_train);
    EXPECT_NE(error.find("unknown key 'model." + shown + "'"), std::string::npos) << error;
  }
}

// Class names: a folder name (ESC; a file name cannot hold a NUL) and the config's class list
// (either).
TEST_F(BadInputSources, F24ClassNamesAreEscaped) {
  const std::string root = file("images");
  const std::string esc = std::string("c\x1b[31m");
  for (const std::string& cls : {std::string("plain"), esc}) {
    fs::create_directories(root + "/" + cls);
    Tensor img(DType::kU8, Shape{4, 4, 1});
    for (int64_t i = 0; i < 16; ++i) img.set(i, static_cast<double>(i));
    std::ofstream(root + "/" + cls + "/0.png", std::ios::binary) << data::encode_png(img);
  }
  const std::string data = "source = \"image_dir\"\ntrain_dir = \"" + root + "\"\ntest_dir = \"" +
                           root + "\"\n[data.image_dir]\nimage_size = [4, 4]\nchannels = 1\n";
  std::string error = error_of(
      {"train", config(data + "class_names = [\"plain\", \"other\"]\n"), "--quiet"}, cmd_train);
  EXPECT_NE(error.find("subfolder 'c\\x1b[31m' is not one of the 2 classes"), std::string::npos)
      << error;
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
  error = error_of(
      {"train", config(data + "class_names = [\"plain\", \"c\\u001b[31m\", \"n\\u0000\"]\n"),
       "--quiet"},
      cmd_train);
  EXPECT_NE(error.find("class 'n\\x00' has no subfolder"), std::string::npos) << error;
  EXPECT_EQ(error.find('\0'), std::string::npos);
}

// tf.Example feature names (the record's map keys) in `data inspect` and in parse errors; a bytes
// value with control bytes is shown as its length.
TEST_F(BadInputSources, F24FeatureNamesAndBytesAreEscaped) {
  for (const auto& [raw, shown] : kRawAndEscaped) {
    SCOPED_TRACE(shown);
    {
      data::TFRecordWriter w(file("f.tfrecord"));
      data::Example ex;
      ex.features[raw] = data::Feature::bytes({"v" + raw});
      w.write(data::serialize_example(ex));
      w.close();
    }
    ::testing::internal::CaptureStdout();
    ASSERT_EQ(run({"data", "inspect", file("f.tfrecord")}, cmd_data), 0);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find(shown), std::string::npos) << out;
    EXPECT_EQ(out.find(raw), std::string::npos) << "raw name in:\n" << out;
    EXPECT_NE(out.find(str_cat("[", raw.size() + 1, " bytes]")), std::string::npos) << out;
    // A config feature spec of that name (TOML escapes), read from a record without it.
    const std::string toml_name = shown == "a\\x00b" ? "a\\u0000b" : "a\\u001b[2Jb";
    const std::string cfg =
        config("source = \"tfrecord\"\ntrain_files = \"" + file("f.tfrecord") +
               "\"\ntest_files = \"" + file("f.tfrecord") + "\"\ninput = \"" + toml_name +
               "\"\nlabel = \"y\"\n[data.features]\n\"" + toml_name +
               "\" = {type = \"float\", shape = [4]}\ny = {type = \"int64\"}\n"
               "[[data.transforms]]\nop = \"parse\"\n");
    const std::string error = error_of({"train", cfg, "--quiet"}, cmd_train);
    EXPECT_NE(error.find("feature '" + shown + "': expected float_list, got bytes_list"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find(raw), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace tern::tools
