// Element: one item of a dataset, a tuple of tensor components, and where it came from (a record
// or line of a file, per row for a batch); helpers for byte strings carried as u8 tensors (file
// names, raw records) and for stacking elements into batches.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::data {

// Where an element, or one row of a batch, came from: "train.tfrecord record 37" (0-based, as
// `tern data inspect` counts), "train.csv:17" (the line its row starts on), an image file, or
// "element 5" of an in-memory source. Two ints: file names are interned (source_file_id).
struct SourcePosition {
  enum class Kind : uint8_t { kUnknown, kRecord, kLine, kFile, kElement };
  Kind kind = Kind::kUnknown;
  int32_t file = -1;   // source_file_id(path); -1: no file
  int64_t index = -1;  // record (0-based), line (1-based) or element index; -1: not known

  bool known() const { return kind != Kind::kUnknown; }
  static SourcePosition record(int32_t file, int64_t index) { return {Kind::kRecord, file, index}; }
  static SourcePosition line(int32_t file, int64_t line) { return {Kind::kLine, file, line}; }
  static SourcePosition whole_file(int32_t file) { return {Kind::kFile, file, -1}; }
  static SourcePosition element(int64_t index) { return {Kind::kElement, -1, index}; }
};

// A small id for `path`, the same for the same path for the life of the process (the table only
// grows: one entry per distinct file a pipeline opens).
int32_t source_file_id(std::string_view path);
// The path of an id from source_file_id ("?" for any other value).
std::string source_file_name(int32_t id);
// "train.tfrecord record 37", "train.csv:17", "images/cat/3.jpg", "element 5"; "" when unknown.
// File names are shown through printable() (they may hold control bytes).
std::string describe_position(const SourcePosition& p);

// The positions of an element: one, or one per row of a batch; empty when unknown. Holds the
// first inline, so a single element's costs no allocation.
class ElementOrigin {
 public:
  ElementOrigin() = default;
  ElementOrigin(const SourcePosition& p) { push_back(p); }  // NOLINT: implicit on purpose

  bool empty() const { return !first_.known(); }
  size_t size() const { return empty() ? 0 : 1 + rest_.size(); }
  const SourcePosition& operator[](size_t i) const { return i == 0 ? first_ : rest_[i - 1]; }
  // Appends a position; an unknown one clears the origin (callers building one position per row
  // stop there: the rows would no longer line up).
  void push_back(const SourcePosition& p);
  void clear();
  // The position of row `row` of a batch of `rows` rows, or an unknown one if this origin does not
  // have exactly one position per row.
  SourcePosition row(int64_t row, int64_t rows) const;

 private:
  SourcePosition first_;
  std::vector<SourcePosition> rest_;
};

// The components, and where they came from. Sources set `origin`; map keeps the input's when a
// function returns an element without one; batch, padded_batch and unbatch keep one per row.
class Element : public std::vector<Tensor> {
 public:
  using std::vector<Tensor>::vector;
  Element() = default;
  Element(std::vector<Tensor> components)  // NOLINT: a plain component list is an element
      : std::vector<Tensor>(std::move(components)) {}

  ElementOrigin origin;
};

// A rank-1 u8 tensor holding the bytes of `s` (tern has no string dtype).
Tensor bytes_tensor(std::string_view s);
// The bytes of a u8 tensor of any rank; InvalidArgument naming `what` for other dtypes.
std::string tensor_bytes(const Tensor& t, std::string_view what = "bytes tensor");

// "(u8[28, 28], i64[])": the component types, for error messages.
std::string element_signature(const Element& e);

// Stacks component k of every element along a new leading axis. All elements must have the same
// arity and, per component, the same dtype and shape; InvalidArgument naming `what` otherwise.
// The batch's origin is the elements' positions, one per row.
Element stack_elements(const std::vector<Element>& elements, std::string_view what);

// The inverse of stacking: row i of every component (all must share the leading dim), with row
// i's position.
Element element_row(const Element& batch, int64_t row);
// The shared leading dim of every component; InvalidArgument naming `what` if absent or unequal.
int64_t leading_dim(const Element& e, std::string_view what);

// describe_position of row `row` of `e` (a batch; or the element itself when `row` is 0 and it has
// one position); "" when unknown.
std::string row_position(const Element& e, int64_t row);
// " (at train.csv:17)" for row_position(e, row), "" when unknown: for messages about one row.
std::string row_position_suffix(const Element& e, int64_t row);

}  // namespace tern::data
