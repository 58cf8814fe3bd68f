// NumericAccumulator, BytesAccumulator, ImageAccumulator and StatsAccumulator (one record at a
// time, merging, finishing); see stats_accumulator.h.
#include "tern/pipeline/stats_accumulator.h"

#include <algorithm>
#include <cmath>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tern::pipeline::stats_internal {

// --- pixel sums ---

uint64_t sum_u8(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i acc = zero;
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    acc = _mm_add_epi64(acc, _mm_sad_epu8(v, zero));  // two 64-bit sums of 8 bytes each
  }
  uint64_t lanes[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), acc);
  s = lanes[0] + lanes[1];
#endif
  for (; i < n; ++i) s += p[i];
  return s;
}

void sum_channels_u8(const uint8_t* pixels, size_t n, int64_t channels, uint64_t* sums) {
  if (channels == 1) {
    sums[0] += sum_u8(pixels, n);
    return;
  }
  const auto c = static_cast<size_t>(channels);
  if (c == 3) {
    uint64_t r = 0, g = 0, b = 0;
    for (size_t i = 0; i + 3 <= n; i += 3) {
      r += pixels[i];
      g += pixels[i + 1];
      b += pixels[i + 2];
    }
    sums[0] += r, sums[1] += g, sums[2] += b;
    return;
  }
  for (size_t i = 0; i + c <= n; i += c)
    for (size_t k = 0; k < c; ++k) sums[k] += pixels[i + k];
}

// --- NumericAccumulator ---

void NumericAccumulator::to_sketch(const StatisticsOptions& o) {
  sketch_ = std::make_unique<QuantileSketch>(o.sketch_relative_accuracy);
  for (double v : values_) sketch_->add(v);
  values_.clear();
  values_.shrink_to_fit();
}

void NumericAccumulator::merge(NumericAccumulator&& later, const StatisticsOptions& o) {
  nan_ += later.nan_;
  infinite_ += later.infinite_;
  zeros_ += later.zeros_;
  if (later.finite_ > 0) {
    // Chan et al.'s pairwise update of the mean and the sum of squared deviations.
    const auto na = static_cast<double>(finite_), nb = static_cast<double>(later.finite_);
    const double delta = later.mean_ - mean_;
    const double n = na + nb;
    mean_ += delta * nb / n;
    m2_ += later.m2_ + delta * delta * na * nb / n;
    finite_ += later.finite_;
    min_ = std::min(min_, later.min_);
    max_ = std::max(max_, later.max_);
  }
  if (!sketch_ && !later.sketch_ &&
      static_cast<int64_t>(values_.size() + later.values_.size()) <= o.max_exact_values) {
    values_.insert(values_.end(), later.values_.begin(), later.values_.end());
    return;
  }
  if (!sketch_) to_sketch(o);
  if (later.sketch_) {
    sketch_->merge(*later.sketch_);
  } else {
    for (double v : later.values_) sketch_->add(v);
  }
}

