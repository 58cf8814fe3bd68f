// Shape: a list of non-negative 64-bit dims with checked element counts, row-major strides and
// NumPy broadcasting.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace tern {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t operator[](int axis) const { return dim(axis); }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Product of dims, checked against overflow at construction.
  int64_t num_elements() const { return num_elements_; }
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // Normalizes a possibly negative axis; InvalidArgument naming `what` if out of range.
  int normalize_axis(int64_t axis, const char* what = "axis") const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  std::string to_string() const;  // "[2, 3]"

 private:
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// NumPy broadcast of two shapes; InvalidArgument naming both shapes if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace tern
