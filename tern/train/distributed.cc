// fit()'s data-parallel collectives (distributed.h).
#include "tern/train/distributed.h"

#include <algorithm>

#include "tern/base/logging.h"
#include "tern/base/sha256.h"
#include "tern/base/strings.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

// One line per variable: "name dtype[shape]", sorted by name.
std::vector<std::string> describe_variables(const runtime::VariableStore& store) {
  std::vector<std::string> names = store.names();
  std::sort(names.begin(), names.end());
  std::vector<std::string> lines;
  for (const auto& n : names) lines.push_back(n + " " + store.get(n).type().to_string());
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// The first line where rank r's description differs from rank 0's.
std::string first_difference(const std::string& mine, const std::string& theirs) {
  std::vector<std::string> a = split_lines(mine), b = split_lines(theirs);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)";
    const std::string y = i < b.size() ? b[i] : "(nothing)";
    if (x != y) return str_cat("rank 0 has '", x, "', it has '", y, "'");
  }
  return "same lines, different order";
}

}  // namespace

bool is_chief(const nn::Model& model) {
  const TrainingState* s = model.training_state();
  return s == nullptr || s->data_parallel == nullptr || s->data_parallel->is_chief();
}

void agree_on_model(nn::Model& model, TrainingState& state) {
  dist::DataParallel& dp = *state.data_parallel;
  runtime::VariableStore& store = model.variables();
  std::string structure = join_lines(describe_variables(store));
  structure += str_cat("optimizer ", state.optimizer->name(), "\n");
  structure += str_cat("gradient_accumulation_steps ", state.gradient_accumulation_steps, "\n");
  std::vector<std::string> all = dp.comm().all_gather(structure);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    throw_error(ErrorCode::kInvalidArgument, "data-parallel workers hold different models: rank ",
                r, " differs from rank 0 (", first_difference(all[0], all[r]),
                "); every worker must run the same config");
  }
  // Rank 0's values everywhere (the initial values agree when every worker used the same seed).
  std::string values;
  std::vector<std::string> names = store.names();
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    const Tensor host = store.get(n).to_host();
    values.append(static_cast<const char*>(host.raw_data()), host.nbytes());
  }
  std::vector<std::string> hashes = dp.comm().all_gather(sha256_hex(values));
  std::string differ;
  for (size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] != hashes[0]) differ += str_cat(differ.empty() ? "" : ", ", r);
  }
  if (!differ.empty() && dp.is_chief()) {
    log_info("data-parallel: rank(s) ", differ,
             " started from other initial values than rank 0; using rank 0's everywhere");
  }
  for (const auto& n : names) {
    Tensor& t = store.get_mutable(n);
    Tensor host = t.to_host();
    dp.comm().broadcast(host.raw_data(), host.nbytes(), 0);
    if (host.raw_data() != t.raw_data()) t.copy_from(host);
  }
}

bool check_epoch_batches(dist::DataParallel& dp, int64_t batches, int epoch) {
  std::vector<std::string> all = dp.comm().all_gather(std::to_string(batches));
  bool unknown = false, differ = false;
  for (const auto& a : all) {
    unknown = unknown || a.front() == '-';
    differ = differ || a != all[0];
  }
  if (unknown || !differ) return !unknown;
  std::string counts;
  for (size_t r = 0; r < all.size(); ++r)
    counts += str_cat(r ? ", " : "", "rank ", r, ": ", all[r]);
  throw_error(ErrorCode::kInvalidArgument, "epoch ", epoch,
              ": the workers' shards give different numbers of batches (", counts,
              "); every worker must take the same number of steps. Use a training set whose size "
              "divides evenly, or set training.steps_per_epoch");
}

void shard_ended_early(const dist::DataParallel& dp, int epoch, int64_t step, int64_t expected) {
  throw_error(ErrorCode::kInvalidArgument, "epoch ", epoch, ": worker ", dp.rank(),
              "'s training data ended after ", step, " batches, but its dataset's cardinality is ",
              expected, " batches (every worker must take the same number of steps)");
}

bool all_have_batch(dist::DataParallel& dp, bool have, int epoch, int64_t step) {
  int64_t count = have ? 1 : 0;
  dp.comm().all_reduce_sum(&count, 1, DType::kI64, dist::ReduceMode::kFast);
  if (count == 0) return false;
  if (count == dp.size()) return true;
  std::vector<std::string> all = dp.comm().all_gather(have ? "1" : "0");
  std::string out;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == "0") out += str_cat(out.empty() ? "" : ", ", r);
  }
  throw_error(ErrorCode::kInvalidArgument, "epoch ", epoch, ", batch ", step, ": worker(s) ", out,
              " ran out of training data while ", count,
              " still had batches; the workers' shards are uneven (every worker must take the "
              "same number of steps per epoch)");
}

void average_non_trainable(nn::Model& model, TrainingState& state) {
  dist::DataParallel& dp = *state.data_parallel;
  if (state.non_trainable_synced_step == state.progress.global_step) return;
  state.non_trainable_synced_step = state.progress.global_step;
  for (const auto& w : model.non_trainable_weights()) {
    Tensor& t = model.variables().get_mutable(w.name);
    if (t.dtype() != DType::kF32 && t.dtype() != DType::kF64) continue;
    Tensor host = t.to_host();
    dp.comm().all_reduce_sum(host.raw_data(), host.num_elements(), host.dtype(),
                             dist::ReduceMode::kDeterministic);
    const double inv = 1.0 / dp.size();
    for (int64_t i = 0; i < host.num_elements(); ++i) {
      if (host.dtype() == DType::kF32) {
        host.data<float>()[i] = static_cast<float>(host.data<float>()[i] * inv);
      } else {
        host.data<double>()[i] *= inv;
      }
    }
    if (host.raw_data() != t.raw_data()) t.copy_from(host);
  }
}

void sum_over_workers(dist::DataParallel& dp, std::vector<double>& values) {
  if (values.empty()) return;
  dp.comm().all_reduce_sum(values.data(), static_cast<int64_t>(values.size()), DType::kF64,
                           dist::ReduceMode::kDeterministic);
}

}  // namespace tern::train
