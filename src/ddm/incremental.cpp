// Incremental matching (incremental.hpp): a batch is checked and reduced to net changes, put into
// the regions (undoable), the changed regions are matched again with match_pairs (changed
// subscriptions against all updates, changed updates against all subscriptions), and each changed
// region's new list is compared with its old one. A pair whose subscription changed is compared
// on the subscription's side only, so pairs of two changed regions count once.
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

#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"
#include "core/parallel.hpp"

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

// Walks two sorted lists; calls lost(x) for x only in `old_list`, gained(x) for x only in
// `new_list`, leaving out elements for which skip(x) holds.
// Compares one region's old and new lists (the other side's slots, each at most once, any order):
// lost(x) for x only in `old_list`, gained(x) for x only in `new_list`, leaving out x where
// skip(x). `stamp` (one entry per slot of the other side, values below `epoch`) marks the lists;
// two epochs per call, no sorting.
class ListDiff {
 public:
  explicit ListDiff(std::size_t slots) : stamp_(slots, 0) {}
  template <class Skip, class Gained, class Lost>
  void operator()(const std::vector<std::uint32_t>& old_list, const std::vector<std::uint32_t>& new_list, Skip skip,
                  Gained gained, Lost lost) {
    if (epoch_ > std::numeric_limits<std::uint32_t>::max() - 2) {
      std::fill(stamp_.begin(), stamp_.end(), 0);
      epoch_ = 0;
    }
    const std::uint32_t only_new = ++epoch_, both = ++epoch_;
    for (const std::uint32_t x : new_list) stamp_[x] = only_new;
    for (const std::uint32_t x : old_list) {
      if (stamp_[x] == only_new) {
        stamp_[x] = both;
      } else if (!skip(x)) {
        lost(x);
      }
    }
    for (const std::uint32_t x : new_list)
      if (stamp_[x] == only_new && !skip(x)) gained(x);
  }

 private:
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 0;
};

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

std::vector<SlotPair> concat(const std::vector<std::vector<SlotPair>>& parts) {
  std::size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::vector<SlotPair> out;
  out.reserve(total);
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

void erase_one(std::vector<std::uint32_t>& list, std::uint32_t value) {
  const auto it = std::find(list.begin(), list.end(), value);
  if (it == list.end()) throw InternalError("ddm incremental: adjacency lists out of step");
  *it = list.back();
  list.pop_back();
}

}  // namespace

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
  pairs_ = match_pairs(view(s_.regions), view(u_.regions), options_, [&](const Match* m, std::size_t count) {
             for (std::size_t k = 0; k < count; ++k) {
               s_.adj[m[k].s].push_back(static_cast<std::uint32_t>(m[k].u));
               u_.adj[m[k].u].push_back(static_cast<std::uint32_t>(m[k].s));
             }
           }).pairs;
}

