// Tensor construction, element access, views, casts and printing.
#include "tern/tensor/tensor.h"

#include "tern/base/checked_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>

namespace tern {

std::string TensorType::to_string() const {
  return str_cat(dtype_name(dtype), shape.to_string());
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_t bytes = static_cast<size_t>(checked_mul(
      shape_.num_elements(), static_cast<int64_t>(dtype_size(dtype_)), "tensor byte size"));
  storage_ = Storage::allocate(bytes);
}

Tensor::Tensor(DType dtype, Shape shape, DeviceBackend& device)
    : dtype_(dtype), shape_(std::move(shape)) {
  size_t bytes = static_cast<size_t>(checked_mul(
      shape_.num_elements(), static_cast<int64_t>(dtype_size(dtype_)), "tensor byte size"));
  storage_ = Storage::allocate(device, bytes);
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)), offset_(byte_offset) {
  TERN_CHECK(storage_ != nullptr);
  if (offset_ + nbytes() > storage_->bytes()) {
    throw_error(ErrorCode::kInvalidArgument, "tensor view ", type().to_string(), " at offset ",
                offset_, " does not fit storage of ", storage_->bytes(), " bytes");
  }
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = Storage::allocate_uninitialized(static_cast<size_t>(checked_mul(
      t.shape_.num_elements(), static_cast<int64_t>(dtype_size(dtype)), "tensor byte size")));
  return t;
}

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.set(i, value);
  return t;
}

Tensor Tensor::from_values(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw_error(ErrorCode::kInvalidArgument, "from_values: ", values.size(), " values for shape ",
                t.shape());
  }
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

void Tensor::check_host(const char* what) const {
  if (!is_host_accessible()) {
    throw_error(ErrorCode::kFailedPrecondition, "tensor ", type().to_string(), " lives on ",
                device().to_string(), ", whose memory the host cannot read; ", what,
                "() needs a host tensor (call to_host() first)");
  }
}

double Tensor::get(int64_t i) const {
  check_host("get");
  TERN_CHECK(i >= 0 && i < num_elements(), "index ", i);
  return dispatch_dtype(dtype_, [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(static_cast<compute_t<T>>(static_cast<const T*>(raw_data())[i]));
  });
}

void Tensor::set(int64_t i, double v) {
  check_host("set");
  TERN_CHECK(i >= 0 && i < num_elements(), "index ", i);
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    static_cast<T*>(raw_data())[i] = static_cast<T>(static_cast<compute_t<T>>(v));
  });
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(num_elements()));
  for (int64_t i = 0; i < num_elements(); ++i) out[static_cast<size_t>(i)] = get(i);
  return out;
}

Tensor Tensor::reshape(Shape shape) const {
  if (shape.num_elements() != num_elements()) {
    throw_error(ErrorCode::kInvalidArgument, "cannot reshape ", shape_, " (", num_elements(),
                " elements) to ", shape, " (", shape.num_elements(), " elements)");
  }
  return Tensor(dtype_, std::move(shape), storage_, offset_);
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  TERN_CHECK_ARG(rank() >= 1 && begin >= 0 && begin <= end && end <= shape_.dim(0), "slice_rows [",
                 begin, ", ", end, ") out of range for shape ", shape_);
  std::vector<int64_t> dims = shape_.dims();
  int64_t row = num_elements() / std::max<int64_t>(dims[0], 1);
  dims[0] = end - begin;
  return Tensor(dtype_, Shape(dims), storage_,
                offset_ + static_cast<size_t>(begin * row) * dtype_size(dtype_));
}

Tensor Tensor::clone() const {
  Tensor t = backend() ? Tensor(dtype_, shape_, *backend()) : Tensor(dtype_, shape_);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.type() != type()) {
    throw_error(ErrorCode::kInvalidArgument, "copy_from: source ", src.type().to_string(),
                " does not match destination ", type().to_string());
  }
  if (src.raw_data() == raw_data()) return;
  const bool src_host = src.is_host_accessible(), dst_host = is_host_accessible();
  if (src_host && dst_host) {
    std::memcpy(raw_data(), src.raw_data(), nbytes());
    return;
  }
  DeviceBackend* dst_dev = backend();
  DeviceBackend* src_dev = src.backend();
  if (src_host) {  // host -> device
    dst_dev->copy_host_to_device(raw_data(), src.raw_data(), nbytes(), dst_dev->default_stream());
    dst_dev->default_stream().synchronize();
  } else if (dst_host) {  // device -> host
    src_dev->copy_device_to_host(raw_data(), src.raw_data(), nbytes(), src_dev->default_stream());
    src_dev->default_stream().synchronize();
  } else if (src_dev == dst_dev) {
    dst_dev->copy_device_to_device(raw_data(), src.raw_data(), nbytes(), dst_dev->default_stream());
    dst_dev->default_stream().synchronize();
  } else {  // two different devices: through the host
    copy_from(src.to_host());
  }
}

Tensor Tensor::to_host() const {
  if (is_host_accessible()) return *this;
  Tensor t(dtype_, shape_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to_device(DeviceBackend& device) const {
  if (backend() == &device) return *this;
  Tensor t(dtype_, shape_, device);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::cast(DType dtype) const {
  check_host("cast");
  Tensor out(dtype, shape_);
  dispatch_dtype(dtype_, [&](auto in_tag) {
    using In = decltype(in_tag);
    dispatch_dtype(dtype, [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* src = static_cast<const In*>(raw_data());
      Out* dst = static_cast<Out*>(out.raw_data());
      for (int64_t i = 0; i < num_elements(); ++i) {
        dst[i] = static_cast<Out>(static_cast<compute_t<Out>>(static_cast<compute_t<In>>(src[i])));
      }
    });
  });
  return out;
}

std::string Tensor::to_string(int64_t max_elements) const {
  std::ostringstream os;
  os << "Tensor(" << dtype_name(dtype_) << shape_ << ", [";
  int64_t n = defined() ? num_elements() : 0;
  Tensor host = n > 0 ? to_host() : *this;  // printing a device tensor copies it
  for (int64_t i = 0; i < n && i < max_elements; ++i) os << (i ? ", " : "") << host.get(i);
  if (n > max_elements) os << ", ...";
  os << "]";
  if (defined() && !is_host_accessible()) os << ", device=" << device().to_string();
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.to_string();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    throw_error(ErrorCode::kInvalidArgument, "max_abs_diff: shapes ", a.shape(), " and ", b.shape(),
                " differ");
  }
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double d = std::fabs(a.get(i) - b.get(i));
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) return false;
  }
  return true;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace tern
