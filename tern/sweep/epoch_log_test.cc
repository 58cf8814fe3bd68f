// EpochLog: rows of a growing CSV log, a half-written row left for later, a restarted file.
#include "tern/sweep/epoch_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace tern::sweep {
namespace {

TEST(EpochLog, ReadsRowsAsTheFileGrows) {
  const std::string path = ::testing::TempDir() + "/tern_epoch_log.csv";
  std::filesystem::remove(path);
  EpochLog log(path);
  EXPECT_TRUE(log.poll().empty());  // not there yet
  std::ofstream out(path);
  out << "epoch,accuracy,loss,val_accuracy\n0,0.5,1.2,0.6\n1,0.7,0.8," << std::flush;
  std::vector<EpochRow> rows = log.poll();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].epoch, 1);
  EXPECT_DOUBLE_EQ(rows[0].values.at("val_accuracy"), 0.6);
  EXPECT_DOUBLE_EQ(rows[0].values.at("loss"), 1.2);
  out << "0.75\n" << std::flush;  // the rest of the row
  rows = log.poll();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].epoch, 2);
  EXPECT_DOUBLE_EQ(rows[0].values.at("val_accuracy"), 0.75);
  out << "2,nan,nan,\n" << std::flush;  // a diverged epoch, a missing cell
  rows = log.poll();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(std::isnan(rows[0].values.at("loss")));
  EXPECT_EQ(rows[0].values.count("val_accuracy"), 0u);
  out.close();

  // Restarted from scratch: a shorter file is read from its start.
  std::ofstream(path) << "epoch,loss\n0,2.5\n";
  rows = log.poll();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].epoch, 1);
  EXPECT_DOUBLE_EQ(rows[0].values.at("loss"), 2.5);
  EXPECT_EQ(read_epoch_log(path).size(), 1u);
}

}  // namespace
}  // namespace tern::sweep
