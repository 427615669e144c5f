// Incremental matching (incremental.hpp): a batch is checked and reduced to net changes, put into
// the regions (undoable), the changed regions are matched again (through the resident grids, or
// with match_pairs against the other side), and each changed region's new list is compared with
// its old one. A pair whose subscription changed is compared on the subscription's side only, so
// pairs of two changed regions count once.
#include "simkit/ddm/incremental.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <string_view>
#include <type_traits>

#include "core/parallel.hpp"
#include "ddm/resident_device.hpp"
#include "ddm/resident_grid.hpp"
#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"

namespace simkit::ddm {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string_view role_name(Role role) { return role == Role::Subscription ? "S" : "U"; }

template <class T>
std::string_view kind_name(typename Change<T>::Kind kind) {
  switch (kind) {
    case Change<T>::Kind::Add:
      return "add";
    case Change<T>::Kind::Move:
      return "move";
    case Change<T>::Kind::Remove:
      return "remove";
  }
  return "unknown change";
}

template <class T>
UserError change_error(std::size_t k, const Change<T>& c, std::string_view what) {
  return UserError(
      fmt::format("batch change {}: {} of {} region {}: {}", k, kind_name<T>(c.kind), role_name(c.role), c.id, what));
}

template <class T>
void check_bounds(std::size_t k, const Change<T>& c, int dims) {
  const auto n = static_cast<std::size_t>(dims);
  if (c.lower.size() != n || c.upper.size() != n) {
    throw change_error(k, c,
                       fmt::format("{} lower and {} upper bounds; the regions have {} dimensions", c.lower.size(),
                                   c.upper.size(), dims));
  }
  for (std::size_t d = 0; d < n; ++d) {
    const T lo = c.lower[d], hi = c.upper[d];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(lo) || std::isnan(hi)) throw change_error(k, c, fmt::format("dimension {}: NaN bound", d));
    }
    if (lo > hi) throw change_error(k, c, fmt::format("dimension {}: lower {} > upper {}", d, lo, hi));
  }
}

// Compares one region's old and new lists (the other side's slots, each at most once, any order):
// lost(x) for x only in `old_list`, gained(x) for x only in `new_list`, leaving out x where
// skip(x). Sorts `new_list` in place and a copy of `old_list` in `scratch`: the lists are a
// region's partners (tens to hundreds), so this costs nothing like a pass over the slots.
template <class Skip, class Gained, class Lost>
void diff_lists(const std::vector<std::uint32_t>& old_list, std::vector<std::uint32_t>& new_list,
                std::vector<std::uint32_t>& scratch, Skip skip, Gained gained, Lost lost) {
  scratch.assign(old_list.begin(), old_list.end());
  std::sort(scratch.begin(), scratch.end());
  std::sort(new_list.begin(), new_list.end());
  std::size_t i = 0, j = 0;
  while (i < scratch.size() || j < new_list.size()) {
    if (j == new_list.size() || (i < scratch.size() && scratch[i] < new_list[j])) {
      if (!skip(scratch[i])) lost(scratch[i]);
      ++i;
    } else if (i == scratch.size() || new_list[j] < scratch[i]) {
      if (!skip(new_list[j])) gained(new_list[j]);
      ++j;
    } else {
      ++i, ++j;
    }
  }
}

// A grid axis: cell(x) is a monotone (non-decreasing) map of the bounds to 0 .. cells - 1.
struct Axis {
  double lo = 0, scale = 0;
  std::size_t cells = 1;
  template <class T>
  std::size_t cell(T x) const {
    if (cells == 1) return 0;
    const double v = (static_cast<double>(x) - lo) * scale;
    if (!(v >= 0)) return 0;
    if (v >= static_cast<double>(cells)) return cells - 1;
    return static_cast<std::size_t>(v);
  }
};

constexpr double kMaxCells = 1 << 20;
constexpr double kMaxShare = 0.75;  // more candidates than this share: match against all

