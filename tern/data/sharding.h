// Data-parallel input: which part of the training data each of N workers reads, as a plain
// (rank, size) description (no MPI here; tern/dist runs the workers). tf.data's auto-shard policy:
//
//   kFile     tfrecord and csv sources whose patterns match at least N files: worker i reads the
//             files f with f % N == i (in the sorted order the source lists them);
//   kElement  every other source (idx, image_dir, files, or fewer files than workers): worker i
//             takes elements i, i + N, i + 2N, ... right after the source, before any shuffle,
//             map or batch (image_dir and files shard their path lists, before decoding);
//   kNone     one worker: the source as it is.
//
// Every worker also shuffles and augments with its own seeds (worker_seed: rank 0 keeps the
// configured seed, so a single-process run is unchanged bit for bit) and batches a 1/N share of
// the global batch (Keras MirroredStrategy: training.batch_size is the global batch). Evaluation
// data is not sharded: every worker may evaluate the whole test set.
//
//   ShardedSource part = build_sharded_source(spec.source, inputs, {.num_workers = 2, .index = 1});
//   DatasetPtr train = apply_transforms(part.dataset, worker_pipeline(spec, shard), kTrain);
//   log(part.description);  // "worker 1/2 reads 3 of 6 files"
//
// Uneven shards are possible (10 elements over 4 workers: 3, 3, 2, 2; files of different sizes):
// distributed training must compare every worker's batches per epoch (worker_batches, or the
// counted steps) and refuse to start when they differ, since a worker that runs out first would
// leave the others waiting in the gradient all-reduce.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/pipeline_spec.h"

namespace tern::data {

// Worker `index` of `num_workers` (the MPI rank and size).
struct WorkerShard {
  int64_t num_workers = 1;
  int64_t index = 0;
};
// InvalidArgument unless num_workers >= 1 and 0 <= index < num_workers.
void validate_worker_shard(WorkerShard shard);

enum class ShardPolicy { kNone, kFile, kElement };
std::string shard_policy_name(ShardPolicy policy);

// kFile for a tfrecord or csv source with at least num_workers files, kElement for any other
// source of a distributed run, kNone for one worker.
ShardPolicy choose_shard_policy(SourceKind kind, int64_t num_files, WorkerShard shard);

// The worker's seed for shuffles and random maps: `seed` itself for rank 0, else a splitmix64 mix
// of the seed and the rank (so no two ranks draw alike).
uint64_t worker_seed(uint64_t seed, WorkerShard shard);

// Elements the worker takes of `elements` under element sharding (the first ranks take one more
// when N does not divide `elements`).
int64_t worker_elements(int64_t elements, WorkerShard shard);
// Batches the worker yields per epoch from `elements` (the whole source's) in batches of
// `local_batch`: e.g. 10 elements, 4 workers, batch 1 -> 3, 3, 2, 2 for ranks 0..3. Unequal
// counts across ranks must be an error in distributed training (see the top of this file).
int64_t worker_batches(int64_t elements, WorkerShard shard, int64_t local_batch,
                       bool drop_remainder);
// global_batch / num_workers. InvalidArgument naming `what` when N does not divide it, e.g.
// "training.batch_size 100 is not divisible by 3 workers".
int64_t local_batch_size(int64_t global_batch, WorkerShard shard, std::string_view what);

// Items i with i % num_workers == index (the worker's files, paths or labels).
template <typename T>
std::vector<T> worker_items(const std::vector<T>& items, WorkerShard shard) {
  std::vector<T> out;
  for (size_t i = static_cast<size_t>(shard.index); i < items.size();
       i += static_cast<size_t>(shard.num_workers))
    out.push_back(items[i]);
  return out;
}
// Rows i with i % num_workers == index of a host tensor (rank >= 1), copied; `t` itself for one
// worker.
Tensor worker_rows(const Tensor& t, WorkerShard shard);

// The source for one worker's training split, and how it was cut.
struct ShardedSource {
  DatasetPtr dataset;
  ShardPolicy policy = ShardPolicy::kNone;
  int64_t files_total = 0;  // tfrecord / csv: files the patterns match (counted for N > 1 only)
  std::vector<std::string> files;  // kFile: the files this worker reads
  std::string description;         // for a log line, e.g. "worker 1/2 reads every 2nd element"
};
// "worker 1/2 reads 3 of 6 files", "worker 1/4 reads every 4th element (2 files, fewer than 4
// workers)", "one worker reads all the data".
std::string describe_worker_shard(ShardPolicy policy, WorkerShard shard, int64_t files_total,
                                  int64_t files_read);

// build_source(source, inputs, kTrain) cut for `shard` by the policy above. File-order and
// image_dir path reshuffles use worker_seed(source.seed) where the worker's part is cut before
// them; under kElement, tfrecord and csv keep source.seed so every worker reads one record order
// (then takes every Nth). An image_dir validation split is held out with source.seed on every
// worker before the training part is cut. (Defined in pipeline_sources.cc.)
ShardedSource build_sharded_source(const SourceSpec& source, const std::vector<std::string>& inputs,
                                   WorkerShard shard);
// Element sharding of any dataset (kNone and `input` itself for one worker).
ShardedSource shard_elements(DatasetPtr input, WorkerShard shard);
// Elements the worker's sharded source yields, counted (count_source_elements) when not known.
int64_t count_worker_elements(const SourceSpec& source, const std::vector<std::string>& inputs,
                              WorkerShard shard);

// The training form of `spec` for the worker: shuffle and map seeds through worker_seed, and every
// batch that applies in training batching size / num_workers (InvalidArgument naming the batch's
// origin when N does not divide it). Build evaluation pipelines from `spec` itself.
PipelineSpec worker_pipeline(const PipelineSpec& spec, WorkerShard shard);

}  // namespace tern::data
