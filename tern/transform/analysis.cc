// analyze: blocks of records -> chunks decoded and analyzed in parallel -> partial results merged
// in order -> the analysis.
#include "tern/transform/analysis.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>

#include "tern/base/error.h"
#include "tern/base/thread_pool.h"
#include "tern/transform/pixel_stats.h"
#include "tern/transform/quantiles.h"
#include "tern/transform/raw_batch.h"
#include "tern/transform/records.h"

namespace tern::transform {
namespace {

// Count, mean, M2 (sum of squared deviations), min, max; merged with Chan et al.'s formulas.
struct Moments {
  int64_t n = 0;
  double mean = 0, m2 = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void add(double v) {
    ++n;
    const double d = v - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (v - mean);
    min = std::min(min, v);
    max = std::max(max, v);
  }
  void merge(const Moments& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const double na = static_cast<double>(n), nb = static_cast<double>(o.n);
    const double total = na + nb, delta = o.mean - mean;
    mean += delta * nb / total;
    m2 += o.m2 + delta * delta * na * nb / total;
    n += o.n;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
  static Moments from_pixels(const PixelSums& s) {
    Moments m;
    if (s.count == 0) return m;
    m.n = static_cast<int64_t>(s.count);
    m.mean = static_cast<double>(s.sum) / static_cast<double>(s.count);
    // n * M2 = n * sum_sq - sum^2, exact in 128 bits.
    const unsigned __int128 nq = static_cast<unsigned __int128>(s.count) * s.sum_sq;
    const unsigned __int128 ss = static_cast<unsigned __int128>(s.sum) * s.sum;
    m.m2 = static_cast<double>(nq - ss) / static_cast<double>(s.count);
    m.min = s.min;
    m.max = s.max;
    return m;
  }
};

struct FeaturePartial {
  int64_t present = 0, missing = 0;
  Moments moments;
  QuantileAccumulator quantiles;
  std::unordered_map<std::string, int64_t> counts;
};

struct LabelPartial {
  bool seen = false, bytes = false;
  int64_t first_record = 0;
  int64_t min = std::numeric_limits<int64_t>::max(), max = std::numeric_limits<int64_t>::min();
  int64_t min_record = 0;
  std::unordered_map<std::string, int64_t> counts;
};

struct Partial {
  std::vector<FeaturePartial> features;
  LabelPartial label;
};

Partial make_partial(const TransformSpec& spec, const AnalyzeOptions& o) {
  Partial p;
  for (size_t i = 0; i < spec.features.size(); ++i)
    p.features.push_back({0, 0, {}, QuantileAccumulator(o.exact_quantile_limit, o.sketch_k), {}});
  return p;
}

// Where each feature's input(s) sit among the raw columns.
std::vector<std::vector<size_t>> column_indices(const TransformSpec& spec) {
  std::map<std::string, size_t> by_name;
  const auto raw = spec.raw_features();
  for (size_t j = 0; j < raw.size(); ++j) by_name[raw[j].name] = j;
  std::vector<std::vector<size_t>> out;
  for (const auto& f : spec.features) {
    std::vector<size_t> cols;
    for (const auto& in : f.inputs) cols.push_back(by_name.at(in));
    out.push_back(cols);
  }
  return out;
}

void accumulate(const TransformSpec& spec, const std::vector<std::vector<size_t>>& cols,
                const RawBatch& b, int64_t first_record, Partial& p) {
  for (size_t k = 0; k < spec.features.size(); ++k) {
    const FeatureTransform& f = spec.features[k];
    FeaturePartial& fp = p.features[k];
    const RawColumn& c = b.columns[cols[k][0]];
    if (f.kind == RawKind::kImage) {
      PixelSums s;
      add_pixels(c.values.data<uint8_t>(), c.values.num_elements(), s);
      fp.moments.merge(Moments::from_pixels(s));
      fp.present += b.size;
      continue;
    }
    for (int64_t i = 0; i < b.size; ++i) {
      bool missing = false;
      for (size_t col : cols[k]) missing = missing || b.columns[col].missing[static_cast<size_t>(i)];
      if (missing) {
        ++fp.missing;
        continue;
      }
      ++fp.present;
      if (f.kind == RawKind::kNumeric) {
        const float* v = c.values.data<float>() + i * f.length;
        for (int64_t j = 0; j < f.length; ++j) {
          if (std::isnan(v[j])) continue;
          fp.moments.add(v[j]);
          if (f.op == TransformOp::kBucketize) fp.quantiles.add(v[j]);
        }
      } else if (f.op == TransformOp::kVocabulary) {
        ++fp.counts[c.strings[static_cast<size_t>(i)]];
      }
    }
  }
  if (spec.label.empty() || b.size == 0) return;
  LabelPartial& l = p.label;
  l.seen = true;
  l.bytes = b.label_is_bytes;
  l.first_record = first_record;
  if (b.label_is_bytes) {
    for (const std::string& s : b.label_strings) ++l.counts[s];
  } else {
    const int64_t* v = b.label_ints.data<int64_t>();
    for (int64_t i = 0; i < b.size; ++i) {
      if (v[i] < l.min) l.min_record = first_record + i;
      l.min = std::min(l.min, v[i]);
      l.max = std::max(l.max, v[i]);
    }
  }
}

void merge(Partial& total, Partial&& p, const std::string& label, const std::string& file) {
  for (size_t k = 0; k < total.features.size(); ++k) {
    FeaturePartial& t = total.features[k];
    FeaturePartial& f = p.features[k];
    t.present += f.present;
    t.missing += f.missing;
    t.moments.merge(f.moments);
    t.quantiles.merge(f.quantiles);
    if (t.counts.empty()) {
      t.counts = std::move(f.counts);
    } else {
      for (auto& [v, n] : f.counts) t.counts[v] += n;
    }
  }
  LabelPartial& tl = total.label;
  LabelPartial& pl = p.label;
  if (!pl.seen) return;
  if (tl.seen && tl.bytes != pl.bytes)
    throw_error(ErrorCode::kInvalidArgument, record_where(file, pl.first_record), ": label '",
                label, "' is ", pl.bytes ? "a bytes_list" : "an int64_list",
                " but earlier records have ", tl.bytes ? "bytes_list" : "int64_list", " labels");
  tl.seen = true;
  tl.bytes = pl.bytes;
  if (pl.min < tl.min) {
    tl.min = pl.min;
    tl.min_record = pl.min_record;
  }
  tl.max = std::max(tl.max, pl.max);
  for (auto& [v, n] : pl.counts) tl.counts[v] += n;
}

std::vector<std::pair<std::string, int64_t>> sorted_counts(
    const std::unordered_map<std::string, int64_t>& counts, bool by_value) {
  std::vector<std::pair<std::string, int64_t>> out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    if (!by_value && a.second != b.second) return a.second > b.second;
    return a.first < b.first;
  });
  return out;
}

FeatureAnalysis finish_feature(const FeatureTransform& f, const FeaturePartial& p,
                               int64_t records) {
  FeatureAnalysis a;
  a.name = f.name;
  a.op = f.op;
  a.present = p.present;
  a.missing = p.missing;
  if (f.kind != RawKind::kCategorical) {
    const Moments& m = p.moments;
    const bool needs_values = f.op != TransformOp::kIdentity || f.default_is_mean;
    if (m.n == 0 && needs_values)
      throw_error(ErrorCode::kFailedPrecondition, "transform feature '", f.name, "' (", 
                  transform_op_name(f.op), " of '", f.inputs[0], "'): no values in the ",
                  records, " training records", records > 0 ? " (the feature is always missing)" : "",
                  ", so there is nothing to compute its statistics from");
    a.count = m.n;
    if (m.n > 0) {
      a.mean = m.mean;
      a.std = std::sqrt(std::max(0.0, m.m2 / static_cast<double>(m.n)));
      a.min = m.min;
      a.max = m.max;
    }
    if (f.op == TransformOp::kBucketize) {
      a.boundaries = p.quantiles.boundaries(f.num_buckets);
      a.quantile_rank_error = p.quantiles.rank_error_bound();
    }
    return a;
  }
  if (f.op == TransformOp::kVocabulary) {
    auto all = sorted_counts(p.counts, false);
    a.unique = static_cast<int64_t>(all.size());
    for (auto& [v, n] : all) {
      if (n < f.frequency_threshold) break;  // sorted by count: the rest are rarer
      if (f.top_k > 0 && static_cast<int64_t>(a.vocabulary.size()) == f.top_k) break;
      a.vocabulary.emplace_back(std::move(v), n);
    }
  }
  return a;
}

}  // namespace