// Which regions of `other` may intersect a region of `changed` under some rule. Every rule
// implies closed overlap (a shared point) in every dimension, so a region that intersects one of
// `changed` lies within their bounding box and, on a grid over the box in the first one or two
// dimensions (cells about a quarter of the changed regions' mean width), touches a cell that one of them
// covers: the shared point's cell, since cell() is monotone. Fills `keep` (positions in `other`)
// and returns true, or returns false when most regions would pass. `threads` scan `other`.
template <class T>
bool prefilter(const RegionSet<T>& changed, const RegionSet<T>& other, int threads, std::vector<std::uint32_t>& keep) {
  const int dims = changed.dims;
  const std::size_t k = changed.size(), n = other.size();
  std::vector<T> box_lo(static_cast<std::size_t>(dims)), box_hi(static_cast<std::size_t>(dims));
  const int g = std::min(dims, 2);
  Axis axis[2];
  const double budget = std::min(kMaxCells, std::max(4096.0, 1024.0 * static_cast<double>(k)));
  double cells = 1;
  for (int d = 0; d < dims; ++d) {
    T lo = changed.lo(0, d), hi = changed.hi(0, d);
    double width = 0;
    for (std::size_t i = 0; i < k; ++i) {
      lo = std::min(lo, changed.lo(i, d));
      hi = std::max(hi, changed.hi(i, d));
      width += static_cast<double>(changed.hi(i, d)) - static_cast<double>(changed.lo(i, d));
    }
    box_lo[static_cast<std::size_t>(d)] = lo;
    box_hi[static_cast<std::size_t>(d)] = hi;
    if (d >= g) continue;
    const double extent = static_cast<double>(hi) - static_cast<double>(lo);
    const double cell = std::max(width / static_cast<double>(k) / 4, extent / budget);
    if (std::isfinite(extent) && extent > 0 && std::isfinite(cell) && cell > 0) {
      axis[d].cells = static_cast<std::size_t>(std::clamp(extent / cell, 1.0, budget));
      axis[d].lo = static_cast<double>(lo);
    }
    cells *= static_cast<double>(axis[d].cells);
  }
  if (cells > budget) {  // two axes over budget: both coarser
    const double shrink = std::sqrt(cells / budget);
    for (Axis& a : axis)
      a.cells = std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(a.cells) / shrink));
  }
  for (int d = 0; d < g; ++d) {
    if (axis[d].cells > 1) {
      axis[d].scale =
          static_cast<double>(axis[d].cells) / (static_cast<double>(box_hi[static_cast<std::size_t>(d)]) - axis[d].lo);
    }
  }
  // Cells covered by a changed region (a 2-d difference array, summed), then a summed-area table
  // of the covered cells for O(1) rectangle queries.
  const std::size_t c0 = axis[0].cells, c1 = axis[1].cells, w = c1 + 1;
  std::vector<std::int64_t> cover((c0 + 1) * w, 0);
  auto range = [&](const RegionSet<T>& r, std::size_t i, int d) {
    return d < g ? std::pair{axis[d].cell(r.lo(i, d)), axis[d].cell(r.hi(i, d))}
                 : std::pair{std::size_t{0}, std::size_t{0}};
  };
  for (std::size_t i = 0; i < k; ++i) {
    const auto [a0, b0] = range(changed, i, 0);
    const auto [a1, b1] = range(changed, i, 1);
    ++cover[a0 * w + a1];
    --cover[(b0 + 1) * w + a1];
    --cover[a0 * w + b1 + 1];
    ++cover[(b0 + 1) * w + b1 + 1];
  }
  for (std::size_t i = 0; i <= c0; ++i)
    for (std::size_t j = 0; j <= c1; ++j) {
      if (i > 0) cover[i * w + j] += cover[(i - 1) * w + j];
      if (j > 0) cover[i * w + j] += cover[i * w + j - 1];
      if (i > 0 && j > 0) cover[i * w + j] -= cover[(i - 1) * w + j - 1];
    }
  std::vector<std::uint32_t> sat((c0 + 1) * w, 0);  // sat[(i + 1) w + j + 1]: covered cells <= (i, j)
  for (std::size_t i = 0; i < c0; ++i)
    for (std::size_t j = 0; j < c1; ++j) {
      sat[(i + 1) * w + j + 1] =
          (cover[i * w + j] > 0 ? 1u : 0u) + sat[i * w + j + 1] + sat[(i + 1) * w + j] - sat[i * w + j];
    }
  std::vector<char> pass(n, 0);
  std::size_t passed = 0;
  const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : passed)
  for (std::int64_t ii = 0; ii < count; ++ii) {
    const auto i = static_cast<std::size_t>(ii);
    bool inside = true;
    for (int d = 0; d < dims && inside; ++d)
      inside = !(other.hi(i, d) < box_lo[static_cast<std::size_t>(d)] ||
                 box_hi[static_cast<std::size_t>(d)] < other.lo(i, d));
    if (!inside) continue;
    const auto [a0, b0] = range(other, i, 0);
    const auto [a1, b1] = range(other, i, 1);
    if (sat[(b0 + 1) * w + b1 + 1] - sat[a0 * w + b1 + 1] - sat[(b0 + 1) * w + a1] + sat[a0 * w + a1] == 0) continue;
    pass[i] = 1;
    ++passed;
  }
  if (static_cast<double>(passed) > kMaxShare * static_cast<double>(n)) return false;
  keep.clear();
  keep.reserve(passed);
  for (std::size_t i = 0; i < n; ++i)
    if (pass[i]) keep.push_back(static_cast<std::uint32_t>(i));
  return true;
}

// The regions of `r` at `positions`.
template <class T>
RegionSet<T> subset(const RegionSet<T>& r, const std::vector<std::uint32_t>& positions) {
  RegionSet<T> out;
  out.dims = r.dims;
  const std::size_t m = positions.size();
  out.ids.resize(m);
  out.lower.resize(m * static_cast<std::size_t>(r.dims));
  out.upper.resize(m * static_cast<std::size_t>(r.dims));
  for (std::size_t q = 0; q < m; ++q) out.ids[q] = r.ids[positions[q]];
  for (int d = 0; d < r.dims; ++d)
    for (std::size_t q = 0; q < m; ++q) {
      out.lower[static_cast<std::size_t>(d) * m + q] = r.lo(positions[q], d);
      out.upper[static_cast<std::size_t>(d) * m + q] = r.hi(positions[q], d);
    }
  return out;
}

using SlotPair = std::pair<std::uint32_t, std::uint32_t>;  // (s slot, u slot)

constexpr std::size_t kParallelFrom = 512;  // changed regions from which the bookkeeping is parallel

void erase_one(std::vector<std::uint32_t>& list, std::uint32_t value) {
  const auto it = std::find(list.begin(), list.end(), value);
  if (it == list.end()) throw InternalError("ddm incremental: adjacency lists out of step");
  *it = list.back();
  list.pop_back();
}

}  // namespace

