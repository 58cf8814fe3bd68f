// conv op family (definitions land here).
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {

void register_conv_ops(OpRegistry& r) { (void)r; }

}  // namespace tern::ops
