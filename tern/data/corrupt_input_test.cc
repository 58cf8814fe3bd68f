// Robustness: mutated and random input to every parser (IDX, TFRecord, CSV, iterator state) may
// only raise tern::Error, never crash or hang. Run under ASan/UBSan in CI.
#include <gtest/gtest.h>

#include "tern/base/philox.h"
#include "tern/data/test_util.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/format/tfrecord_frame.h"

namespace tern::data {
namespace {

using testing::TempDir;
using testing::write_file;

// Applies a few random byte flips, truncations or insertions.
std::string mutate(std::string s, PhiloxStream& rng) {
  const int edits = 1 + static_cast<int>(rng.next_below(4));
  for (int i = 0; i < edits; ++i) {
    switch (rng.next_below(3)) {
      case 0:
        if (!s.empty()) s[rng.next_below(s.size())] ^= static_cast<char>(1 + rng.next_below(255));
        break;
      case 1:
        s.resize(rng.next_below(s.size() + 1));
        break;
      default:
        s.insert(rng.next_below(s.size() + 1), 1, static_cast<char>(rng.next_below(256)));
    }
  }
  return s;
}

// Runs `consume` and accepts success or a tern::Error; anything else fails the test.
template <typename Fn>
void only_tern_errors(Fn&& consume, const std::string& what) {
  try {
    consume();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": non-tern exception " << e.what();
  }
}

TEST(CorruptInput, MutatedFilesOnlyRaiseTernErrors) {
  TempDir dir;
  std::string idx =
      std::string("\x00\x00\x08\x02\x00\x00\x00\x04\x00\x00\x00\x03", 12) + "abcdefghijkl";
  std::string records;
  for (const char* r : {"one", "two", "three", ""}) records += format::tfrecord_frame(r);
  const std::string csv = "a,b,c\n1,2.5,\"x,\ny\"\n3,,z\n";
  const CsvOptions csv_options{.columns = {{.dtype = DType::kI32, .default_value = 0},
                                           {.dtype = DType::kF64, .default_value = 0},
                                           {.as_bytes = true}}};
  PhiloxStream rng(2024);
  const std::string f = dir.file("fuzz");
  for (int round = 0; round < 400; ++round) {
    const bool gz = round % 4 == 3;
    auto wrap = [&](const std::string& s) { return gz ? testing::gzip_bytes(s) : s; };
    write_file(
        f, gz && round % 8 == 7 ? mutate(testing::gzip_bytes(idx), rng) : wrap(mutate(idx, rng)));
    only_tern_errors([&] { read_idx(f); }, "idx");
    write_file(f, wrap(mutate(records, rng)));
    const Compression c = gz ? Compression::kGzip : Compression::kNone;
    only_tern_errors([&] { tfrecord_dataset({f}, {.compression = c})->make_iterator().take(); },
                     "tfrecord");
    only_tern_errors(
        [&] {
          tfrecord_dataset({f}, {.compression = c, .skip_corrupt = true})->make_iterator().take();
        },
        "tfrecord skip_corrupt");
    write_file(f, wrap(mutate(csv, rng)));
    only_tern_errors([&] { csv_dataset({f}, csv_options)->make_iterator().take(); }, "csv");
  }
}

TEST(CorruptInput, MutatedStateBlobsOnlyRaiseTernErrors) {
  DatasetPtr ds = range(20)->shuffle(5, 1)->batch(3)->prefetch(2);
  Iterator it = ds->make_iterator();
  it.take(2);
  const std::string blob = it.save_state();
  PhiloxStream rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string bad = mutate(blob, rng);
    only_tern_errors(
        [&] {
          Iterator other = ds->make_iterator();
          other.restore_state(bad);
          other.take();
        },
        "state");
  }
}

}  // namespace
}  // namespace tern::data
