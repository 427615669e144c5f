#pragma once
// The sort-based matchers' plan (candidates.hpp): which dimension gives the runs, which the
// strips, and how wide the strips are; made from per-dimension statistics of the bounds, gathered
// on the host (make_plan, cpu matcher) or on the device (the GPU matcher, cuda.cu).
#include <limits>
#include <vector>

#include "ddm/candidates.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm::detail {

// Primary k: the dimension with the fewest expected candidates, |S| |U| (mean side of S + mean
// side of U) / extent; secondary k2 and k3: the next ones (d >= 2, d >= 3), cut into cells at least
// as wide as the widest region there, about (|S| + |U|) / 8 cells in all.
template <class T>
Plan<T> make_plan(const RegionView<T>& s, const RegionView<T>& u, int threads);

// One set's bounds in one dimension, summarised: what the plan is made from.
template <class T>
struct DimStats {
  T min = std::numeric_limits<T>::max();     // smallest lower bound
  T max = std::numeric_limits<T>::lowest();  // largest upper bound
  T widest = T(0);                           // largest upper - lower
  double side_sum = 0;                       // sum of upper - lower
};

// The plan from both sets' statistics (one entry per dimension) and sizes; make_plan gathers them
// on the host, the GPU matcher on the device.
template <class T>
Plan<T> plan_from_stats(const std::vector<DimStats<T>>& s, const std::vector<DimStats<T>>& u, std::size_t ns,
                        std::size_t nu);

// out[q] = {s[q], u[q]} for q < n, on every host thread (the GPU matchers' pairs, 32-bit
// positions on the device, widened for the sink).
void widen_pairs(const unsigned* s, const unsigned* u, std::size_t n, Match* out);
// The same in slices of at most 65536 pairs, each widened into `out` and handed to `sink` by one of
// `threads` threads (worker = its index); the first exception is rethrown afterwards.
void widen_pairs_concurrently(const unsigned* s, const unsigned* u, std::size_t n, Match* out,
                              const ConcurrentSink& sink, int threads);

}  // namespace simkit::ddm::detail
