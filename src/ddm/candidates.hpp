#pragma once
// The candidate runs of the sort-based matchers (parallel and gpu), shared host/device code.
//
// Both sets are sorted by (strip, lower bound in the primary dimension k), where strips cut the
// secondary dimension k2 into equal widths no narrower than the widest region there (one strip in
// 1-D). Every intersecting pair is found exactly once:
//   from s: the updates with u.lower_k >= s.lower_k and u.lower_k inside s's range (as the rule
//           reads it), in each strip that can hold a u.lower_k2 overlapping s: a contiguous run per
//           strip, found by binary search;
//   from u: the subscriptions with s.lower_k > u.lower_k and s.lower_k inside u's range, likewise.
// Every candidate is then tested with the full rule in every dimension.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/hd.hpp"
#include "ddm/ddm.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::detail {

// First position in sorted keys[begin, end) with keys[p] >= x (lower) or > x (upper).
template <class T>
SIMKIT_HD inline std::size_t lower_bound_of(const T* keys, std::size_t begin, std::size_t end, T x) {
  while (begin < end) {
    const std::size_t mid = begin + (end - begin) / 2;
    if (keys[mid] < x) {
      begin = mid + 1;
    } else {
      end = mid;
    }
  }
  return begin;
}
template <class T>
SIMKIT_HD inline std::size_t upper_bound_of(const T* keys, std::size_t begin, std::size_t end, T x) {
  while (begin < end) {
    const std::size_t mid = begin + (end - begin) / 2;
    if (!(x < keys[mid])) {
      begin = mid + 1;
    } else {
      end = mid;
    }
  }
  return begin;
}

// Updates (sorted by lower_k in [begin, end)) that subscription [lo, hi] looks at: u.lower in
// [lo, hi] (closed), in [lo, hi) or equal to lo (ieee1516 and half-open; half-open's zero-length
// exceptions are settled by the full test).
template <class T>
SIMKIT_HD inline void run_from_subscription(Rule rule, const T* u_lower, std::size_t begin, std::size_t end, T lo, T hi,
                                            std::size_t& first, std::size_t& last) {
  first = lower_bound_of(u_lower, begin, end, lo);
  if (rule == Rule::Closed) {
    last = upper_bound_of(u_lower, first, end, hi);
  } else {
    const std::size_t a = lower_bound_of(u_lower, first, end, hi), b = upper_bound_of(u_lower, first, end, lo);
    last = a > b ? a : b;
  }
}

// Subscriptions (sorted by lower_k) that update [lo, hi] looks at: s.lower in (lo, hi] (closed) or
// (lo, hi) (the others).
template <class T>
SIMKIT_HD inline void run_from_update(Rule rule, const T* s_lower, std::size_t begin, std::size_t end, T lo, T hi,
                                      std::size_t& first, std::size_t& last) {
  first = upper_bound_of(s_lower, begin, end, lo);
  last = rule == Rule::Closed ? upper_bound_of(s_lower, first, end, hi) : lower_bound_of(s_lower, first, end, hi);
  if (last < first) last = first;
}

// The matching plan: primary dimension k (runs), secondary k2 (strips; -1: one strip).
template <class T>
struct Plan {
  int k = 0, k2 = -1;
  T min2{}, width{};  // strip t holds lower_k2 in [min2 + t width, min2 + (t + 1) width)
  std::int64_t strips = 1;
  T side_s2{}, side_u2{};  // widest subscription / update in k2
};

template <class T>
SIMKIT_HD inline std::int64_t strip_of(const Plan<T>& p, T x) {
  if (p.strips == 1) return 0;
  std::int64_t t;
  if constexpr (std::is_floating_point_v<T>) {
    const double q = (x - p.min2) / p.width;
    t = q <= 0 ? 0 : static_cast<std::int64_t>(q);
  } else {
    t = x <= p.min2 ? 0 : static_cast<std::int64_t>((x - p.min2) / p.width);
  }
  return t < p.strips ? t : p.strips - 1;
}

