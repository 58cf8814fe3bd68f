// Reference kernels for the shape op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_shape_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
