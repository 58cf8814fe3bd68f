// Memory planning: liveness, in-place blocks, then best-fit placement of blocks largest first.
#include "tern/passes/memory_plan.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "tern/base/logging.h"

namespace tern::passes {
namespace {

size_t aligned(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

// Values that share bytes one after another (an in-place chain), live over [first, last].
struct Block {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
  size_t offset = 0;
  std::vector<const ir::Value*> values;
};

// The input whose block output `output` may be written into (see memory_plan.h), or nullptr.
// `blocks[b].last`: the block's last reader so far; a view keeps its input's block alive.
const ir::Value* inplace_input(const ir::Node& n, int output, int step, const MemoryPlan& plan,
                               const std::vector<Block>& blocks,
                               const std::unordered_map<const ir::Value*, int>& block_of,
                               const std::unordered_set<const ir::Value*>& graph_outputs,
                               std::unordered_set<int>& claimed) {
  const ir::Value* out = n.output(output);
  const bool view = output == 0 && n.op().has_trait(ops::kTraitView) && n.num_inputs() > 0;
  for (const auto& [o, i] : n.op().inplace_pairs(n.attrs())) {
    if (o != output || i < 0 || i >= n.num_inputs()) continue;
    const ir::Value* in = n.input(i);
    auto lt = plan.lifetimes.find(in);
    if (lt == plan.lifetimes.end() || graph_outputs.count(in)) continue;
    // A view shares the block whatever the input's lifetime; any other output only a block
    // whose every value dies here.
    const int b = block_of.at(in);
    if (!view && (lt->second.last != step || blocks[static_cast<size_t>(b)].last != step)) continue;
    if (in->dtype() != out->dtype() || in->shape().num_elements() != out->shape().num_elements())
      continue;
    if (!claimed.insert(b).second) continue;
    return in;
  }
  return nullptr;
}

// Best fit among the blocks already placed that are live at the same time as `b`.
size_t place(const Block& b, const std::vector<const Block*>& placed) {
  std::vector<const Block*> overlapping;
  for (const Block* p : placed) {
    if (p->bytes > 0 && p->first <= b.last && b.first <= p->last) overlapping.push_back(p);
  }
  std::sort(overlapping.begin(), overlapping.end(),
            [](const Block* x, const Block* y) { return x->offset < y->offset; });
  size_t end = 0, best = 0, best_gap = std::numeric_limits<size_t>::max();
  for (const Block* p : overlapping) {
    if (p->offset > end) {
      size_t gap = p->offset - end;
      if (gap >= b.bytes && gap < best_gap) {
        best = end;
        best_gap = gap;
      }
    }
    end = std::max(end, p->offset + p->bytes);
  }
  return best_gap == std::numeric_limits<size_t>::max() ? end : best;
}

}  // namespace

MemoryPlan plan_memory(const ir::Graph& g, const std::vector<ir::Node*>& order) {
  MemoryPlan plan;
  const int end = static_cast<int>(order.size());
  std::unordered_map<const ir::Node*, int> step;
  for (int i = 0; i < end; ++i) step[order[static_cast<size_t>(i)]] = i;
  std::unordered_set<const ir::Value*> graph_outputs;
  for (const auto& o : g.outputs()) graph_outputs.insert(o.value);

  // --- liveness ---
  for (int i = 0; i < end; ++i) {
    const ir::Node* n = order[static_cast<size_t>(i)];
    for (const ir::Value* v : n->inputs()) {
      auto it = plan.lifetimes.find(v);
      if (it != plan.lifetimes.end()) it->second.last = std::max(it->second.last, i);
    }
    if (n->is_source()) continue;
    for (int k = 0; k < n->num_outputs(); ++k) {
      const ir::Value* v = n->output(k);
      size_t bytes = static_cast<size_t>(v->shape().num_elements()) * dtype_size(v->dtype());
      plan.lifetimes[v] = {i, graph_outputs.count(v) ? end : i, bytes};
      plan.naive_bytes += aligned(bytes);
    }
  }

  // --- blocks (in-place chains) ---
  std::vector<Block> blocks;
  std::unordered_map<const ir::Value*, int> block_of;
  for (int i = 0; i < end; ++i) {
    const ir::Node* n = order[static_cast<size_t>(i)];
    if (n->is_source()) continue;
    std::unordered_set<int> claimed;
    for (int k = 0; k < n->num_outputs(); ++k) {
      const ir::Value* v = n->output(k);
      const Lifetime& lt = plan.lifetimes.at(v);
      int b = -1;
      if (const ir::Value* in =
              inplace_input(*n, k, i, plan, blocks, block_of, graph_outputs, claimed)) {
        b = block_of.at(in);
        plan.inplace_of[v] = in;
        ++plan.inplace_count;
      } else {
        b = static_cast<int>(blocks.size());
        blocks.push_back({aligned(lt.bytes), i, lt.last, 0, {}});
        claimed.insert(b);
      }
      Block& blk = blocks[static_cast<size_t>(b)];
      blk.last = std::max(blk.last, lt.last);
      blk.values.push_back(v);
      block_of[v] = b;
    }
  }

  // --- placement: largest first, best fit ---
  std::vector<Block*> by_size;
  for (Block& b : blocks) by_size.push_back(&b);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const Block* x, const Block* y) { return x->bytes > y->bytes; });
  std::vector<const Block*> placed;
  for (Block* b : by_size) {
    b->offset = b->bytes == 0 ? 0 : place(*b, placed);
    placed.push_back(b);
    plan.arena_bytes = std::max(plan.arena_bytes, b->offset + b->bytes);
  }
  for (const Block& b : blocks) {
    for (const ir::Value* v : b.values) plan.offsets[v] = b.offset;
  }
  log_verbose("passes", "memory_plan: ", plan.offsets.size(), " values in ", plan.arena_bytes,
              " arena bytes (", plan.naive_bytes, " without reuse), ", plan.inplace_count,
              " in place");
  return plan;
}

}  // namespace tern::passes
