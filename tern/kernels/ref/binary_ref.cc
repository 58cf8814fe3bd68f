// Reference kernels for the binary op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_binary_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
