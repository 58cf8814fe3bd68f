// Fuzz target: analysis.json of a transform artifact (read back by `tern transform --artifact`
// and by pipelines). Checked against a fixed spec with every op: any bytes must parse or fail
// with InvalidArgument; what parses must write back to JSON that parses to the same analysis, and
// must build a transform graph (or be refused as FailedPrecondition: a fingerprint collision).
#include <cstdlib>
#include <string_view>

#include "tern/transform/analysis.h"
#include "tern/transform/graph.h"

namespace {

constexpr const char* kSpec = R"([transform]
label = "fuel"
[[transform.features]]
input = "price"
op = "z_score"
[[transform.features]]
name = "price01"
input = "price"
op = "scale_to_0_1"
[[transform.features]]
input = "make"
op = "vocabulary"
top_k = 4
[[transform.features]]
input = "weight"
op = "bucketize"
num_buckets = 4
[[transform.features]]
input = "style"
op = "hash"
hash_buckets = 5
[[transform.features]]
inputs = ["make", "style"]
op = "cross"
hash_buckets = 7
[[transform.features]]
input = "im"
op = "identity"
shape = [2, 2, 1]
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  static const transform::TransformSpec spec = transform::parse_transform_spec(kSpec, "t.toml");
  std::string_view text(reinterpret_cast<const char*>(data), size);
  transform::TransformAnalysis a;
  try {
    a = transform::parse_analysis_json(text, spec, "analysis.json");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (transform::parse_analysis_json(transform::analysis_to_json(a), spec, "again") != a)
    std::abort();
  try {
    (void)transform::build_transform_graph(spec, a, 2);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kFailedPrecondition) std::abort();
  }
  return 0;
}