template <class T>
struct IncrementalMatcher<T>::Resident {
  // cpu: the grids on the host. cuda: the same geometry on the device, rebuilt from the regions
  // when missing (after a failed batch) or short of slots.
  ResidentGrid<T> s, u;
  bool on_device = false;
  GridGeometry geometry_s, geometry_u;
  std::unique_ptr<detail::DeviceResident<T>> device;
};

template <class T>
struct IncrementalMatcher<T>::Staged {
  std::size_t old_slots = 0;
  std::vector<std::uint32_t> old_free;
  std::vector<std::uint32_t> allocated;
  bool structural = false;  // regions added or removed: the sets were rebuilt
  RegionSet<T> old_regions;
  std::vector<std::uint32_t> old_slot_of_pos;
  std::vector<std::size_t> moved_pos;  // moved in place: positions and their old bounds
  std::vector<T> moved_lower, moved_upper;
};

template <class T>
IncrementalMatcher<T>::IncrementalMatcher(RegionSet<T> subscriptions, RegionSet<T> updates, MatchOptions options)
    : options_(options) {
  for (const auto* r : {&subscriptions, &updates}) {
    const std::string_view name = r == &subscriptions ? "S" : "U";
    const std::size_t want = r->size() * static_cast<std::size_t>(std::max(r->dims, 0));
    if (r->lower.size() != want || r->upper.size() != want) {
      throw UserError(fmt::format("{}: {} ids but {} lower and {} upper bounds ({} dimensions)", name, r->size(),
                                  r->lower.size(), r->upper.size(), r->dims));
    }
    if (r->size() >= kFree) throw UserError(fmt::format("{}: {} regions; at most {}", name, r->size(), kFree - 1));
  }
  validate(view(subscriptions), view(updates));
  for (auto [side, set] : {std::pair{&s_, &subscriptions}, std::pair{&u_, &updates}}) {
    const auto n = static_cast<std::uint32_t>(set->size());
    side->slot_of_pos.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) side->slot_of_pos[i] = i;
    side->pos_of_slot = side->slot_of_pos;
    side->id_of_slot = set->ids;
    side->adj.resize(n);
    side->slot_of_id.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) side->slot_of_id.emplace(set->ids[i], i);
    side->regions = std::move(*set);
  }
  // Initially slots are positions. Matched even when a set is empty, so that bad options fail here.
  // The resident backends keep no pair lists: a count is all they need (and says which backend
  // the options resolve to, as every match call resolves them). The reference backend's lists
  // come from a second, full match.
  const MatchReport counted = count_pairs(view(s_.regions), view(u_.regions), options_);
  pairs_ = counted.pairs;
  if (counted.backend == Backend::Reference) {
    match_pairs(view(s_.regions), view(u_.regions), options_, [&](const Match* m, std::size_t count) {
      for (std::size_t k = 0; k < count; ++k) {
        s_.adj[m[k].s].push_back(static_cast<std::uint32_t>(m[k].u));
        u_.adj[m[k].u].push_back(static_cast<std::uint32_t>(m[k].s));
      }
    });
  } else {
    resident_ = std::make_unique<Resident>();
    if (counted.backend == Backend::Cuda) {
      resident_->on_device = true;
      resident_->geometry_s = grid_geometry(s_.regions);
      resident_->geometry_u = grid_geometry(u_.regions);
      build_device();
      return;
    }
    resident_->s = ResidentGrid<T>(s_.regions);
    resident_->u = ResidentGrid<T>(u_.regions);
    const auto dims = static_cast<std::size_t>(s_.regions.dims);
    std::vector<T> lower(dims), upper(dims);
    for (auto [grid, side] : {std::pair{&resident_->s, &s_}, std::pair{&resident_->u, &u_}}) {
      const RegionSet<T>& r = side->regions;
      for (std::size_t i = 0; i < r.size(); ++i) {
        for (std::size_t d = 0; d < dims; ++d)
          lower[d] = r.lo(i, static_cast<int>(d)), upper[d] = r.hi(i, static_cast<int>(d));
        grid->insert(static_cast<std::uint32_t>(i), lower.data(), upper.data());
      }
    }
  }
}

template <class T>
void IncrementalMatcher<T>::build_device() {
  resident_->device.reset();
  const auto dims = static_cast<std::size_t>(s_.regions.dims);
  std::vector<std::uint8_t> present[2];
  std::vector<T> boxes[2];
  for (int w = 0; w < 2; ++w) {
    const SideState& side = w == 0 ? s_ : u_;
    const RegionSet<T>& r = side.regions;
    present[w].assign(side.adj.size(), 0);
    boxes[w].assign(side.adj.size() * 2 * dims, T{});
    for (std::size_t p = 0; p < r.size(); ++p) {
      const std::uint32_t slot = side.slot_of_pos[p];
      present[w][slot] = 1;
      for (std::size_t d = 0; d < dims; ++d) {
        boxes[w][slot * 2 * dims + d] = r.lo(p, static_cast<int>(d));
        boxes[w][slot * 2 * dims + dims + d] = r.hi(p, static_cast<int>(d));
      }
    }
  }
  resident_->device = std::make_unique<detail::DeviceResident<T>>(
      options_.device, resident_->geometry_s, resident_->geometry_u, present[0], boxes[0], present[1], boxes[1]);
}

