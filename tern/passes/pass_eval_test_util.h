// For pass tests that run graphs: a rewritten graph against the one it came from, on the fast
// kernels and on ref.
#pragma once

#include <gtest/gtest.h>

#include "tern/ir/graph.h"
#include "tern/runtime/eager.h"

namespace tern::passes::testing {

// Every output of `rewritten` is `plain`'s bit for bit, with the default kernels and with ref.
inline void expect_same_bits(const ir::Graph& plain, const ir::Graph& rewritten,
                             const runtime::Feeds& feeds) {
  runtime::EagerOptions fast, ref;
  ref.kernel = "ref";
  for (const runtime::EagerOptions& options : {fast, ref}) {
    SCOPED_TRACE(str_cat("kernels '", options.kernel, "'"));
    std::vector<Tensor> want = runtime::run_graph_eager(plain, feeds, nullptr, options);
    std::vector<Tensor> got = runtime::run_graph_eager(rewritten, feeds, nullptr, options);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << plain.outputs()[i].name;
  }
}

}  // namespace tern::passes::testing
