// Element helpers: byte tensors, signatures, stacking and row extraction.
#include "tern/data/element.h"

#include <cstring>

#include "tern/base/error.h"

namespace tern::data {

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
    TERN_CHECK_ARG(e.size() == first.size(), what, ": element ", i, " has ", e.size(),
                   " components but element 0 has ", first.size());
    for (size_t k = 0; k < e.size(); ++k) {
      TERN_CHECK_ARG(e[k].defined() && e[k].type() == first[k].type(), what, ": component ", k,
                     " of element ", i, " is ", element_signature({e[k]}), " but element 0 has ",
                     element_signature({first[k]}), " (use padded_batch for varying shapes)");
    }
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Element out;
  out.reserve(first.size());
  for (size_t k = 0; k < first.size(); ++k) {
    std::vector<int64_t> dims{n};
    const auto& inner = first[k].shape().dims();
    dims.insert(dims.end(), inner.begin(), inner.end());
    Tensor stacked(first[k].dtype(), Shape(std::move(dims)));
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
  for (const Tensor& t : batch) {
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    out.push_back(t.slice_rows(row, row + 1).reshape(Shape(std::move(dims))));
  }
  return out;
}

}  // namespace tern::data
