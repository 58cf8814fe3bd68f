// Gradient rules for the nn_misc op family (land here).
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {

void register_nn_misc_grads(GradRegistry& r) { (void)r; }

}  // namespace tern::autodiff
