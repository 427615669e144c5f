#pragma once
// Incremental matching: a pair of region sets kept matched across batches of changes (regions
// added, moved or removed on either side); the pairs gained and lost are returned as
// (subscription id, update id). Ids, not positions, name regions here: positions change when
// regions are added or removed. docs/ddm.md, "Incremental matching".
//
// The cpu and cuda backends keep both sets resident in a spatial index (a hierarchical grid over
// the first two dimensions) that a batch updates in place: only the changed regions are matched
// again, against their neighbourhoods, so a batch costs about (changed regions) x (regions near
// each) plus the pairs gained and lost, whatever the size of the sets. The reference backend is the
// oracle: the changed regions matched again with match_pairs against the whole other set (or the
// part a grid prefilter cannot rule out), each region's partners kept in a list (8 bytes per pair).
// The resident backends keep no pairs: a changed region's old pairs are found from its old bounds,
// so memory grows with the regions only: their bounds three times (in position order, per slot and
// in the index's cells; on cuda the last two on the device) plus about 100 bytes each of ids, slots
// and maps.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

// Which set a region belongs to: the subscriptions (S) or the updates (U).
enum class Role { Subscription, Update };

// One change of a batch. Add and Move carry the region's new bounds, one value per dimension in
// `lower` and `upper`; Remove ignores them. The changes of a batch apply in order, so one region
// may be changed several times (e.g. removed and added again); only the net effect is matched.
template <class T>
struct Change {
  enum class Kind { Add, Move, Remove };
  Kind kind = Kind::Move;
  Role role = Role::Subscription;
  std::uint64_t id = 0;
  std::vector<T> lower, upper;

  static Change add(Role role, std::uint64_t id, std::vector<T> lower, std::vector<T> upper) {
    return {Kind::Add, role, id, std::move(lower), std::move(upper)};
  }
  static Change move(Role role, std::uint64_t id, std::vector<T> lower, std::vector<T> upper) {
    return {Kind::Move, role, id, std::move(lower), std::move(upper)};
  }
  static Change remove(Role role, std::uint64_t id) { return {Kind::Remove, role, id, {}, {}}; }
};

// (subscription id, update id).
using IdPair = std::pair<std::uint64_t, std::uint64_t>;

// What a batch changed: pairs that intersect now and did not before (gained) and the reverse
// (lost). Each pair at most once, gained and lost disjoint; a region moved and moved back in one
// batch contributes nothing. The order is fixed by the batch and the matcher's history, the same
// for every thread count and backend: grouped by changed region (the changed subscriptions, then
// the changed updates, in the order of their first change in the batch), each group in the
// partners' internal order. Sort the lists if you need them by id (sort_delta).
struct Delta {
  std::vector<IdPair> gained, lost;
  bool empty() const { return gained.empty() && lost.empty(); }
};

// Sorts both lists of a Delta by (subscription id, update id).
void sort_delta(Delta& delta);

// The cost of the last apply().
struct ApplyReport {
  std::size_t subscriptions = 0, updates = 0;  // regions matched again (net changes, not removals)
  std::size_t removed = 0;                     // regions removed (both sides)
  // Regions of the other side the changed ones were matched against (all, or the prefilter's
  // candidates): updates for the changed subscriptions, subscriptions for the changed updates.
  // With the resident index: the regions tested against the changed ones (every region in the
  // cells visited).
  std::size_t candidates_u = 0, candidates_s = 0;
  double prepare_seconds = 0;  // checking the batch, reducing it to net changes, staging the regions
  double filter_seconds = 0;   // reference: the prefilter and the candidate sets
  double match_seconds = 0;    // wall time inside match_pairs (both calls)
  double seconds = 0;          // the whole apply()
};

template <class T>
class IncrementalMatcher {
 public:
  // Takes both sets (validated as by validate(); at most 2^32 - 2 regions a side) and matches them
  // once with `options` (a bad option is a UserError here); the matcher then keeps, for each
  // region, the other side's regions it intersects.
  IncrementalMatcher(RegionSet<T> subscriptions, RegionSet<T> updates, MatchOptions options = {});
  ~IncrementalMatcher();
  IncrementalMatcher(IncrementalMatcher&&) noexcept;
  IncrementalMatcher& operator=(IncrementalMatcher&&) noexcept;