std::vector<std::string> LabelAnalysis::class_names() const {
  std::vector<std::string> out;
  if (bytes) {
    for (const auto& [v, n] : vocabulary) out.push_back(v);
  } else {
    for (int64_t k = 0; k < num_classes; ++k) out.push_back(std::to_string(k));
  }
  return out;
}

TransformAnalysis analyze(const TransformSpec& spec, const std::vector<std::string>& files,
                          const AnalyzeOptions& o) {
  TERN_CHECK_ARG(!files.empty(), "transform analyze: no training files");
  TERN_CHECK_ARG(o.chunk_records >= 1, "transform analyze: chunk_records must be >= 1");
  const RawDecoder decoder(spec, /*keep_strings=*/true);
  const auto cols = column_indices(spec);
  Partial total = make_partial(spec, o);
  TransformAnalysis out;
  out.files = files;
  std::vector<std::string_view> records;
  for (const std::string& file : files) {
    RecordBlocks blocks(file);
    while (blocks.next(records)) {
      const int64_t n = static_cast<int64_t>(records.size());
      const int64_t chunks = (n + o.chunk_records - 1) / o.chunk_records;
      std::vector<Partial> partials;
      for (int64_t c = 0; c < chunks; ++c) partials.push_back(make_partial(spec, o));
      std::vector<std::exception_ptr> errors(static_cast<size_t>(chunks));
      const int64_t base = blocks.first_index();
      parallel_for(
          chunks,
          [&](int64_t c) {
            try {
              const int64_t begin = c * o.chunk_records;
              const int64_t size = std::min(o.chunk_records, n - begin);
              RawBatch b;
              decoder.decode(std::span<const std::string_view>(records).subspan(
                                 static_cast<size_t>(begin), static_cast<size_t>(size)),
                             file, base + begin, b);
              accumulate(spec, cols, b, base + begin, partials[static_cast<size_t>(c)]);
            } catch (...) {
              errors[static_cast<size_t>(c)] = std::current_exception();
            }
          },
          o.threads);
      // The first error in record order, whatever thread met it first.
      for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
      }
      for (auto& p : partials) merge(total, std::move(p), spec.label, file);
      out.records += n;
    }
    out.bytes += blocks.offset();
  }
  for (size_t k = 0; k < spec.features.size(); ++k)
    out.features.push_back(finish_feature(spec.features[k], total.features[k], out.records));
  if (!spec.label.empty()) {
    LabelAnalysis& l = out.label;
    l.feature = spec.label;
    l.bytes = total.label.bytes;
    if (out.records == 0)
      throw_error(ErrorCode::kFailedPrecondition, "transform analyze: the training files hold no "
                  "records, so label '", spec.label, "' has no classes");
    if (l.bytes) {
      l.vocabulary = sorted_counts(total.label.counts, true);
      l.num_classes = static_cast<int64_t>(l.vocabulary.size());
    } else {
      if (total.label.min < 0)
        throw_error(ErrorCode::kFailedPrecondition, "transform analyze: label '", spec.label,
                    "' is ", total.label.min, " in record ", total.label.min_record,
                    " (of the training files); int64 labels must be class indices >= 0");
      TERN_CHECK_ARG(total.label.max < (int64_t{1} << 24), "transform analyze: label '",
                     spec.label, "' reaches ", total.label.max, ": too many classes for indices");
      l.min = total.label.min;
      l.max = total.label.max;
      l.num_classes = l.max + 1;
    }
  }
  return out;
}

}  // namespace tern::transform
