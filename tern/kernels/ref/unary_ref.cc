// Reference kernels for the unary op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_unary_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