template <class T>
IncrementalMatcher<T>::~IncrementalMatcher() = default;
template <class T>
IncrementalMatcher<T>::IncrementalMatcher(IncrementalMatcher&&) noexcept = default;
template <class T>
IncrementalMatcher<T>& IncrementalMatcher<T>::operator=(IncrementalMatcher&&) noexcept = default;

template <class T>
void IncrementalMatcher<T>::net_changes(const std::vector<Change<T>>& batch, std::vector<Touched>& ts,
                                        std::vector<Touched>& tu) const {
  const int dims = s_.regions.dims;
  std::unordered_map<std::uint64_t, std::size_t> index_s, index_u;  // id -> index in ts / tu
  index_s.reserve(batch.size());
  index_u.reserve(batch.size());
  ts.reserve(batch.size());
  tu.reserve(batch.size());
  // The regions' slots looked up first, on every thread for large batches: the lookups are cache
  // misses into a map of the whole set, and the ordered pass below is serial.
  const int team = batch.size() >= 4096 ? effective_threads(options_.threads) : 1;
  std::vector<std::uint32_t> slot_of_change(batch.size(), kFree);
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(batch.size()); ++kk) {
    const Change<T>& c = batch[static_cast<std::size_t>(kk)];
    const auto& map = (c.role == Role::Subscription ? s_ : u_).slot_of_id;
    const auto found = map.find(c.id);
    if (found != map.end()) slot_of_change[static_cast<std::size_t>(kk)] = found->second;
  }
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const Change<T>& c = batch[k];
    const bool sub = c.role == Role::Subscription;
    if (!sub && c.role != Role::Update) throw change_error(k, c, "side is neither subscription nor update");
    std::vector<Touched>& list = sub ? ts : tu;
    const auto [it, inserted] = (sub ? index_s : index_u).try_emplace(c.id, list.size());
    if (inserted) {
      Touched t;
      t.id = c.id;
      t.was_present = t.present = slot_of_change[k] != kFree;
      t.slot = slot_of_change[k];
      list.push_back(t);
    }
    Touched& t = list[it->second];
    switch (c.kind) {
      case Change<T>::Kind::Add:
        if (t.present) throw change_error(k, c, "the id is already present");
        check_bounds(k, c, dims);
        t.present = true;
        t.change = k;
        break;
      case Change<T>::Kind::Move:
        if (!t.present) throw change_error(k, c, "no region has this id");
        check_bounds(k, c, dims);
        t.change = k;
        break;
      case Change<T>::Kind::Remove:
        if (!t.present) throw change_error(k, c, "no region has this id");
        t.present = false;
        break;
      default:
        throw change_error(k, c, "kind is neither add, move nor remove");
    }
  }
  // Leave out regions added and removed again, and regions that end with their old bounds.
  for (const bool sub : {true, false}) {
    // (Plain pointers, not structured bindings: clang cannot capture those in an OpenMP region.)
    const SideState* side = sub ? &s_ : &u_;
    std::vector<Touched>* list = sub ? &ts : &tu;
    std::vector<char> unchanged(list->size(), 0);
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(list->size()); ++kk) {
      const Touched& t = (*list)[static_cast<std::size_t>(kk)];
      bool same = !t.was_present ? !t.present : t.present;
      if (t.was_present && t.present) {
        const Change<T>& c = batch[t.change];
        const std::size_t pos = side->pos_of_slot[t.slot];
        for (int d = 0; d < dims && same; ++d) {
          const auto dd = static_cast<std::size_t>(d);
          same = c.lower[dd] == side->regions.lo(pos, d) && c.upper[dd] == side->regions.hi(pos, d);
        }
      }
      unchanged[static_cast<std::size_t>(kk)] = same ? 1 : 0;
    }
    std::size_t kept = 0;
    for (std::size_t k = 0; k < list->size(); ++k)
      if (!unchanged[k]) (*list)[kept++] = (*list)[k];
    list->resize(kept);
  }
  const std::size_t total = s_.regions.size() + ts.size(), total_u = u_.regions.size() + tu.size();
  if (std::max(total, total_u) >= kFree)
    throw UserError(fmt::format("batch: more than {} regions on a side", kFree - 1));
}

