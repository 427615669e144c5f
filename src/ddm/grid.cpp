// Grid-based matching, serial.
//
// The dimension-0 extent [min lower, max upper] of both sets is cut into about (|S| + |U|) / 4
// equal cells; every region is registered in each cell its dimension-0 range touches, and the
// pairs registered together in a cell are tested with the full rule in every dimension.
//
// Each pair is reported only in the one cell holding max(s.lower, u.lower) in dimension 0. Cells
// come from a monotone map x -> cell(x), so that cell is max(cell(s.lower), cell(u.lower)), and a
// pair whose dimension-0 ranges overlap as closed ranges (a superset of all three rules, ties and
// zero-length ranges included) is registered there: max lower <= min upper. So in each cell only
// the pairs in which at least one region starts there are looked at: subscriptions starting in the
// cell against every update in it, then updates starting in the cell against the subscriptions
// that started in an earlier cell. This is the same result as testing every pair in the cell and
// keeping the pairs that cell owns, without the pairs that another cell owns.
//
// Memory: a region is registered in every cell its range touches, so wide regions cost one entry
// per cell spanned (that is the algorithm). To keep a few very wide regions from exhausting
// memory, the cell count is halved while the registrations would exceed kEntriesPerRegion per
// region (plus a fixed allowance); with one cell everything is registered once and grid is brute
// force over the candidates.
//
// Coordinates are never converted: integer cells come from integer division of (x - min) by an
// integer width; doubles are halved before subtracting so that no finite extent overflows, and
// infinite bounds go to the first or last cell.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ddm/kernels.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::detail {

namespace {

constexpr std::uint64_t kRegionsPerCell = 4;
constexpr std::uint64_t kEntriesPerRegion = 32;
constexpr std::uint64_t kEntriesAllowance = std::uint64_t{1} << 20;

// A monotone (non-decreasing) map from coordinates to cells [0, cells) over [min, max].
template <class T>
class CellMap {
 public:
  CellMap(T min, T max, std::uint64_t wanted) : min_(min), max_(max) { set_cells(wanted); }

  std::uint64_t cells() const { return cells_; }

  // Fewer cells where the extent cannot be cut into as many (an integer extent narrower than the
  // cell count, a zero-width or degenerate one).
  void set_cells(std::uint64_t wanted) {
    cells_ = std::max<std::uint64_t>(wanted, 1);
    if constexpr (std::is_floating_point_v<T>) {
      if (!(min_ < max_) || !std::isfinite(min_) || !std::isfinite(max_)) {
        cells_ = 1;
        return;
      }
      width_ = (max_ * T(0.5) - min_ * T(0.5)) / static_cast<T>(cells_);
      if (!(width_ > 0) || !std::isfinite(width_)) cells_ = 1;
    } else {
      const std::uint64_t extent = static_cast<std::uint64_t>(max_) - static_cast<std::uint64_t>(min_);
      if (extent < std::numeric_limits<std::uint64_t>::max()) cells_ = std::min(cells_, extent + 1);
      // cells * width > extent, so (x - min) / width < cells; no overflow, as cells >= 2 here.
      if (cells_ > 1) width_ = extent / cells_ + 1;
    }
  }

  std::uint64_t operator()(T x) const {
    if (cells_ == 1 || x <= min_) return 0;
    if (x >= max_) return cells_ - 1;
    std::uint64_t c;
    if constexpr (std::is_floating_point_v<T>) {
      const T q = (x * T(0.5) - min_ * T(0.5)) / width_;
      c = q >= static_cast<T>(cells_) ? cells_ - 1 : static_cast<std::uint64_t>(q);
    } else {
      c = (static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(min_)) / width_;
    }
    return std::min(c, cells_ - 1);
  }

 private:
  T min_, max_;
  std::uint64_t cells_ = 1;
  std::conditional_t<std::is_floating_point_v<T>, T, std::uint64_t> width_{};  // of one cell
};

// Both sets' dimension-0 extent (doubles: over the finite bounds; infinite ones fall in the end
// cells). Returns false when there is no finite bound at all.
template <class T>
bool extent_of(const RegionView<T>& s, const RegionView<T>& u, T& min, T& max) {
  bool any = false;
  auto take = [&](T x) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(x)) return;
    }
    if (!any) {
      min = max = x;
      any = true;
    } else {
      min = std::min(min, x);
      max = std::max(max, x);
    }
  };
  for (const RegionView<T>* r : {&s, &u})
    for (std::size_t i = 0; i < r->size; ++i) {
      take(r->lo(i, 0));
      take(r->hi(i, 0));
    }
  return any;
}