NumericStatistics NumericAccumulator::finish(const StatisticsOptions& o) {
  NumericStatistics s;
  s.finite = finite_;
  s.nan = nan_;
  s.infinite = infinite_;
  s.zeros = zeros_;
  if (finite_ == 0) return s;
  s.min = min_;
  s.max = max_;
  s.mean = mean_;
  s.std_dev = std::sqrt(std::max(0.0, m2_ / static_cast<double>(finite_)));
  s.quantiles_exact = !sketch_;
  if (!sketch_) {
    std::sort(values_.begin(), values_.end());
    const size_t n = values_.size();
    for (double q : o.quantiles) {
      const double h = q * static_cast<double>(n - 1);
      const auto lo = static_cast<size_t>(std::floor(h));
      const size_t hi = std::min(lo + 1, n - 1);
      s.quantiles.emplace_back(
          q, values_[lo] + (h - static_cast<double>(lo)) * (values_[hi] - values_[lo]));
    }
  } else {
    for (double q : o.quantiles)
      s.quantiles.emplace_back(q, std::clamp(sketch_->quantile(q), min_, max_));
  }
  // Equal-width bins over [min, max]; the last one includes max.
  const int bins = min_ == max_ ? 1 : std::max(1, o.histogram_bins);
  const double width = (max_ - min_) / bins;
  for (int b = 0; b < bins; ++b)
    s.histogram.push_back({min_ + b * width, b + 1 == bins ? max_ : min_ + (b + 1) * width, 0});
  auto bin_of = [&](double v) {
    if (bins == 1) return 0;
    const int b = static_cast<int>((v - min_) / width);
    return std::clamp(b, 0, bins - 1);
  };
  if (!sketch_) {
    for (double v : values_) s.histogram[static_cast<size_t>(bin_of(v))].count += 1;
    // Distinct values (values_ is sorted), unless there are too many.
    for (size_t i = 0; i < values_.size(); ++i) {
      if (i > 0 && values_[i] == values_[i - 1]) {
        ++s.value_counts.back().second;
      } else if (static_cast<int64_t>(s.value_counts.size()) < o.max_distinct_numbers) {
        s.value_counts.emplace_back(values_[i], 1);
      } else {
        s.value_counts.clear();
        break;
      }
    }
  } else {
    for (const auto& [v, n] : sketch_->buckets())
      s.histogram[static_cast<size_t>(bin_of(std::clamp(v, min_, max_)))].count +=
          static_cast<double>(n);
  }
  return s;
}

// --- BytesAccumulator ---

void BytesAccumulator::overflow() {
  if (distinct_) return;
  distinct_ = std::make_unique<DistinctCounter>();
  for (const auto& [v, n] : counts_) distinct_->add(v);
}

void BytesAccumulator::merge(BytesAccumulator&& later, const StatisticsOptions& o) {
  if (later.values_ == 0) return;
  if (values_ == 0 || later.min_length_ < min_length_) min_length_ = later.min_length_;
  max_length_ = std::max(max_length_, later.max_length_);
  values_ += later.values_;
  total_length_ += later.total_length_;
  other_ += later.other_;
  // Later values in key order, so that which ones the cap keeps does not depend on hashing.
  std::vector<std::pair<const std::string*, int64_t>> incoming;
  incoming.reserve(later.counts_.size());
  for (const auto& [v, n] : later.counts_) incoming.emplace_back(&v, n);
  std::sort(incoming.begin(), incoming.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  for (const auto& [v, n] : incoming) {
    if (auto it = counts_.find(*v); it != counts_.end()) {
      it->second += n;
    } else if (static_cast<int64_t>(counts_.size()) < o.max_value_counts) {
      counts_.emplace(*v, n);
    } else {
      overflow();
      other_ += n;
    }
  }
  if (distinct_ || later.distinct_) {
    overflow();
    later.overflow();
    distinct_->merge(*later.distinct_);
  }
}

BytesStatistics BytesAccumulator::finish(const StatisticsOptions& o) const {
  BytesStatistics s;
  if (values_ == 0) return s;
  s.avg_length = static_cast<double>(total_length_) / static_cast<double>(values_);
  s.min_length = min_length_;
  s.max_length = max_length_;
  for (const auto& [v, n] : counts_) s.value_counts[value_text(v)] += n;
  s.value_counts_complete = !distinct_;
  s.other_values = other_;
  s.unique_exact = !distinct_;
  s.unique = distinct_ ? std::max<int64_t>(distinct_->estimate(),
                                           static_cast<int64_t>(s.value_counts.size()))
                       : static_cast<int64_t>(s.value_counts.size());
  std::vector<std::pair<std::string, int64_t>> top(s.value_counts.begin(), s.value_counts.end());
  const size_t k = std::min(top.size(), static_cast<size_t>(std::max(0, o.top_k)));
  std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  top.resize(k);
  s.top_values = std::move(top);
  return s;
}

// --- ImageAccumulator ---

void ImageAccumulator::add_pixels(const uint8_t* pixels, size_t n, int64_t channels) {
  ChannelSums& s = sums_[channels];
  if (s.sums.empty()) s.sums.assign(static_cast<size_t>(channels), 0);
  sum_channels_u8(pixels, n, channels, s.sums.data());
  s.pixels += static_cast<int64_t>(n) / channels;
  ++s.images;
}

void ImageAccumulator::add(std::string_view bytes, std::string_view format, int64_t height,
                           int64_t width, int64_t channels, bool decode) {
  ++images_;
  encoded_bytes_ += static_cast<int64_t>(bytes.size());
  const data::ImageFormat detected = data::detect_image_format(bytes);
  if (format.empty())
    format = detected == data::ImageFormat::kUnknown ? "raw" : data::image_format_name(detected);
  auto it = formats_.find(format);
  if (it == formats_.end()) it = formats_.emplace(std::string(format), 0).first;
  ++it->second;
  if (format == "raw") {
    // Divisions, not height * width * channels (which can overflow on hostile values).
    const auto n = static_cast<int64_t>(bytes.size());
    if (height <= 0 || width <= 0 || channels <= 0 || n % channels != 0 ||
        (n / channels) % width != 0 || n / channels / width != height) {
      ++invalid_;
      return;
    }
    ++shapes_[{height, width, channels}];
    add_pixels(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), channels);
    return;
  }
  try {
    const data::ImageInfo info = data::read_image_info(bytes, "image");
    ++shapes_[{info.height, info.width, info.channels}];
    if (!decode) {
      ++not_decoded_;
      return;
    }
    const Tensor img = data::decode_image(bytes, {}, "image");
    const int64_t c = img.shape().dim(2);
    add_pixels(img.data<uint8_t>(), static_cast<size_t>(img.shape().num_elements()), c);
  } catch (const Error&) {
    ++invalid_;  // not a PNG / JPEG, or a corrupt one: counted, the validator reports it
  }
}