template <class T>
void IncrementalMatcher<T>::stage(SideState& side, std::vector<Touched>& touched, const std::vector<Change<T>>& batch,
                                  Staged& staged, int threads) {
  std::size_t removed = 0, added = 0;
  for (Touched& t : touched) {
    if (t.was_present) {
      removed += t.present ? 0 : 1;
      continue;
    }
    ++added;
    if (!side.free_slots.empty()) {
      t.slot = side.free_slots.back();
      side.free_slots.pop_back();
    } else {
      t.slot = static_cast<std::uint32_t>(side.adj.size());
      side.adj.emplace_back();
      side.pos_of_slot.push_back(kFree);
      side.id_of_slot.push_back(0);
    }
    side.id_of_slot[t.slot] = t.id;
    staged.allocated.push_back(t.slot);
  }
  RegionSet<T>& r = side.regions;
  const int dims = r.dims;
  const std::size_t n = r.size();
  if (removed == 0 && added == 0) {
    // Moves only: bounds rewritten in place (distinct positions: on every thread for large batches).
    const auto m = touched.size(), dd = static_cast<std::size_t>(dims);
    staged.moved_pos.resize(m);
    staged.moved_lower.resize(m * dd);
    staged.moved_upper.resize(m * dd);
#pragma omp parallel for num_threads(m >= 4096 ? effective_threads(threads) : 1) schedule(static)
    for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(m); ++kk) {
      const auto k = static_cast<std::size_t>(kk);
      const Touched& t = touched[k];
      const std::size_t pos = side.pos_of_slot[t.slot];
      const Change<T>& c = batch[t.change];
      staged.moved_pos[k] = pos;
      for (std::size_t d = 0; d < dd; ++d) {
        const std::size_t at = d * n + pos;
        staged.moved_lower[k * dd + d] = r.lower[at];
        staged.moved_upper[k * dd + d] = r.upper[at];
        r.lower[at] = c.lower[d];
        r.upper[at] = c.upper[d];
      }
    }
    return;
  }
  // Regions added or removed: the survivors keep their order, the added ones follow.
  std::vector<char> gone(side.adj.size(), 0);
  for (const Touched& t : touched) gone[t.slot] = t.was_present && !t.present;
  std::vector<std::uint32_t> kept_pos;  // new position -> old position (survivors)
  kept_pos.reserve(n - removed);
  for (std::size_t p = 0; p < n; ++p)
    if (!gone[side.slot_of_pos[p]]) kept_pos.push_back(static_cast<std::uint32_t>(p));
  const std::size_t m = kept_pos.size() + added;
  RegionSet<T> next;
  next.dims = dims;
  next.ids.resize(m);
  next.lower.resize(m * static_cast<std::size_t>(dims));
  next.upper.resize(m * static_cast<std::size_t>(dims));
  std::vector<std::uint32_t> slot_of_pos(m);
  for (std::size_t q = 0; q < kept_pos.size(); ++q) {
    next.ids[q] = r.ids[kept_pos[q]];
    slot_of_pos[q] = side.slot_of_pos[kept_pos[q]];
  }
  for (int d = 0; d < dims; ++d) {
    const std::size_t from = static_cast<std::size_t>(d) * n, to = static_cast<std::size_t>(d) * m;
    for (std::size_t q = 0; q < kept_pos.size(); ++q) {
      next.lower[to + q] = r.lower[from + kept_pos[q]];
      next.upper[to + q] = r.upper[from + kept_pos[q]];
    }
  }
  std::size_t q_added = kept_pos.size();
  for (const Touched& t : touched) {
    if (!t.was_present) {
      next.ids[q_added] = t.id;
      slot_of_pos[q_added++] = t.slot;
    }
  }
  // Nothing below allocates: the swap is all or nothing.
  staged.old_regions = std::move(r);
  staged.old_slot_of_pos = std::move(side.slot_of_pos);
  r = std::move(next);
  side.slot_of_pos = std::move(slot_of_pos);
  staged.structural = true;
  for (std::size_t q = 0; q < m; ++q) side.pos_of_slot[side.slot_of_pos[q]] = static_cast<std::uint32_t>(q);
  for (const Touched& t : touched) {
    if (!t.present) continue;  // removed: its slot is freed on commit
    const std::size_t q = side.pos_of_slot[t.slot];
    const Change<T>& c = batch[t.change];
    for (int d = 0; d < dims; ++d) {
      r.lower[static_cast<std::size_t>(d) * m + q] = c.lower[static_cast<std::size_t>(d)];
      r.upper[static_cast<std::size_t>(d) * m + q] = c.upper[static_cast<std::size_t>(d)];
    }
  }
}

template <class T>
void IncrementalMatcher<T>::undo(SideState& side, Staged& staged) {
  if (staged.structural) {
    side.regions = std::move(staged.old_regions);
    side.slot_of_pos = std::move(staged.old_slot_of_pos);
    for (std::size_t p = 0; p < side.slot_of_pos.size(); ++p)
      side.pos_of_slot[side.slot_of_pos[p]] = static_cast<std::uint32_t>(p);
  } else {
    const std::size_t n = side.regions.size();
    const auto dims = static_cast<std::size_t>(side.regions.dims);
    for (std::size_t k = 0; k < staged.moved_pos.size(); ++k)
      for (std::size_t d = 0; d < dims; ++d) {
        side.regions.lower[d * n + staged.moved_pos[k]] = staged.moved_lower[k * dims + d];
        side.regions.upper[d * n + staged.moved_pos[k]] = staged.moved_upper[k * dims + d];
      }
  }
  for (const std::uint32_t slot : staged.allocated) side.pos_of_slot[slot] = kFree;
  side.adj.resize(staged.old_slots);
  side.pos_of_slot.resize(staged.old_slots);
  side.id_of_slot.resize(staged.old_slots);
  side.free_slots = std::move(staged.old_free);
}

