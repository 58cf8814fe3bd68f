// Attribute values: kinds, equality, hashing, printing.
#include "tern/ops/attrs.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iomanip>
#include <sstream>

namespace tern::ops {

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kBool:
      return "bool";
    case AttrKind::kString:
      return "string";
    case AttrKind::kInts:
      return "ints";
    case AttrKind::kFloats:
      return "floats";
    case AttrKind::kDType:
      return "dtype";
    case AttrKind::kTensor:
      return "tensor";
  }
  return "?";
}

AttrKind attr_kind_of(const AttrValue& v) {
  return static_cast<AttrKind>(v.index());
}

bool attr_value_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const Tensor* ta = std::get_if<Tensor>(&a)) {
    const Tensor& tb = std::get<Tensor>(b);
    return bitwise_equal(*ta, tb);
  }
  if (const double* da = std::get_if<double>(&a)) {
    double db = std::get<double>(b);
    return std::memcmp(da, &db, sizeof(double)) == 0;
  }
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return false;  // handled above
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

size_t attr_value_hash(const AttrValue& v) {
  size_t h = std::hash<size_t>()(v.index());
  auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          mix(std::hash<std::string_view>()(
              std::string_view(static_cast<const char*>(x.raw_data()), x.nbytes())));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t e : x) mix(std::hash<int64_t>()(e));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          for (double e : x) mix(std::hash<double>()(e));
        } else if constexpr (std::is_same_v<T, DType>) {
          mix(static_cast<size_t>(x));
        } else {
          mix(std::hash<T>()(x));
        }
      },
      v);
  return h;
}

std::string attr_value_to_string(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, double>) {
          os << std::setprecision(17) << x;
          std::string s = os.str();
          if (s.find_first_of(".eEn") == std::string::npos) os << ".0";  // keep it a float
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << std::quoted(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << "]";
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          os << "[" << std::setprecision(17);
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << "]f";
        } else if constexpr (std::is_same_v<T, DType>) {
          os << dtype_name(x);
        } else {
          os << x.to_string(8);
        }
      },
      v);
  return os.str();
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

Attrs& Attrs::set(std::string_view name, AttrValue value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, std::string_view n) { return item.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.insert(it, {std::string(name), std::move(value)});
  }
  return *this;
}

const AttrValue* Attrs::find(std::string_view name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, std::string_view n) { return item.first < n; });
  if (it != items_.end() && it->first == name) return &it->second;
  return nullptr;
}

const AttrValue& Attrs::at(std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) throw_error(ErrorCode::kNotFound, "attribute '", name, "' is not set");
  return *v;
}

template <typename T>
const T& Attrs::get(std::string_view name) const {
  const AttrValue& v = at(name);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw_error(ErrorCode::kInvalidArgument, "attribute '", name, "' is ",
              attr_kind_name(attr_kind_of(v)), ", not ",
              attr_kind_name(attr_kind_of(AttrValue(T{}))));
}

template const int64_t& Attrs::get<int64_t>(std::string_view) const;
template const double& Attrs::get<double>(std::string_view) const;
template const bool& Attrs::get<bool>(std::string_view) const;
template const std::string& Attrs::get<std::string>(std::string_view) const;
template const std::vector<int64_t>& Attrs::get<std::vector<int64_t>>(std::string_view) const;
template const std::vector<double>& Attrs::get<std::vector<double>>(std::string_view) const;
template const DType& Attrs::get<DType>(std::string_view) const;
template const Tensor& Attrs::get<Tensor>(std::string_view) const;

bool Attrs::operator==(const Attrs& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].first != o.items_[i].first) return false;
    if (!attr_value_equal(items_[i].second, o.items_[i].second)) return false;
  }
  return true;
}

size_t Attrs::hash() const {
  size_t h = 0;
  for (const auto& [k, v] : items_) {
    h ^= std::hash<std::string>()(k) * 31 + attr_value_hash(v) + 0x9e3779b9 + (h << 6) + (h >> 2);
  }
  return h;
}

}  // namespace tern::ops
