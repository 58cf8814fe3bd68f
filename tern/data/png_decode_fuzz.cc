// Fuzz target: PNG decoding through libpng's simplified API (cmake/tern_fuzz.cmake builds it with
// libFuzzer or the replay driver). Any input must decode or fail with DataLoss /
// ResourceExhausted; a decoded image has the header's size and round-trips through encode_png.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int channels : {0, 1, 4}) {
    try {
      const Tensor img = data::decode_png(bytes, {.channels = channels, .max_bytes = 1 << 24});
      const data::ImageInfo info = data::read_png_info(bytes);
      if (img.rank() != 3 || img.shape().dim(0) != info.height || img.shape().dim(1) != info.width)
        std::abort();
      if (!bitwise_equal(data::decode_png(data::encode_png(img)), img)) std::abort();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss && e.code() != ErrorCode::kResourceExhausted)
        std::abort();
    }
  }
  return 0;
}
