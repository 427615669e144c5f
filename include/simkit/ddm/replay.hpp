#pragma once
// A federation's ticks replayed against an IncrementalMatcher (docs/ddm.md, "simkit ddm replay"):
// each tick moves a fraction of the regions or of the entities and applies the moves as one batch;
// the result is the per-tick latency of the batches and the pairs gained and lost. The CLI's
// `ddm replay` and bench_ddm_incremental's BM_DdmReplay both run this.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/core/names.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/io.hpp"

namespace simkit::ddm {

// How the regions move. RegionWalk moves regions one by one (both sets, a random walk); Walk and
// Waypoint move entities, a subscription and an update with the same id, together (a random walk,
// or towards random destinations). generate() with `moving` writes entities.
enum class Mobility { RegionWalk, Walk, Waypoint };
inline constexpr Named<Mobility> kMobilityNames[] = {
    {Mobility::RegionWalk, "region-walk"}, {Mobility::Walk, "walk"}, {Mobility::Waypoint, "waypoint"}};

struct ReplayOptions {
  std::int64_t ticks = 100;      // batches, >= 1
  double move_fraction = 0.001;  // of all regions (region-walk) or of all entities moved per tick, in [0, 1]
  // Region-walk and walk: the sd of a move per dimension, in units of the region's own extent (walk:
  // the update's), >= 0.
  double step = 1.0;
  // Waypoint: the distance an entity covers per move, in units of its update's side (the mean over
  // the dimensions), > 0.
  double speed = 0.5;
  Mobility mobility = Mobility::RegionWalk;
  std::uint64_t seed = 1;  // the moves' draws: keyed by (seed, tick) and (seed, entity, tick)
  bool verify = false;     // after the last tick, compare the pairs with a full rematch
};

struct ReplayResult {
  std::size_t subscriptions = 0, updates = 0;
  int dims = 0;
  std::int64_t ticks = 0;
  Mobility mobility = Mobility::RegionWalk;
  double move_fraction = 0;
  // Walk and waypoint: the entities, and those moved per tick (empty with region-walk).
  std::optional<std::size_t> entities, entities_per_tick;
  std::size_t moves_per_tick = 0;  // regions changed per batch (two per entity with walk and waypoint)
  std::uint64_t initial_pairs = 0, final_pairs = 0;
  std::uint64_t pairs_gained = 0, pairs_lost = 0;  // summed over the ticks
  double build_seconds = 0;                        // the matcher's construction (the first full match)
  std::vector<double> latency_seconds;             // apply() per tick
  double p50_seconds = 0, p99_seconds = 0, max_seconds = 0, mean_seconds = 0;  // of latency_seconds
  double ticks_per_second = 0;                                                 // ticks over the summed batch times
  bool verified = false;  // with `verify`: the full rematch agreed (a difference is an InternalError)
};

// Checks the options: a bad one is a UserError naming the field ("ticks", "move_fraction", "step",
// "speed"). replay() checks them too; a caller may check before it reads a large file.
void validate(const ReplayOptions& options);

// Builds an IncrementalMatcher from `regions` with `match_options`, then replays `options.ticks`
// ticks: each moves round(move_fraction x population) distinct regions (region-walk) or entities
// (walk, waypoint), kept inside the bounding box of all regions (integer coordinates by whole units),
// and applies the moves as one timed batch. The moves depend on the seed and the regions, never on
// the backend or the thread count. Regions whose ids do not pair up (walk, waypoint) or no regions at
// all are a UserError naming "regions". Stops between ticks when match_options.stop asks
// (simkit::Stopped); calls progress(ticks done, ticks) after every tick.
template <class T>
ReplayResult replay(Regions<T> regions, const ReplayOptions& options, const MatchOptions& match_options,
                    const ProgressCallback& progress = {});

// "region-walk", "walk" or "waypoint"; parse_mobility throws a UserError naming "mobility".
Mobility parse_mobility(std::string_view text);
std::string_view to_string(Mobility mobility);

}  // namespace simkit::ddm
