// Fuzz target: the in-place tf.train.Example walks of compute_statistics (example_scan.h) on
// outside bytes, checked against each other and against tern/data's parser. Any input must walk
// or fail with DataLoss; a record the canonical scan accepts must walk the same way in the
// general walk and parse with parse_example_proto to the same features.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tern/base/error.h"
#include "tern/data/example_proto.h"
#include "tern/pipeline/example_scan.h"

namespace {

using namespace tern;
using pipeline::ValueKind;

// Each feature (the last entry of a key) as its kind and values in text.
using Features = std::map<std::string, std::pair<ValueKind, std::vector<std::string>>>;

template <typename Visit>
std::vector<std::string> values_of(Visit&& visit) {
  std::vector<std::string> out;
  visit([&](std::string_view b) { out.emplace_back(b); },
        [&](float f) { out.push_back(std::to_string(f)); },
        [&](int64_t i) { out.push_back(std::to_string(i)); });
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Features canonical;
  const bool accepted =
      pipeline::scan_canonical_example(bytes, [&](const pipeline::CanonicalEntry& e) {
        canonical[std::string(e.key)] = {e.kind, values_of([&](auto&&... fns) {
                                           pipeline::for_each_canonical_value(e, fns...);
                                         })};
      });
  Features general;
  try {
    pipeline::for_each_feature_entry(
        bytes, 0, "fuzz", [&](std::string_view key, format::ProtoReader r) {
          const pipeline::EntryKind k = pipeline::entry_kind(r);
          general[std::string(key)] = {
              k.kind, values_of([&](auto&&... fns) { pipeline::for_each_value(r, k, fns...); })};
        });
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss || accepted) std::abort();
    return 0;
  }
  if (!accepted) return 0;
  if (general != canonical) std::abort();
  // tern/data's parser reads the record the same way.
  const data::Example ex = data::parse_example_proto(bytes, "fuzz");
  if (ex.features.size() != canonical.size()) std::abort();
  for (const auto& [key, f] : ex.features) {
    auto it = canonical.find(key);
    if (it == canonical.end() || static_cast<int>(it->second.first) != static_cast<int>(f.kind) ||
        it->second.second.size() != f.size())
      std::abort();
  }
  return 0;
}
