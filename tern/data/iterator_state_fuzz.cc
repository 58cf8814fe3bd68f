// Fuzz target: the elements of an iterator-state blob (checkpoints' data_iterator.bin), whose
// bytes come from a checkpoint someone else may have written. The input is the blob's body: the
// target adds the header and a valid checksum, so the entry parser itself is exercised (tensors,
// and the element origins: positions with their file names). Reading stops at the first error,
// which must be DataLoss or InvalidArgument (a key that does not match); whatever reads back must
// write back to the same bytes.
#include <cstdlib>
#include <string>
#include <vector>

#include "tern/base/error.h"
#include "tern/data/iterator_state.h"
#include "tern/format/crc32c.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string blob = "TERNITR1" + std::string(reinterpret_cast<const char*>(data), size);
  const uint32_t crc = format::crc32c_mask(format::crc32c(blob));
  for (int i = 0; i < 4; ++i) blob.push_back(static_cast<char>(crc >> (8 * i)));
  std::vector<data::Element> read;
  try {
    data::StateReader r(blob);
    for (int i = 0; i < 64; ++i) read.push_back(r.read_element("e"));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss && e.code() != ErrorCode::kInvalidArgument) std::abort();
  }
  data::StateWriter w;
  for (const data::Element& e : read) w.write_element("e", e);
  const std::string written = w.finish();
  data::StateReader again(written);
  for (const data::Element& e : read) {
    const data::Element back = again.read_element("e");
    if (back.size() != e.size() || back.origin.size() != e.origin.size()) std::abort();
    for (size_t k = 0; k < e.origin.size(); ++k) {
      if (data::describe_position(back.origin[k]) != data::describe_position(e.origin[k]))
        std::abort();
    }
  }
  return 0;
}
