// Fuzz target: ProtoReader on outside bytes. Any input must parse or fail with DataLoss, and the
// two ways to walk a message (next, and read_tag + skip) must agree on where it fails. A message
// that parses is written back field by field (with minimal varints) and must read back to the
// same fields; length-delimited payloads are walked as nested messages, a few levels deep.
#include <cstdlib>
#include <vector>

#include "tern/base/error.h"
#include "tern/format/proto_reader.h"
#include "tern/format/proto_wire.h"

namespace {

using namespace tern;
using namespace tern::format;

// The fields of `r`, or the DataLoss message it fails with (any other error aborts).
bool walk(ProtoReader r, std::vector<ProtoField>& fields, std::string& error) {
  try {
    ProtoField f;
    while (r.next(f)) fields.push_back(f);
    return true;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
    error = e.message();
    return false;
  }
}

bool skip_walk(ProtoReader r, std::string& error) {
  try {
    while (!r.at_end()) {
      uint32_t field;
      WireType type;
      r.read_tag(&field, &type);
      r.skip(type);
    }
    return true;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
    error = e.message();
    return false;
  }
}

std::string encode(const std::vector<ProtoField>& fields) {
  std::string out;
  for (const ProtoField& f : fields) {
    put_tag(out, f.number, f.type);
    if (f.type == WireType::kVarint) put_varint(out, f.value);
    if (f.type == WireType::kFixed64) put_fixed64(out, f.value);
    if (f.type == WireType::kFixed32) put_fixed32(out, static_cast<uint32_t>(f.value));
    if (f.type == WireType::kLengthDelimited) {
      put_varint(out, f.payload.size());
      out.append(f.payload);
    }
  }
  return out;
}

void check(const ProtoReader& r, int depth) {
  std::vector<ProtoField> fields;
  std::string error, skip_error;
  const bool ok = walk(r, fields, error);
  const bool skip_ok = skip_walk(r, skip_error);
  // Both walks read the same bytes; only a group's message differs (next names the field).
  if (ok != skip_ok) std::abort();
  if (!ok) return;
  const std::string again = encode(fields);
  std::vector<ProtoField> back;
  if (!walk(ProtoReader(again, 0, "re-encoded"), back, error)) std::abort();
  if (back.size() != fields.size()) std::abort();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (back[i].number != fields[i].number || back[i].type != fields[i].type ||
        back[i].value != fields[i].value || back[i].payload != fields[i].payload) {
      std::abort();
    }
    if (fields[i].type == WireType::kLengthDelimited && depth < 4)
      check(r.nested(fields[i]), depth + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(ProtoReader(bytes, 0, "fuzz input"), 0);
  return 0;
}
