// A federation's ticks against an IncrementalMatcher (docs/ddm.md, "simkit ddm replay"). The moves
// are made serially, from counter-based streams keyed by the tick (which regions or entities move)
// and by (entity, tick) (how an entity moves), so a run depends on the seed and the regions only.
#include "simkit/ddm/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/rng.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/incremental.hpp"

namespace simkit::ddm {

namespace {

// Stream tags of replay's draws: the regions or entities chosen in a tick (keyed by the tick), and an
// entity's moves (keyed by the entity and the tick).
constexpr std::uint32_t kChoiceTag = 0x72706c79u;      // "rply"
constexpr std::uint32_t kEntityMoveTag = 0x656e7479u;  // "enty"

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The entities of a pair of sets: entity e is subscription s[e] and update u[e] (positions), with the
// same id. Walk and waypoint need every subscription id to be an update id and vice versa.
struct Entities {
  std::vector<std::size_t> s, u;
};

template <class T>
Entities pair_entities(const Regions<T>& r, Mobility mobility) {
  std::unordered_map<std::uint64_t, std::size_t> update_at;
  update_at.reserve(r.updates.size());
  for (std::size_t j = 0; j < r.updates.size(); ++j) update_at.emplace(r.updates.ids[j], j);
  const auto unpaired = [&](const char* set, std::uint64_t id, const char* other) {
    return UserError("regions", fmt::format(": `mobility` {} moves entities, a subscription and an update with the "
                                            "same id, but {} {} has no {} with that id (generate's `moving` "
                                            "workloads pair up; `mobility` region-walk moves any regions)",
                                            to_string(mobility), set, id, other));
  };
  Entities out;
  out.s.reserve(r.subscriptions.size());
  out.u.reserve(r.subscriptions.size());
  for (std::size_t i = 0; i < r.subscriptions.size(); ++i) {
    const auto found = update_at.find(r.subscriptions.ids[i]);
    if (found == update_at.end()) throw unpaired("subscription", r.subscriptions.ids[i], "update");
    out.s.push_back(i);
    out.u.push_back(found->second);
  }
  if (r.updates.size() != r.subscriptions.size()) {  // ids are unique per set: some update has no subscription
    std::unordered_set<std::uint64_t> subscribed(r.subscriptions.ids.begin(), r.subscriptions.ids.end());
    for (const std::uint64_t id : r.updates.ids)
      if (subscribed.count(id) == 0) throw unpaired("update", id, "subscription");
  }
  return out;
}

// `v` moved by `shift` (a whole number for integer coordinates), but by no more than the room below or
// above it, counted exactly in T: a u64 bound near 2^64 or above 2^53 never wraps or leaves the box
// however the double `shift` rounded.
template <class T>
T shifted(T v, double shift, T room_below, T room_above) {
  if constexpr (std::is_floating_point_v<T>) {
    return v + std::clamp(shift, -static_cast<double>(room_below), static_cast<double>(room_above));
  } else {
    const auto magnitude = static_cast<std::uint64_t>(std::fabs(shift));
    if (shift < 0) return static_cast<T>(v - static_cast<T>(std::min<std::uint64_t>(magnitude, room_below)));
    return static_cast<T>(v + static_cast<T>(std::min<std::uint64_t>(magnitude, room_above)));
  }
}

// One entity's moves: a random walk (Walk) or towards waypoints (Waypoint, which keeps a destination
// per entity). Both regions move by the same displacement, kept inside the regions' bounding box.
template <class T>
class EntityMover {
 public:
  EntityMover(const ReplayOptions& options, std::vector<T> box_lo, std::vector<T> box_hi, std::size_t entities)
      : options_(options), box_lo_(std::move(box_lo)), box_hi_(std::move(box_hi)), dims_(box_lo_.size()) {
    if (options_.mobility == Mobility::Waypoint) {
      destination_.assign(entities * dims_, 0.0);
      has_destination_.assign(entities, false);
    }
  }

