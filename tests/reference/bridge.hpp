// Bridges trine tensors to the reference oracle, and measures a result against it: the one
// definition of the error the tests bound and the tour prints.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "tests/reference/reference.hpp"
#include "trine/tensor.hpp"

namespace trine::ref {

// The tensor's values as the oracle sees them: row-major, converted to f32 then double.
// An undefined tensor is an absent optional input.
inline Array from_tensor(const Tensor& t) {
  if (!t.defined()) return absent();
  Array a;
  a.shape.assign(t.shape().dims().begin(), t.shape().dims().end());
  auto v = t.to_vector();
  a.data.assign(v.begin(), v.end());
  return a;
}

struct Comparison {
  double nmse = 0;             // sum (out - ref)^2 / sum ref^2 over elements finite on both sides
  double max_abs = 0;          // largest |out - ref| over the same elements
  bool specials_match = true;  // NaN where the reference has NaN, the same inf where it has inf
  std::string first_mismatch;  // where specials differ, or the worst element
};

inline Comparison compare(const std::vector<float>& out, const Array& expect) {
  Comparison c;
  double err = 0, norm = 0, worst = -1;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double r = expect.data[i];
    const double o = out[i];
    if (!std::isfinite(r) || !std::isfinite(o)) {
      const bool same = (std::isnan(r) && std::isnan(o)) || r == o;  // r == o: the same infinity
      if (!same && c.specials_match) {
        c.specials_match = false;
        std::ostringstream s;
        s << "element " << i << ": got " << o << ", reference " << r;
        c.first_mismatch = s.str();
      }
      continue;
    }
    const double d = (o - r) * (o - r);
    err += d;
    norm += r * r;
    if (d > worst) {
      worst = d;
      worst_i = i;
    }
  }
  c.nmse = norm > 0 ? err / norm : err;
  if (worst >= 0) c.max_abs = std::sqrt(worst);
  if (c.specials_match && worst >= 0) {
    std::ostringstream s;
    s << "worst element " << worst_i << ": got " << out[worst_i] << ", reference " << expect.data[worst_i];
    c.first_mismatch = s.str();
  }
  return c;
}

}  // namespace trine::ref
