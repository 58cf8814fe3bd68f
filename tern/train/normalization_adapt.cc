// nn::NormalizationLayer::adapt(Dataset): defined here because tern_nn does not link tern_data
// (see tern/nn/normalization.h); it streams the dataset's batches into the layer's exact adapt().
#include "tern/data/dataset.h"
#include "tern/data/iterator.h"
#include "tern/nn/normalization.h"

namespace tern::nn {

void NormalizationLayer::adapt(std::shared_ptr<const data::Dataset> data, int64_t steps) {
  TERN_CHECK_ARG(data != nullptr, "Normalization layer '", name(), "': adapt() dataset is null");
  data::Iterator it = data->make_iterator();
  int64_t taken = 0;
  adapt([&]() -> std::optional<Tensor> {
    if (steps >= 0 && taken >= steps) return std::nullopt;
    std::optional<data::Element> e = it.next();
    if (!e) return std::nullopt;
    if (e->size() != 1) {
      throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", name(),
                  "': adapt() needs a dataset of feature batches (one component), got elements (",
                  data::element_signature(*e), "); map it to the features first");
    }
    ++taken;
    return (*e)[0];
  });
}

}  // namespace tern::nn
