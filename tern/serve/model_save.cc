// nn::Model::save (declared in tern/nn/model.h, defined here so tern_nn does not link serve): the
// model as a model directory with no preprocessing, its input taken as it is.
#include "tern/nn/model.h"
#include "tern/serve/export.h"

namespace tern::nn {

void Model::save(const std::string& dir) {
  serve::ExportOptions o;
  serve::export_model(*this, o, dir);
}

}  // namespace tern::nn