template <class T>
void IncrementalMatcher<T>::rematch_with_match_pairs(const std::vector<Change<T>>& batch,
                                                     const std::vector<Touched>& ts, const std::vector<Touched>& tu,
                                                     std::vector<std::vector<std::uint32_t>>& new_s,
                                                     std::vector<std::vector<std::uint32_t>>& new_u) {
  for (const bool sub : {true, false}) {
    const std::vector<Touched>& touched = sub ? ts : tu;
    const int dims = s_.regions.dims;
    RegionSet<T> changed;
    changed.dims = dims;
    std::vector<std::size_t> which;  // index in `touched` of each changed region
    for (std::size_t k = 0; k < touched.size(); ++k)
      if (touched[k].present) which.push_back(k), changed.ids.push_back(touched[k].id);
    const std::size_t n = which.size();
    changed.lower.resize(n * static_cast<std::size_t>(dims));
    changed.upper.resize(n * static_cast<std::size_t>(dims));
    for (std::size_t i = 0; i < n; ++i) {
      const Change<T>& c = batch[touched[which[i]].change];
      for (int d = 0; d < dims; ++d) {
        changed.lower[static_cast<std::size_t>(d) * n + i] = c.lower[static_cast<std::size_t>(d)];
        changed.upper[static_cast<std::size_t>(d) * n + i] = c.upper[static_cast<std::size_t>(d)];
      }
    }
    std::vector<std::vector<std::uint32_t>>& lists = sub ? new_s : new_u;
    const SideState& other = sub ? u_ : s_;
    if (n == 0 || other.regions.size() == 0) continue;
    // The other side: only the candidates when the prefilter leaves out enough, else all.
    const auto t0 = Clock::now();
    std::vector<std::uint32_t> keep;
    const bool filtered = prefilter(changed, other.regions, effective_threads(options_.threads), keep);
    const RegionSet<T> candidates = filtered ? subset(other.regions, keep) : RegionSet<T>{};
    const RegionSet<T>& against = filtered ? candidates : other.regions;
    (sub ? report_.candidates_u : report_.candidates_s) = against.size();
    const auto slot_of = [&](std::uint64_t pos) { return other.slot_of_pos[filtered ? keep[pos] : pos]; };
    report_.filter_seconds += since(t0);
    const auto t1 = Clock::now();
    if (against.size() > 0) {
      if (sub) {
        match_pairs(view(changed), view(against), options_, [&](const Match* m, std::size_t count) {
          for (std::size_t k = 0; k < count; ++k) lists[which[m[k].s]].push_back(slot_of(m[k].u));
        });
      } else {
        match_pairs(view(against), view(changed), options_, [&](const Match* m, std::size_t count) {
          for (std::size_t k = 0; k < count; ++k) lists[which[m[k].u]].push_back(slot_of(m[k].s));
        });
      }
    }
    report_.match_seconds += since(t1);
  }
}

template <class T>
void IncrementalMatcher<T>::rematch_resident(const std::vector<Change<T>>& batch, const std::vector<Touched>& ts,
                                             const std::vector<Touched>& tu, bool before,
                                             std::vector<std::vector<std::uint32_t>>& lists_s,
                                             std::vector<std::vector<std::uint32_t>>& lists_u) {
  const auto t0 = Clock::now();
  const int team = ts.size() + tu.size() >= 64 ? effective_threads(options_.threads) : 1;
  std::size_t tested_u = 0, tested_s = 0;
  ErrorSlot error;
  // Before the batch, the regions that were present, at their old bounds (still in their grid);
  // after it, the present ones at their new bounds.
  const auto bounds = [&](const Touched& t, const ResidentGrid<T>& own) -> std::pair<const T*, const T*> {
    if (before) return {own.box(t.slot), own.box(t.slot) + own.dims()};
    return {batch[t.change].lower.data(), batch[t.change].upper.data()};
  };
#pragma omp parallel num_threads(team) reduction(+ : tested_u, tested_s)
  error.guard([&] {
#pragma omp for schedule(dynamic, 16) nowait
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(ts.size()); ++k) {
      const Touched& t = ts[static_cast<std::size_t>(k)];
      if (!(before ? t.was_present : t.present)) continue;
      const auto [lower, upper] = bounds(t, resident_->s);
      auto& list = lists_s[static_cast<std::size_t>(k)];
      tested_u += resident_->u.query(options_.rule, lower, upper, [&](std::uint32_t b) { list.push_back(b); });
    }
#pragma omp for schedule(dynamic, 16) nowait
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(tu.size()); ++k) {
      const Touched& t = tu[static_cast<std::size_t>(k)];
      if (!(before ? t.was_present : t.present)) continue;
      const auto [lower, upper] = bounds(t, resident_->u);
      auto& list = lists_u[static_cast<std::size_t>(k)];
      tested_s += resident_->s.query(options_.rule, lower, upper, [&](std::uint32_t a) { list.push_back(a); });
    }
  });
  error.rethrow();
  report_.candidates_u += tested_u;
  report_.candidates_s += tested_s;
  report_.match_seconds += since(t0);
}

