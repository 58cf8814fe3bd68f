// Fuzz target: outside bytes as a TF Serving PredictRequest, decoded with the TensorProto codec
// (what the gRPC server does before it looks at a signature). Any input must decode or fail with
// InvalidArgument (anything else aborts); a decoded input must be self-consistent (its values
// fill its shape), and no broadcast may build a tensor over the 1 MiB cap given here.
#include <google/protobuf/stubs/logging.h>

#include <cstdlib>
#include <string_view>

#include "tern/base/error.h"
#include "tern/serve/predict_request.h"

namespace {

using namespace tern;
using namespace tern::serve;

constexpr int64_t kMaxTensorBytes = int64_t{1} << 20;

void check_consistent(const TensorValue& v, size_t input_size) {
  const int64_t n = v.num_elements();
  if (v.is_string()) {
    if (static_cast<int64_t>(v.strings.size()) != n) std::abort();
    return;
  }
  if (v.numbers.shape().dims() != v.shape) std::abort();
  if (wire_dtype_of(v.numbers.dtype()) != v.dtype) std::abort();
  // At most 8 bytes per input byte (a 1-byte varint as an int64), or a capped broadcast.
  if (v.numbers.nbytes() > static_cast<size_t>(kMaxTensorBytes) &&
      v.numbers.nbytes() > input_size * 8) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // protobuf logs every string field that is not UTF-8; the parse failure is what counts here.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  try {
    const PredictCall call = parse_predict_request(
        std::string_view(reinterpret_cast<const char*>(data), size), kMaxTensorBytes);
    if (call.spec.name.empty() || call.signature_name.empty()) std::abort();
    for (const auto& [alias, value] : call.inputs) check_consistent(value, size);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
  }
  return 0;
}
