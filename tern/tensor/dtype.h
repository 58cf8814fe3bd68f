// DType: the element types a tensor can hold, the 16-bit float types, and dispatch from a runtime
// DType to a template over the C++ element type.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tern/base/error.h"

namespace tern {

enum class DType : uint8_t { kF32, kF64, kBF16, kF16, kI8, kU8, kI32, kI64, kBool };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kBF16,
                                       DType::kF16, DType::kI8,  DType::kU8,
                                       DType::kI32, DType::kI64, DType::kBool};

std::string_view dtype_name(DType dtype);  // "f32", "bf16", ...
// Parses "f32"/"float32", "bf16"/"bfloat16", ...; InvalidArgument naming the text otherwise.
DType parse_dtype(std::string_view text);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
bool is_integer(DType dtype);  // signed or unsigned integers, not bool

// --- 16-bit floats ---

// bfloat16: the top 16 bits of an IEEE f32. Conversion from f32 rounds to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(from_float(f)) {}
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  // Branch-free (a NaN is kept quiet by a select), so loops storing bf16 vectorize: an early
  // return for NaN kept GCC from vectorizing batch norm's bf16 output pass.
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
  // f rounded to the nearest bf16 value, as an f32 (the value a bf16 tensor would hold, widened).
  static float round(float f) {
    const uint32_t u = static_cast<uint32_t>(from_float(f)) << 16;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
  }
};

// IEEE binary16. Conversion from f32 rounds to nearest even, with subnormals and infinities.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// The type ops compute in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<bfloat16> {
  using type = float;
};
template <>
struct ComputeType<float16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

template <typename T>
inline T from_compute(compute_t<T> v) {
  return static_cast<T>(v);
}

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kF64;
}
template <>
constexpr DType dtype_of<bfloat16>() {
  return DType::kBF16;
}
template <>
constexpr DType dtype_of<float16>() {
  return DType::kF16;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::kI8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}

// Calls fn(T{}) with T the element type of `dtype`.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
    case DType::kBF16:
      return fn(bfloat16{});
    case DType::kF16:
      return fn(float16{});
    case DType::kI8:
      return fn(int8_t{});
    case DType::kU8:
      return fn(uint8_t{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kBool:
      return fn(bool{});
  }
  throw_error(ErrorCode::kInternal, "bad dtype value ", static_cast<int>(dtype));
}

// Same, restricted to floating types; other dtypes throw InvalidArgument naming `what`.
template <typename Fn>
decltype(auto) dispatch_float(DType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(float{});
    case DType::kF64:
      return fn(double{});
    case DType::kBF16:
      return fn(bfloat16{});
    case DType::kF16:
      return fn(float16{});
    default:
      break;
  }
  throw_error(ErrorCode::kInvalidArgument, what, ": dtype ", dtype_name(dtype),
              " is not a floating type");
}

}  // namespace tern
