// Throughput of the pipeline's StatisticsGen (tern/pipeline/statistics.h) over TFRecord files,
// next to the time of reading the same files with no work (`make bench-pipeline`: Fashion-MNIST
// as raw-pixel tf.Examples, made by `tern data convert ... --image-format raw`). Prints MB/s of
// file bytes, the median of --repeats runs, for:
//   read          the files read into one reused 4 MiB buffer (fread), nothing else
//   read+frame    tern/data's TFRecordReader: every record framed and CRC-checked
//   crc32c        CRC32C over the same bytes in memory: the SSE4.2 instruction (what every
//                 TFRecord reader runs where the CPU has it) and the byte table (baseline CPUs;
//                 what tern ran everywhere before the instruction was chosen at run time)
//   statistics    compute_statistics with 1 thread and with every core
// The files are read once first, so every run reads them from the page cache.
//
//   pipeline_stats_bench [--repeats 5] FILE.tfrecord...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/base/thread_pool.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/format/crc32c.h"
#include "tern/pipeline/statistics.h"

namespace {

using tern::bench::median;
using tern::bench::wall_seconds;

int64_t read_only(const std::vector<std::string>& files) {
  std::vector<char> buf(4 << 20);
  int64_t total = 0;
  for (const std::string& f : files) {
    std::FILE* fp = std::fopen(f.c_str(), "rb");
    if (fp == nullptr) {
      std::perror(f.c_str());
      std::exit(1);
    }
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), fp)) > 0) total += static_cast<int64_t>(n);
    std::fclose(fp);
  }
  return total;
}

int64_t read_and_frame(const std::vector<std::string>& files) {
  int64_t records = 0;
  for (const std::string& f : files) {
    tern::data::TFRecordReader r(f);
    while (r.read()) ++records;
  }
  return records;
}

template <typename Fn>
double median_seconds(int repeats, Fn&& fn) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = wall_seconds();
    fn();
    t.push_back(wall_seconds() - t0);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty() || repeats < 1) {
    std::fprintf(stderr, "usage: pipeline_stats_bench [--repeats N] FILE.tfrecord...\n");
    return 2;
  }
  int64_t bytes = 0;
  for (const std::string& f : files) bytes += static_cast<int64_t>(std::filesystem::file_size(f));
  const double mb = static_cast<double>(bytes) / 1e6;
  read_only(files);  // into the page cache
  const int cores = tern::available_cores();
  std::printf("%zu file(s), %.1f MB, %d core(s), median of %d\n", files.size(), mb, cores, repeats);

  const double t_read = median_seconds(repeats, [&] { read_only(files); });
  std::printf("read (no work)        %8.3f s  %8.1f MB/s\n", t_read, mb / t_read);
  int64_t records = 0;
  const double t_frame = median_seconds(repeats, [&] { records = read_and_frame(files); });
  std::printf("read+frame (records)  %8.3f s  %8.1f MB/s  (%lld records)\n", t_frame, mb / t_frame,
              static_cast<long long>(records));
  {
    std::string all;
    for (const std::string& f : files) {
      std::FILE* fp = std::fopen(f.c_str(), "rb");
      std::vector<char> buf(4 << 20);
      size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), fp)) > 0) all.append(buf.data(), n);
      std::fclose(fp);
    }
    uint32_t crc = 0;
    const double t_hw = median_seconds(
        repeats, [&] { crc = tern::format::crc32c_extend(0, all.data(), all.size()); });
    const uint32_t hw = crc;
    const double t_table = median_seconds(
        repeats, [&] { crc = tern::format::crc32c_extend_portable(0, all.data(), all.size()); });
    std::printf("crc32c instruction    %8.3f s  %8.1f MB/s\n", t_hw, mb / t_hw);
    std::printf("crc32c byte table     %8.3f s  %8.1f MB/s  (%s)\n", t_table, mb / t_table,
                crc == hw ? "same CRC" : "CRC MISMATCH");
  }
  for (int threads : {1, 0}) {
    tern::pipeline::StatisticsOptions o;
    o.threads = threads;
    o.progress = false;
    tern::pipeline::DatasetStatistics s;
    const double t =
        median_seconds(repeats, [&] { s = tern::pipeline::compute_statistics(files, o); });
    std::printf("statistics %-2d thread%s %8.3f s  %8.1f MB/s  (%lld examples, %zu features)\n",
                threads == 0 ? cores : threads, (threads == 0 ? cores : threads) == 1 ? " " : "s",
                t, mb / t, static_cast<long long>(s.examples), s.features.size());
  }
  return 0;
}
