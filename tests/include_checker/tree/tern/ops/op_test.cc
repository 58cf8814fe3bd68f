// a test may use its TEST_DEPS and the test helpers
#include <gtest/gtest.h>
#include "tern/extra/extra.h"
#include "tests/support/helper.h"
