#pragma once
// One dimension of a region set sorted by lower bound (ties by position), for the sort-based
// matchers; the sort is parallel (libstdc++ parallel mode over OpenMP) and its result unique.
#include <cstdint>
#include <vector>

#include "ddm/ddm.hpp"

namespace simkit::ddm::detail {

template <class T>
struct SortedDim {
  std::vector<T> lower;              // sorted
  std::vector<std::uint64_t> index;  // position in the set of each sorted entry
};

template <class T>
SortedDim<T> sort_by_lower(const RegionView<T>& r, int d, int threads);

// Candidates of the two runs (candidates.hpp) summed over both sets: the work of matching with
// dimension `d` chosen; the matchers pick the dimension with the fewest.
template <class T>
std::uint64_t candidates(Rule rule, const SortedDim<T>& s, const SortedDim<T>& u, const RegionView<T>& sv,
                         const RegionView<T>& uv, int d, int threads);

}  // namespace simkit::ddm::detail