template <class T>
Delta IncrementalMatcher<T>::apply(const std::vector<Change<T>>& batch) {
  const auto start = Clock::now();
  report_ = {};
  std::vector<Touched> ts, tu;
  net_changes(batch, ts, tu);
  Delta delta;
  if (ts.empty() && tu.empty()) {
    report_.seconds = since(start);
    return delta;
  }

  // The regions (and the resident grids), then the changed ones matched again; any failure undoes
  // the regions and the grids.
  Staged staged_s, staged_u;
  staged_s.old_slots = s_.adj.size();
  staged_s.old_free = s_.free_slots;
  staged_u.old_slots = u_.adj.size();
  staged_u.old_free = u_.free_slots;
  // Per touched region, the other side's slots it intersects after the batch and (resident path)
  // before it.
  std::vector<std::vector<std::uint32_t>> new_s(ts.size()), new_u(tu.size()), old_s, old_u;
  for (const auto* touched : {&ts, &tu})
    for (const Touched& t : *touched) {
      if (t.present) ++(touched == &ts ? report_.subscriptions : report_.updates);
      report_.removed += t.present ? 0 : 1;
    }
  // What the grids held for the touched regions before the batch (for the undo).
  const auto dims = static_cast<std::size_t>(s_.regions.dims);
  std::vector<T> old_boxes_s, old_boxes_u;
  std::size_t grid_done_s = 0, grid_done_u = 0;  // touched regions of each side already re-gridded
  const auto regrid = [&](ResidentGrid<T>& grid, const std::vector<Touched>& touched, std::vector<T>& old_boxes,
                          std::size_t& done) {
    old_boxes.resize(touched.size() * 2 * dims);
    for (std::size_t k = 0; k < touched.size(); ++k) {
      const Touched& t = touched[k];
      if (t.was_present) std::copy(grid.box(t.slot), grid.box(t.slot) + 2 * dims, &old_boxes[k * 2 * dims]);
    }
    for (; done < touched.size(); ++done) {
      const Touched& t = touched[done];
      if (t.was_present) grid.erase(t.slot);
      if (t.present) grid.insert(t.slot, batch[t.change].lower.data(), batch[t.change].upper.data());
    }
  };
  const auto ungrid = [&](ResidentGrid<T>& grid, const std::vector<Touched>& touched, const std::vector<T>& old_boxes,
                          std::size_t done) {
    for (std::size_t k = 0; k < done; ++k) {
      const Touched& t = touched[k];
      if (t.present && grid.contains(t.slot)) grid.erase(t.slot);
      if (t.was_present) grid.insert(t.slot, &old_boxes[k * 2 * dims], &old_boxes[k * 2 * dims + dims]);
    }
  };
  const bool on_device = resident_ && resident_->on_device;
  if (on_device && (!resident_->device || s_.adj.size() + ts.size() > resident_->device->capacity_s() ||
                    u_.adj.size() + tu.size() > resident_->device->capacity_u())) {
    build_device();  // missing after a failed batch, or short of slots for this one
  }
  std::vector<std::uint64_t> device_gained, device_lost;  // pair keys (resident_device.hpp)
  try {
    stage(s_, ts, batch, staged_s, options_.threads);
    stage(u_, tu, batch, staged_u, options_.threads);
    report_.prepare_seconds = since(start);
    if (on_device) {
      detail::DeviceBatchSide<T> side[2];
      for (int w = 0; w < 2; ++w) {
        const std::vector<Touched>& touched = w == 0 ? ts : tu;
        detail::DeviceBatchSide<T>& b = side[w];
        b.box.assign(touched.size() * 2 * dims, T{});
        for (std::size_t k = 0; k < touched.size(); ++k) {
          const Touched& t = touched[k];
          b.slot.push_back(t.slot);
          b.was_present.push_back(t.was_present ? 1 : 0);
          b.present.push_back(t.present ? 1 : 0);
          if (!t.present) continue;
          std::copy(batch[t.change].lower.begin(), batch[t.change].lower.end(), b.box.begin() + k * 2 * dims);
          std::copy(batch[t.change].upper.begin(), batch[t.change].upper.end(), b.box.begin() + k * 2 * dims + dims);
        }
      }
      detail::DeviceApplyReport device_report;
      resident_->device->apply(options_.rule, side[0], side[1], device_gained, device_lost, device_report);
      report_.candidates_u = device_report.tested_u;
      report_.candidates_s = device_report.tested_s;
      report_.match_seconds = device_report.seconds;
    } else if (resident_) {
      // The pair set is implicit in the regions: a changed region's old pairs are found by
      // matching its old bounds against the grids as they were, its new pairs by matching its new
      // bounds after, so no pair lists are kept.
      old_s.resize(ts.size());
      old_u.resize(tu.size());
      rematch_resident(batch, ts, tu, true, old_s, old_u);
      regrid(resident_->s, ts, old_boxes_s, grid_done_s);
      regrid(resident_->u, tu, old_boxes_u, grid_done_u);
      rematch_resident(batch, ts, tu, false, new_s, new_u);
    } else {
      rematch_with_match_pairs(batch, ts, tu, new_s, new_u);
    }
  } catch (...) {
    if (on_device) {
      resident_->device.reset();  // its state is unknown: rebuilt from the regions next time
    } else if (resident_) {
      ungrid(resident_->u, tu, old_boxes_u, grid_done_u);
      ungrid(resident_->s, ts, old_boxes_s, grid_done_s);
    }
    undo(u_, staged_u);
    undo(s_, staged_s);
    report_ = {};
    throw;
  }

  if (on_device) {
    // Keys (group << 32 | partner slot), sorted: the same order as the lists below give.
    const auto to_pair = [&](std::uint64_t key) -> IdPair {
      const auto group = static_cast<std::size_t>(key >> 32);
      const auto partner = static_cast<std::uint32_t>(key & 0xffffffffu);
      if (group < ts.size()) return {s_.id_of_slot[ts[group].slot], u_.id_of_slot[partner]};
      return {s_.id_of_slot[partner], u_.id_of_slot[tu[group - ts.size()].slot]};
    };
    const int team = device_gained.size() + device_lost.size() >= 65536 ? effective_threads(options_.threads) : 1;
    delta.gained.resize(device_gained.size());
    delta.lost.resize(device_lost.size());
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::int64_t q = 0; q < static_cast<std::int64_t>(device_gained.size()); ++q)
      delta.gained[static_cast<std::size_t>(q)] = to_pair(device_gained[static_cast<std::size_t>(q)]);
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::int64_t q = 0; q < static_cast<std::int64_t>(device_lost.size()); ++q)
      delta.lost[static_cast<std::size_t>(q)] = to_pair(device_lost[static_cast<std::size_t>(q)]);
  } else {
    // Old and new lists compared: subscription side for pairs of changed subscriptions, update side
    // for the rest. Then the lists of unchanged regions edited (each list by one thread) and those
    // of changed regions replaced.
    std::vector<char> touched_s(s_.adj.size(), 0), touched_u(u_.adj.size(), 0);
    for (const Touched& t : ts) touched_s[t.slot] = 1;
    for (const Touched& t : tu) touched_u[t.slot] = 1;
    // Per changed region (subscriptions, then updates, in batch order), the pairs it gained and lost,
    // in increasing slot order of the partners: the Delta's order, whatever the thread count.
    const int team = ts.size() + tu.size() >= kParallelFrom ? effective_threads(options_.threads) : 1;
    const std::size_t regions = ts.size() + tu.size();
    std::vector<std::vector<SlotPair>> gained_of(regions), lost_of(regions);
    ErrorSlot error;
#pragma omp parallel num_threads(team)
    error.guard([&] {
      std::vector<std::uint32_t> scratch;
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(regions); ++kk) {
        const auto k = static_cast<std::size_t>(kk);
        auto& gained = gained_of[k];
        auto& lost = lost_of[k];
        if (k < ts.size()) {
          const std::uint32_t a = ts[k].slot;
          diff_lists(
              resident_ ? old_s[k] : s_.adj[a], new_s[k], scratch, [](std::uint32_t) { return false; },
              [&](std::uint32_t b) {
                gained.push_back({a, b});
              },
              [&](std::uint32_t b) {
                lost.push_back({a, b});
              });
        } else {
          const std::size_t j = k - ts.size();
          const std::uint32_t b = tu[j].slot;
          diff_lists(
              resident_ ? old_u[j] : u_.adj[b], new_u[j], scratch, [&](std::uint32_t a) { return touched_s[a] != 0; },
              [&](std::uint32_t a) {
                gained.push_back({a, b});
              },
              [&](std::uint32_t a) {
                lost.push_back({a, b});
              });
        }
      }
    });
    error.rethrow();
    std::vector<std::size_t> gained_at(regions + 1, 0), lost_at(regions + 1, 0);
    for (std::size_t k = 0; k < regions; ++k) {
      gained_at[k + 1] = gained_at[k] + gained_of[k].size();
      lost_at[k + 1] = lost_at[k] + lost_of[k].size();
    }
    delta.gained.resize(gained_at[regions]);
    delta.lost.resize(lost_at[regions]);