  // Applies a batch and returns the pairs gained and lost. A bad change (Move or Remove of an id
  // not present at that point of the batch, Add of an id present, wrong number of bounds, lower >
  // upper, NaN) is a UserError naming the change, the side and the id; the matcher is then
  // unchanged (the whole batch is checked before anything changes). A failure while matching
  // (e.g. a device error) also leaves it unchanged; running out of memory while the pair lists
  // are updated leaves it unusable.
  Delta apply(const std::vector<Change<T>>& batch);

  // The current number of intersecting pairs.
  std::uint64_t pairs() const { return pairs_; }
  // Calls f(subscription id, update id) once for every current pair, in no particular order, from
  // one thread at a time. With the resident index (cpu, cuda) the pairs are not stored: this is a
  // full match of the current sets with the matcher's options.
  template <class F>
  void for_each_pair(F&& f) const {
    if (resident_) {
      match_pairs(view(s_.regions), view(u_.regions), options_, [&](const Match* m, std::size_t count) {
        for (std::size_t k = 0; k < count; ++k) f(s_.regions.ids[m[k].s], u_.regions.ids[m[k].u]);
      });
      return;
    }
    for (std::size_t a = 0; a < s_.adj.size(); ++a) {
      if (s_.pos_of_slot[a] == kFree) continue;
      for (const std::uint32_t b : s_.adj[a]) f(s_.id_of_slot[a], u_.id_of_slot[b]);
    }
  }
  // Every current pair, sorted.
  std::vector<IdPair> pair_list() const;  // sorted

  // The current regions (positions are arbitrary and change when regions are added or removed).
  const RegionSet<T>& subscriptions() const { return s_.regions; }
  const RegionSet<T>& updates() const { return u_.regions; }
  const MatchOptions& options() const { return options_; }
  const ApplyReport& last_report() const { return report_; }
  // Whether batches use the resident index (cpu and cuda backends) or match_pairs (reference).
  bool resident() const { return resident_ != nullptr; }

 private:
  static constexpr std::uint32_t kFree = ~std::uint32_t{0};

  // One side. Regions live in `regions` at positions; each also has a slot that stays the same
  // while it exists (slots of removed regions are reused by later batches). Adjacency lists hold
  // the other side's slots.
  struct SideState {
    RegionSet<T> regions;
    std::vector<std::uint32_t> slot_of_pos;
    std::vector<std::uint32_t> pos_of_slot;  // kFree: slot not in use
    std::vector<std::uint64_t> id_of_slot;
    std::vector<std::vector<std::uint32_t>> adj;
    std::vector<std::uint32_t> free_slots;
    std::unordered_map<std::uint64_t, std::uint32_t> slot_of_id;
  };

  // A region's net change within a batch.
  struct Touched {
    std::uint64_t id = 0;
    bool was_present = false, present = false;
    std::size_t change = 0;  // the batch index of its last Add or Move (when present)
    std::uint32_t slot = kFree;
  };

  // Checks the batch (UserError at the first bad change) and reduces it to net changes per side,
  // leaving out regions that end where they started.
  void net_changes(const std::vector<Change<T>>& batch, std::vector<Touched>& s, std::vector<Touched>& u) const;
  // Puts a side's net changes into its regions and slots, keeping what undo() needs to restore
  // them (incremental.cpp).
  struct Staged;
  static void stage(SideState& side, std::vector<Touched>& touched, const std::vector<Change<T>>& batch, Staged& staged,
                    int threads);
  static void undo(SideState& side, Staged& staged);

  // The changed regions matched again: per touched region (index in ts / tu), the other side's
  // slots it intersects. Through the resident grids (the regions present `before` the batch at
  // their old bounds, or those present after it at their new ones), or with match_pairs (after).
  void rematch_resident(const std::vector<Change<T>>& batch, const std::vector<Touched>& ts,
                        const std::vector<Touched>& tu, bool before, std::vector<std::vector<std::uint32_t>>& lists_s,
                        std::vector<std::vector<std::uint32_t>>& lists_u);
  void rematch_with_match_pairs(const std::vector<Change<T>>& batch, const std::vector<Touched>& ts,
                                const std::vector<Touched>& tu, std::vector<std::vector<std::uint32_t>>& new_s,
                                std::vector<std::vector<std::uint32_t>>& new_u);

  // (Re)builds the cuda backend's device index from the regions (resident_->on_device).
  void build_device();

  struct Resident;  // incremental.cpp: both sides' resident grids
  SideState s_, u_;
  std::unique_ptr<Resident> resident_;
  MatchOptions options_;
  std::uint64_t pairs_ = 0;
  ApplyReport report_;
};

}  // namespace simkit::ddm
