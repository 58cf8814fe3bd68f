// Gradient of matmul. For C = A @ B: dA = dC @ B^T, dB = A^T @ dC, with the transposes folded
// into the matmul flags and broadcast batch dims summed away.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {

void register_matmul_grads(GradRegistry& r) {
  r.add("matmul", [](GradContext& c) -> std::vector<ir::Value*> {
    bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
    ir::Value *a = c.x(0), *b = c.x(1), *dc = c.dy();
    // out_dtype = "f32" from 16-bit inputs: the gradients are products in the inputs' dtype.
    if (dc->dtype() != a->dtype()) dc = c.op("cast", {dc}, {{"dtype", a->dtype()}});
    auto mm = [&](ir::Value* x, ir::Value* y, bool tx, bool ty) {
      return c.op("matmul", {x, y}, {{"transpose_a", tx}, {"transpose_b", ty}});
    };
    ir::Value *da = nullptr, *db = nullptr;
    if (c.needs(0)) {
      da = ta ? mm(b, dc, tb, true) : mm(dc, b, false, !tb);
      da = c.sum_to(da, a->shape());
    }
    if (c.needs(1)) {
      db = tb ? mm(dc, a, true, ta) : mm(a, dc, !ta, false);
      db = c.sum_to(db, b->shape());
    }
    return {da, db};
  });
}

}  // namespace tern::autodiff
