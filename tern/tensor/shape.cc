// Shape arithmetic.
#include "tern/tensor/shape.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "tern/base/checked_math.h"
#include "tern/base/error.h"

namespace tern {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  num_elements_ = 1;
  for (int64_t d : dims_) {
    if (d < 0) throw_error(ErrorCode::kInvalidArgument, "negative dimension in shape ", *this);
    num_elements_ = checked_mul(num_elements_, d, "shape element count");
  }
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size());
  int64_t acc = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    s[static_cast<size_t>(i)] = acc;
    acc *= dims_[static_cast<size_t>(i)];
  }
  return s;
}

int Shape::normalize_axis(int64_t axis, const char* what) const {
  int64_t r = rank();
  if (axis < -r || axis >= r) {
    throw_error(ErrorCode::kInvalidArgument, what, " ", axis, " is out of range for shape ", *this,
                " of rank ", r);
  }
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << "[";
  for (int i = 0; i < s.rank(); ++i) os << (i ? ", " : "") << s.dim(i);
  return os << "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da != db && da != 1 && db != 1) {
      throw_error(ErrorCode::kInvalidArgument, "shapes ", a, " and ", b,
                  " cannot be broadcast (dim ", i, ": ", da, " vs ", db, ")");
    }
    out[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace tern
