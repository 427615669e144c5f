#pragma once
// A resident spatial index over one region set, updated in place as regions come, move and go
// (docs/ddm.md, "Incremental matching"): a hierarchical loose grid over the first one or two
// dimensions. Level l has cells of 2^l level-0 cells; a region lives in exactly one cell: that of
// its lower corner at the smallest level where it spans at most two cells per dimension. Adding,
// moving or removing a region is O(1) (one hash lookup and a swap-remove); a query visits, at each
// non-empty level, the cells its lower corner's cell range can hold a partner in, and tests the
// regions there exactly. The cost of a batch is thus proportional to the changed regions and their
// neighbourhoods, never to the size of the set.
//
// Why the query is complete: every overlap rule implies a shared point in every dimension
// (a.lo <= b.hi and b.lo <= a.hi), and cell() is monotone (non-decreasing) in the coordinate. So a
// region r at level l that intersects q has cell(r.lo) <= cell(q.hi), and since r spans at most
// two cells at its level, cell(r.lo) >> l >= (cell(r.hi) >> l) - 1 >= (cell(q.lo) >> l) - 1.
// Clamping the cells to [0, kMaxCell] keeps cell() monotone, so regions that move outside the
// initial bounding box are still found (in the edge cells).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/hd.hpp"
#include "ddm/model.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

// The grid's geometry and cell keys, shared by the host index and the cuda backend's device
// index (grid_geometry()): level-0 cells over the first one or two dimensions, a region's key
// (level, cell x, cell y) packed into 64 bits as level << 58 | x << 29 | y.
struct GridGeometry {
  static constexpr int kLevels = 30;                                 // levels 0 .. 29
  static constexpr std::uint64_t kMaxCell = std::uint64_t{1} << 28;  // level-0 cells 0 .. 2^28
  int dims = 1, grid_dims = 1;
  double origin[2] = {0, 0}, inverse[2] = {1, 1};

  // Level-0 cell of a coordinate in grid dimension d: monotone, clamped to [0, kMaxCell].
  template <class T>
  SIMKIT_HD std::uint64_t cell(T x, int d) const {
    const double v = (static_cast<double>(x) - origin[d]) * inverse[d];
    if (!(v > 0)) return 0;
    if (v >= static_cast<double>(kMaxCell)) return kMaxCell;
    return static_cast<std::uint64_t>(v);
  }
  // The cells of level l that may hold a partner of a query spanning level-0 cells [a, b].
  SIMKIT_HD static std::uint64_t first_cell(std::uint64_t a, int l) {
    const std::uint64_t lo = a >> l;
    return lo > 0 ? lo - 1 : 0;
  }
  SIMKIT_HD static std::uint64_t make_key(int level, std::uint64_t x, std::uint64_t y) {
    return (static_cast<std::uint64_t>(level) << 58) | (x << 29) | y;
  }
  SIMKIT_HD static int level_of_key(std::uint64_t key) { return static_cast<int>(key >> 58); }
  // The key of a region with bounds lower[0..dims), upper[0..dims) (any stride between the two).
  template <class T>
  SIMKIT_HD std::uint64_t key_of(const T* lower, const T* upper) const {
    std::uint64_t a[2] = {0, 0}, b[2] = {0, 0};
    for (int d = 0; d < grid_dims; ++d) a[d] = cell(lower[d], d), b[d] = cell(upper[d], d);
    int l = 0;
    while (l + 1 < kLevels && ((b[0] >> l) - (a[0] >> l) > 1 || (b[1] >> l) - (a[1] >> l) > 1)) ++l;
    return make_key(l, a[0] >> l, a[1] >> l);
  }
};

