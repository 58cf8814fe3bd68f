// Reference kernels for the optimizer op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_optimizer_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