void ImageAccumulator::merge(ImageAccumulator&& later) {
  for (const auto& [f, n] : later.formats_) formats_[f] += n;
  for (const auto& [s, n] : later.shapes_) shapes_[s] += n;
  for (auto& [c, s] : later.sums_) {
    ChannelSums& mine = sums_[c];
    if (mine.sums.empty()) mine.sums.assign(s.sums.size(), 0);
    for (size_t k = 0; k < s.sums.size(); ++k) mine.sums[k] += s.sums[k];
    mine.pixels += s.pixels;
    mine.images += s.images;
  }
  images_ += later.images_;
  invalid_ += later.invalid_;
  not_decoded_ += later.not_decoded_;
  encoded_bytes_ += later.encoded_bytes_;
}

ImageStatistics ImageAccumulator::finish() const {
  ImageStatistics s;
  s.formats.insert(formats_.begin(), formats_.end());
  for (const auto& [shape, n] : shapes_)
    s.shapes.push_back({std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), n});
  std::stable_sort(s.shapes.begin(), s.shapes.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  if (s.shapes.size() > 20) s.shapes.resize(20);
  s.invalid = invalid_;
  s.sampled = not_decoded_ > 0;
  s.avg_bytes =
      images_ > 0 ? static_cast<double>(encoded_bytes_) / static_cast<double>(images_) : 0;
  const ChannelSums* best = nullptr;
  for (const auto& [c, sums] : sums_)
    if (best == nullptr || sums.images > best->images) best = &sums;
  if (best != nullptr && best->pixels > 0) {
    for (uint64_t total : best->sums)
      s.channel_means.push_back(static_cast<double>(total) / static_cast<double>(best->pixels));
    s.images_measured = best->images;
  }
  return s;
}

// --- StatsAccumulator ---

int StatsAccumulator::add_feature(std::string_view key) {
  auto f = std::make_unique<Feature>();
  f->name = std::string(key);
  if (std::find(o_->image_features.begin(), o_->image_features.end(), f->name) !=
      o_->image_features.end()) {
    f->image = std::make_unique<ImageAccumulator>();
    const std::string prefix = f->name.substr(0, f->name.rfind('/') + 1);
    f->companion_names = {prefix + "height", prefix + "width", prefix + "channels",
                          prefix + "format"};
  }
  const int index = static_cast<int>(features_.size());
  index_.emplace(f->name, index);
  features_.push_back(std::move(f));
  return index;
}

