// Fuzz target: tf.train.Example / SequenceExample parsing (cmake/tern_fuzz.cmake builds it with
// libFuzzer or the replay driver). Any input must parse or fail with DataLoss; what parses must
// serialize to bytes that parse to the same serialization (a fixed point), and must convert to
// tensors under a VarLen spec of its own features.
#include <cstdlib>

#include "tern/base/error.h"
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
  SequenceExample seq;
  if (parses([&] { seq = parse_sequence_example_proto(bytes, "fuzz input"); })) {
    const std::string once = serialize_sequence_example(seq);
    if (serialize_sequence_example(parse_sequence_example_proto(once)) != once) std::abort();
  }
  return 0;
}
