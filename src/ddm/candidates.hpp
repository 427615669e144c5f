#pragma once
// The candidate runs of the sort-based matchers (parallel and gpu). With both sets sorted by
// lower bound in one dimension, every intersecting pair is found exactly once:
//   from s: the updates with u.lower >= s.lower and u.lower inside s's range (as the rule reads
//           it), a contiguous run of the sorted updates;
//   from u: the subscriptions with s.lower > u.lower and s.lower inside u's range, a contiguous
//           run of the sorted subscriptions.
// Every candidate is then tested with the full rule in every dimension.
#include <cstddef>

#include "core/hd.hpp"
#include "ddm/ddm.hpp"

namespace simkit::ddm::detail {

// First position in sorted keys[0, n) with keys[p] >= x (lower_bound) or > x (upper_bound).
template <class T>
SIMKIT_HD inline std::size_t lower_bound_of(const T* keys, std::size_t n, T x) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
template <class T>
SIMKIT_HD inline std::size_t upper_bound_of(const T* keys, std::size_t n, T x) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (!(x < keys[mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The run of sorted updates (by lower, `u_lower`) that subscription [lo, hi] looks at: u.lower in
// [lo, hi] (closed), in [lo, hi) or equal to lo (ieee1516 and half-open; half-open's zero-length
// exceptions are settled by the full test).
template <class T>
SIMKIT_HD inline void run_from_subscription(Rule rule, const T* u_lower, std::size_t nu, T lo, T hi, std::size_t& begin,
                                            std::size_t& end) {
  begin = lower_bound_of(u_lower, nu, lo);
  if (rule == Rule::Closed) {
    end = upper_bound_of(u_lower, nu, hi);
  } else {
    const std::size_t a = lower_bound_of(u_lower, nu, hi), b = upper_bound_of(u_lower, nu, lo);
    end = a > b ? a : b;
  }
  if (end < begin) end = begin;
}

// The run of sorted subscriptions (by lower, `s_lower`) that update [lo, hi] looks at: s.lower in
// (lo, hi] (closed) or (lo, hi) (the others).
template <class T>
SIMKIT_HD inline void run_from_update(Rule rule, const T* s_lower, std::size_t ns, T lo, T hi, std::size_t& begin,
                                      std::size_t& end) {
  begin = upper_bound_of(s_lower, ns, lo);
  end = rule == Rule::Closed ? upper_bound_of(s_lower, ns, hi) : lower_bound_of(s_lower, ns, hi);
  if (end < begin) end = begin;
}

}  // namespace simkit::ddm::detail
