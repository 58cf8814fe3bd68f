// base
#pragma once
#include <vector>
