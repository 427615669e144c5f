// Interval Tree Matching (Marzolla & D'Angelo, ITM), serial.
//
// A static interval tree over the updates' dimension-0 ranges: the updates sorted by lower bound
// form an implicit balanced binary search tree (the root of positions [l, r) is (l + r) / 2),
// each node augmented with the largest upper bound in its subtree. Every subscription queries it
// with its dimension-0 range [a, b] for the updates that overlap it as closed ranges
// (u.lower <= b and u.upper >= a, a superset of all three rules, so ties and zero-length ranges
// are never missed), and every hit is tested with the full rule in every dimension. A query
// visits each update at most once, so each pair is reported once. O((N + K) log N).
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "ddm/kernels.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::detail {

namespace {

template <class T>
class IntervalTree {
 public:
  explicit IntervalTree(const RegionView<T>& u) : index_(u.size), lower_(u.size), upper_(u.size), max_upper_(u.size) {
    std::iota(index_.begin(), index_.end(), std::size_t{0});
    std::sort(index_.begin(), index_.end(), [&](std::size_t a, std::size_t b) { return u.lo(a, 0) < u.lo(b, 0); });
    for (std::size_t p = 0; p < index_.size(); ++p) {
      lower_[p] = u.lo(index_[p], 0);
      upper_[p] = u.hi(index_[p], 0);
    }
    build(0, index_.size());
  }

  // Calls visit(j) for every update j with u.lower <= b and u.upper >= a in dimension 0.
  template <class Visit>
  void query(T a, T b, Visit&& visit) const {
    query(0, index_.size(), a, b, visit);
  }

 private:
  // Fills max_upper_ for the subtree of positions [l, r) and returns its maximum (l < r).
  T build(std::size_t l, std::size_t r) {
    const std::size_t m = l + (r - l) / 2;
    T top = upper_[m];
    if (l < m) top = std::max(top, build(l, m));
    if (m + 1 < r) top = std::max(top, build(m + 1, r));
    max_upper_[m] = top;
    return top;
  }

  template <class Visit>
  void query(std::size_t l, std::size_t r, T a, T b, Visit& visit) const {
    // The depth is log2 of the update count, so the recursion stays shallow.
    while (l < r) {
      const std::size_t m = l + (r - l) / 2;
      if (max_upper_[m] < a) return;  // nothing in this subtree reaches a
      query(l, m, a, b, visit);
      if (b < lower_[m]) return;  // m and everything after it start past b
      if (!(upper_[m] < a)) visit(index_[m]);
      l = m + 1;  // the right subtree, iteratively
    }
  }

  std::vector<std::size_t> index_;  // update position of the p-th smallest lower bound
  std::vector<T> lower_, upper_;    // dimension-0 bounds in that order
  std::vector<T> max_upper_;        // largest upper bound in the subtree rooted at p
};

}  // namespace

template <class T>
void interval_tree(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out) {
  if (s.size == 0 || u.size == 0) return;
  const IntervalTree<T> tree(u);
  const int dims = s.dims;
  for (std::size_t i = 0; i < s.size; ++i) {
    tree.query(s.lo(i, 0), s.hi(i, 0), [&](std::size_t j) {
      if (intersects(rule, dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) out.emit(i, j);
    });
  }
}

template void interval_tree<std::uint32_t>(const RegionView<std::uint32_t>&, const RegionView<std::uint32_t>&, Rule,
                                           Collector&);
template void interval_tree<std::uint64_t>(const RegionView<std::uint64_t>&, const RegionView<std::uint64_t>&, Rule,
                                           Collector&);
template void interval_tree<double>(const RegionView<double>&, const RegionView<double>&, Rule, Collector&);

}  // namespace simkit::ddm::detail
