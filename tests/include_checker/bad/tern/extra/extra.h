// extra
#pragma once
#include "tern/ops/op.h"
