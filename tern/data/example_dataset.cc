// parse_example / parse_example_batched / parse_sequence_example: maps over records zipped with
// their index, so errors can name the record: by its source position (file and record index, kept
// through shuffles and batches) when the records came from a file, else by that index.
#include "tern/data/example_dataset.h"

#include <cstdint>
#include <limits>

#include "tern/base/error.h"
#include "tern/data/range_dataset.h"
#include "tern/data/zip_dataset.h"

namespace tern::data {
namespace {

DatasetPtr with_index(DatasetPtr records) {
  TERN_CHECK_ARG(records != nullptr, "parse_example: null input dataset");
  return make_zip_dataset({std::move(records), range(0, std::numeric_limits<int64_t>::max())});
}

void check_arity(const Element& e, size_t expected, std::string_view what) {
  TERN_CHECK_ARG(e.size() == expected, what, ": expected elements of ", expected - 1,
                 " record component(s), got ", element_signature(e));
}

}  // namespace

std::string_view record_view(const Tensor& record, std::string_view what) {
  TERN_CHECK_ARG(record.defined() && record.dtype() == DType::kU8 && record.rank() == 1, what,
                 ": expected a serialized record (u8[n]), got ", element_signature({record}));
  return {static_cast<const char*>(record.raw_data()), record.nbytes()};
}

DatasetPtr parse_example(DatasetPtr records, std::vector<FeatureSpec> specs, MapOptions options) {
  validate_feature_specs(specs, "parse_example");
  return with_index(std::move(records))
      ->map(
          [specs = std::move(specs)](Element e) {
            check_arity(e, 2, "parse_example");
            return parse_example_record(record_view(e[0], "parse_example"), specs,
                                        RecordNames(&e.origin, static_cast<int64_t>(e[1].get(0))));
          },
          options);
}

DatasetPtr parse_example_batched(DatasetPtr records, int64_t batch_size,
                                 std::vector<FeatureSpec> specs, bool drop_remainder,
                                 MapOptions options) {
  validate_feature_specs(specs, "parse_example");
  TERN_CHECK_ARG(batch_size >= 1, "parse_example: batch_size must be >= 1, got ", batch_size);
  TERN_CHECK_ARG(records != nullptr, "parse_example: null input dataset");
  // (record, length) padded into (u8[B, longest], i64[B]); each row's prefix is its record.
  DatasetPtr padded = records
                          ->map([](Element e) {
                            check_arity(e, 1, "parse_example");
                            const auto n =
                                static_cast<double>(record_view(e[0], "parse_example").size());
                            return Element{std::move(e[0]), Tensor::scalar(DType::kI64, n)};
                          })
                          ->padded_batch(batch_size, {.drop_remainder = drop_remainder});
  return with_index(std::move(padded))
      ->map(
          [specs = std::move(specs), batch_size](Element e) {
            const Tensor& rows = e[0];
            const Tensor& lengths = e[1];
            const int64_t b = rows.shape().dim(0);
            const int64_t width = rows.shape().dim(1);
            const char* base = static_cast<const char*>(rows.raw_data());
            std::vector<std::string_view> views;
            for (int64_t i = 0; i < b; ++i) {
              views.emplace_back(base + i * width, static_cast<size_t>(lengths.get(i)));
            }
            return parse_example_batch(
                views, specs,
                RecordNames(&e.origin, static_cast<int64_t>(e[2].get(0)) * batch_size));
          },
          options);
}

DatasetPtr parse_sequence_example(DatasetPtr records, SequenceExampleSpec spec,
                                  MapOptions options) {
  validate_sequence_spec(spec, "parse_sequence_example");
  return with_index(std::move(records))
      ->map(
          [spec = std::move(spec)](Element e) {
            check_arity(e, 2, "parse_sequence_example");
            return parse_sequence_example_record(
                record_view(e[0], "parse_sequence_example"), spec,
                RecordNames(&e.origin, static_cast<int64_t>(e[1].get(0))));
          },
          options);
}

}  // namespace tern::data