#pragma omp parallel num_threads(team)
    error.guard([&] {
#pragma omp for schedule(dynamic, 16)
      for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(regions); ++kk) {
        const auto k = static_cast<std::size_t>(kk);
        for (std::size_t q = 0; q < gained_of[k].size(); ++q)
          delta.gained[gained_at[k] + q] = {s_.id_of_slot[gained_of[k][q].first],
                                            u_.id_of_slot[gained_of[k][q].second]};
        for (std::size_t q = 0; q < lost_of[k].size(); ++q)
          delta.lost[lost_at[k] + q] = {s_.id_of_slot[lost_of[k][q].first], u_.id_of_slot[lost_of[k][q].second]};
      }
      if (resident_) return;  // no pair lists
      // The lists of unchanged partners edited, each list by one thread.
      const auto me = static_cast<std::uint32_t>(omp_get_thread_num());
      const auto all = static_cast<std::uint32_t>(omp_get_num_threads());
      for (const auto& pairs : lost_of)
        for (const auto& [a, b] : pairs) {
          if (!touched_s[a] && a % all == me) erase_one(s_.adj[a], b);
          if (!touched_u[b] && b % all == me) erase_one(u_.adj[b], a);
        }
      for (const auto& pairs : gained_of)
        for (const auto& [a, b] : pairs) {
          if (!touched_s[a] && a % all == me) s_.adj[a].push_back(b);
          if (!touched_u[b] && b % all == me) u_.adj[b].push_back(a);
        }
    });
    error.rethrow();
  }
  for (auto [side, touched, lists] : {std::tuple{&s_, &ts, &new_s}, std::tuple{&u_, &tu, &new_u}}) {
    for (std::size_t k = 0; k < touched->size(); ++k) {
      const Touched& t = (*touched)[k];
      if (t.present) {
        if (!resident_) side->adj[t.slot] = std::move((*lists)[k]);
        if (!t.was_present) side->slot_of_id.emplace(t.id, t.slot);
      } else {
        std::vector<std::uint32_t>().swap(side->adj[t.slot]);
        side->pos_of_slot[t.slot] = kFree;
        side->free_slots.push_back(t.slot);
        side->slot_of_id.erase(t.id);
      }
    }
  }
  pairs_ = pairs_ + delta.gained.size() - delta.lost.size();
  report_.seconds = since(start);
  return delta;
}

void sort_delta(Delta& delta) {
  for (std::vector<IdPair>* out : {&delta.gained, &delta.lost})
    parallel_sort(out->begin(), out->end(), effective_threads(0));
}

template <class T>
std::vector<IdPair> IncrementalMatcher<T>::pair_list() const {
  std::vector<IdPair> out;
  out.reserve(pairs_);
  for_each_pair([&](std::uint64_t s, std::uint64_t u) { out.push_back({s, u}); });
  std::sort(out.begin(), out.end());
  return out;
}

template class IncrementalMatcher<std::uint32_t>;
template class IncrementalMatcher<std::uint64_t>;
template class IncrementalMatcher<double>;

}  // namespace simkit::ddm