int StatsAccumulator::feature_index(std::string_view key, size_t position) {
  if (position < predicted_.size()) {
    const int guess = predicted_[position];
    if (features_[static_cast<size_t>(guess)]->name == key) return guess;
  }
  auto it = index_.find(key);
  return it != index_.end() ? it->second : add_feature(key);
}

int StatsAccumulator::resolve(Feature& f, int which) {
  int& index = f.companions[static_cast<size_t>(which)];
  if (index < 0) {
    auto it = index_.find(f.companion_names[static_cast<size_t>(which)]);
    if (it != index_.end()) index = it->second;
  }
  return index;
}

// Calls the callbacks for each value of `e`, by whichever walk found it; returns its kind.
template <typename OnBytes, typename OnFloat, typename OnInt>
ValueKind visit_values(const format::ProtoReader& reader, bool canonical,
                       const CanonicalEntry& list, OnBytes&& on_bytes, OnFloat&& on_float,
                       OnInt&& on_int) {
  if (canonical) {
    for_each_canonical_value(list, on_bytes, on_float, on_int);
    return list.kind;
  }
  const EntryKind k = entry_kind(reader);
  for_each_value(reader, k, on_bytes, on_float, on_int);
  return k.kind;
}

int64_t StatsAccumulator::companion_int(int index) const {
  if (index < 0) return -1;
  const Feature& f = *features_[static_cast<size_t>(index)];
  if (f.stamp != examples_) return -1;
  const Entry& e = entries_[static_cast<size_t>(f.slot)];
  int64_t first = -1;
  bool seen = false;
  visit_values(
      e.reader, e.canonical, e.list, [](std::string_view) {}, [](float) {},
      [&](int64_t v) {
        if (!seen) first = v, seen = true;
      });
  return first;
}

std::string_view StatsAccumulator::companion_bytes(int index) const {
  if (index < 0) return {};
  const Feature& f = *features_[static_cast<size_t>(index)];
  if (f.stamp != examples_) return {};
  const Entry& e = entries_[static_cast<size_t>(f.slot)];
  std::string_view first;
  bool seen = false;
  visit_values(
      e.reader, e.canonical, e.list,
      [&](std::string_view v) {
        if (!seen) first = v, seen = true;
      },
      [](float) {}, [](int64_t) {});
  return first;
}

void StatsAccumulator::accumulate(const Entry& e, bool decode_images) {
  Feature& f = *features_[static_cast<size_t>(e.feature)];
  ++f.present;
  int64_t n = 0;
  ValueKind kind;
  if (f.image) {
    const int64_t h = companion_int(resolve(f, 0)), w = companion_int(resolve(f, 1)),
                  c = companion_int(resolve(f, 2));
    const std::string_view format = companion_bytes(resolve(f, 3));
    kind = visit_values(
        e.reader, e.canonical, e.list,
        [&](std::string_view v) {
          ++n;
          f.image->add(v, format, h, w, c, decode_images);
        },
        [&](float v) {
          ++n;
          f.numeric.add(v, *o_);
        },
        [&](int64_t v) {
          ++n;
          f.numeric.add(static_cast<double>(v), *o_);
        });
  } else {
    kind = visit_values(
        e.reader, e.canonical, e.list,
        [&](std::string_view v) {
          ++n;
          f.bytes.add(v, *o_);
        },
        [&](float v) {
          ++n;
          f.numeric.add(v, *o_);
        },
        [&](int64_t v) {
          ++n;
          f.numeric.add(static_cast<double>(v), *o_);
        });
  }
  ++f.kinds[static_cast<size_t>(kind)];
  if (f.present == 1 || n < f.min_values) f.min_values = n;
  if (n > f.max_values) f.max_values = n;
  f.values += n;
}

void StatsAccumulator::add_entry(std::string_view key, Entry entry) {
  entry.feature = feature_index(key, entries_.size());
  Feature& f = *features_[static_cast<size_t>(entry.feature)];
  if (f.stamp == examples_) {  // a key repeated in one record: the last entry counts
    entries_[static_cast<size_t>(f.slot)] = entry;
    return;
  }
  f.stamp = examples_;
  f.slot = static_cast<int>(entries_.size());
  entries_.push_back(entry);
}

