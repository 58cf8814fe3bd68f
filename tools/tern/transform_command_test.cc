// `tern transform` as users run it (the built binary): analyze + artifact + transformed splits,
// then --artifact applying the same analysis to another split; exit 2 for usage and spec errors
// (naming file:line and the key), 1 for a bad record (naming the file and the record), with
// nothing half-written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tern/data/example_proto.h"
#include "tern/data/tfrecord_writer.h"
#include "tests/support/child_process.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

class TransformCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_transform_cmd_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_cars("train.tfrecord", 40, "");
    write_cars("eval.tfrecord", 10, "");
    spec_ = dir_ + "/spec.toml";
    std::ofstream(spec_) << "[transform]\nlabel = \"fuel\"\n"
                         << "[[transform.features]]\ninput = \"price\"\nop = \"z_score\"\n"
                         << "[[transform.features]]\ninput = \"make\"\nop = \"vocabulary\"\n";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // n cars: price 1000 * i (missing for i % 7 == 3), make one of 3, fuel gas / diesel; `bad`
  // makes record 4's price a bytes_list.
  void write_cars(const std::string& name, int n, const std::string& bad) {
    data::TFRecordWriter w(dir_ + "/" + name);
    const char* makes[] = {"audi", "bmw", "volvo"};
    for (int i = 0; i < n; ++i) {
      data::Example e;
      if (i % 7 != 3)
        e.features["price"] = data::Feature::floats({1000.0f * static_cast<float>(i)});
      if (!bad.empty() && i == 4) e.features["price"] = data::Feature::bytes({bad});
      e.features["make"] = data::Feature::bytes({makes[i % 3]});
      e.features["fuel"] = data::Feature::bytes({i % 2 ? "gas" : "diesel"});
      w.write(data::serialize_example(e));
    }
    w.close();
  }
  int tern(std::vector<std::string> args) {
    args.insert(args.begin(), {TERN_TOOL_PATH, "transform"});
    const std::string log = dir_ + "/log.txt";
    fs::remove(log);
    pid_t pid = spawn_logged(args, {}, log);
    EXPECT_GT(pid, 0);
    const int rc = wait_bounded(pid, std::chrono::seconds(120));
    out_ = read_log(log);
    return rc;
  }
  std::string dir_, spec_, out_;
};

TEST_F(TransformCommand, AnalyzesWritesTheArtifactAndAppliesIt) {
  const std::string out = dir_ + "/out";
  ASSERT_EQ(tern({spec_, "--train", dir_ + "/train.tfrecord", "--out", out, "--apply",
                  "train=" + dir_ + "/train.tfrecord", "--apply", "eval=" + dir_ + "/eval.tfrecord",
                  "--threads", "2"}),
            0)
      << out_;
  EXPECT_NE(out_.find("analyzed 40 records"), std::string::npos) << out_;
  EXPECT_NE(out_.find("make              vocabulary   3 of 3 values kept"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("missing in 6 records"), std::string::npos) << out_;  // 3, 10, ..., 38
  EXPECT_NE(out_.find("label fuel: 2 classes"), std::string::npos) << out_;
  EXPECT_NE(out_.find("x: 5 values per example"), std::string::npos) << out_;
  EXPECT_NE(out_.find("transformed eval: 10 records -> " + out + "/transformed/eval/data.tfrecord"),
            std::string::npos)
      << out_;
  for (const char* f : {"transform.toml", "analysis.json", "transform.tern",
                        "transformed/train/data.tfrecord", "transformed/eval/data.tfrecord"})
    EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
  // The analysis applied again from the artifact, to a third split, with the same output bytes.
  ASSERT_EQ(tern({spec_, "--artifact", out, "--apply", "again=" + dir_ + "/eval.tfrecord"}), 0)
      << out_;
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(out + "/transformed/again/data.tfrecord"),
            bytes(out + "/transformed/eval/data.tfrecord"));
  // Another spec is not this artifact's.
  std::ofstream(dir_ + "/other.toml")
      << "[transform]\nlabel = \"fuel\"\n[[transform.features]]\ninput = \"price\"\n"
      << "op = \"identity\"\n";
  EXPECT_EQ(
      tern({dir_ + "/other.toml", "--artifact", out, "--apply", "x=" + dir_ + "/eval.tfrecord"}),
      2);
  EXPECT_NE(out_.find("is not the spec of " + out + "/transform.toml"), std::string::npos) << out_;
}

TEST_F(TransformCommand, UsageAndSpecErrorsExitTwo) {
  const std::string train = dir_ + "/train.tfrecord";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::ofstream(dir_ + "/bad.toml") << "[transform]\n[[transform.features]]\ninput = \"price\"\n"
                                    << "op = \"z_score\"\nnum_bucket = 3\n";
  const std::vector<Case> cases = {
      {{}, "spec is required"},
      {{spec_}, "needs --train FILE... (analyze) or --artifact DIR"},
      {{spec_, "--train", train}, "--train needs --out DIR"},
      {{spec_, "--train", train, "--artifact", dir_, "--out", dir_}, "exclude each other"},
      {{spec_, "--artifact", dir_}, "--artifact needs --apply NAME=FILE"},
      {{spec_, "--train", train, "--out", dir_ + "/o", "--apply", "eval"},
       "--apply takes NAME=FILE"},
      {{spec_, "--train", train, "--out", dir_ + "/o", "--apply", "a/b=" + train},
       "the split name must be"},
      {{spec_, "--train", train, "--out", dir_ + "/o", "--threads", "-1"}, "--threads"},
      {{dir_ + "/bad.toml", "--train", train, "--out", dir_ + "/o"},
       dir_ + "/bad.toml:5: unknown key 'transform.features[0].num_bucket'"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tern(c.args), 2) << ::testing::PrintToString(c.args) << "\n" << out_;
    EXPECT_NE(out_.find(c.says), std::string::npos) << ::testing::PrintToString(c.args) << "\n"
                                                    << out_;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/o"));
}

TEST_F(TransformCommand, BadRecordsExitOneNamingThem) {
  write_cars("bad.tfrecord", 10, "cheap");
  const std::string out = dir_ + "/out";
  EXPECT_EQ(tern({spec_, "--train", dir_ + "/bad.tfrecord", "--out", out}), 1) << out_;
  EXPECT_NE(out_.find(dir_ + "/bad.tfrecord: record 4: feature 'price' is a bytes_list"),
            std::string::npos)
      << out_;
  EXPECT_FALSE(fs::exists(out + "/analysis.json"));
  // Applying: the same record named, and no output file left behind.
  ASSERT_EQ(tern({spec_, "--train", dir_ + "/train.tfrecord", "--out", out, "--apply",
                  "bad=" + dir_ + "/bad.tfrecord"}),
            1)
      << out_;
  EXPECT_NE(out_.find("bad.tfrecord: record 4: feature 'price'"), std::string::npos) << out_;
  EXPECT_FALSE(fs::exists(out + "/transformed/bad/data.tfrecord"));
  EXPECT_EQ(tern({spec_, "--train", dir_ + "/missing.tfrecord", "--out", out}), 1) << out_;
  EXPECT_NE(out_.find("missing.tfrecord"), std::string::npos) << out_;
}

}  // namespace
}  // namespace tern::tools
