// Fuzz target: JPEG decoding through libjpeg-turbo (cmake/tern_fuzz.cmake builds it with libFuzzer
// or the replay driver). Any input must decode or fail with DataLoss / ResourceExhausted (never a
// crash, a leak or a longjmp into freed frames); a decoded image has the header's size.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int channels : {0, 1, 3}) {
    for (bool tolerate : {false, true}) {
      try {
        const Tensor img = data::decode_jpeg(
            bytes, {.channels = channels, .max_bytes = 1 << 24, .tolerate_corrupt = tolerate});
        const data::ImageInfo info = data::read_jpeg_info(bytes);
        if (img.rank() != 3 || img.shape().dim(0) != info.height ||
            img.shape().dim(1) != info.width)
          std::abort();
        if (channels != 0 && img.shape().dim(2) != channels) std::abort();
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kDataLoss && e.code() != ErrorCode::kResourceExhausted)
          std::abort();
      }
    }
  }
  return 0;
}
