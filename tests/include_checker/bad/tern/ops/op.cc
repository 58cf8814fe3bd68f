// library code may not use test helpers or the test deps
#include "tern/extra/extra.h"
#include "tern/tensor/tensor.h"
#include "tests/support/helper.h"
