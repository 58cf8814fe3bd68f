// Reference kernels for the fused op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_fused_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
