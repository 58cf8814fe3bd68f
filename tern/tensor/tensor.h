// Tensor: a dtype, a shape and a view into refcounted storage on some device. Tensors are always
// dense and row-major; copies share storage (use clone() for a deep copy). Images are NHWC.
// Element access (data<T>(), get, set, ...) needs host-accessible memory; to_host() and
// to_device() copy across devices, and copy_from() copies between any two.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tern/tensor/dtype.h"
#include "tern/tensor/shape.h"
#include "tern/tensor/storage.h"

namespace tern {

// The static type of a value: what shape inference computes and graphs carry.
struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string to_string() const;  // "f32[2, 3]"
};

class Tensor {
 public:
  Tensor() = default;
  // A zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  // A zero-filled tensor in `device`'s memory.
  Tensor(DType dtype, Shape shape, DeviceBackend& device);
  // A view of `storage` at `byte_offset` (must fit).
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset = 0);

  static Tensor zeros(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape)); }
  // A host tensor whose bytes are not initialized: for code that writes every element before
  // anything reads one (stacking a batch), which would otherwise pay a zero-fill pass.
  static Tensor uninitialized(DType dtype, Shape shape);
  // Every element set to `value` converted to dtype.
  static Tensor full(DType dtype, Shape shape, double value);
  static Tensor scalar(DType dtype, double value) { return full(dtype, Shape{}, value); }
  // Values converted from double, e.g. from_values(DType::kF32, {2, 2}, {1, 2, 3, 4}).
  static Tensor from_values(DType dtype, Shape shape, const std::vector<double>& values);
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  TensorType type() const { return {dtype_, shape_}; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype_); }

  // Where the storage lives; plain host tensors report cpu:0 and backend() == nullptr.
  Device device() const { return storage_->device(); }
  DeviceBackend* backend() const { return storage_->backend(); }
  bool is_host_accessible() const { return storage_->is_host_accessible(); }

  // The first byte on the tensor's device (a device pointer for an accelerator; unchecked).
  void* raw_data() { return static_cast<char*>(storage_->data()) + offset_; }
  const void* raw_data() const { return static_cast<const char*>(storage_->data()) + offset_; }
  // Typed host access; FailedPrecondition if the memory is not host-accessible.
  template <typename T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(raw_data());
  }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t byte_offset() const { return offset_; }

  // Element i (flat index) as double, and set from double; for tests, printing, small tensors
  // (host-accessible memory only).
  double get(int64_t flat_index) const;
  void set(int64_t flat_index, double value);
  std::vector<double> to_doubles() const;

  // Same storage, new shape (same element count).
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) along axis 0, sharing storage.
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // A deep copy on the same device.
  Tensor clone() const;
  // Copies `src` (same type, any device) into this tensor's memory, through the devices' copy
  // slots when either side is not host-accessible; waits for the copy.
  void copy_from(const Tensor& src);
  // This tensor if host-accessible (no copy), else a host copy.
  Tensor to_host() const;
  // This tensor if it already lives on `device`, else a copy there.
  Tensor to_device(DeviceBackend& device) const;
  Tensor cast(DType dtype) const;

  std::string to_string(int64_t max_elements = 64) const;

 private:
  void check_host(const char* what) const;
  template <typename T>
  void check_type() const {
    if (!is_host_accessible()) check_host("data");
    if (dtype_of<T>() != dtype_) {
      throw_error(ErrorCode::kInvalidArgument, "tensor of dtype ", dtype_name(dtype_),
                  " accessed as ", dtype_name(dtype_of<T>()));
    }
  }

  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw_error(ErrorCode::kInvalidArgument, "from_vector: ", values.size(), " values for shape ",
                t.shape());
  }
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

// Max |a - b| over elements (host-accessible tensors) (both converted to double); InvalidArgument
// if shapes differ.
double max_abs_diff(const Tensor& a, const Tensor& b);
// |a - b| <= atol + rtol * |b| elementwise, NaNs equal; false if shapes or dtypes differ.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
// True if the bytes are identical.
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace tern