  // Moves entity e (subscription si of s, update ui of u) at `tick`, in place, with draws keyed by
  // (seed, e, tick); appends the two changes to `batch`.
  void move(std::size_t e, std::int64_t tick, RegionSet<T>& s, std::size_t si, RegionSet<T>& u, std::size_t ui,
            std::vector<Change<T>>& batch) {
    RngStream rng(options_.seed, StreamId{static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(tick),
                                          kEntityMoveTag ^ static_cast<std::uint32_t>(e >> 32)});
    // How far the pair may go each way in each dimension, exactly.
    std::vector<T> below(dims_), above(dims_);
    for (std::size_t d = 0; d < dims_; ++d) {
      const int di = static_cast<int>(d);
      below[d] = static_cast<T>(std::min(s.lo(si, di), u.lo(ui, di)) - box_lo_[d]);
      above[d] = static_cast<T>(box_hi_[d] - std::max(s.hi(si, di), u.hi(ui, di)));
    }
    std::vector<double> shift(dims_, 0.0);
    if (options_.mobility == Mobility::Walk) {
      for (std::size_t d = 0; d < dims_; ++d) {
        const int di = static_cast<int>(d);
        const double extent = static_cast<double>(u.hi(ui, di)) - static_cast<double>(u.lo(ui, di));
        shift[d] = rng.normal() * options_.step * (extent > 0 ? extent : 1.0);
        if constexpr (!std::is_floating_point_v<T>) shift[d] = std::round(shift[d]);
      }
    } else {
      waypoint_shift(e, rng, u, ui, below, above, shift);
    }
    std::vector<T> s_lower(dims_), s_upper(dims_), u_lower(dims_), u_upper(dims_);
    for (std::size_t d = 0; d < dims_; ++d) {
      const int di = static_cast<int>(d);
      s_lower[d] = shifted(s.lo(si, di), shift[d], below[d], above[d]);
      s_upper[d] = shifted(s.hi(si, di), shift[d], below[d], above[d]);
      u_lower[d] = shifted(u.lo(ui, di), shift[d], below[d], above[d]);
      u_upper[d] = shifted(u.hi(ui, di), shift[d], below[d], above[d]);
      s.lower[d * s.size() + si] = s_lower[d];
      s.upper[d * s.size() + si] = s_upper[d];
      u.lower[d * u.size() + ui] = u_lower[d];
      u.upper[d * u.size() + ui] = u_upper[d];
    }
    batch.push_back(Change<T>::move(Role::Subscription, s.ids[si], std::move(s_lower), std::move(s_upper)));
    batch.push_back(Change<T>::move(Role::Update, u.ids[ui], std::move(u_lower), std::move(u_upper)));
  }

 private:
  // Towards the entity's destination (a position of the update's lower corner where both regions
  // lie in the box) by `speed` x the update's mean side, arriving when it is that close.
  void waypoint_shift(std::size_t e, RngStream& rng, const RegionSet<T>& u, std::size_t ui, const std::vector<T>& below,
                      const std::vector<T>& above, std::vector<double>& shift) {
    double* dest = &destination_[e * dims_];
    std::vector<double> at(dims_);
    double side = 0;
    for (std::size_t d = 0; d < dims_; ++d) {
      at[d] = static_cast<double>(u.lo(ui, static_cast<int>(d)));
      side += static_cast<double>(u.hi(ui, static_cast<int>(d))) - at[d];
    }
    side /= static_cast<double>(dims_);
    const double step = options_.speed * (side > 0 ? side : 1.0);
    // A new destination on arrival takes effect at the entity's next move, drawn from that tick's stream.
    if (!has_destination_[e]) {
      draw_destination(rng, at, below, above, dest);
      has_destination_[e] = true;
    }
    double distance = 0;
    for (std::size_t d = 0; d < dims_; ++d) distance += (dest[d] - at[d]) * (dest[d] - at[d]);
    distance = std::sqrt(distance);
    if (distance <= step) {
      for (std::size_t d = 0; d < dims_; ++d) shift[d] = dest[d] - at[d];
      has_destination_[e] = false;
      return;
    }
    std::size_t widest = 0;
    bool any = false;
    for (std::size_t d = 0; d < dims_; ++d) {
      shift[d] = (dest[d] - at[d]) * step / distance;
      if constexpr (!std::is_floating_point_v<T>) shift[d] = std::round(shift[d]);
      any = any || shift[d] != 0;
      if (std::fabs(dest[d] - at[d]) > std::fabs(dest[widest] - at[widest])) widest = d;
    }
    // Integer coordinates and a step under half a unit: one unit along the longest way, so that the
    // entity still arrives.
    if (!any) shift[widest] = dest[widest] > at[widest] ? 1.0 : -1.0;
  }

