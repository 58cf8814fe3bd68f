// fuse_dropout_residual: a residual connection's add after a dropout becomes the dropout's own
// residual input:
//   y, mask = dropout(x, offset); z = add(y, r)   ->   z, mask = dropout(x, offset, r)
// (either operand order; r of the add's type, no broadcast; y read by nothing else). The sum is
// written in the pass that draws the mask, so the dropped x never goes to memory; its bits are the
// two ops' (the dropped value is rounded to the dtype before the add, as apart). A transformer
// block has two per layer, after attention and after its FFN (W6: 8 adds of [32, 128, 256]).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class FuseDropoutResidual final : public Pass {
 public:
  std::string name() const override { return "fuse_dropout_residual"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
