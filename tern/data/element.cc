// Element helpers: source positions (the interned file table), byte tensors, signatures, stacking
// and row extraction.
#include "tern/data/element.h"

#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "tern/base/error.h"
#include "tern/base/strings.h"

namespace tern::data {

// --- source positions ---

namespace {

struct FileTable {
  std::mutex mu;
  std::unordered_map<std::string, int32_t> ids;
  std::deque<std::string> names;  // deque: references stay valid as it grows
};

FileTable& file_table() {
  static FileTable* table = new FileTable;  // never destroyed: iterators may outlive main's end
  return *table;
}

}  // namespace

int32_t source_file_id(std::string_view path) {
  FileTable& t = file_table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(std::string(path));
  if (it != t.ids.end()) return it->second;
  TERN_CHECK(t.names.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()),
             "too many source files");
  const auto id = static_cast<int32_t>(t.names.size());
  t.names.emplace_back(path);
  t.ids.emplace(std::string(path), id);
  return id;
}

std::string source_file_name(int32_t id) {
  FileTable& t = file_table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (id < 0 || static_cast<size_t>(id) >= t.names.size()) return "?";
  return t.names[static_cast<size_t>(id)];
}

std::string describe_position(const SourcePosition& p) {
  const std::string file = p.file >= 0 ? printable(source_file_name(p.file)) : std::string();
  switch (p.kind) {
    case SourcePosition::Kind::kUnknown:
      return "";
    case SourcePosition::Kind::kRecord:
      if (p.index < 0) return file;
      return file.empty() ? str_cat("record ", p.index) : str_cat(file, " record ", p.index);
    case SourcePosition::Kind::kLine:
      if (p.index < 0) return file;
      return file.empty() ? str_cat("line ", p.index) : str_cat(file, ":", p.index);
    case SourcePosition::Kind::kFile:
      return file;
    case SourcePosition::Kind::kElement:
      return file.empty() ? str_cat("element ", p.index) : str_cat(file, " element ", p.index);
  }
  return "";
}

void ElementOrigin::push_back(const SourcePosition& p) {
  if (!p.known()) {
    clear();
  } else if (empty()) {
    first_ = p;
  } else {
    rest_.push_back(p);
  }
}

void ElementOrigin::clear() {
  first_ = {};
  rest_.clear();
}

SourcePosition ElementOrigin::row(int64_t row, int64_t rows) const {
  if (row < 0 || rows < 0 || static_cast<int64_t>(size()) != rows || row >= rows) return {};
  return (*this)[static_cast<size_t>(row)];
}

std::string row_position(const Element& e, int64_t row) {
  int64_t rows = 1;
  if (e.origin.size() != 1 || row != 0) {
    if (e.empty() || !e[0].defined() || e[0].rank() == 0) return "";
    rows = e[0].shape().dim(0);
  }
  return describe_position(e.origin.row(row, rows));
}

std::string row_position_suffix(const Element& e, int64_t row) {
  const std::string where = row_position(e, row);
  return where.empty() ? "" : str_cat(" (at ", where, ")");
}

// --- elements ---

Tensor bytes_tensor(std::string_view s) {
  Tensor t(DType::kU8, Shape{static_cast<int64_t>(s.size())});
  if (!s.empty()) std::memcpy(t.raw_data(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const Tensor& t, std::string_view what) {
  TERN_CHECK_ARG(t.defined() && t.dtype() == DType::kU8, what, ": expected a u8 tensor, got ",
                 t.defined() ? t.type().to_string() : std::string("an undefined tensor"));
  return std::string(static_cast<const char*>(t.raw_data()), t.nbytes());
}

std::string element_signature(const Element& e) {
  std::string s = "(";
  for (size_t i = 0; i < e.size(); ++i) {
    if (i > 0) s += ", ";
    s += e[i].defined() ? e[i].type().to_string() : "undefined";
  }
  return s + ")";
}

Element stack_elements(const std::vector<Element>& elements, std::string_view what) {
  TERN_CHECK_ARG(!elements.empty(), what, ": nothing to stack");
  const Element& first = elements.front();
  for (size_t i = 1; i < elements.size(); ++i) {
    const Element& e = elements[i];
    TERN_CHECK_ARG(e.size() == first.size(), what, ": element ", i, row_position_suffix(e, 0),
                   " has ", e.size(), " components but element 0 has ", first.size());
    for (size_t k = 0; k < e.size(); ++k) {
      TERN_CHECK_ARG(e[k].defined() && e[k].type() == first[k].type(), what, ": component ", k,
                     " of element ", i, row_position_suffix(e, 0), " is ",
                     element_signature({e[k]}), " but element 0 has ",
                     element_signature({first[k]}), " (use padded_batch for varying shapes)");
    }
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Element out;
  out.reserve(first.size());
  for (const Element& e : elements) {
    if (e.origin.size() != 1) {  // unknown, or a batch: rows of the new batch have no one position
      out.origin.clear();
      break;
    }
    out.origin.push_back(e.origin[0]);
  }
  for (size_t k = 0; k < first.size(); ++k) {
    std::vector<int64_t> dims{n};
    const auto& inner = first[k].shape().dims();
    dims.insert(dims.end(), inner.begin(), inner.end());
    Tensor stacked = Tensor::uninitialized(first[k].dtype(), Shape(std::move(dims)));
    const size_t row_bytes = first[k].nbytes();
    char* dst = static_cast<char*>(stacked.raw_data());
    for (size_t i = 0; i < elements.size(); ++i) {
      if (row_bytes > 0) std::memcpy(dst + i * row_bytes, elements[i][k].raw_data(), row_bytes);
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

int64_t leading_dim(const Element& e, std::string_view what) {
  TERN_CHECK_ARG(!e.empty(), what, ": element has no components");
  int64_t n = -1;
  for (size_t k = 0; k < e.size(); ++k) {
    TERN_CHECK_ARG(e[k].defined() && e[k].rank() >= 1, what, ": component ", k, " is ",
                   element_signature({e[k]}), ", which has no leading dimension");
    if (n < 0) n = e[k].shape().dim(0);
    TERN_CHECK_ARG(e[k].shape().dim(0) == n, what, ": component ", k, " has leading dim ",
                   e[k].shape().dim(0), " but component 0 has ", n, " in ", element_signature(e));
  }
  return n;
}

Element element_row(const Element& batch, int64_t row) {
  Element out;
  out.reserve(batch.size());
  if (!batch.empty() && batch[0].defined() && batch[0].rank() >= 1)
    out.origin = batch.origin.row(row, batch[0].shape().dim(0));
  for (const Tensor& t : batch) {
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    out.push_back(t.slice_rows(row, row + 1).reshape(Shape(std::move(dims))));
  }
  return out;
}

}  // namespace tern::data
