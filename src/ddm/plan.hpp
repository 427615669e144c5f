#pragma once
// The sort-based matchers' plan (candidates.hpp): which dimension gives the runs, which the
// strips, and how wide the strips are; computed on the host in one parallel pass over the bounds.
#include "ddm/candidates.hpp"
#include "ddm/ddm.hpp"

namespace simkit::ddm::detail {

// Primary k: the dimension with the fewest expected candidates, |S| |U| (mean side of S + mean
// side of U) / extent; secondary k2 and k3: the next ones (d >= 2, d >= 3), cut into cells at least
// as wide as the widest region there, about (|S| + |U|) / 8 cells in all.
template <class T>
Plan<T> make_plan(const RegionView<T>& s, const RegionView<T>& u, int threads);

}  // namespace simkit::ddm::detail
