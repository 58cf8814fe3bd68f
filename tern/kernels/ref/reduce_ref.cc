// Reference kernels for the reduce op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_reduce_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
