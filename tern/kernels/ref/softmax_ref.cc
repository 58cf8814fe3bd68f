// Reference kernels for the softmax op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_softmax_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