  // A destination uniform among the positions `at` - below .. `at` + above (whole numbers for integers).
  void draw_destination(RngStream& rng, const std::vector<double>& at, const std::vector<T>& below,
                        const std::vector<T>& above, double* dest) const {
    for (std::size_t d = 0; d < dims_; ++d) {
      const double lo = at[d] - static_cast<double>(below[d]);
      const double width = static_cast<double>(below[d]) + static_cast<double>(above[d]);
      if constexpr (std::is_floating_point_v<T>) {
        dest[d] = lo + rng.uniform() * width;
      } else {
        dest[d] = lo + std::min(std::floor(rng.uniform() * (width + 1)), width);
      }
    }
  }

  const ReplayOptions& options_;
  std::vector<T> box_lo_, box_hi_;
  std::size_t dims_;
  std::vector<double> destination_;  // entity e's, at [e * dims, (e + 1) * dims)
  std::vector<bool> has_destination_;
};

// Region-walk: region i of `set` (k among both sets) moved by a normal step of sd `step` x its own
// extent per dimension, clamped into the box, in place; appends the change to `batch`.
template <class T>
void walk_region(RegionSet<T>& set, std::size_t i, Role role, RngStream& rng, double step, const std::vector<T>& box_lo,
                 const std::vector<T>& box_hi, std::vector<Change<T>>& batch) {
  const int dims = set.dims;
  std::vector<T> lower(static_cast<std::size_t>(dims)), upper(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    const auto du = static_cast<std::size_t>(d);
    const double lo = static_cast<double>(set.lo(i, d)), hi = static_cast<double>(set.hi(i, d));
    const double extent = hi - lo, blo = static_cast<double>(box_lo[du]);
    const double bhi = static_cast<double>(box_hi[du]);
    double shift = rng.normal() * step * (extent > 0 ? extent : 1.0);
    if constexpr (!std::is_floating_point_v<T>) shift = std::round(shift);
    const double new_lo = std::clamp(lo + shift, blo, std::max(blo, bhi - extent));
    lower[du] = static_cast<T>(new_lo);
    upper[du] = static_cast<T>(new_lo + extent);
    set.lower[du * set.size() + i] = lower[du];
    set.upper[du * set.size() + i] = upper[du];
  }
  batch.push_back(Change<T>::move(role, set.ids[i], std::move(lower), std::move(upper)));
}

// The q-quantile of sorted values, interpolated linearly between neighbours (0 when empty).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

void validate(const ReplayOptions& o) {
  if (o.ticks < 1) throw UserError("ticks", fmt::format(" {}: must be >= 1", o.ticks));
  if (!(o.move_fraction >= 0 && o.move_fraction <= 1))
    throw UserError("move_fraction", fmt::format(" {}: must lie in [0, 1]", o.move_fraction));
  if (!(o.step >= 0) || !std::isfinite(o.step)) throw UserError("step", fmt::format(" {}: must be >= 0", o.step));
  if (!(o.speed > 0) || !std::isfinite(o.speed)) throw UserError("speed", fmt::format(" {}: must be > 0", o.speed));
  if (to_string(o.mobility).empty())
    throw UserError("mobility",
                    fmt::format(" {}: expected {}", static_cast<int>(o.mobility), names_text(kMobilityNames)));
}

// Each tick moves a fraction of all regions (region-walk: both sets, chosen uniformly, a random walk
// of sd `step` x the region's own extent per dimension) or of all entities (walk, waypoint: both
// regions of an entity by one displacement), kept inside the regions' bounding box, and applies the
// moves to an IncrementalMatcher as one batch.
template <class T>
ReplayResult replay(Regions<T> r, const ReplayOptions& options, const MatchOptions& match_options,
                    const ProgressCallback& progress) {
  validate(options);
  const int dims = r.dims();
  std::vector<T> box_lo(static_cast<std::size_t>(std::max(dims, 0))), box_hi(box_lo.size());
  for (int d = 0; d < dims; ++d) {
    bool first = true;
    for (const RegionSet<T>* set : {&r.subscriptions, &r.updates}) {
      for (std::size_t i = 0; i < set->size(); ++i) {
        const T lo = set->lo(i, d), hi = set->hi(i, d);
        if (first || lo < box_lo[static_cast<std::size_t>(d)]) box_lo[static_cast<std::size_t>(d)] = lo;
        if (first || hi > box_hi[static_cast<std::size_t>(d)]) box_hi[static_cast<std::size_t>(d)] = hi;
        first = false;
      }
    }
  }
  const std::size_t ns = r.subscriptions.size(), nu = r.updates.size(), total = ns + nu;
  if (total == 0) throw UserError("regions", ": no regions");
  const bool entity_moves = options.mobility != Mobility::RegionWalk;
  const Entities entities = entity_moves ? pair_entities(r, options.mobility) : Entities{};
  // What is chosen each tick: regions, or entities (each two regions).
  const std::size_t population = entity_moves ? entities.s.size() : total;
  const auto chosen_per_tick = std::min(
      population, static_cast<std::size_t>(std::llround(options.move_fraction * static_cast<double>(population))));
  const std::size_t moves = entity_moves ? 2 * chosen_per_tick : chosen_per_tick;
  EntityMover<T> mover(options, box_lo, box_hi, population);

  ReplayResult out;
  out.subscriptions = ns;
  out.updates = nu;
  out.dims = dims;
  out.ticks = options.ticks;
  out.mobility = options.mobility;
  out.move_fraction = options.move_fraction;
  if (entity_moves) {
    out.entities = population;
    out.entities_per_tick = chosen_per_tick;
  }
  out.moves_per_tick = moves;

  const auto build = std::chrono::steady_clock::now();
  IncrementalMatcher<T> matcher(r.subscriptions, r.updates, match_options);
  out.build_seconds = seconds_since(build);
  out.initial_pairs = matcher.pairs();
  for (std::int64_t tick = 0; tick < options.ticks; ++tick) {
    throw_if_stopped(match_options);
    RngStream rng(options.seed, StreamId::from64(static_cast<std::uint64_t>(tick), kChoiceTag));
    std::vector<Change<T>> batch;
    batch.reserve(moves);
    std::unordered_set<std::size_t> chosen;
    while (chosen.size() < chosen_per_tick) {
      const auto k = static_cast<std::size_t>(rng.uniform() * static_cast<double>(population)) % population;
      if (!chosen.insert(k).second) continue;
      if (entity_moves) {
        mover.move(k, tick, r.subscriptions, entities.s[k], r.updates, entities.u[k], batch);
      } else if (k < ns) {
        walk_region(r.subscriptions, k, Role::Subscription, rng, options.step, box_lo, box_hi, batch);
      } else {
        walk_region(r.updates, k - ns, Role::Update, rng, options.step, box_lo, box_hi, batch);
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const Delta delta = matcher.apply(batch);
    out.latency_seconds.push_back(seconds_since(start));
    out.pairs_gained += delta.gained.size();
    out.pairs_lost += delta.lost.size();
    if (progress) progress(static_cast<double>(tick + 1), static_cast<double>(options.ticks));
  }
  out.final_pairs = matcher.pairs();
  if (options.verify) {
    throw_if_stopped(match_options);  // the full rematch may take as long as the build
    const std::uint64_t full = count_pairs(view(r.subscriptions), view(r.updates), match_options).pairs;
    out.verified = full == matcher.pairs();
    if (!out.verified)
      throw InternalError(
          fmt::format("ddm replay: {} pairs kept incrementally, {} by a full rematch", matcher.pairs(), full));
  }
  double sum = 0;
  for (const double l : out.latency_seconds) sum += l;
  std::vector<double> sorted = out.latency_seconds;
  std::sort(sorted.begin(), sorted.end());
  out.p50_seconds = quantile(sorted, 0.5);
  out.p99_seconds = quantile(sorted, 0.99);
  out.max_seconds = sorted.empty() ? 0.0 : sorted.back();
  out.mean_seconds = sorted.empty() ? 0.0 : sum / static_cast<double>(sorted.size());
  out.ticks_per_second = sum > 0 ? static_cast<double>(sorted.size()) / sum : 0.0;
  return out;
}

Mobility parse_mobility(std::string_view text) {
  if (const auto m = value_of(kMobilityNames, text)) return *m;
  throw UserError("mobility", fmt::format(" {}: expected {}", text, names_text(kMobilityNames)));
}

std::string_view to_string(Mobility mobility) { return name_of(kMobilityNames, mobility); }

template ReplayResult replay(Regions<std::uint32_t>, const ReplayOptions&, const MatchOptions&,
                             const ProgressCallback&);
template ReplayResult replay(Regions<std::uint64_t>, const ReplayOptions&, const MatchOptions&,
                             const ProgressCallback&);
template ReplayResult replay(Regions<double>, const ReplayOptions&, const MatchOptions&, const ProgressCallback&);

}  // namespace simkit::ddm
