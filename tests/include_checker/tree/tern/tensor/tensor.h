// tensor
#pragma once
#include "tern/base/error.h"
