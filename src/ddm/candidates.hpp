#pragma once
// The candidate runs of the sort-based matchers (parallel and gpu), shared host/device code.
//
// Both sets are sorted by (cell, lower bound in the primary dimension k), where cells cut the
// secondary dimensions k2 (and k3) into equal widths no narrower than the widest region there (one
// cell in 1-D). Every intersecting pair is found exactly once:
//   from s: the updates with u.lower_k >= s.lower_k and u.lower_k inside s's range (as the rule
//           reads it), in each cell that can hold the lower corner of an update overlapping s: a
//           contiguous run per cell, found by binary search;
//   from u: the subscriptions with s.lower_k > u.lower_k and s.lower_k inside u's range, likewise.
// Every candidate is then tested with the full rule in every dimension.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/hd.hpp"
#include "ddm/model.hpp"
#include "simkit/ddm/ddm.hpp"

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

// The matching plan: primary dimension k (runs); secondary dimensions k2 and k3 cut into cells
// (k2 < 0: one cell; k3 < 0: cells are strips of k2). Cell (t2, t3) is number t2 * cells3 + t3.
template <class T>
struct Plan {
  int k = 0, k2 = -1, k3 = -1;
  T min2{}, width2{}, min3{}, width3{};  // cell t holds lower in [min + t width, min + (t + 1) width)
  std::int64_t cells2 = 1, cells3 = 1;
  T side_s2{}, side_u2{}, side_s3{}, side_u3{};  // widest subscription / update in k2 and k3
  SIMKIT_HD std::int64_t cells() const { return cells2 * cells3; }
};

// The cell along one secondary dimension that holds coordinate x.
template <class T>
SIMKIT_HD inline std::int64_t cell_of(T min, T width, std::int64_t cells, T x) {
  if (cells == 1) return 0;
  std::int64_t t;
  if constexpr (std::is_floating_point_v<T>) {
    const double q = (x - min) / width;
    t = q <= 0 ? 0 : static_cast<std::int64_t>(q);
  } else {
    t = x <= min ? 0 : static_cast<std::int64_t>((x - min) / width);
  }
  return t < cells ? t : cells - 1;
}

// The cell of a region with lower bounds x2 (in k2) and x3 (in k3).
template <class T>
SIMKIT_HD inline std::int64_t cell_of(const Plan<T>& p, T x2, T x3) {
  return cell_of(p.min2, p.width2, p.cells2, x2) * p.cells3 + cell_of(p.min3, p.width3, p.cells3, x3);
}

// Cells along one secondary dimension that can hold the lower bound of a region overlapping
// [lo, hi] there, when such regions are at most `side` wide: lower in [lo - side, hi].
template <class T>
SIMKIT_HD inline void cell_range(T min, T width, std::int64_t cells, T lo, T hi, T side, std::int64_t& first,
                                 std::int64_t& last) {
  if (cells == 1) {
    first = last = 0;
    return;
  }
  T from;
  if constexpr (std::is_floating_point_v<T>) {
    from = lo - side;
  } else {
    from = lo - min > side ? lo - side : min;
  }
  first = cell_of(min, width, cells, from);
  last = cell_of(min, width, cells, hi);
}

// One set in matching order, (cell, lower_k): index[p] is the position in the set of the p-th
// region, lo/hi its bounds (dimension-major over the sorted positions: lo[d * n + p]), so that a
// run of candidates is read from contiguous memory; strip_start[t] is the first position of cell t
// (cells + 1 entries).
template <class T, class I>
struct SortedSet {
  const I* index;
  const std::int64_t* strip_start;
  const T* lo;
  const T* hi;
  std::size_t n;
  SIMKIT_HD const T* key(int k) const { return lo + static_cast<std::size_t>(k) * n; }
};

// Calls runs(first, last) for every run of candidates of `other` (sorted positions [first, last))
// in the cells that region r of `self` can reach, as `run` gives them: the candidates still need the
// full test (for_each_candidate below does it one by one; the cpu matcher in blocks).
template <class T, class I, class Run, class Runs>
SIMKIT_HD inline void for_each_run(const Plan<T>& p, const SortedSet<T, I>& self, std::size_t r,
                                   const SortedSet<T, I>& other, T side2, T side3, Run run, Runs runs) {
  std::int64_t a2 = 0, b2 = 0, a3 = 0, b3 = 0;
  if (p.k2 >= 0)
    cell_range(p.min2, p.width2, p.cells2, self.lo[p.k2 * self.n + r], self.hi[p.k2 * self.n + r], side2, a2, b2);
  if (p.k3 >= 0)
    cell_range(p.min3, p.width3, p.cells3, self.lo[p.k3 * self.n + r], self.hi[p.k3 * self.n + r], side3, a3, b3);
  const T lo = self.lo[p.k * self.n + r], hi = self.hi[p.k * self.n + r];
  const T* key = other.key(p.k);
  for (std::int64_t t2 = a2; t2 <= b2; ++t2)
    for (std::int64_t t3 = a3; t3 <= b3; ++t3) {
      const std::int64_t t = t2 * p.cells3 + t3;
      std::size_t first, last;
      run(key, static_cast<std::size_t>(other.strip_start[t]), static_cast<std::size_t>(other.strip_start[t + 1]), lo,
          hi, first, last);
      if (first < last) runs(first, last);
    }
}

