// Tests for exact resume: for every cut point, save mid-stream, restore into a fresh iterator,
// and the remaining elements equal those of an uninterrupted run. Also corrupt and mismatched
// state blobs.
#include "tern/data/iterator_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <thread>

#include "tern/base/philox.h"
#include "tern/data/test_util.h"

namespace tern::data {
namespace {

void expect_same(const std::vector<Element>& a, const std::vector<Element>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << what << " element " << i;
    for (size_t k = 0; k < a[i].size(); ++k) {
      ASSERT_TRUE(bitwise_equal(a[i][k], b[i][k]))
          << what << " element " << i << " component " << k << ": " << a[i][k] << " vs " << b[i][k];
    }
  }
}

// Saves after every prefix length in `cuts` and checks the resumed tail against a full run.
void check_resume(const DatasetPtr& ds, const std::vector<int64_t>& cuts, const std::string& what) {
  std::vector<Element> full = ds->make_iterator().take();
  for (int64_t cut : cuts) {
    if (cut > static_cast<int64_t>(full.size())) continue;
    Iterator first = ds->make_iterator();
    std::vector<Element> head = first.take(cut);
    std::string blob = first.save_state();
    // The saved iterator itself keeps going after the save.
    std::vector<Element> rest_original = first.take();
    Iterator second = ds->make_iterator();
    second.restore_state(blob);
    std::vector<Element> rest = second.take();
    std::vector<Element> expected(full.begin() + cut, full.end());
    expect_same(rest, expected, what + " resumed at " + std::to_string(cut));
    expect_same(rest_original, expected,
                what + " continued after saving at " + std::to_string(cut));
  }
}

Element slow_identity(Element e) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(static_cast<int64_t>(e[0].get(0)) % 5 * 100));
  return e;
}