// The geometry for a set: cells about as wide as the median region, and not so small that a
// uniform set has far fewer regions than cells.
template <class T>
GridGeometry grid_geometry(const RegionSet<T>& set) {
  GridGeometry g;
  g.dims = set.dims;
  g.grid_dims = std::min(set.dims, 2);
  const std::size_t n = set.size();
  for (int d = 0; d < g.grid_dims; ++d) {
    if (n == 0) continue;
    double lo = static_cast<double>(set.lo(0, d)), hi = static_cast<double>(set.hi(0, d));
    std::vector<double> width(n);
    for (std::size_t i = 0; i < n; ++i) {
      lo = std::min(lo, static_cast<double>(set.lo(i, d)));
      hi = std::max(hi, static_cast<double>(set.hi(i, d)));
      width[i] = static_cast<double>(set.hi(i, d)) - static_cast<double>(set.lo(i, d));
    }
    std::nth_element(width.begin(), width.begin() + static_cast<std::ptrdiff_t>(n / 2), width.end());
    const double extent = hi - lo;
    const double spacing = extent / std::pow(static_cast<double>(n), 1.0 / g.grid_dims);
    const double cell = std::max({width[n / 2], spacing, extent / static_cast<double>(GridGeometry::kMaxCell / 2)});
    if (std::isfinite(lo) && std::isfinite(cell) && cell > 0) {
      g.origin[d] = lo;
      g.inverse[d] = 1.0 / cell;
    }
  }
  return g;
}

template <class T>
class ResidentGrid {
 public:
  static constexpr int kLevels = GridGeometry::kLevels;
  static constexpr std::uint64_t kAbsent = ~std::uint64_t{0};

  ResidentGrid() = default;
  explicit ResidentGrid(const RegionSet<T>& set) : geometry_(grid_geometry(set)), dims_(set.dims) {}

  int dims() const { return dims_; }
  std::size_t size() const { return live_; }
  bool contains(std::uint32_t slot) const { return slot < key_.size() && key_[slot] != kAbsent; }
  // The bounds of a region in the index: dims() lower bounds, then dims() upper bounds.
  const T* box(std::uint32_t slot) const { return &box_[static_cast<std::size_t>(slot) * 2 * dims_]; }

  // Adds a region (not in the index) with bounds lower[0..dims) and upper[0..dims).
  void insert(std::uint32_t slot, const T* lower, const T* upper) {
    if (slot >= key_.size()) {
      key_.resize(static_cast<std::size_t>(slot) + 1, kAbsent);
      at_.resize(key_.size());
      box_.resize(key_.size() * 2 * static_cast<std::size_t>(dims_));
    }
    T* b = &box_[static_cast<std::size_t>(slot) * 2 * dims_];
    std::copy(lower, lower + dims_, b);
    std::copy(upper, upper + dims_, b + dims_);
    const std::uint64_t key = key_of(lower, upper);
    Cell& cell = cells_[key];
    cell.slots.push_back(slot);
    cell.boxes.insert(cell.boxes.end(), b, b + 2 * dims_);
    key_[slot] = key;
    at_[slot] = static_cast<std::uint32_t>(cell.slots.size() - 1);
    ++per_level_[level_of_key(key)];
    ++live_;
  }

  // Removes a region (in the index); its bounds stay readable through box() until it is inserted
  // again.
  void erase(std::uint32_t slot) {
    const std::uint64_t key = key_[slot];
    const auto it = cells_.find(key);
    Cell& cell = it->second;
    const std::uint32_t last = cell.slots.back(), at = at_[slot];
    const auto stride = static_cast<std::size_t>(2 * dims_);
    cell.slots[at] = last;
    std::copy(cell.boxes.end() - static_cast<std::ptrdiff_t>(stride), cell.boxes.end(),
              cell.boxes.begin() + static_cast<std::ptrdiff_t>(at * stride));
    at_[last] = at;
    cell.slots.pop_back();
    cell.boxes.resize(cell.boxes.size() - stride);
    if (cell.slots.empty()) cells_.erase(it);
    key_[slot] = kAbsent;
    --per_level_[level_of_key(key)];
    --live_;
  }

