// Data-parallel input (sharding.h): the shard arithmetic, per-worker seeds, row sharding of
// tensors and the worker's training form of a pipeline spec. The sources' own sharding,
// build_sharded_source, is in pipeline_sources.cc.
#include "tern/data/sharding.h"

#include <cstring>

#include "tern/base/error.h"

namespace tern::data {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a bijection on 64 bits with good avalanche.
uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// "2nd", "3rd", "4th", "11th", "21st".
std::string ordinal(int64_t n) {
  const int64_t tens = n % 100, ones = n % 10;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    if (ones == 1) suffix = "st";
    if (ones == 2) suffix = "nd";
    if (ones == 3) suffix = "rd";
  }
  return str_cat(n, suffix);
}

bool applies_in_training(const TransformSpec& t) {
  return t.apply_to != ApplyTo::kEval;
}

}  // namespace

void validate_worker_shard(WorkerShard shard) {
  TERN_CHECK_ARG(shard.num_workers >= 1, "worker shard: num_workers must be >= 1, got ",
                 shard.num_workers);
  TERN_CHECK_ARG(shard.index >= 0 && shard.index < shard.num_workers, "worker shard: index ",
                 shard.index, " is outside [0, ", shard.num_workers, ")");
}

std::string shard_policy_name(ShardPolicy policy) {
  switch (policy) {
    case ShardPolicy::kNone:
      return "none";
    case ShardPolicy::kFile:
      return "file";
    case ShardPolicy::kElement:
      return "element";
  }
  return "?";
}

ShardPolicy choose_shard_policy(SourceKind kind, int64_t num_files, WorkerShard shard) {
  validate_worker_shard(shard);
  if (shard.num_workers == 1) return ShardPolicy::kNone;
  const bool file_shardable = kind == SourceKind::kTFRecord || kind == SourceKind::kCsv;
  return file_shardable && num_files >= shard.num_workers ? ShardPolicy::kFile
                                                          : ShardPolicy::kElement;
}

uint64_t worker_seed(uint64_t seed, WorkerShard shard) {
  validate_worker_shard(shard);
  if (shard.index == 0) return seed;
  // The rank times an odd constant first, so that nearby ranks differ in many bits.
  return splitmix64(seed ^ (static_cast<uint64_t>(shard.index) * 0xD1B54A32D192ED03ULL));
}

int64_t worker_elements(int64_t elements, WorkerShard shard) {
  validate_worker_shard(shard);
  TERN_CHECK_ARG(elements >= 0, "worker_elements: element count ", elements, " is negative");
  return elements > shard.index ? (elements - shard.index - 1) / shard.num_workers + 1 : 0;
}

int64_t worker_batches(int64_t elements, WorkerShard shard, int64_t local_batch,
                       bool drop_remainder) {
  TERN_CHECK_ARG(local_batch >= 1, "worker_batches: batch size must be >= 1, got ", local_batch);
  const int64_t n = worker_elements(elements, shard);
  // n / b rounded up without n + b - 1 (which overflowed for a batch of 2^63-1: UBSan).
  return drop_remainder ? n / local_batch : n / local_batch + (n % local_batch != 0 ? 1 : 0);
}

int64_t local_batch_size(int64_t global_batch, WorkerShard shard, std::string_view what) {
  validate_worker_shard(shard);
  TERN_CHECK_ARG(global_batch >= 1, what, " ", global_batch, " must be >= 1");
  if (global_batch % shard.num_workers != 0) {
    throw_error(ErrorCode::kInvalidArgument, what, " ", global_batch, " is not divisible by ",
                shard.num_workers,
                " workers (it is the global batch: each worker batches an equal share)");
  }
  return global_batch / shard.num_workers;
}

Tensor worker_rows(const Tensor& t, WorkerShard shard) {
  validate_worker_shard(shard);
  if (shard.num_workers == 1) return t;
  TERN_CHECK_ARG(t.rank() >= 1, "worker_rows: a scalar has no rows to shard");
  std::vector<int64_t> dims = t.shape().dims();
  const int64_t rows = dims[0];
  dims[0] = worker_elements(rows, shard);
  Tensor out(t.dtype(), Shape(dims));
  const size_t row_bytes = rows > 0 ? t.nbytes() / static_cast<size_t>(rows) : 0;
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = shard.index; r < rows; r += shard.num_workers, dst += row_bytes)
    std::memcpy(dst, src + static_cast<size_t>(r) * row_bytes, row_bytes);
  return out;
}

std::string describe_worker_shard(ShardPolicy policy, WorkerShard shard, int64_t files_total,
                                  int64_t files_read) {
  const std::string worker = str_cat("worker ", shard.index, "/", shard.num_workers);
  switch (policy) {
    case ShardPolicy::kNone:
      return "one worker reads all the data";
    case ShardPolicy::kFile:
      return str_cat(worker, " reads ", files_read, " of ", files_total, " files");
    case ShardPolicy::kElement: {
      std::string out = str_cat(worker, " reads every ", ordinal(shard.num_workers), " element");
      if (files_total > 0) {
        out += str_cat(" (", files_total, files_total == 1 ? " file" : " files", ", fewer than ",
                       shard.num_workers, " workers)");
      }
      return out;
    }
  }
  return worker;
}

ShardedSource shard_elements(DatasetPtr input, WorkerShard shard) {
  validate_worker_shard(shard);
  ShardedSource out;
  out.policy = shard.num_workers == 1 ? ShardPolicy::kNone : ShardPolicy::kElement;
  out.dataset =
      shard.num_workers == 1 ? std::move(input) : input->shard(shard.num_workers, shard.index);
  out.description = describe_worker_shard(out.policy, shard, 0, 0);
  return out;
}

PipelineSpec worker_pipeline(const PipelineSpec& spec, WorkerShard shard) {
  validate_worker_shard(shard);
  PipelineSpec out = spec;
  for (TransformSpec& t : out.transforms) {
    if (!applies_in_training(t)) continue;
    if (t.kind == TransformKind::kShuffle || t.kind == TransformKind::kMap)
      t.seed = worker_seed(t.seed, shard);
    if (t.kind == TransformKind::kBatch)
      t.size = local_batch_size(t.size, shard, str_cat(t.origin, ": batch size"));
  }
  return out;
}

}  // namespace tern::data
