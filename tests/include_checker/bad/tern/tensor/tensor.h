// tensor must not reach up to ops
#pragma once
#include <omp.h>
#include "tern/base/error.h"
#include "tern/ops/op.h"
