// Reference kernels for the random op family (land here).
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {

void register_random_ref(KernelRegistry& r) { (void)r; }

}  // namespace tern::kernels::ref
