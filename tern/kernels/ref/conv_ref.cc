// Reference kernels for the conv op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_conv_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
