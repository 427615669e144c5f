#pragma once
// The overlap rules, shared by every matcher and backend (SIMKIT_HD).
#include "core/hd.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

// Ranges [a_lo, a_hi] and [b_lo, b_hi] (lo <= hi) overlap under `rule` (ddm.hpp).
template <class T>
SIMKIT_HD inline bool overlaps(Rule rule, T a_lo, T a_hi, T b_lo, T b_hi) {
  switch (rule) {
    case Rule::Closed:
      return a_lo <= b_hi && b_lo <= a_hi;
    case Rule::HalfOpen:
      return a_lo < b_hi && b_lo < a_hi;
    default:
      return a_lo == b_lo || (a_lo < b_hi && b_lo < a_hi);
  }
}

// Region i of `s` and region j of `u` (dimension-major arrays of sizes ns and nu) intersect.
template <class T>
SIMKIT_HD inline bool intersects(Rule rule, int dims, const T* s_lo, const T* s_hi, std::size_t ns, std::size_t i,
                                 const T* u_lo, const T* u_hi, std::size_t nu, std::size_t j) {
  for (int d = 0; d < dims; ++d) {
    const std::size_t a = static_cast<std::size_t>(d) * ns + i, b = static_cast<std::size_t>(d) * nu + j;
    if (!overlaps(rule, s_lo[a], s_hi[a], u_lo[b], u_hi[b])) return false;
  }
  return true;
}

}  // namespace simkit::ddm
