// simplify: algebraic identities that remove work, applied until nothing changes.
//   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1  -> x   (the constant may be any splat that does
//                                                     not broadcast x to a larger shape)
//   neg(neg(x)) -> x;  cast(x) to x's dtype -> x;  cast(cast(x, wider), back) -> x
//   reshape / squeeze / expand_dims of one of those -> one reshape (or x if the shape is x's)
//   transpose(transpose(x, p), q) -> transpose(x, p∘q) (or x if that is the identity);
//   transpose with the identity permutation, broadcast_to x's own shape -> x
//   pow(x, 1) -> x;  pow(x, 2) -> square(x)
//   max_pool2d(relu(x)) -> relu(max_pool2d(x)) when the pool is relu's only reader (the relu
//   then reads a quarter of the bytes; a convolution before it fuses without its activation)
// With `bit_exact` only rewrites that give identical bits for every input are made: x + 0 is
// then rewritten only for a -0 constant (or integers), since (-0) + (+0) is +0; x - (-0),
// pow(x, 2) and the pooling swap are left alone.
// A rewritten node that others wait for (a variable read before its update) hands that wait to
// its replacement, unless the replacement is the variable itself, which is then not rewritten.
// Does not: touch nodes with control inputs (their order matters), fold constants (const_fold),
// remove what becomes dead (dce), or apply identities that can change NaN/Inf results (x * 0).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class Simplify final : public Pass {
 public:
  explicit Simplify(bool bit_exact = false) : bit_exact_(bit_exact) {}
  std::string name() const override { return "simplify"; }
  bool run(ir::Graph& g) override;

 private:
  bool bit_exact_;
};

}  // namespace tern::passes
