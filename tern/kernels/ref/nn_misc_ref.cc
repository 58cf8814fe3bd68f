// Reference kernels for the nn_misc op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_nn_misc_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
