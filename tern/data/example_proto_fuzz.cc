// Fuzz target: tf.train.Example / SequenceExample parsing (cmake/tern_fuzz.cmake builds it with
// libFuzzer or the replay driver). Any input must parse or fail with DataLoss; what parses must
// serialize to bytes that parse to the same serialization (a fixed point), and must convert to
// tensors under a VarLen spec of its own features. The fast batch parser, under fixed-length specs
// of the input's own features, may only accept what the general parser gives identically.
#include <cstdlib>

#include <cstring>
#include "tern/base/error.h"

#include "tern/data/example_fast_parse.h"
#include "tern/data/example_parser.h"
#include "tern/data/example_proto.h"

namespace {

template <typename Fn>
bool parses(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const tern::Error& e) {
    if (e.code() != tern::ErrorCode::kDataLoss) std::abort();  // corrupt input is DataLoss only
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Example ex;
  if (parses([&] { ex = parse_example_proto(bytes, "fuzz input"); })) {
    const std::string once = serialize_example(ex);
    if (serialize_example(parse_example_proto(once)) != once) std::abort();
    std::vector<FeatureSpec> specs;
    for (const auto& [name, f] : ex.features) {
      if (f.kind != FeatureKind::kNone && !name.empty() && specs.size() < 8)
        specs.push_back(var_len_feature(name, f.kind, true));
    }
    const Element e = parse_example_record(bytes, specs, 0);  // must not throw
    if (e.size() != 2 * specs.size()) std::abort();
  }
  // Fixed-length specs shaped after the parsed features (or guessed, for unparsable input).
  std::vector<FeatureSpec> fixed;
  for (const auto& [name, f] : ex.features) {
    if (f.kind == FeatureKind::kNone || fixed.size() >= 2) continue;  // the rest stay unused
    int64_t n = f.kind == FeatureKind::kBytes && f.size() == 1
                    ? static_cast<int64_t>(f.bytes_list[0].size())
                    : static_cast<int64_t>(f.size());
    FeatureSpec spec = fixed_len_feature(name, f.kind, {n});
    if (f.kind == FeatureKind::kBytes) spec.dtype = tern::DType::kU8;
    fixed.push_back(spec);
  }
  if (fixed.empty()) fixed.push_back(fixed_len_feature("x", FeatureKind::kInt64, {1}));
  const std::vector<std::string_view> records = {bytes, bytes};
  Element fast;
  if (parse_example_batch_fast(records, fixed, &fast)) {
    Element general;
    try {
      general = parse_example_batch_general(records, fixed, 0);
    } catch (const tern::Error&) {
      std::abort();  // the fast path accepted what the general parser rejects
    }
    if (general.size() != fast.size()) std::abort();
    for (size_t i = 0; i < fast.size(); ++i) {
      if (general[i].type() != fast[i].type() ||
          std::memcmp(general[i].raw_data(), fast[i].raw_data(), fast[i].nbytes()) != 0)
        std::abort();
    }
  }
  SequenceExample seq;
  if (parses([&] { seq = parse_sequence_example_proto(bytes, "fuzz input"); })) {
    const std::string once = serialize_sequence_example(seq);
    if (serialize_sequence_example(parse_sequence_example_proto(once)) != once) std::abort();
  }
  return 0;
}
