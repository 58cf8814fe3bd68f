// Reference kernels for the norm op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_norm_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
