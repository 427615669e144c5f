// Sort-Based Matching (Raczy et al.; Marzolla & D'Angelo, "Parallel Sort-Based Matching for Data
// Distribution Management on Shared-Memory Multiprocessors", DS-RT 2017), serial.
//
// All 2(|S| + |U|) endpoints of dimension 0 are sorted and swept in order, keeping the sets of
// currently open subscriptions and updates. When a region opens, every open region of the other
// set is a candidate, tested with the full rule in every dimension.
//
// The sweep finds the pairs whose dimension-0 ranges overlap as closed ranges (a superset of all
// three rules): at equal coordinates every opening comes before every closing, so touching ranges
// ([a, b] and [b, c]) and zero-length ranges ([b, b]) are open together at b. A pair is found
// exactly once, when the second of the two opens (the first is still open: it closes at or after
// the second's lower bound); the full test then applies the rule exactly, ties included.
// O(N log N + candidates).
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "ddm/kernels.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::detail {

namespace {

// A set of region positions with O(1) insert and erase (swap-remove with a position index).
class ActiveSet {
 public:
  explicit ActiveSet(std::size_t n) : where_(n, kAbsent) {}
  void insert(std::size_t i) {
    where_[i] = members_.size();
    members_.push_back(i);
  }
  void erase(std::size_t i) {
    const std::size_t at = where_[i], last = members_.back();
    members_[at] = last;
    where_[last] = at;
    members_.pop_back();
    where_[i] = kAbsent;
  }
  const std::vector<std::size_t>& members() const { return members_; }

 private:
  static constexpr std::size_t kAbsent = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> where_;
  std::vector<std::size_t> members_;
};

// One endpoint: its coordinate, the region's position and whether the region is an update.
template <class T>
struct Endpoint {
  T x;
  std::size_t index;
  bool update;
};

template <class T>
std::vector<Endpoint<T>> sorted_endpoints(const RegionView<T>& s, const RegionView<T>& u, bool upper) {
  std::vector<Endpoint<T>> e;
  e.reserve(s.size + u.size);
  for (std::size_t i = 0; i < s.size; ++i) e.push_back({upper ? s.hi(i, 0) : s.lo(i, 0), i, false});
  for (std::size_t j = 0; j < u.size; ++j) e.push_back({upper ? u.hi(j, 0) : u.lo(j, 0), j, true});
  std::sort(e.begin(), e.end(), [](const Endpoint<T>& a, const Endpoint<T>& b) { return a.x < b.x; });
  return e;
}

}  // namespace

template <class T>
void sort_based(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out) {
  if (s.size == 0 || u.size == 0) return;
  const int dims = s.dims;
  // The sorted lower bounds (openings) and upper bounds (closings) of both sets, merged below.
  const std::vector<Endpoint<T>> opens = sorted_endpoints(s, u, false), closes = sorted_endpoints(s, u, true);
  ActiveSet open_s(s.size), open_u(u.size);
  std::size_t a = 0;
  for (const Endpoint<T>& close : closes) {
    // Every opening at or before this closing's coordinate comes first (opens before closes at
    // equal coordinates). Every region opens before it closes, since lower <= upper.
    for (; a < opens.size() && !(close.x < opens[a].x); ++a) {
      const Endpoint<T>& e = opens[a];
      if (e.update) {
        const std::size_t j = e.index;
        for (const std::size_t i : open_s.members())
          if (intersects(rule, dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) out.emit(i, j);
        open_u.insert(j);
      } else {
        const std::size_t i = e.index;
        for (const std::size_t j : open_u.members())
          if (intersects(rule, dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) out.emit(i, j);
        open_s.insert(i);
      }
    }
    if (close.update) {
      open_u.erase(close.index);
    } else {
      open_s.erase(close.index);
    }
  }
}

template void sort_based<std::uint32_t>(const RegionView<std::uint32_t>&, const RegionView<std::uint32_t>&, Rule,
                                        Collector&);
template void sort_based<std::uint64_t>(const RegionView<std::uint64_t>&, const RegionView<std::uint64_t>&, Rule,
                                        Collector&);
template void sort_based<double>(const RegionView<double>&, const RegionView<double>&, Rule, Collector&);

}  // namespace simkit::ddm::detail
