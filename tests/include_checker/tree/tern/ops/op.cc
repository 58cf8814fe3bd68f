// ops: tensor and base (transitively) are allowed
#include "tern/base/error.h"
#include "tern/tensor/tensor.h"