  // Calls hit(slot) for every region in the index that intersects [lower, upper] under `rule`
  // (each once, in no particular order) and returns the number of regions tested.
  template <class Hit>
  std::size_t query(Rule rule, const T* lower, const T* upper, Hit&& hit) const {
    if (live_ == 0) return 0;
    std::uint64_t first[2] = {0, 0}, last[2] = {0, 0};
    for (int d = 0; d < geometry_.grid_dims; ++d) first[d] = cell(lower[d], d), last[d] = cell(upper[d], d);
    // The cells to visit; when there are more than an eighth as many as regions (a query far
    // larger than the regions at some level), one scan of every region is cheaper than the hash
    // lookups (a lookup costs about ten region tests).
    double visits = 0;
    for (int l = 0; l < kLevels; ++l) {
      if (per_level_[l] == 0) continue;
      double cells = 1;
      for (int d = 0; d < geometry_.grid_dims; ++d)
        cells *= static_cast<double>(range(first[d], last[d], l).second - range(first[d], last[d], l).first + 1);
      visits += cells;
    }
    std::size_t tested = 0;
    if (visits > std::max(64.0, static_cast<double>(live_) / 8)) {
      for (std::uint32_t slot = 0; slot < key_.size(); ++slot) {
        if (key_[slot] == kAbsent) continue;
        ++tested;
        if (intersects(rule, lower, upper, box(slot))) hit(slot);
      }
      return tested;
    }
    for (int l = 0; l < kLevels; ++l) {
      if (per_level_[l] == 0) continue;
      const auto [x0, x1] = range(first[0], last[0], l);
      const auto [y0, y1] = range(first[1], last[1], l);
      for (std::uint64_t x = x0; x <= x1; ++x)
        for (std::uint64_t y = y0; y <= y1; ++y) {
          const auto it = cells_.find(make_key(l, x, y));
          if (it == cells_.end()) continue;
          const Cell& c = it->second;
          tested += c.slots.size();
          for (std::size_t q = 0; q < c.slots.size(); ++q)
            if (intersects(rule, lower, upper, &c.boxes[q * 2 * static_cast<std::size_t>(dims_)])) hit(c.slots[q]);
        }
    }
    return tested;
  }

 private:
  std::uint64_t cell(T x, int d) const { return geometry_.cell(x, d); }
  static std::pair<std::uint64_t, std::uint64_t> range(std::uint64_t a, std::uint64_t b, int l) {
    return {GridGeometry::first_cell(a, l), b >> l};
  }
  static std::uint64_t make_key(int level, std::uint64_t x, std::uint64_t y) {
    return GridGeometry::make_key(level, x, y);
  }
  static int level_of_key(std::uint64_t key) { return GridGeometry::level_of_key(key); }
  std::uint64_t key_of(const T* lower, const T* upper) const { return geometry_.key_of(lower, upper); }
  bool intersects(Rule rule, const T* lower, const T* upper, const T* b) const {
    for (int d = 0; d < dims_; ++d)
      if (!overlaps(rule, lower[d], upper[d], b[d], b[dims_ + d])) return false;
    return true;
  }

  GridGeometry geometry_;
  int dims_ = 1;
  std::vector<T> box_;              // per slot: dims lower bounds, then dims upper bounds
  std::vector<std::uint64_t> key_;  // per slot: its cell, or kAbsent
  std::vector<std::uint32_t> at_;   // per slot: its index in the cell's list
  // A cell's regions, with a copy of their bounds so that a query reads each cell sequentially.
  struct Cell {
    std::vector<std::uint32_t> slots;
    std::vector<T> boxes;  // per region, as box()
  };
  std::unordered_map<std::uint64_t, Cell> cells_;
  std::array<std::size_t, kLevels> per_level_{};
  std::size_t live_ = 0;
};

}  // namespace simkit::ddm