void StatsAccumulator::add_record(std::string_view record, size_t offset, const std::string& file,
                                  bool decode_images) {
  entries_.clear();
  const format::ProtoReader none({}, 0, file);
  const bool canonical = scan_canonical_example(record, [&](const CanonicalEntry& e) {
    add_entry(e.key, {-1, true, e, none});
  });
  if (!canonical) {
    // Stamps of the features seen by the declined scan: none (it called nothing).
    for_each_feature_entry(record, offset, file, [&](std::string_view key, format::ProtoReader r) {
      add_entry(key, {-1, false, {}, r});
    });
  }
  for (const Entry& e : entries_) accumulate(e, decode_images);
  predicted_.resize(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) predicted_[i] = entries_[i].feature;
  ++examples_;
}

void StatsAccumulator::merge(StatsAccumulator&& later) {
  for (auto& lf : later.features_) {
    auto it = index_.find(lf->name);
    if (it == index_.end()) {
      const int index = static_cast<int>(features_.size());
      index_.emplace(lf->name, index);
      lf->stamp = -1;
      lf->companions = {-1, -1, -1, -1};
      features_.push_back(std::move(lf));
      continue;
    }
    Feature& f = *features_[static_cast<size_t>(it->second)];
    if (lf->present > 0) {
      if (f.present == 0 || lf->min_values < f.min_values) f.min_values = lf->min_values;
      f.max_values = std::max(f.max_values, lf->max_values);
    }
    f.present += lf->present;
    f.values += lf->values;
    for (size_t k = 0; k < f.kinds.size(); ++k) f.kinds[k] += lf->kinds[k];
    f.numeric.merge(std::move(lf->numeric), *o_);
    f.bytes.merge(std::move(lf->bytes), *o_);
    if (f.image && lf->image) f.image->merge(std::move(*lf->image));
  }
  examples_ += later.examples_;
  // Stamps of this accumulator's features refer to its own records; keep them unique.
  for (auto& f : features_) f->stamp = -1;
  predicted_.clear();
}

DatasetStatistics StatsAccumulator::finish() {
  DatasetStatistics out;
  out.examples = examples_;
  for (const auto& fp : features_) {
    Feature& f = *fp;
    FeatureStatistics s;
    s.name = value_text(f.name);
    s.count = f.present;
    s.missing = examples_ - f.present;
    s.num_values = f.values;
    s.min_values = f.min_values;
    s.max_values = f.max_values;
    s.avg_values =
        f.present > 0 ? static_cast<double>(f.values) / static_cast<double>(f.present) : 0;
    // The kind most examples hold (ties: int, then float, then bytes).
    size_t best = static_cast<size_t>(ValueKind::kInt64);
    for (size_t k : {size_t{2}, size_t{1}})
      if (f.kinds[k] > f.kinds[best]) best = k;
    if (f.kinds[best] == 0) best = static_cast<size_t>(ValueKind::kFloat);
    static constexpr std::array<const char*, 4> kNames = {"none", "bytes", "float", "int"};
    for (size_t k = 1; k < 4; ++k)
      if (k != best && f.kinds[k] > 0) s.other_types[kNames[k]] = f.kinds[k];
    const auto kind = static_cast<ValueKind>(best);
    if (kind == ValueKind::kBytes && f.image) {
      s.type = FeatureType::kImage;
      s.image = f.image->finish();
    } else if (kind == ValueKind::kBytes) {
      s.type = FeatureType::kBytes;
    } else {
      s.type = kind == ValueKind::kInt64 ? FeatureType::kInt : FeatureType::kFloat;
    }
    if (f.kinds[1] > 0 && !f.image) s.bytes = f.bytes.finish(*o_);
    if (f.kinds[2] > 0 || f.kinds[3] > 0 || s.type == FeatureType::kInt ||
        s.type == FeatureType::kFloat)
      s.numeric = f.numeric.finish(*o_);
    out.features.push_back(std::move(s));
  }
  std::sort(out.features.begin(), out.features.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace tern::pipeline::stats_internal
