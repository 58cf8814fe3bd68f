// TF Serving's GET responses (SERVING.md section 1.5): model status as protobuf JSON of
// GetModelStatusResponse (version as a string, every field printed, error codes by name) and
// model metadata (model_spec plus the doubled "signature_def" key, dims with "size" as a string).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/serve/backend.h"
#include "tern/serve/signature.h"

namespace tern::serve {

// {"model_version_status": [{"version": "2", "state": "AVAILABLE",
//   "status": {"error_code": "OK", "error_message": ""}}, ...]}
std::string model_status_json(const std::vector<VersionStatus>& versions);

// {"model_spec": {"name": ..., "signature_name": "", "version": "N"},
//  "metadata": {"signature_def": {"signature_def": {<name>: {"inputs": ..., "outputs": ...,
//   "method_name": ..., "defaults": {}}}}}}
std::string model_metadata_json(const std::string& model_name, int64_t version,
                                const SignatureMap& signatures);

}  // namespace tern::serve
