// EpochLog: the CSV logger's file read incrementally.
#include "tern/sweep/epoch_log.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tern::sweep {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

double parse_number(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0' ? v : std::nan("");
}

}  // namespace

std::vector<EpochRow> EpochLog::poll() {
  std::vector<EpochRow> rows;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path_, ec);
  if (ec || size < offset_) {  // gone or rewritten: start over
    offset_ = 0;
    columns_.clear();
    if (ec) return rows;
  }
  if (size == offset_) return rows;
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  size_t start = 0;
  for (size_t nl = chunk.find('\n'); nl != std::string::npos; nl = chunk.find('\n', start)) {
    std::string line = chunk.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cells = split(line);
    if (cells.empty()) continue;
    if (cells[0] == "epoch") {  // a header (again, when a resumed run appends)
      columns_.assign(cells.begin() + 1, cells.end());
      continue;
    }
    double epoch = parse_number(cells[0]);
    if (std::isnan(epoch) || epoch < 0) continue;
    EpochRow row{.epoch = static_cast<int64_t>(epoch) + 1};
    for (size_t i = 1; i < cells.size() && i - 1 < columns_.size(); ++i) {
      if (!cells[i].empty()) row.values[columns_[i - 1]] = parse_number(cells[i]);
    }
    rows.push_back(std::move(row));
  }
  offset_ += start;
  return rows;
}

std::vector<EpochRow> read_epoch_log(const std::string& path) {
  EpochLog log(path);
  return log.poll();
}

}  // namespace tern::sweep
