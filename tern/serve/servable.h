// A Servable is one loaded version of one model: its signatures and a thread-safe run(). The
// model directory format and the loader behind load_servable() are in model_dir.h; the front ends
// (REST, gRPC) and the batcher only see this interface.
#pragma once

#include <memory>
#include <string>

#include "tern/serve/signature.h"
#include "tern/serve/tensor_value.h"

namespace tern::serve {

class Servable {
 public:
  virtual ~Servable() = default;
  virtual const SignatureMap& signatures() const = 0;
  // Runs `signature` on `inputs`: exactly the signature's inputs, every one with the same dim 0
  // (the batch). Checks dtypes and shapes against the signature (InvalidArgument naming the
  // input alias, the expected and the given type); returns every output of the signature, by
  // alias, dim 0 = the batch. Safe to call from many threads at once.
  virtual TensorMap run(const std::string& signature, const TensorMap& inputs) const = 0;
  // sha256 of the version directory's contents ("" when not loaded from a directory).
  virtual std::string fingerprint() const { return ""; }
};

using ServablePtr = std::shared_ptr<const Servable>;

}  // namespace tern::serve