template <class T>
void IncrementalMatcher<T>::net_changes(const std::vector<Change<T>>& batch, std::vector<Touched>& ts,
                                        std::vector<Touched>& tu) const {
  const int dims = s_.regions.dims;
  std::unordered_map<std::uint64_t, std::size_t> index_s, index_u;  // id -> index in ts / tu
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const Change<T>& c = batch[k];
    const bool sub = c.role == Role::Subscription;
    if (!sub && c.role != Role::Update) throw change_error(k, c, "side is neither subscription nor update");
    const SideState& side = sub ? s_ : u_;
    std::vector<Touched>& list = sub ? ts : tu;
    const auto [it, inserted] = (sub ? index_s : index_u).try_emplace(c.id, list.size());
    if (inserted) {
      Touched t;
      t.id = c.id;
      const auto found = side.slot_of_id.find(c.id);
      t.was_present = t.present = found != side.slot_of_id.end();
      if (t.was_present) t.slot = found->second;
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
  for (auto [side, list] : {std::pair{&s_, &ts}, std::pair{&u_, &tu}}) {
    std::erase_if(*list, [&, side = side](const Touched& t) {
      if (!t.was_present) return !t.present;
      if (!t.present) return false;
      const Change<T>& c = batch[t.change];
      const std::size_t pos = side->pos_of_slot[t.slot];
      for (int d = 0; d < dims; ++d) {
        const auto dd = static_cast<std::size_t>(d);
        if (!(c.lower[dd] == side->regions.lo(pos, d) && c.upper[dd] == side->regions.hi(pos, d))) return false;
      }
      return true;
    });
  }
  const std::size_t total = s_.regions.size() + ts.size(), total_u = u_.regions.size() + tu.size();
  if (std::max(total, total_u) >= kFree)
    throw UserError(fmt::format("batch: more than {} regions on a side", kFree - 1));
}

template <class T>
void IncrementalMatcher<T>::stage(SideState& side, std::vector<Touched>& touched, const std::vector<Change<T>>& batch,
                                  Staged& staged) {
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
    // Moves only: bounds rewritten in place.
    staged.moved_pos.reserve(touched.size());
    staged.moved_lower.reserve(touched.size() * static_cast<std::size_t>(dims));
    staged.moved_upper.reserve(touched.size() * static_cast<std::size_t>(dims));
    for (const Touched& t : touched) {
      const std::size_t pos = side.pos_of_slot[t.slot];
      const Change<T>& c = batch[t.change];
      staged.moved_pos.push_back(pos);
      for (int d = 0; d < dims; ++d) {
        const std::size_t at = static_cast<std::size_t>(d) * n + pos, dd = static_cast<std::size_t>(d);
        staged.moved_lower.push_back(r.lower[at]);
        staged.moved_upper.push_back(r.upper[at]);
        r.lower[at] = c.lower[dd];
        r.upper[at] = c.upper[dd];
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

  // The regions, then the changed ones matched again; any failure undoes the regions.
  Staged staged_s, staged_u;
  staged_s.old_slots = s_.adj.size();
  staged_s.old_free = s_.free_slots;
  staged_u.old_slots = u_.adj.size();
  staged_u.old_free = u_.free_slots;
  std::vector<std::vector<std::uint32_t>> new_s, new_u;  // per touched region: the other side's slots
  try {
    stage(s_, ts, batch, staged_s);
    stage(u_, tu, batch, staged_u);
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
      lists.resize(touched.size());
      (sub ? report_.subscriptions : report_.updates) = n;
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
  } catch (...) {
    undo(u_, staged_u);
    undo(s_, staged_s);
    report_ = {};
    throw;
  }
  for (const auto* touched : {&ts, &tu})
    for (const Touched& t : *touched) report_.removed += t.present ? 0 : 1;

  // Old and new lists compared: subscription side for pairs of changed subscriptions, update side
  // for the rest. Then the lists of unchanged regions edited (each list by one thread) and those
  // of changed regions replaced.
  std::vector<char> touched_s(s_.adj.size(), 0), touched_u(u_.adj.size(), 0);
  for (const Touched& t : ts) touched_s[t.slot] = 1;
  for (const Touched& t : tu) touched_u[t.slot] = 1;
  const int team = ts.size() + tu.size() >= kParallelFrom ? effective_threads(options_.threads) : 1;
  std::vector<std::vector<SlotPair>> gained_by(static_cast<std::size_t>(team)), lost_by(gained_by.size());
  ErrorSlot error;
#pragma omp parallel num_threads(team)
  error.guard([&] {
    auto& gained = gained_by[static_cast<std::size_t>(omp_get_thread_num())];
    auto& lost = lost_by[static_cast<std::size_t>(omp_get_thread_num())];
    if (!ts.empty()) {
      ListDiff diff(u_.adj.size());
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(ts.size()); ++k) {
        const std::uint32_t a = ts[static_cast<std::size_t>(k)].slot;
        diff(
            s_.adj[a], new_s[static_cast<std::size_t>(k)], [](std::uint32_t) { return false; },
            [&](std::uint32_t b) {
              gained.push_back({a, b});
            },
            [&](std::uint32_t b) {
              lost.push_back({a, b});
            });
      }
    }
    if (!tu.empty()) {
      ListDiff diff(s_.adj.size());
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(tu.size()); ++k) {
        const std::uint32_t b = tu[static_cast<std::size_t>(k)].slot;
        diff(
            u_.adj[b], new_u[static_cast<std::size_t>(k)], [&](std::uint32_t a) { return touched_s[a] != 0; },
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
  const std::vector<SlotPair> gained = concat(gained_by), lost = concat(lost_by);
  delta.gained.resize(gained.size());
  delta.lost.resize(lost.size());
#pragma omp parallel num_threads(team)
  error.guard([&] {
    const auto me = static_cast<std::uint32_t>(omp_get_thread_num());
    const auto all = static_cast<std::uint32_t>(omp_get_num_threads());
    for (std::size_t q = me; q < gained.size(); q += all)
      delta.gained[q] = {s_.id_of_slot[gained[q].first], u_.id_of_slot[gained[q].second]};
    for (std::size_t q = me; q < lost.size(); q += all)
      delta.lost[q] = {s_.id_of_slot[lost[q].first], u_.id_of_slot[lost[q].second]};
    for (const auto& [a, b] : lost) {
      if (!touched_s[a] && a % all == me) erase_one(s_.adj[a], b);
      if (!touched_u[b] && b % all == me) erase_one(u_.adj[b], a);
    }
    for (const auto& [a, b] : gained) {
      if (!touched_s[a] && a % all == me) s_.adj[a].push_back(b);
      if (!touched_u[b] && b % all == me) u_.adj[b].push_back(a);
    }
  });
  error.rethrow();
  for (auto [side, touched, lists] : {std::tuple{&s_, &ts, &new_s}, std::tuple{&u_, &tu, &new_u}}) {
    for (std::size_t k = 0; k < touched->size(); ++k) {
      const Touched& t = (*touched)[k];
      if (t.present) {
        side->adj[t.slot] = std::move((*lists)[k]);
        if (!t.was_present) side->slot_of_id.emplace(t.id, t.slot);
      } else {
        std::vector<std::uint32_t>().swap(side->adj[t.slot]);
        side->pos_of_slot[t.slot] = kFree;
        side->free_slots.push_back(t.slot);
        side->slot_of_id.erase(t.id);
      }
    }
  }
  pairs_ = pairs_ + gained.size() - lost.size();
  for (std::vector<IdPair>* out : {&delta.gained, &delta.lost}) {
    parallel_sort(out->begin(), out->end(), team);
  }
  report_.seconds = since(start);
  return delta;
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