// The registrations of one set: the regions in cell c are entry[start[c], start[c + 1]), those
// that start in c (cell(lower) == c) first, up to starters_end[c].
struct Registrations {
  std::vector<std::size_t> start, starters_end, entry;
};

template <class T>
Registrations register_set(const RegionView<T>& r, const CellMap<T>& cell) {
  const std::size_t cells = static_cast<std::size_t>(cell.cells());
  std::vector<std::size_t> first(r.size), last(r.size);
  Registrations g;
  g.start.assign(cells + 1, 0);
  for (std::size_t i = 0; i < r.size; ++i) {
    first[i] = static_cast<std::size_t>(cell(r.lo(i, 0)));
    last[i] = static_cast<std::size_t>(cell(r.hi(i, 0)));
    for (std::size_t c = first[i]; c <= last[i]; ++c) ++g.start[c + 1];
  }
  for (std::size_t c = 0; c < cells; ++c) g.start[c + 1] += g.start[c];
  g.entry.resize(g.start[cells]);
  std::vector<std::size_t> cursor(g.start.begin(), g.start.end() - 1);
  for (std::size_t i = 0; i < r.size; ++i) g.entry[cursor[first[i]]++] = i;
  g.starters_end = cursor;
  for (std::size_t i = 0; i < r.size; ++i)
    for (std::size_t c = first[i] + 1; c <= last[i]; ++c) g.entry[cursor[c]++] = i;
  return g;
}

// Registrations that `cell` would make, stopping once past `limit`.
template <class T>
std::uint64_t entries(const RegionView<T>& s, const RegionView<T>& u, const CellMap<T>& cell, std::uint64_t limit) {
  std::uint64_t total = 0;
  for (const RegionView<T>* r : {&s, &u})
    for (std::size_t i = 0; i < r->size && total <= limit; ++i) total += cell(r->hi(i, 0)) - cell(r->lo(i, 0)) + 1;
  return total;
}

}  // namespace

template <class T>
void grid(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out) {
  if (s.size == 0 || u.size == 0) return;
  const int dims = s.dims;
  const std::uint64_t regions = static_cast<std::uint64_t>(s.size) + u.size;
  T min{}, max{};
  const bool finite = extent_of(s, u, min, max);
  CellMap<T> cell(min, max, finite ? std::max<std::uint64_t>(1, regions / kRegionsPerCell) : 1);
  const std::uint64_t limit = kEntriesPerRegion * regions + kEntriesAllowance;
  while (cell.cells() > 1 && entries(s, u, cell, limit) > limit) cell.set_cells(cell.cells() / 2);

  const Registrations gs = register_set(s, cell), gu = register_set(u, cell);
  auto test = [&](std::size_t i, std::size_t j) {
    if (intersects(rule, dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) out.emit(i, j);
  };
  for (std::size_t c = 0; c < static_cast<std::size_t>(cell.cells()); ++c) {
    // Subscriptions starting here against every update here: the cell owns these pairs.
    for (std::size_t a = gs.start[c]; a < gs.starters_end[c]; ++a)
      for (std::size_t b = gu.start[c]; b < gu.start[c + 1]; ++b) test(gs.entry[a], gu.entry[b]);
    // Updates starting here against subscriptions that started in an earlier cell.
    for (std::size_t b = gu.start[c]; b < gu.starters_end[c]; ++b)
      for (std::size_t a = gs.starters_end[c]; a < gs.start[c + 1]; ++a) test(gs.entry[a], gu.entry[b]);
  }
}

template void grid<std::uint32_t>(const RegionView<std::uint32_t>&, const RegionView<std::uint32_t>&, Rule, Collector&);
template void grid<std::uint64_t>(const RegionView<std::uint64_t>&, const RegionView<std::uint64_t>&, Rule, Collector&);
template void grid<double>(const RegionView<double>&, const RegionView<double>&, Rule, Collector&);

}  // namespace simkit::ddm::detail
