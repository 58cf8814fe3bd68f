// Model status and metadata JSON, written by hand in protobuf JSON's shapes.
#include "tern/serve/json_model_info.h"

#include "tern/serve/json_writer.h"
#include "tern/serve/tf_status.h"

namespace tern::serve {
namespace {

void write_tensor_infos(JsonWriter& w, const std::map<std::string, TensorSpec>& specs) {
  w.begin_object();
  for (const auto& [alias, spec] : specs) {
    w.key(alias);
    w.begin_object();
    w.key("dtype");
    w.string(wire_dtype_name(spec.dtype));
    w.key("tensor_shape");
    w.begin_object();
    w.key("dim");
    w.begin_array();
    if (!spec.unknown_rank) {
      for (int64_t d : spec.shape) {
        w.begin_object();
        w.key("size");
        w.string(std::to_string(d));  // int64 in proto3 JSON is a string
        w.key("name");
        w.string("");
        w.end_object();
      }
    }
    w.end_array();
    w.key("unknown_rank");
    w.bool_value(spec.unknown_rank);
    w.end_object();
    w.key("name");
    w.string(spec.name);
    w.end_object();
  }
  w.end_object();
}

}  // namespace

std::string model_status_json(const std::vector<VersionStatus>& versions) {
  JsonWriter w;
  w.begin_object();
  w.key("model_version_status");
  w.begin_array();
  for (const VersionStatus& v : versions) {
    w.begin_object();
    w.key("version");
    w.string(std::to_string(v.version));
    w.key("state");
    w.string(version_state_name(v.state));
    w.key("status");
    w.begin_object();
    w.key("error_code");
    w.string(tf_error_code_name(v.error));
    w.key("error_message");
    w.string(v.error_message);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

std::string model_metadata_json(const std::string& model_name, int64_t version,
                                const SignatureMap& signatures) {
  JsonWriter w;
  w.begin_object();
  w.key("model_spec");
  w.begin_object();
  w.key("name");
  w.string(model_name);
  w.key("signature_name");
  w.string("");
  w.key("version");
  w.string(std::to_string(version));
  w.end_object();
  w.key("metadata");
  w.begin_object();
  w.key("signature_def");
  w.begin_object();
  w.key("signature_def");
  w.begin_object();
  for (const auto& [name, sig] : signatures) {
    w.key(name);
    w.begin_object();
    w.key("inputs");
    write_tensor_infos(w, sig.inputs);
    w.key("outputs");
    write_tensor_infos(w, sig.outputs);
    w.key("method_name");
    w.string(sig.method_name);
    w.key("defaults");
    w.begin_object();
    w.end_object();
    w.end_object();
  }
  w.end_object();
  w.end_object();
  w.end_object();
  w.end_object();
  return w.take();
}

}  // namespace tern::serve