TEST(Resume, SourcesAndSimpleTransforms) {
  check_resume(range(10), {0, 1, 5, 10}, "range");
  Tensor x = Tensor::from_values(DType::kF32, {6, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  check_resume(from_tensor_slices({x})->batch(4), {0, 1, 2}, "slices+batch");
  check_resume(
      range(20)
          ->filter([](const Element& e) { return static_cast<int64_t>(e[0].get(0)) % 3 != 0; })
          ->skip(2)
          ->take(9),
      {0, 3, 8, 9}, "filter+skip+take");
  check_resume(range(4)->repeat(3), {0, 3, 4, 7, 12}, "repeat");
}

TEST(Resume, ShuffleBufferAndRngAcrossEpochs) {
  DatasetPtr ds = range(37)->shuffle(10, 5)->repeat(3)->batch(4);
  check_resume(ds, {0, 1, 5, 9, 10, 20, 27, 28}, "shuffle+repeat+batch");
  check_resume(range(37)->shuffle(100, 5), {0, 1, 36, 37}, "full shuffle");
}

// from_tensor_slices -> shuffle -> batch hands row numbers down (RowTable, next_rows) instead of
// Elements; a take() in between keeps the Element path. Both give the same batches, values and
// origins, for any buffer and batch size, across epochs; and the row path resumes exactly (its
// state is the Element path's: a restored shuffle continues with Elements).
TEST(Resume, RowNumberPathMatchesTheElementPath) {
  constexpr int64_t kRows = 103;
  Tensor x(DType::kF32, Shape({kRows, 3}));
  Tensor y(DType::kI64, Shape({kRows}));
  for (int64_t i = 0; i < kRows * 3; ++i) x.data<float>()[i] = static_cast<float>(i) * 0.5f;
  for (int64_t i = 0; i < kRows; ++i) y.data<int64_t>()[i] = i * 7;
  for (int64_t buffer : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{103}, int64_t{1000},
                         std::numeric_limits<int64_t>::max()}) {
    for (int64_t batch : {1, 8, 13}) {
      for (bool drop : {false, true}) {
        DatasetPtr rows = from_tensor_slices({x, y}, {.file = "", .first = 5, .stride = 2});
        DatasetPtr fast = rows->shuffle(buffer, 11)->batch(batch, drop);
        DatasetPtr slow = rows->take(kRows)->shuffle(buffer, 11)->batch(batch, drop);
        const std::string what = str_cat("buffer ", buffer, " batch ", batch, " drop ", drop);
        for (uint64_t epoch : {0, 1}) {
          std::vector<Element> a = fast->make_iterator(epoch).take();
          std::vector<Element> b = slow->make_iterator(epoch).take();
          expect_same(a, b, what + " epoch " + std::to_string(epoch));
          ASSERT_EQ(a.size(),
                    static_cast<size_t>(drop ? kRows / batch : (kRows + batch - 1) / batch));
          for (size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(a[i].origin.size(), b[i].origin.size()) << what;
            for (size_t r = 0; r < a[i].origin.size(); ++r) {
              EXPECT_EQ(a[i].origin[r].index, b[i].origin[r].index) << what;
              // Row j of the source is element 5 + 2 j, and holds y = 7 j.
              EXPECT_EQ(a[i].origin[r].index, 5 + 2 * a[i][1].data<int64_t>()[r] / 7) << what;
            }
          }
        }
        if (buffer == 64 && !drop) check_resume(fast, {0, 1, 3, 7, 8}, what);
      }
    }
  }
  // The shuffle's own elements (no batch after it) come from the row buffer too.
  DatasetPtr rows = from_tensor_slices({x, y});
  expect_same(rows->shuffle(10, 3)->make_iterator().take(),
              rows->take(kRows)->shuffle(10, 3)->make_iterator().take(), "shuffle alone");
  check_resume(rows->shuffle(10, 3), {0, 1, 50, 103}, "shuffle alone");
}

TEST(Resume, GeneratorReplays) {
  DatasetPtr ds = from_generator([] {
    auto i = std::make_shared<int64_t>(0);
    return [i]() -> std::optional<Element> {
      if (*i >= 12) return std::nullopt;
      return Element{Tensor::scalar(DType::kI64, static_cast<double>((*i)++ * 3))};
    };
  });
  check_resume(ds->shuffle(4, 1), {0, 2, 11, 12}, "generator");
}

TEST(Resume, AsynchronousStages) {
  for (int64_t threads : {int64_t{0}, int64_t{1}, int64_t{3}, kAutotune}) {
    DatasetPtr ds = range(30)
                        ->shuffle(8, 9)
                        ->map(slow_identity, {.num_parallel_calls = threads})
                        ->prefetch(3)
                        ->batch(4)
                        ->repeat(2)
                        ->prefetch(kAutotune);
    check_resume(ds, {0, 1, 4, 7, 8, 15, 16}, "async threads=" + std::to_string(threads));
  }
}

TEST(Resume, BufferedErrorsSurviveSaving) {
  auto fn = [](Element e) {
    if (e[0].get(0) == 2) throw_error(ErrorCode::kDataLoss, "element two is corrupt");
    return e;
  };
  DatasetPtr ds = range(5)->map(fn, {.num_parallel_calls = 2})->prefetch(4);
  Iterator it = ds->make_iterator();
  EXPECT_EQ(it.next()->at(0).get(0), 0);
  // Wait (bounded) until the prefetch buffer holds element 1 and the error of element 2, so the
  // state saved below really contains a buffered error: the path this test is about.
  auto prefetch_buffered = [&] {
    for (const StageStats& s : it.stats()) {
      if (s.stage == "Prefetch") return s.buffered;
    }
    return int64_t{-1};
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (prefetch_buffered() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(prefetch_buffered(), 2) << "the error never reached the prefetch buffer";
  std::string blob = it.save_state();
  Iterator resumed = ds->make_iterator();
  resumed.restore_state(blob);
  EXPECT_EQ(resumed.next()->at(0).get(0), 1);
  EXPECT_TERN_ERROR(resumed.next(), ErrorCode::kDataLoss, "element two is corrupt");
  EXPECT_EQ(testing::scalars(resumed.take()), (std::vector<int64_t>{3, 4}));
}

TEST(Resume, SavingAnExhaustedIterator) {
  DatasetPtr ds = range(3)->prefetch(2);
  Iterator it = ds->make_iterator();
  it.take();
  std::string blob = it.save_state();
  Iterator resumed = ds->make_iterator();
  resumed.restore_state(blob);
  EXPECT_FALSE(resumed.next().has_value());
}

TEST(Resume, CorruptOrMismatchedStateIsRejected) {
  DatasetPtr ds = range(10)->shuffle(4, 1)->batch(2);
  Iterator it = ds->make_iterator();
  it.next();
  std::string blob = it.save_state();
  Iterator other = ds->make_iterator();
  std::string flipped = blob;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_TERN_ERROR(other.restore_state(flipped), ErrorCode::kDataLoss, "checksum");
  EXPECT_TERN_ERROR(other.restore_state(blob.substr(0, 5)), ErrorCode::kDataLoss, "header");
  Iterator different =
      range(10)->shuffle(4, 1)->batch(3)->map([](Element e) { return e; })->make_iterator();
  EXPECT_TERN_ERROR(different.restore_state(blob), ErrorCode::kInvalidArgument, "Map/");
  // A failed restore leaves the iterator untouched.
  EXPECT_EQ(other.take().size(), 5u);
}

TEST(StateBlob, RoundTripsValues) {
  StateWriter w;
  w.write_int("a", -7);
  {
    StateWriter::Scope s(w, "inner");
    w.write_string("s", std::string("x\0y", 3));
    w.write_tensor("t", Tensor::from_values(DType::kBF16, {2}, {1.5, -2}));
  }
  std::string blob = w.finish();
  StateReader r(blob);
  EXPECT_EQ(r.read_int("a"), -7);
  {
    StateReader::Scope s(r, "inner");
    EXPECT_EQ(r.read_string("s"), std::string("x\0y", 3));
    Tensor t = r.read_tensor("t");
    EXPECT_EQ(t.type(), (TensorType{DType::kBF16, Shape{2}}));
    EXPECT_EQ(t.to_doubles(), (std::vector<double>{1.5, -2}));
  }
  r.expect_end();
  StateReader r2(blob);
  EXPECT_TERN_ERROR(r2.read_int("b"), ErrorCode::kInvalidArgument,
                    "expected int 'b' but found int 'a'");
}

}  // namespace
}  // namespace tern::data

namespace tern::data {
namespace {

// Shuffle state relies on PhiloxStream position()/seek() being exact inverses.
TEST(StateBlob, PhiloxPositionRoundTrips) {
  PhiloxStream a(99);
  EXPECT_EQ(a.position(), 0u);
  for (int n = 0; n < 11; ++n) {
    PhiloxStream b(99);
    b.seek(a.position());
    EXPECT_EQ(b.position(), a.position());
    EXPECT_EQ(b.next_u32(), a.next_u32()) << "after " << n << " draws";
  }
}

}  // namespace
}  // namespace tern::data