// Calls visit(q) for every region of `other` (sorted position q) in the cells that region r of
// `self` can reach, within the run that `run` gives, and that intersects it. `self_is_s` orders
// the arguments of the full test (subscription first).
template <bool kSelfIsS, class T, class I, class Run, class Visit>
SIMKIT_HD inline void for_each_candidate(Rule rule, int dims, const Plan<T>& p, const SortedSet<T, I>& self,
                                         std::size_t r, const SortedSet<T, I>& other, T side2, T side3, Run run,
                                         Visit visit) {
  for_each_run(p, self, r, other, side2, side3, run, [&](std::size_t first, std::size_t last) {
    for (std::size_t q = first; q < last; ++q) {
      const bool hit = kSelfIsS ? intersects(rule, dims, self.lo, self.hi, self.n, r, other.lo, other.hi, other.n, q)
                                : intersects(rule, dims, other.lo, other.hi, other.n, q, self.lo, self.hi, self.n, r);
      if (hit) visit(q);
    }
  });
}

// The runs from a subscription's side and from an update's side (the run functions above).
template <class T>
struct RunFromSubscription {
  Rule rule;
  SIMKIT_HD void operator()(const T* key, std::size_t b, std::size_t e, T lo, T hi, std::size_t& first,
                            std::size_t& last) const {
    run_from_subscription(rule, key, b, e, lo, hi, first, last);
  }
};
template <class T>
struct RunFromUpdate {
  Rule rule;
  SIMKIT_HD void operator()(const T* key, std::size_t b, std::size_t e, T lo, T hi, std::size_t& first,
                            std::size_t& last) const {
    run_from_update(rule, key, b, e, lo, hi, first, last);
  }
};

// Calls visit(q) for every update at sorted position q that intersects the subscription at sorted
// position r and is found from the subscription's side.
template <class T, class I, class Visit>
SIMKIT_HD inline void for_each_from_subscription(Rule rule, int dims, const Plan<T>& p, const SortedSet<T, I>& ss,
                                                 std::size_t r, const SortedSet<T, I>& su, Visit visit) {
  for_each_candidate<true>(rule, dims, p, ss, r, su, p.side_u2, p.side_u3, RunFromSubscription<T>{rule}, visit);
}

// Calls visit(q) for every subscription at sorted position q that intersects the update at sorted
// position r and is found from the update's side.
template <class T, class I, class Visit>
SIMKIT_HD inline void for_each_from_update(Rule rule, int dims, const Plan<T>& p, const SortedSet<T, I>& ss,
                                           const SortedSet<T, I>& su, std::size_t r, Visit visit) {
  for_each_candidate<false>(rule, dims, p, su, r, ss, p.side_s2, p.side_s3, RunFromUpdate<T>{rule}, visit);
}

// A run is exactly the rule's condition on the other side's lower bounds in the primary dimension,
// so every candidate in it overlaps the region there, except, from a subscription's side under the
// half-open rule, zero-length updates at the subscription's lower bound: run_decides_primary says
// when the primary dimension needs no test. In one dimension the run's length is then the count and
// no candidate needs reading: counts_by_run says when, the two functions below give the counts.
SIMKIT_HD inline bool run_decides_primary(Rule rule, bool from_subscription) {
  return !(from_subscription && rule == Rule::HalfOpen);
}
SIMKIT_HD inline bool counts_by_run(Rule rule, int dims, bool from_subscription) {
  return dims == 1 && run_decides_primary(rule, from_subscription);
}
template <class T, class I>
SIMKIT_HD inline std::size_t run_count_from_subscription(Rule rule, const SortedSet<T, I>& ss, std::size_t r,
                                                         const SortedSet<T, I>& su) {
  std::size_t first, last;
  run_from_subscription(rule, su.key(0), static_cast<std::size_t>(su.strip_start[0]),
                        static_cast<std::size_t>(su.strip_start[1]), ss.lo[r], ss.hi[r], first, last);
  return last - first;
}
template <class T, class I>
SIMKIT_HD inline std::size_t run_count_from_update(Rule rule, const SortedSet<T, I>& ss, const SortedSet<T, I>& su,
                                                   std::size_t r) {
  std::size_t first, last;
  run_from_update(rule, ss.key(0), static_cast<std::size_t>(ss.strip_start[0]),
                  static_cast<std::size_t>(ss.strip_start[1]), su.lo[r], su.hi[r], first, last);
  return last - first;
}

}  // namespace simkit::ddm::detail
