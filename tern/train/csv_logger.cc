// CSVLogger: per-epoch logs as CSV rows.
#include "tern/train/csv_logger.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "tern/base/error.h"

namespace tern::train {
namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  return out;
}

// Unavailable naming the path and the system's reason (ENOSPC: "No space left on device").
[[noreturn]] void write_failed(const std::string& path) {
  throw_error(ErrorCode::kUnavailable, "CSVLogger: cannot write '", path,
              "': ", errno != 0 ? std::strerror(errno) : "write error");
}

}  // namespace

CSVLogger::CSVLogger(CSVLoggerOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(!options_.path.empty(), "CSVLogger: path is empty");
}

void CSVLogger::on_train_begin(Logs&) {
  columns_.clear();
  std::filesystem::path p(options_.path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) {
    throw_error(ErrorCode::kUnavailable, "CSVLogger: cannot create the folder of '", options_.path,
                "': ", ec.message());
  }
  if (options_.append && std::filesystem::is_regular_file(p, ec) &&
      std::filesystem::file_size(p) > 0) {
    std::ifstream in(options_.path);
    std::string header;
    std::getline(in, header);
    std::vector<std::string> cols = split(header, options_.separator);
    if (!cols.empty() && cols[0] == "epoch") columns_.assign(cols.begin() + 1, cols.end());
  }
  out_.open(options_.path, options_.append ? std::ios::app : std::ios::trunc);
  TERN_CHECK_ARG(out_.good(), "CSVLogger: cannot open '", options_.path, "' for writing");
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
  if (columns_.empty()) {
    for (const auto& [k, _] : logs) columns_.push_back(k);
    out_ << "epoch";
    for (const auto& c : columns_) out_ << options_.separator << c;
    out_ << "\n";
  }
  out_.precision(10);
  out_ << epoch;
  for (const auto& c : columns_) {
    out_ << options_.separator;
    auto it = logs.find(c);
    if (it != logs.end()) out_ << it->second;  // a key missing this epoch stays empty
  }
  out_ << "\n";
  // Checked every epoch: a full disk lost the whole log silently (bad-input report F9).
  errno = 0;
  out_.flush();
  if (!out_) write_failed(options_.path);
}

void CSVLogger::on_train_end(Logs&) {
  if (!out_.is_open()) return;
  errno = 0;
  out_.close();
  if (out_.fail()) write_failed(options_.path);
}

}  // namespace tern::train