// Strips of the other set that can hold a lower_k2 of a region overlapping [lo, hi] in k2, when
// that set's regions are at most `side` wide there: lower_k2 in [lo - side, hi].
template <class T>
SIMKIT_HD inline void strip_range(const Plan<T>& p, T lo, T hi, T side, std::int64_t& first, std::int64_t& last) {
  if (p.strips == 1) {
    first = last = 0;
    return;
  }
  T from;
  if constexpr (std::is_floating_point_v<T>) {
    from = lo - side;
  } else {
    from = lo - p.min2 > side ? lo - side : p.min2;
  }
  first = strip_of(p, from);
  last = strip_of(p, hi);
}

// One set in matching order, (strip, lower_k): index[p] is the position in the set of the p-th
// region, lo/hi its bounds (dimension-major over the sorted positions: lo[d * n + p]), so that a
// run of candidates is read from contiguous memory; strip_start[t] is the first position of strip
// t (strips + 1 entries).
template <class T, class I>
struct SortedSet {
  const I* index;
  const std::int64_t* strip_start;
  const T* lo;
  const T* hi;
  std::size_t n;
  SIMKIT_HD const T* key(int k) const { return lo + static_cast<std::size_t>(k) * n; }
};

// Calls visit(q) for every update at sorted position q that intersects the subscription at sorted
// position r and is found from the subscription's side.
template <class T, class I, class Visit>
SIMKIT_HD inline void for_each_from_subscription(Rule rule, int dims, const Plan<T>& p, const SortedSet<T, I>& ss,
                                                 std::size_t r, const SortedSet<T, I>& su, Visit visit) {
  std::int64_t t0 = 0, t1 = 0;
  if (p.k2 >= 0) strip_range(p, ss.lo[p.k2 * ss.n + r], ss.hi[p.k2 * ss.n + r], p.side_u2, t0, t1);
  const T lo = ss.lo[p.k * ss.n + r], hi = ss.hi[p.k * ss.n + r];
  const T* key = su.key(p.k);
  for (std::int64_t t = t0; t <= t1; ++t) {
    std::size_t first, last;
    run_from_subscription(rule, key, static_cast<std::size_t>(su.strip_start[t]),
                          static_cast<std::size_t>(su.strip_start[t + 1]), lo, hi, first, last);
    for (std::size_t q = first; q < last; ++q)
      if (intersects(rule, dims, ss.lo, ss.hi, ss.n, r, su.lo, su.hi, su.n, q)) visit(q);
  }
}

// Calls visit(q) for every subscription at sorted position q that intersects the update at sorted
// position r and is found from the update's side.
template <class T, class I, class Visit>
SIMKIT_HD inline void for_each_from_update(Rule rule, int dims, const Plan<T>& p, const SortedSet<T, I>& ss,
                                           const SortedSet<T, I>& su, std::size_t r, Visit visit) {
  std::int64_t t0 = 0, t1 = 0;
  if (p.k2 >= 0) strip_range(p, su.lo[p.k2 * su.n + r], su.hi[p.k2 * su.n + r], p.side_s2, t0, t1);
  const T lo = su.lo[p.k * su.n + r], hi = su.hi[p.k * su.n + r];
  const T* key = ss.key(p.k);
  for (std::int64_t t = t0; t <= t1; ++t) {
    std::size_t first, last;
    run_from_update(rule, key, static_cast<std::size_t>(ss.strip_start[t]),
                    static_cast<std::size_t>(ss.strip_start[t + 1]), lo, hi, first, last);
    for (std::size_t q = first; q < last; ++q)
      if (intersects(rule, dims, ss.lo, ss.hi, ss.n, q, su.lo, su.hi, su.n, r)) visit(q);
  }
}

}  // namespace simkit::ddm::detail
