// fit()'s data-parallel side (TrainingState::data_parallel): start-up agreement between workers,
// per-epoch and per-step checks that no worker runs out of data alone, and the sums that make
// loss and metrics global. Every function here is a collective: all workers call it at the same
// point of fit().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/dist/data_parallel.h"
#include "tern/nn/model.h"

namespace tern::train {

struct TrainingState;

// True unless the model trains data-parallel as a worker other than rank 0 (which prints, logs
// and writes checkpoints for all).
bool is_chief(const nn::Model& model);

// Start of fit: every worker must hold the same model (variable names, shapes and dtypes), the
// same optimizer and accumulation; then rank 0's variables are broadcast to all (workers whose
// initial values differed are named in a log line).
void agree_on_model(nn::Model& model, TrainingState& state);

// Every worker's number of batches this epoch (`batches` < 0: unknown, not checked):
// InvalidArgument on every rank listing the counts when they differ. True when every worker
// knows its count (and so all counts are equal): fit then needs no per-step agreement.
bool check_epoch_batches(dist::DataParallel& dp, int64_t batches, int epoch);

// Whether every worker has a batch for this step (false when all are done); InvalidArgument on
// every rank naming the workers that ran out when only some did. One collective per step: fit
// calls it only when some worker's batch count is unknown (check_epoch_batches false).
bool all_have_batch(dist::DataParallel& dp, bool have, int epoch, int64_t step);

// A worker whose known batch count (`expected`) promised more batches than its shard gave:
// InvalidArgument naming the rank (main aborts the job with it; the others may be waiting in a
// collective).
[[noreturn]] void shard_ended_early(const dist::DataParallel& dp, int epoch, int64_t step,
                                    int64_t expected);

// Non-trainable variables (batch-norm moving statistics) are updated by each worker from its own
// batches; like Keras' ON_READ variables they are averaged over the workers when read: at the
// end of each epoch and before a checkpoint (once per global step).
void average_non_trainable(nn::Model& model, TrainingState& state);

// Sums `values` over the workers, in rank order (the same on every rank).
void sum_over_workers(dist::DataParallel& dp, std::vector<double>& values);

}  // namespace tern::train
