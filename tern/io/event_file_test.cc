// Event files: the docs/formats.md Event vectors, round trips of every summary kind through a real
// file, histograms, truncated and corrupt input (CRC32C and TFRecord framing: tern/format's tests).
#include "tern/io/event_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "tern/format/proto_wire.h"
#include "tern/format/tfrecord_frame.h"
#include "tern/io/atomic_file.h"
#include "tests/support/random_tensor.h"

namespace tern::io {
namespace {

std::string unhex(const std::string& h) {
  std::string out;
  std::string digits;
  for (char c : h) {
    if (c != ' ') digits += c;
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return out;
}

std::string temp_dir(const std::string& name) {
  std::string d = str_cat(::testing::TempDir(), "/tern_events_", name, "_", ::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(EventFiles, TruncatedTailIsReportedAndCorruptionNamesTheFile) {
  std::string dir = temp_dir("tail");
  std::string path = dir + "/events.out.tfevents.1.x";
  Event first{.wall_time = 1.0, .file_version = "brain.Event:2"};
  Event scalar{.wall_time = 2.0, .step = 3, .has_summary = true};
  scalar.summary.push_back({.tag = "loss", .kind = SummaryKind::kScalar, .scalar = 0.5});
  const std::string a = format::tfrecord_frame(encode_event(first));
  const std::string b = format::tfrecord_frame(encode_event(scalar));
  // A writer killed in the middle of the second record: the first still reads.
  write_file_atomically(path, a + b.substr(0, b.size() - 3));
  EventFileContents c = read_event_file(path);
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].file_version, "brain.Event:2");
  EXPECT_EQ(c.truncated_at, static_cast<int64_t>(a.size()));
  // A flipped byte inside the second record's data is DataLoss naming the file and the offset.
  std::string bad = a + b;
  bad[a.size() + 14] ^= 1;
  write_file_atomically(path, bad);
  EXPECT_TERN_ERROR(read_event_file(path), ErrorCode::kDataLoss,
                    str_cat("event file '", path, "': corrupt TFRecord at byte offset ", a.size(),
                            ": data CRC mismatch"));
}

TEST(Events, MatchTheFormatsVectors) {
  Event scalar{.wall_time = 1.0, .step = 3, .has_summary = true};
  scalar.summary.push_back({.tag = "loss", .kind = SummaryKind::kScalar, .scalar = 0.5});
  EXPECT_EQ(encode_event(scalar),
            unhex("09 00 00 00 00 00 00 f0 3f 10 03 2a 0d 0a 0b 0a 04 6c 6f 73 73 15 00 00 00 3f"));
  Event first{.wall_time = 1.0, .file_version = "brain.Event:2"};
  EXPECT_EQ(encode_event(first),
            unhex("09 00 00 00 00 00 00 f0 3f 1a 0d 62 72 61 69 6e 2e 45 76 65 6e 74 3a 32"));
  Event back = decode_event(encode_event(scalar), "mem");
  EXPECT_EQ(back.step, 3);
  EXPECT_EQ(back.wall_time, 1.0);
  ASSERT_EQ(back.summary.size(), 1u);
  EXPECT_EQ(back.summary[0].tag, "loss");
  EXPECT_EQ(back.summary[0].kind, SummaryKind::kScalar);
  EXPECT_EQ(back.summary[0].scalar, 0.5);
}

TEST(Events, FileRoundTripsScalarsHistogramsAndText) {
  std::string dir = temp_dir("roundtrip");
  std::string path;
  {
    EventFileWriter w(dir + "/train");
    path = w.path();
    w.add_scalar("epoch_loss", 0.25, 0);
    w.add_scalar("epoch_loss", 0.125, 1);
    w.add_histogram("dense/kernel",
                    make_histogram(Tensor::from_values(DType::kF32, {4}, {0, 1, 2, 3}), 3), 1);
    w.add_text("hyperparameters", "| key | value |\n|---|---|\n| lr | 0.001 |", 0);
  }
  EXPECT_NE(std::filesystem::path(path).filename().string().find("events.out.tfevents."),
            std::string::npos);
  EXPECT_EQ(find_event_files(dir), std::vector<std::string>{path});
  EventFileContents c = read_event_file(path);
  ASSERT_EQ(c.events.size(), 5u);
  EXPECT_EQ(c.events[0].file_version, "brain.Event:2");
  EXPECT_GT(c.events[0].wall_time, 1.6e9);
  EXPECT_EQ(c.events[2].step, 1);
  EXPECT_EQ(c.events[2].summary[0].scalar, 0.125);
  const SummaryValue& h = c.events[3].summary[0];
  ASSERT_EQ(h.kind, SummaryKind::kHistogram);
  EXPECT_EQ(h.histogram.num, 4);
  EXPECT_EQ(h.histogram.min, 0);
  EXPECT_EQ(h.histogram.max, 3);
  EXPECT_EQ(h.histogram.sum, 6);
  EXPECT_EQ(h.histogram.sum_squares, 14);
  EXPECT_EQ(h.histogram.bucket, (std::vector<double>{1, 1, 2}));
  EXPECT_EQ(h.histogram.bucket_limit, (std::vector<double>{1, 2, 3}));
  const SummaryValue& t = c.events[4].summary[0];
  EXPECT_EQ(t.kind, SummaryKind::kText);
  EXPECT_EQ(t.plugin_name, "text");
  EXPECT_NE(t.text.find("| lr | 0.001 |"), std::string::npos);
}

TEST(Events, ReadsTf2ScalarTensors) {
  // Value{tag, metadata{plugin_data{plugin_name:"scalars"}}, tensor{dtype: DT_FLOAT,
  // float_val: 2.5}}.
  format::ProtoWriter tensor, plugin, meta, value, summary, event;
  tensor.add_varint(1, 1);
  tensor.add_bytes(2, "");
  tensor.add_float(5, 2.5f);
  plugin.add_bytes(1, "scalars");
  meta.add_message(1, plugin);
  value.add_bytes(1, "epoch_accuracy");
  value.add_message(9, meta);
  value.add_message(8, tensor);
  summary.add_message(1, value);
  event.add_int64(2, 7);
  event.add_message(5, summary);
  Event e = decode_event(event.bytes(), "mem");
  ASSERT_EQ(e.summary.size(), 1u);
  EXPECT_EQ(e.summary[0].kind, SummaryKind::kScalar);
  EXPECT_EQ(e.summary[0].scalar, 2.5);
  EXPECT_EQ(e.summary[0].plugin_name, "scalars");
}

TEST(Events, MalformedProtoIsDataLoss) {
  EXPECT_THROW(decode_event(unhex("2a 7f 0a"), "mem"), Error);  // length past the end
  EXPECT_THROW(decode_event(unhex("ff ff ff ff ff ff ff ff ff ff ff"), "mem"),
               Error);                                       // varint too long
  EXPECT_THROW(decode_event(unhex("0b 00"), "mem"), Error);  // wire type 3
  std::string dir = temp_dir("corrupt");
  std::string path = dir + "/events.out.tfevents.1.x";
  write_file_atomically(path, format::tfrecord_frame("\x2a\x7f"));
  try {
    read_event_file(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
}

TEST(Histogram, SkipsNonFiniteValuesAndHandlesConstants) {
  Histogram h = make_histogram(Tensor::from_values(DType::kF32, {4}, {2, 2, NAN, INFINITY}));
  EXPECT_EQ(h.num, 2);
  EXPECT_EQ(h.bucket, std::vector<double>{2});
  EXPECT_EQ(h.bucket_limit, std::vector<double>{2});
  Histogram empty = make_histogram(Tensor(DType::kF32, {0}));
  EXPECT_EQ(empty.num, 0);
  EXPECT_TRUE(empty.bucket.empty());
}

}  // namespace
}  // namespace tern::io
