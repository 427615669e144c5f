// The hybrid model's cuda backend: an ensemble of realisations, one warp each.
//
// With D_c = 0, c and f at a node are closed forms of how long it has been occupied
// (hybrid/model.hpp), so a realisation's whole state is its tips and its occupied nodes: a small
// open-addressing hash table (node -> step it was occupied in), a tip table and a segment log.
// The initial fields are read from one shared copy and the whole ensemble runs in one launch.
// With D_c > 0 each realisation has its own c field (two buffers, by step parity) and a dense
// table of occupation steps; the warps advance one step per launch and a stencil kernel updates
// every field between launches.
//
// Per step, the warp's lanes draw the moves of the active tips in parallel (the costly part: 7
// nodes of c and f per tip); lane 0 then applies the moves and the branching serially in
// ascending tip id, exactly as the reference does, so a realisation is bitwise the reference's
// (the same SIMKIT_HD formulas, --fmad=false, the same Philox draws). A realisation that outgrows
// its capacities is flagged and run again with more. With Params::rows, lane 0 also counts the
// segments as it records them and writes a row of counts after every step, so that a realisation
// that keeps no log comes down as its rows (SummaryRow, hybrid/cuda.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "angio/hybrid/cuda.hpp"
#include "angio/hybrid/model.hpp"
#include "angio/stage.cuh"
#include "core/tma.cuh"
#include "core/cuda_check.cuh"
#include "simkit/core/error.hpp"
#include "core/rng.hpp"

namespace simkit::angio::detail::hybrid_cuda {

namespace {

enum Draw : std::uint32_t { kDrawMove = 0, kDrawBranch = 1, kDrawBranchDirection = 2 };  // = HybridPurpose
constexpr unsigned kFull = 0xffffffffu;
// D_c = 0 hash keys: (epoch << kEpochShift) + node + 1, where every launch has an epoch of its own,
// greater than every earlier launch's of the same buffers (1, 2, ...; 0 is the buffers' zeroed
// state). A key of an older epoch reads as an empty slot, so that a table needs no clearing between
// the realisations that use it in turn (runs[] of a batch's parts, run_realisations). Nodes below
// 2^40, epochs below 2^23: a key stays positive. (A D_c = 0 realisation runs to its end within the
// one launch of its part, budget last_step: its keys never outlive their epoch.)
constexpr int kEpochShift = 40;
constexpr long long kMaxEpoch = (1LL << 23) - 1;

struct Params {
  ModelParams model;
  int nx, ny, nz;
  double h, dt, a, psi, reach_front;
  long long last_step;
  long long max_tips;
  int rules;
  double rule_c[kMaxRules], rule_p[kMaxRules];
  RuleSet rule;
  int sprouts;
  const long long* sprout_node;
  const long long* sprout_previous;
  const double* c0;
  const double* f0;
  unsigned long long seed;
  const int* which;  // realisation numbers of this batch's warps
  long long nodes;
  // capacities per realisation
  long long log_capacity;
  int tip_capacity;
  int hash_bits;  // D_c = 0: hash table of 2^hash_bits slots
  // Per-step rows (SummaryRow; nullptr: none): realisation w's row s at rows[w row_stride + s].
  SummaryRow* rows;
  long long row_stride;
};

// A realisation's serial state between launches.
struct State {
  long long step, tips, log_size, hashed, moves, clipped;
  long long passes;  // Pass segments so far
  double front;
  int count_active, overflow, finished, stepped;
  SummaryRow tally;  // the counts after the segments so far (Params::rows)
};

// Per occupied node (a hash slot with D_c = 0, the node itself with D_c > 0): the step it was
// occupied in plus 1, its owner (the sprout whose tip last stepped on it, or kVesselOwner) and that
// tip's path position there; with Uptake::Tip also its updates so far and whether a tip is on it.
struct Work {
  long long* hash_key;  // D_c = 0: (the launch's epoch << kEpochShift) + node + 1; an older epoch (0 too): empty
  int* since;
  int* owner;
  int* position;
  int* count;              // Uptake::Tip
  unsigned char* present;  // Uptake::Tip
  unsigned char* edge;     // Params::rows: the lattice edges at the node (bit d - 1: towards neighbour d)
  double* c;               // D_c > 0: two fields per realisation, the current one is c[step & 1]
  long long* tip_node;
  long long* tip_previous;
  long long* tip_age;
  int* tip_generation;
  int* tip_parent;
  int* tip_birth;
  int* tip_position;
  unsigned char* tip_active;
  int* active;  // active tip ids, ascending
  signed char* move;
  long long* log_from;
  long long* log_to;
  int* log_birth;
  int* log_generation;
  int* log_tip;
  unsigned char* log_kind;
  State* state;
};

__device__ inline unsigned long long mix(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// One realisation's view of its occupation table and of c and f. kFields: D_c > 0 (dense tables
// and its own c field at `step`), else a hash table and closed forms.
template <bool kFields>
struct Realm {
  const Params* p;
  long long* key;
  int* since_of;
  int* owner_of;
  int* position_of;
  int* count_of;
  unsigned char* present_of;
  long long hash_mask;
  long long tag;        // D_c = 0: the launch's epoch << kEpochShift (keys below it are empty slots)
  const double* c_now;  // kFields: c at the start of `step`
  long long step;
  unsigned char* edge_of;  // Params::rows: the edges at each slot (nullptr: none kept)

  __device__ bool vessel(long long node) const { return node % p->nx == 0; }
  // The node's slot, or -1 when it has none (free, or a parent-vessel node no tip has passed).
  __device__ long long find(long long node) const {
    if constexpr (kFields) {
      return (since_of[node] != 0 || owner_of[node] != kVesselOwner) ? node : -1;
    } else {
      long long pos = static_cast<long long>(mix(static_cast<unsigned long long>(node)) & hash_mask);
      for (;;) {
        const long long k = key[pos];
        if (k == tag + node + 1) return pos;
        if (k < tag) return -1;  // empty: never used, or used by an earlier launch's realisation
        pos = (pos + 1) & hash_mask;
      }
    }
  }
  // Lane 0 only: the node's slot, made if it has none (`made` tells).
  __device__ long long slot(long long node, bool& made) const {
    long long at = find(node);
    made = at < 0;
    if (at >= 0) return at;
    if constexpr (kFields) {
      at = node;
    } else {
      at = static_cast<long long>(mix(static_cast<unsigned long long>(node)) & hash_mask);
      while (key[at] >= tag) at = (at + 1) & hash_mask;
      key[at] = tag + node + 1;
      since_of[at] = 0;
      owner_of[at] = kVesselOwner;
      position_of[at] = 0;
      if (edge_of) edge_of[at] = 0;
      if (count_of) {
        count_of[at] = 0;
        present_of[at] = 0;
      }
    }
    return at;
  }
  __device__ long long since(long long node) const {
    if (vessel(node)) return 1;  // the parent vessel (i = 0), occupied from the start
    const long long at = find(node);
    return at < 0 ? 0 : since_of[at];
  }
  __device__ bool occupied(long long node) const { return since(node) != 0; }
  __device__ int owner(long long node) const {
    const long long at = find(node);
    return at < 0 ? kVesselOwner : owner_of[at];
  }
  __device__ long long position(long long node) const {
    const long long at = find(node);
    return at < 0 ? 0 : position_of[at];
  }
  // How many updates of step (4) the node has had by the start of `at_step` (the current step, or
  // the next one with the occupation and the tips as they stand).
  __device__ long long updates(long long node, long long at_step) const {
    if (count_of) {
      const long long at = find(node);
      if (at < 0) return 0;
      return count_of[at] + (at_step > step && present_of[at] ? 1 : 0);
    }
    const long long s = since(node);
    return s == 0 ? 0 : at_step + 1 - s;
  }
  // Whether the node takes up c and produces f in step (4).
  __device__ bool takes_up(long long node) const {
    if (count_of) {
      const long long at = find(node);
      return at >= 0 && present_of[at] != 0;
    }
    return occupied(node);
  }
  __device__ void coordinates(long long node, int& i, int& j, int& l) const {
    const long long plane = static_cast<long long>(p->nx) * p->ny;
    i = static_cast<int>(node % p->nx);
    j = static_cast<int>((node % plane) / p->nx);
    l = static_cast<int>(node / plane);
  }
  __device__ long long index(int i, int j, int l) const { return (static_cast<long long>(l) * p->ny + j) * p->nx + i; }
  // c at the start of `at_step` (the current step, or the next one with the occupation as it stands).
  __device__ double c(long long node, long long at_step) const {
    if constexpr (kFields) {
      if (at_step == step) return c_now[node];
      int i, j, l;
      coordinates(node, i, j, l);
      return diffused_c(
          p->model, p->dt, p->h, p->nx, p->ny, p->nz, i, j, l, [this](int a, int b, int e) { return index(a, b, e); },
          [this](long long id) { return c_now[id]; }, takes_up(node));
    } else {
      return occupied_c(p->c0[node], p->dt, p->model.taf_uptake, updates(node, at_step));
    }
  }
  __device__ double f(long long node, long long at_step) const {
    return occupied_f(p->f0[node], p->dt, p->model.fn_production, p->model.fn_uptake, updates(node, at_step));
  }
  __device__ long long neighbour(long long node, int d) const {
    int i, j, l, di, dj, dl;
    coordinates(node, i, j, l);
    move_offset(d, di, dj, dl);
    return index(i + di, j + dj, l + dl);
  }
  __device__ bool weights(long long node, long long at_step, double w[7], bool inside[7]) const {
    int i, j, l;
    coordinates(node, i, j, l);
    return move_weights(
        p->rule.weights, p->model, p->a, p->nx, p->ny, p->nz, i, j, l,
        [this](int a, int b, int e) { return index(a, b, e); }, [&](long long id) { return c(id, at_step); },
        [&](long long id) { return f(id, at_step); }, w, inside);
  }
  __device__ int crowding(long long node) const {
    int i, j, l;
    coordinates(node, i, j, l);
    return moore_occupied(p->nx, p->ny, p->nz, i, j, l, [this](int a, int b, int e) { return occupied(index(a, b, e)); });
  }
};

__device__ double branch_probability(const Params& p, double c) {
  if (c != c) return 0.0;  // NaN: as the reference
  if (p.rule.branch_always) return 1.0;
  for (int r = 0; r < p.rules; ++r)
    if (c <= p.rule_c[r]) return p.rule_p[r];
  return p.rules > 0 ? p.rule_p[p.rules - 1] : 0.0;
}

// Advances warp `warp`'s realisation by up to `budget` steps (its state in w.state[warp]): batch
// rows [first, end), one warp each. Its tables, tips and log (D_c = 0: the scratch rows) are those of
// row `scratch` + warp - first; its hash keys carry `epoch` (kEpochShift).
template <bool kFields>
__global__ void __launch_bounds__(128)
    advance_kernel(Params p, Work w, int first, int end, long long budget, int scratch, long long epoch) {
  const int warp = first + static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (warp >= end) return;
  const long long own = static_cast<long long>(scratch) + (warp - first);  // its scratch row
  State st = w.state[warp];
  if (st.finished) {
    if (lane == 0 && st.stepped) w.state[warp].stepped = 0;  // no stencil update for it any more
    return;
  }
  const unsigned long long seed = p.seed + static_cast<unsigned long long>(p.which[warp]);
  const long long hash_size = 1LL << p.hash_bits;
  const long long table = kFields ? p.nodes : hash_size;  // slots per realisation
  const bool tip_uptake = p.rule.uptake == Uptake::Tip;
  Realm<kFields> realm{&p,
                       kFields ? nullptr : w.hash_key + own * hash_size,
                       w.since + own * table,
                       w.owner + own * table,
                       w.position + own * table,
                       tip_uptake ? w.count + own * table : nullptr,
                       tip_uptake ? w.present + own * table : nullptr,
                       hash_size - 1,
                       epoch << kEpochShift,
                       nullptr,
                       st.step,
                       p.rows ? w.edge + own * table : nullptr};
  double* c_fields = kFields ? w.c + 2 * own * p.nodes : nullptr;
  const long long tip_base = own * p.tip_capacity;
  long long* tip_node = w.tip_node + tip_base;
  long long* tip_previous = w.tip_previous + tip_base;
  long long* tip_age = w.tip_age + tip_base;
  int* tip_generation = w.tip_generation + tip_base;
  int* tip_parent = w.tip_parent + tip_base;
  int* tip_birth = w.tip_birth + tip_base;
  int* tip_position = w.tip_position + tip_base;
  unsigned char* tip_active = w.tip_active + tip_base;
  int* active = w.active + tip_base;
  signed char* move = w.move + tip_base;
  const long long log_base = own * p.log_capacity;
  long long* log_from = w.log_from + log_base;
  long long* log_to = w.log_to + log_base;
  int* log_birth = w.log_birth + log_base;
  int* log_generation = w.log_generation + log_base;
  int* log_tip = w.log_tip + log_base;
  unsigned char* log_kind = w.log_kind + log_base;
  const long long hash_limit = kFields ? p.nodes : hash_size / 2;  // a hash table at most half full
  // Lane 0: one segment into the log (the caller checked the capacity).
  auto record = [&](long long from, long long to, long long birth, int generation, int tip, SegmentKind kind) {
    log_from[st.log_size] = from;
    log_to[st.log_size] = to;
    log_birth[st.log_size] = static_cast<int>(birth);
    log_generation[st.log_size] = generation;
    log_tip[st.log_size] = tip;
    log_kind[st.log_size++] = static_cast<unsigned char>(kind);
  };
  // Lane 0: tip `id` steps onto `node` (a new one when `fresh`, occupied at `step`); its slot.
  auto settle = [&](long long node, int id, long long at_step, bool fresh) {
    bool made = false;
    const long long at = realm.slot(node, made);
    if (made) ++st.hashed;
    if (fresh) realm.since_of[at] = static_cast<int>(at_step + 1);
    realm.owner_of[at] = id;
    realm.position_of[at] = tip_position[id];
    if (tip_uptake) realm.present_of[at] = 1;
    return at;
  };
  // Lane 0, with Params::rows: a segment from `from` to its neighbour `to` (slot at_to, i = i_to) in
  // direction d, of `kind`, into the counts (st.tally, st.passes), as realisation_from_log counts
  // the log. An edge is new unless an earlier segment joined the same two nodes; every segment's
  // edge is marked at one end (bit d - 1 at `from`, or the opposite direction's at `to`). A Sprout,
  // Move or Branch goes to a free node, which no segment has touched (every segment's ends are
  // occupied or on the parent vessel, and a node once occupied stays so): a new edge, the only one
  // marked at `to` (its slot just made; a dense table's node still 0), with no load. A Pass or an
  // anastomosis goes to an occupied node: both ends are looked at; a new edge is marked at `to` for
  // a Pass (its slot now made), at `from` for an anastomosis (the tip's own node, which has a slot;
  // `to` may be a parent-vessel node without one: at_to -1).
  auto tally = [&](long long from, int d, SegmentKind kind, long long at_to, int i_to) {
    if (!p.rows) return;
    SummaryRow& t = st.tally;
    const auto here = static_cast<unsigned char>(1u << (d - 1));
    const auto there = static_cast<unsigned char>(1u << (d % 2 == 1 ? d : d - 2));  // the opposite direction
    if (kind == SegmentKind::Sprout || kind == SegmentKind::Move || kind == SegmentKind::Branch) {
      realm.edge_of[at_to] = there;
      ++t.edges;
      t.front_i = max(t.front_i, i_to);
      if (kind != SegmentKind::Move) ++t.sprouts;
      if (kind == SegmentKind::Branch) ++t.branches;
      return;
    }
    const long long at_from = realm.find(from);
    if (!((at_to >= 0 && (realm.edge_of[at_to] & there)) || (at_from >= 0 && (realm.edge_of[at_from] & here)))) {
      ++t.edges;
      if (kind != SegmentKind::Pass && at_from >= 0) {
        realm.edge_of[at_from] |= here;
      } else if (at_to >= 0) {
        realm.edge_of[at_to] |= there;
      }
    }
    switch (kind) {  // (static indices: the counts stay in registers)
      case SegmentKind::Pass:
        ++st.passes;
        break;
      case SegmentKind::FuseOwn:
        ++t.fused[0];
        break;
      case SegmentKind::FuseParentDaughter:
        ++t.fused[1];
        break;
      case SegmentKind::FuseSprout:
        ++t.fused[2];
        break;
      default:
        ++t.fused[3];
        break;
    }
  };
  // Lane 0: the counts after step `s` (row s: the segments born up to s).
  auto row = [&](long long s) {
    if (p.rows) p.rows[static_cast<long long>(warp) * p.row_stride + s] = st.tally;
  };
  auto leave = [&](long long node) {
    if (!tip_uptake) return;
    const long long at = realm.find(node);
    if (at >= 0) realm.present_of[at] = 0;
  };

  if (st.step == 0 && st.tips == 0 && lane == 0) {  // first launch: the initial sprouts
    if (p.sprouts > p.tip_capacity || p.sprouts > p.log_capacity || p.sprouts > hash_limit) {
      st.overflow = 1;
    } else {
      for (int t = 0; t < p.sprouts; ++t) {
        tip_node[t] = p.sprout_node[t];
        tip_previous[t] = p.sprout_previous[t];
        tip_age[t] = 0;
        tip_generation[t] = 0;
        tip_parent[t] = -1;
        tip_birth[t] = 0;
        tip_position[t] = 0;
        tip_active[t] = 1;
        active[t] = t;
        const long long at = settle(p.sprout_node[t], t, 0, true);
        record(p.sprout_previous[t], p.sprout_node[t], 0, 0, t, SegmentKind::Sprout);
        tally(p.sprout_previous[t], 2, SegmentKind::Sprout, at, 1);  // (+x from the vessel to i = 1)
      }
      st.tips = st.count_active = p.sprouts;
      st.front = p.h;
      row(0);
    }
  }
  int count_active = __shfl_sync(kFull, st.count_active, 0);
  int overflow = __shfl_sync(kFull, st.overflow, 0);
  double front = __shfl_sync(kFull, st.front, 0);
  __syncwarp();
  long long moves = 0, clipped_draws = 0, step = st.step, done_steps = 0;
  while (done_steps < budget && step < p.last_step && front < p.reach_front && count_active > 0 && !overflow) {
    realm.step = step;
    if constexpr (kFields) realm.c_now = c_fields + (step & 1) * p.nodes;
    const long long birth = step + 1;
    // (1) every active tip draws its move from the state at the start of the step.
    for (int q = lane; q < count_active; q += 32) {
      const int id = active[q];
      const long long node = tip_node[id];
      double wt[7];
      bool inside[7];
      const bool negative = realm.weights(node, step, wt, inside);
      if (!p.rule.back_steps) {
        const long long previous = tip_previous[id];
        for (int d = 1; d < 7; ++d)
          if (inside[d] && realm.neighbour(node, d) == previous) inside[d] = false;
      }
      RngStream rng(seed, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), kDrawMove});
      bool clipped = false;
      move[q] = static_cast<signed char>(choose_move(wt, inside, rng.uniform(), clipped));
      ++moves;
      clipped_draws += clipped || negative ? 1 : 0;
    }
    __syncwarp();
    if (lane == 0) {
      // (2) moves in ascending tip id; onto an occupied node: an anastomosis or a pass.
      long long alive = count_active;
      for (int q = 0; q < count_active && !overflow; ++q) {
        const int id = active[q];
        ++tip_age[id];
        const int d = move[q];
        if (d == 0) continue;
        const long long node = tip_node[id];
        const long long target = realm.neighbour(node, d);
        if (st.log_size >= p.log_capacity || st.hashed >= hash_limit) {
          overflow = 1;
          break;
        }
        SegmentKind kind = SegmentKind::Move;
        if (realm.occupied(target)) {
          const int owner = realm.owner(target);
          const bool tip = owner >= 0;
          const int outcome = occupied_move_outcome(
              p.rule.anastomosis, p.rule.window, p.rule.fork_passes, p.dt, p.psi, id, tip_parent[id], tip_birth[id],
              owner == id ? tip_position[id] - realm.position(target) : 0, owner, tip ? tip_parent[owner] : -1,
              tip ? tip_birth[owner] : 0, tip && tip_active[owner], tip && tip_node[owner] == target, birth);
          if (outcome == kBlocked) continue;
          kind = outcome == kPassOver ? SegmentKind::Pass : fusion_segment(outcome);
        }
        record(node, target, birth, tip_generation[id], id, kind);
        leave(node);
        if (is_fusion(kind)) {
          tally(node, d, kind, p.rows ? realm.find(target) : -1, 0);
          tip_active[id] = 0;
          --alive;
          continue;
        }
        tip_previous[id] = node;
        tip_node[id] = target;
        ++tip_position[id];
        const long long at = settle(target, id, step, kind == SegmentKind::Move);
        const int i_to = static_cast<int>(target % p.nx);
        tally(node, d, kind, at, i_to);
        front = fmax(front, i_to * p.h);
      }
      // (3) branching in ascending tip id, from the state at the start of the next step.
      const int existing = count_active;
      for (int q = 0; q < existing && !overflow; ++q) {
        const int id = active[q];
        if (!tip_active[id] || static_cast<double>(tip_age[id]) * p.dt <= p.psi) continue;
        if (alive >= p.max_tips) break;
        const long long node = tip_node[id];
        const double c = realm.c(node, step + 1);
        if (!dense_enough(p.rule.branch_density, p.rule.branch_density > 0 ? realm.crowding(node) : 0, c)) continue;
        const double probability = branch_probability(p, c);
        RngStream decide(seed, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), kDrawBranch});
        if (!(decide.uniform() < probability)) continue;
        double wt[7];
        bool free_inside[7];
        realm.weights(node, step + 1, wt, free_inside);
        free_inside[0] = false;
        for (int d = 1; d < 7; ++d)
          if (free_inside[d] && realm.occupied(realm.neighbour(node, d))) free_inside[d] = false;
        if (!place_daughter(p.rule.daughter, wt, free_inside)) continue;
        if (st.tips >= p.tip_capacity || st.log_size >= p.log_capacity || st.hashed >= hash_limit) {
          overflow = 1;
          break;
        }
        const int child = static_cast<int>(st.tips);
        RngStream where(
            seed, StreamId{static_cast<std::uint32_t>(child), static_cast<std::uint32_t>(step), kDrawBranchDirection});
        bool clipped = false;
        const int d = choose_move(wt, free_inside, where.uniform(), clipped);
        if (d == 0) continue;  // NaN weights only (--force), as the reference
        const long long target = realm.neighbour(node, d);
        tip_node[child] = target;
        tip_previous[child] = node;
        tip_age[child] = 0;
        tip_generation[child] = tip_generation[id] + 1;
        tip_parent[child] = id;
        tip_birth[child] = static_cast<int>(birth);
        tip_position[child] = 0;
        tip_active[child] = 1;
        const long long at = settle(target, child, step, true);
        record(node, target, birth, tip_generation[child], child, SegmentKind::Branch);
        const int i_to = static_cast<int>(target % p.nx);
        tally(node, d, SegmentKind::Branch, at, i_to);
        tip_age[id] = 0;
        ++st.tips;
        ++alive;
        front = fmax(front, i_to * p.h);
      }
      row(birth);  // the segments born up to this step
      // The next step's active list: survivors in order, then this step's children (larger ids).
      int kept = 0;
      for (int q = 0; q < existing; ++q)
        if (tip_active[active[q]]) active[kept++] = active[q];
      for (long long id = st.tips - (alive - kept); id < st.tips; ++id) active[kept++] = static_cast<int>(id);
      count_active = kept;
    }
    __syncwarp();
    count_active = __shfl_sync(kFull, count_active, 0);
    overflow = __shfl_sync(kFull, overflow, 0);
    front = __shfl_sync(kFull, front, 0);
    // (4) with Uptake::Tip, one more update at each active tip's node (distinct nodes: no races).
    if (tip_uptake && !overflow) {
      for (int q = lane; q < count_active; q += 32) {
        const long long at = realm.find(tip_node[active[q]]);
        ++realm.count_of[at];
      }
      __syncwarp();
    }
    ++step;
    ++done_steps;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    moves += __shfl_down_sync(kFull, moves, offset);
    clipped_draws += __shfl_down_sync(kFull, clipped_draws, offset);
  }
  if (lane == 0) {
    st.moves += moves;
    st.clipped += clipped_draws;
    st.step = step;
    st.count_active = count_active;
    st.overflow = overflow;
    st.front = front;
    st.stepped = done_steps > 0 ? 1 : 0;
    st.finished = !(step < p.last_step && front < p.reach_front && count_active > 0 && !overflow);
    w.state[warp] = st;
  }
}

// D_c > 0, step (4) of every realisation that has just made a step: c at its new step from the
// previous one (the other buffer), with its occupation as the step left it. A block takes a 32 x 8
// tile of (i, j) columns of one realisation (blockIdx.z) and marches up every plane; each plane of
// c on the tile and its ring (mirror ghosts included) is copied into shared memory by cp.async two
// planes ahead (StageTile), so that several planes' loads are in flight without holding
// registers; one barrier per plane. 32-bit indices. (Three planes ahead, with the occupation steps
// staged too, measured 72 against 73 % of copy on the H200: docs/performance.md.)
constexpr int kDiffuseAhead = 2, kDiffuseSlots = kDiffuseAhead + 3;
__global__ void __launch_bounds__(detail::StageTile::kThreads) diffuse_kernel(Params p, Work w, int tiles_x) {
  using Tile = detail::StageTile;
  __shared__ double stage[kDiffuseSlots][Tile::kExt];
  const int warp = static_cast<int>(blockIdx.z);
  const State& st = w.state[warp];
  if (!st.stepped) return;  // the whole block
  const int i0 = static_cast<int>(blockIdx.x % tiles_x) * Tile::kX, j0 = static_cast<int>(blockIdx.x / tiles_x) * Tile::kY;
  const int i = i0 + static_cast<int>(threadIdx.x % Tile::kX), j = j0 + static_cast<int>(threadIdx.x / Tile::kX);
  const bool mine = i < p.nx && j < p.ny;
  const int nz = p.nz, plane = p.nx * p.ny, col = j * p.nx + i;
  const long long base = static_cast<long long>(warp) * p.nodes;
  const double* __restrict c_now = w.c + 2 * base + ((st.step - 1) & 1) * p.nodes;
  double* __restrict c_next = w.c + 2 * base + (st.step & 1) * p.nodes;
  const int* __restrict since = w.since + base;
  const unsigned char* __restrict present = p.rule.uptake == Uptake::Tip ? w.present + base : nullptr;
  const bool three_d = nz > 1;
  const Tile tile(static_cast<int>(threadIdx.x), i0, j0, p.nx, p.ny);
  const int own = tile.own;
  // Plane k of the sequence -1, 0, ..., nz (mirrored) into slot k % kDiffuseSlots.
  auto issue = [&](int k) {
    if (k < nz + 2) tile.copy(&stage[k % kDiffuseSlots][0], c_now + Tile::mirrored(k - 1, nz) * plane);
    __pipeline_commit();
  };
  for (int k = 0; k < kDiffuseAhead + 2; ++k) issue(k);
  for (int l = 0; l < nz; ++l) {
    const int k = l + 1;
    __pipeline_wait_prior(kDiffuseAhead - 1);
    __syncthreads();
    issue(k + kDiffuseAhead + 1);
    if (mine) {
      const double* mid = &stage[k % kDiffuseSlots][own];
      const double hi = stage[(k + 1) % kDiffuseSlots][own], lo = stage[(k - 1) % kDiffuseSlots][own];
      const int here = l * plane + col;
      const bool takes_up = present ? present[here] != 0 : (i == 0 || since[here] != 0);
      c_next[here] = diffused_c_from(p.model, p.dt, p.h, three_d, mid[0], mid[1], mid[-1], mid[Tile::kEx],
                                     mid[-Tile::kEx], hi, lo, takes_up);
    }
  }
}

// The same step on Hopper when rows are whole 16-byte multiples (an even nx): each plane of c on
// the tile, its ring and the 16-byte widening of its rows comes into shared memory as one bulk
// tensor copy (core/tma.cuh) completing on an mbarrier, two planes ahead, instead of a copy
// instruction per value and thread; cells past the grid are zero-filled and never read (the mirror
// at the faces is an offset). `map` views every realisation's two c fields as one tensor of
// nx x ny x (2 count nz) planes. One block barrier per plane before a slot is refilled.
constexpr int kTmaPad = 2, kTmaX = detail::StageTile::kX + 2 * kTmaPad, kTmaY = detail::StageTile::kY + 2;
constexpr int kTmaBytes = kTmaX * kTmaY * 8, kTmaSlotBytes = 128 * ((kTmaBytes + 127) / 128), kTmaSlots = 5;
constexpr int kTmaSmem = kTmaSlots * kTmaSlotBytes + kTmaSlots * 8;
__global__ void __launch_bounds__(detail::StageTile::kThreads)
    diffuse_tma_kernel(Params p, Work w, int tiles_x, const CUtensorMap* __restrict__ map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched below sm_90
#else
  using Tile = detail::StageTile;
  extern __shared__ __align__(128) unsigned char tma_smem[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(tma_smem + kTmaSlots * kTmaSlotBytes);
  const int warp = static_cast<int>(blockIdx.z);
  const State& st = w.state[warp];
  if (!st.stepped) return;  // the whole block
  const int tx = static_cast<int>(threadIdx.x % Tile::kX), ty = static_cast<int>(threadIdx.x / Tile::kX);
  const int i0 = static_cast<int>(blockIdx.x % tiles_x) * Tile::kX, j0 = static_cast<int>(blockIdx.x / tiles_x) * Tile::kY;
  const int i = i0 + tx, j = j0 + ty;
  const bool mine = i < p.nx && j < p.ny;
  const int nz = p.nz, plane = p.nx * p.ny, col = j * p.nx + i;
  const long long base = static_cast<long long>(warp) * p.nodes;
  double* __restrict c_next = w.c + 2 * base + (st.step & 1) * p.nodes;
  const int z0 = (2 * warp + static_cast<int>((st.step - 1) & 1)) * nz;  // c_now's first plane in the tensor
  const int* __restrict since = w.since + base;
  const unsigned char* __restrict present = p.rule.uptake == Uptake::Tip ? w.present + base : nullptr;
  const bool three_d = nz > 1;
  const int own = (ty + 1) * kTmaX + tx + kTmaPad;
  const int ip = own + (upper_neighbour(i, p.nx) - i), im = own + (lower_neighbour(i, p.nx) - i);
  const int jp = own + (upper_neighbour(j, p.ny) - j) * kTmaX, jm = own + (lower_neighbour(j, p.ny) - j) * kTmaX;
  const int count = nz + 2;  // planes -1, 0, ..., nz (mirrored)
  auto slot = [&](int k) { return reinterpret_cast<const double*>(tma_smem + (k % kTmaSlots) * kTmaSlotBytes); };
  auto issue = [&](int k) {  // thread 0
    if (k < count) {
      std::uint64_t* bar = full + k % kTmaSlots;
      cuda::mbar_expect_tx(bar, kTmaBytes);
      cuda::tma_load_3d(tma_smem + (k % kTmaSlots) * kTmaSlotBytes, map, i0 - kTmaPad, j0 - 1,
                        z0 + Tile::mirrored(k - 1, nz), bar);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kTmaSlots; ++s) cuda::mbar_init(full + s, 1);
    cuda::mbar_fence_init();
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int k = 0; k < kTmaSlots; ++k) issue(k);
  cuda::mbar_wait(full, 0);
  for (int l = 0; l < nz; ++l) {
    const int k = l + 1;
    if (k >= 2) {
      __syncthreads();  // every thread is done with plane k - 2
      if (threadIdx.x == 0) issue(k - 2 + kTmaSlots);
    }
    if (k == 1) cuda::mbar_wait(full + 1, 0);
    cuda::mbar_wait(full + (k + 1) % kTmaSlots, ((k + 1) / kTmaSlots) & 1);
    if (mine) {
      const double* mid = slot(k);
      const int here = l * plane + col;
      const bool takes_up = present ? present[here] != 0 : (i == 0 || since[here] != 0);
      c_next[here] = diffused_c_from(p.model, p.dt, p.h, three_d, mid[own], mid[ip], mid[im], mid[jp], mid[jm],
                                     slot(k + 1)[own], slot(k - 1)[own], takes_up);
    }
  }
#endif
}

// Device memory of one batch of realisations (rows: per-step rows a realisation, 0 for none).
struct Sizes {
  long long segments, tips, rows;
};

struct Batch {
  cuda::DeviceBuffer<long long> hash_key, tip_node, tip_previous, tip_age, log_from, log_to;
  cuda::DeviceBuffer<int> since, owner, position, count, tip_generation, tip_parent, tip_birth, tip_position, active,
      log_birth, log_generation, log_tip, which;
  cuda::DeviceBuffer<double> c;
  cuda::DeviceBuffer<unsigned char> present, tip_active, log_kind, edge;
  cuda::DeviceBuffer<signed char> move;
  cuda::DeviceBuffer<State> state;
  cuda::DeviceBuffer<SummaryRow> rows;

  // A batch has rows (a realisation's state, number and per-step rows) and scratch rows (the tables,
  // tips and log a realisation uses while it runs). Row k's scratch is row k, except for the
  // summarised realisations of a D_c = 0 batch, which take turns in a few (run_realisations).
  // Scratch: hash slots (D_c = 0) or the dense occupation tables and two c fields (D_c > 0).
  static std::size_t scratch_bytes(const Sizes& c, int hash_bits, bool fields, bool tip_uptake, long long nodes) {
    const auto h = static_cast<std::size_t>(1) << hash_bits;
    const auto t = static_cast<std::size_t>(c.tips), s = static_cast<std::size_t>(c.segments);
    // since, owner, position (count, present) (edge)
    const std::size_t per_slot = 4 + 4 + 4 + (tip_uptake ? 5 : 0) + (c.rows > 0 ? 1 : 0);
    const std::size_t table = fields ? static_cast<std::size_t>(nodes) * (per_slot + 16) : h * (8 + per_slot);
    return table + t * (8 + 8 + 8 + 4 + 4 + 4 + 4 + 1 + 4 + 1) + s * (8 + 8 + 4 + 4 + 4 + 1);
  }
  static std::size_t row_bytes(const Sizes& c) {
    return sizeof(State) + 4 + static_cast<std::size_t>(c.rows) * sizeof(SummaryRow);
  }
  void allocate(int rows_, int scratch_, const Sizes& cap, int hash_bits, bool fields, bool tip_uptake,
                long long nodes) {
    const auto n = static_cast<std::size_t>(scratch_), r = static_cast<std::size_t>(rows_);
    const std::size_t t = n * static_cast<std::size_t>(cap.tips), s = n * static_cast<std::size_t>(cap.segments);
    const std::size_t slots = fields ? n * static_cast<std::size_t>(nodes) : n << hash_bits;
    if (fields) {
      c.resize(2 * n * static_cast<std::size_t>(nodes));
    } else {
      hash_key.resize(slots);
      hash_key.fill_zero();  // (every slot empty, epoch 0: no launch's)
    }
    since.resize(slots);
    owner.resize(slots);
    position.resize(slots);
    if (tip_uptake) {
      count.resize(slots);
      present.resize(slots);
    }
    if (cap.rows > 0) {
      edge.resize(slots);
      rows.resize(r * static_cast<std::size_t>(cap.rows));
      rows.fill_zero();  // (the rows past a realisation's last step come down too, never read)
    }
    tip_node.resize(t);
    tip_previous.resize(t);
    tip_age.resize(t);
    tip_generation.resize(t);
    tip_parent.resize(t);
    tip_birth.resize(t);
    tip_position.resize(t);
    tip_active.resize(t);
    active.resize(t);
    move.resize(t);
    log_from.resize(s);
    log_to.resize(s);
    log_birth.resize(s);
    log_generation.resize(s);
    log_tip.resize(s);
    log_kind.resize(s);
    state.resize(r);
    which.resize(r);
    // Zeroed once here, so that no uninitialised device memory is ever read (compute-sanitizer
    // initcheck). The downloads read only each realisation's written entries now (pack_kernel), but
    // a build without this zeroing (and with the packed entries' padding unwritten) drew 723 799
    // initcheck reports on the bitwise test, not told apart: the zeroing stays, at one memset per
    // array and allocation (about 13 GB, a few ms, for 20 000 realisations).
    for (auto* b : {&tip_node, &tip_previous, &tip_age, &log_from, &log_to}) b->fill_zero();
    for (auto* b : {&tip_generation, &tip_parent, &tip_birth, &tip_position, &active, &log_birth, &log_generation,
                    &log_tip}) {
      b->fill_zero();
    }
    for (auto* b : {&tip_active, &log_kind}) b->fill_zero();
    move.fill_zero();
  }
  // D_c > 0: empty tables for `n` realisations (every node free, owned by nobody). (D_c = 0 tables
  // need no clearing: a launch's keys carry its epoch, kEpochShift.)
  void clear_fields(std::size_t n, std::size_t nodes) {
    const std::size_t slots = n * nodes;
    SIMKIT_CUDA_CHECK(cudaMemsetAsync(since.data(), 0, slots * sizeof(int)));
    SIMKIT_CUDA_CHECK(cudaMemsetAsync(owner.data(), 0xff, slots * sizeof(int)));  // kVesselOwner = -1
    if (count.size() > 0) {
      SIMKIT_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, slots * sizeof(int)));
      SIMKIT_CUDA_CHECK(cudaMemsetAsync(present.data(), 0, slots));
    }
    if (edge.size() > 0) SIMKIT_CUDA_CHECK(cudaMemsetAsync(edge.data(), 0, slots));
  }
  Work work() {
    Work w{};
    w.hash_key = hash_key.data();
    w.since = since.data();
    w.owner = owner.data();
    w.position = position.data();
    w.count = count.data();
    w.present = present.data();
    w.edge = edge.data();
    w.c = c.data();
    w.tip_node = tip_node.data();
    w.tip_previous = tip_previous.data();
    w.tip_age = tip_age.data();
    w.tip_generation = tip_generation.data();
    w.tip_parent = tip_parent.data();
    w.tip_birth = tip_birth.data();
    w.tip_position = tip_position.data();
    w.tip_active = tip_active.data();
    w.active = active.data();
    w.move = move.data();
    w.log_from = log_from.data();
    w.log_to = log_to.data();
    w.log_birth = log_birth.data();
    w.log_generation = log_generation.data();
    w.log_tip = log_tip.data();
    w.log_kind = log_kind.data();
    w.state = state.data();
    return w;
  }
};

// One block per realisation k of a chunk (batch row first + k): its log entries [0, log size) and
// tip rows [0, tips) into the packed arrays at its offsets (offsets[2k], offsets[2k + 1]; the next
// pair ends them; an overflowed realisation has none).
__global__ void __launch_bounds__(256)
    pack_kernel(Work w, long long seg_cap, int tip_cap, int first, const long long* __restrict__ offsets,
                LogEntry* __restrict__ log, long long* __restrict__ tip_node, unsigned char* __restrict__ tip_active) {
  const int k = blockIdx.x;
  const long long row = first + k;
  const long long at = offsets[2 * k], size = offsets[2 * k + 2] - at;
  for (long long e = threadIdx.x; e < size; e += blockDim.x) {
    const long long from = row * seg_cap + e;
    LogEntry entry;
    entry.from = w.log_from[from];
    entry.to = w.log_to[from];
    entry.birth = w.log_birth[from];
    entry.generation = w.log_generation[from];
    entry.tip = w.log_tip[from];
    entry.kind = w.log_kind[from];
    entry.pad[0] = entry.pad[1] = entry.pad[2] = 0;
    log[at + e] = entry;
  }
  const long long tip_at = offsets[2 * k + 1], tips = offsets[2 * k + 3] - tip_at;
  for (long long t = threadIdx.x; t < tips; t += blockDim.x) {
    tip_node[tip_at + t] = w.tip_node[row * tip_cap + t];
    tip_active[tip_at + t] = w.tip_active[row * tip_cap + t];
  }
}

// A timing event (Timing's GPU times; cuda::Event is made without timing).
class TimedEvent {
 public:
  TimedEvent() { SIMKIT_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~TimedEvent() { cudaEventDestroy(event_); }
  TimedEvent(const TimedEvent&) = delete;
  TimedEvent& operator=(const TimedEvent&) = delete;
  void record(cudaStream_t stream) { SIMKIT_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { SIMKIT_CUDA_CHECK(cudaEventSynchronize(event_)); }
  // Seconds from `start` to this (both complete).
  double since(const TimedEvent& start) const {
    float ms = 0;
    SIMKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

// The page-locked host memory the chunks come down into: at most kSlots slots of `entries` log
// entries and `tips` tip rows, allocated as first needed and reused. A copy into page-locked memory
// runs at the link's speed (a copy into pageable memory goes through the driver's staging buffers
// at a fraction of it, and fresh pages must be faulted in first: most of a short ensemble's time,
// docs/performance.md). A chunk's slot comes back when its last realisation has been rebuilt (the
// rebuild copies the entries out); `take` waits for one when all are out, so the downloads run at
// most kSlots chunks ahead of the rebuild. Every staged chunk holds the pool, which lives until the
// last of them is gone.
class PinnedChunks : public std::enable_shared_from_this<PinnedChunks> {
 public:
  static constexpr int kSlots = 4;
  PinnedChunks(int device, std::size_t entries, std::size_t tips) : device_(device), entries_(entries), tips_(tips) {}
  PinnedChunks(const PinnedChunks&) = delete;
  PinnedChunks& operator=(const PinnedChunks&) = delete;
  // Freed on the run's device (the owner, hybrid_cuda::run, drops the pool on its own thread once
  // the rebuild has handed every slot back).
  ~PinnedChunks() {
    try {
      const cuda::DeviceGuard guard(device_);
      free_.clear();
    } catch (...) {  // (the slots' own destructors free them all the same)
    }
  }
  std::size_t entries() const { return entries_; }
  std::size_t tips() const { return tips_; }

  // A slot for the next chunk; `waited` gains the seconds spent waiting for the rebuild to hand one
  // back, `made` is set to the slots allocated so far. nullptr when page-locked memory ran out
  // (cudaMallocHost failed, now or before, and no slot is free): the caller takes pageable memory.
  std::shared_ptr<StagedLogs> take(const StopCallback& stop, double& waited, int& made) {
    std::unique_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (free_.empty() && exhausted_) return nullptr;
      if (free_.empty() && made_ >= kSlots) {
        const auto start = std::chrono::steady_clock::now();
        // (The rebuild hands every slot back, also after an error or a stop, when it drops what it
        // has not rebuilt; the stop is checked here too, so that a stopped run never waits long.)
        while (free_.empty()) {
          back_.wait_for(lock, std::chrono::milliseconds(20));
          if (free_.empty() && stop && stop()) throw Stopped();
        }
        waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      if (!free_.empty()) {
        slot = std::move(free_.back());
        free_.pop_back();
      } else {
        ++made_;
      }
      made = made_;
    }
    if (!slot) {
      try {
        slot = std::make_unique<Slot>();
        slot->log.resize(entries_);
        slot->tip_node.resize(tips_);
        slot->tip_active.resize(tips_);
      } catch (const DeviceMemoryError&) {  // (cudaMallocHost: out of page-locked host memory)
        const std::lock_guard<std::mutex> lock(mutex_);
        --made_;
        exhausted_ = true;
        made = made_;
        return nullptr;
      }
    }
    auto staged = std::make_shared<StagedLogs>();
    staged->log = slot->log.data();
    staged->tip_node = slot->tip_node.data();
    staged->tip_active = slot->tip_active.data();
    staged->rows = reinterpret_cast<SummaryRow*>(slot->log.data());  // (a chunk of rows: the same size)
    staged->memory = std::shared_ptr<void>(slot.release(), [pool = shared_from_this()](void* p) {
      pool->give_back(std::unique_ptr<Slot>(static_cast<Slot*>(p)));
    });
    return staged;
  }

 private:
  struct Slot {
    cuda::PinnedBuffer<LogEntry> log;
    cuda::PinnedBuffer<long long> tip_node;
    cuda::PinnedBuffer<unsigned char> tip_active;
  };
  void give_back(std::unique_ptr<Slot> slot) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(std::move(slot));
    }
    back_.notify_one();
  }
  const int device_;
  const std::size_t entries_, tips_;
  std::mutex mutex_;
  std::condition_variable back_;
  std::vector<std::unique_ptr<Slot>> free_;
  int made_ = 0;
  bool exhausted_ = false;  // a slot's allocation failed: no more are tried
};

void run_realisations(const KernelProblem& kp, std::span<const double> c0_host, std::span<const double> f0_host,
                      const std::vector<long long>& sprout_node, const std::vector<long long>& sprout_previous,
                      const std::vector<int>& which, long long segments, long long tips, int device,
                      const std::function<void(RawRealisation&&)>& done, Timing* timing, const Capacity& knobs,
                      const StopCallback& stop, int host_threads, std::shared_ptr<PinnedChunks>& pinned,
                      int keep_logs) {
  if (which.empty()) return;
  const cuda::DeviceGuard guard(device);
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  Timing local;
  // (Timing::release: from the end of the batches to the last buffer freed; declared first, so
  // destroyed last)
  struct Release {
    Timing* timing;
    Clock::time_point start{};
    ~Release() {
      if (timing && start != Clock::time_point{})
        timing->release += std::chrono::duration<double>(Clock::now() - start).count();
    }
  } release{timing};
  const Clock::time_point upload_start = Clock::now();
  const bool fields = kp.model.taf_diffusion > 0;
  cuda::DeviceBuffer<double> c0, f0;
  c0.upload(c0_host.data(), c0_host.size());
  f0.upload(f0_host.data(), f0_host.size());
  cuda::DeviceBuffer<long long> d_sprout_node, d_sprout_previous;
  d_sprout_node.upload(sprout_node);
  d_sprout_previous.upload(sprout_previous);
  Params p{};
  p.model = kp.model;
  p.nx = kp.nx;
  p.ny = kp.ny;
  p.nz = kp.nz;
  p.h = kp.h;
  p.dt = kp.dt;
  p.a = kp.dt / (kp.h * kp.h);
  p.psi = kp.psi;
  p.reach_front = kp.reach_front;
  p.last_step = kp.last_step;
  p.max_tips = kp.max_tips;
  p.rules = kp.rules;
  p.rule = kp.rule;
  for (int r = 0; r < kMaxRules; ++r) {
    p.rule_c[r] = kp.rule_c[r];
    p.rule_p[r] = kp.rule_p[r];
  }
  p.sprouts = static_cast<int>(sprout_node.size());
  p.sprout_node = d_sprout_node.data();
  p.sprout_previous = d_sprout_previous.data();
  p.c0 = c0.data();
  p.f0 = f0.data();
  p.seed = kp.seed;
  p.nodes = static_cast<long long>(c0_host.size());
  if (!fields && p.nodes >= (1LL << kEpochShift) - 1) {
    throw UserError("grid", " cuda: the hybrid backend's hash keys hold grids of fewer than 2^40 nodes");
  }
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  local.upload += since(upload_start);
  // (at most half full: `hashed` past half the slots overflows, like a log past its capacity)
  int hash_bits = 4;
  while ((1LL << hash_bits) < 2 * segments) ++hash_bits;
  // Realisations that keep no log come down as their per-step rows, which the kernel writes as it
  // goes (Params::rows), kept for every realisation of the batch when any of them wants rows: up to
  // 2^16 steps and no more rows than log entries a realisation may hold (at least 4096: the tests'
  // tiny capacities), so that they never outweigh the log they replace (a long run of few tips
  // brings its log down).
  const bool some_summarised =
      keep_logs >= 0 && std::any_of(which.begin(), which.end(), [&](int r) { return r >= keep_logs; });
  const long long row_stride = some_summarised && kp.last_step < (1LL << 16) &&
                                       kp.last_step + 1 <= std::max<long long>(segments, 4096) &&
                                       segments < std::numeric_limits<int>::max()
                                   ? kp.last_step + 1
                                   : 0;
  const Sizes capacity{segments, tips, row_stride};
  const std::size_t free = ::simkit::cuda::current_device_memory().free;
  const bool tip_uptake = kp.rule.uptake == Uptake::Tip;
  const std::size_t scratch_each = Batch::scratch_bytes(capacity, hash_bits, fields, tip_uptake, p.nodes);
  const std::size_t row_each = Batch::row_bytes(capacity);
  const std::size_t per = scratch_each + row_each;
  const double budget = static_cast<double>(free) * 0.6;
  const auto fit = static_cast<long long>(budget / static_cast<double>(per));
  if (fit < 1) {
    throw UserError("backend", " cuda: one realisation needs " + std::to_string(per >> 20) + " MiB of GPU memory (" +
                    std::to_string(segments) + " segments, " + std::to_string(tips) + " tips" +
                    (fields ? ", a c field per realisation for D_c > 0" : "") + ") and " + std::to_string(free >> 20) +
                    " MiB are free; lower `t_max` or `max_tips`, or use `backend` cpu");
  }
  // (the kept realisations below are the first of `which`: it must ascend, as every caller has it)
  if (!std::is_sorted(which.begin(), which.end())) throw InternalError("hybrid cuda: realisations out of order");
  // D_c = 0 with rows: the summarised realisations (which keep no log) run in parts of
  // `shared_part` on two streams, and each stream's parts take turns in one set of scratch rows,
  // after those of the realisations that keep their logs (`kept`, the first of `which`; their
  // part runs beside them on a third stream and is waited for last): the device memory allocated, zeroed and
  // freed is what two parts use, whatever the ensemble's size (two parts of 4096 at 1.35 MB each
  // with the default capacities: 11 GB instead of 1.35 MB a realisation). Parts of 4096: about
  // what the GPU holds at once (64 registers a thread: 8 blocks of 4 warps an SM, 4224 warps on an
  // H200), so that one part runs while the other's tail ends; larger parts (up to 12 500, an eighth
  // of 10^5) measured no faster and cost more memory to allocate and free (docs/performance.md).
  const auto total = static_cast<long long>(which.size());
  const auto kept = static_cast<long long>(
      row_stride > 0 ? std::count_if(which.begin(), which.end(), [&](int r) { return r < keep_logs; }) : total);
  const long long shared_part = knobs.part > 0 ? knobs.part : 4096;
  const long long ring_rows = kept + std::min(2 * shared_part, total - kept);
  const bool ring =
      !fields && row_stride > 0 && kept < total &&
      static_cast<double>(ring_rows) * static_cast<double>(scratch_each) + static_cast<double>(row_each) <= budget;
  // Batches of equal size (the fewest that fit): the device memory allocated, zeroed and freed is
  // what the realisations use, not the most that fits.
  const long long most =
      ring ? std::min<long long>(
                 static_cast<long long>((budget - static_cast<double>(ring_rows) * static_cast<double>(scratch_each)) /
                                        static_cast<double>(row_each)),
                 std::numeric_limits<int>::max() / 2)
           : std::min<long long>(fit, fields ? 65535LL : 1LL << 30);
  const long long largest = knobs.batch > 0 ? std::min<long long>(most, knobs.batch) : most;
  const long long batches = (total + largest - 1) / largest;
  const int batch_size = static_cast<int>(std::max<long long>(1, (total + batches - 1) / batches));
  const Clock::time_point allocate_start = Clock::now();
  Batch batch;
  batch.allocate(batch_size, ring ? static_cast<int>(ring_rows) : batch_size, capacity, hash_bits, fields, tip_uptake,
                 p.nodes);
  // D_c > 0 on Hopper with an even nx: the TMA-staged stencil over every c field of the batch.
  cuda::DeviceBuffer<CUtensorMap> c_map;
  // (The tensor's plane coordinates are 32-bit: every realisation's two fields must fit.)
  if (fields && p.nx % 2 == 0 && 2LL * batch_size * p.nz <= std::numeric_limits<int>::max() &&
      cuda::tma_kernel_usable(device, diffuse_tma_kernel)) {
    CUtensorMap map;
    const std::uint64_t dims[3] = {static_cast<std::uint64_t>(p.nx), static_cast<std::uint64_t>(p.ny),
                                   2 * static_cast<std::uint64_t>(batch_size) * static_cast<std::uint64_t>(p.nz)};
    const std::uint32_t box[3] = {kTmaX, kTmaY, 1};
    if (cuda::encode_tensor_map_3d(&map, batch.c.data(), dims, static_cast<std::uint64_t>(p.nx) * 8,
                                   static_cast<std::uint64_t>(p.nx) * p.ny * 8, box))
      c_map.upload(&map, 1);
  }
  local.allocate += since(allocate_start);
  local.scratch_rows = ring ? ring_rows : batch_size;
  p.log_capacity = segments;
  p.tip_capacity = static_cast<int>(tips);
  p.hash_bits = hash_bits;
  p.which = batch.which.data();
  p.rows = row_stride > 0 ? batch.rows.data() : nullptr;
  p.row_stride = row_stride;
  // The packed logs of a chunk (pack_kernel), reused from chunk to chunk.
  cuda::DeviceBuffer<LogEntry> packed_log;
  cuda::DeviceBuffer<long long> packed_tip_node, packed_offsets;
  cuda::DeviceBuffer<unsigned char> packed_tip_active;
  // 16 MiB of log entries a chunk: small enough that the rebuild of the last chunk (which nothing
  // overlaps) is short; a chunk comes down into a reused page-locked slot (PinnedChunks).
  // Chunks of at most 2^16 tip rows too (a slot's), so that only a realisation larger than a slot
  // on its own takes pageable memory (with row_copies every realisation with a log does: the
  // tests' path through it).
  const std::size_t chunk_entries = knobs.row_copies ? 1 : std::size_t{1} << 19;
  const std::size_t chunk_tips = knobs.row_copies ? 1 : std::size_t{1} << 16;
  // (Sized before any part is launched: a buffer freed and allocated again would wait for the parts
  // still running, cudaFree synchronising the device; only a realisation larger than a chunk grows them.)
  packed_log.resize(chunk_entries);
  packed_tip_node.resize(chunk_tips);
  packed_tip_active.resize(chunk_tips);
  packed_offsets.resize(2 * static_cast<std::size_t>(batch_size) + 2);
  // The host side of the chunks' downloads: the caller's pool, kept across calls.
  if (!pinned) {
    pinned = std::make_shared<PinnedChunks>(device, knobs.pinned_entries > 0 ? knobs.pinned_entries : chunk_entries,
                                            chunk_tips);
  }
  // The parts' launches (two streams) and the downloads (one), none of them the legacy default
  // stream, which would order each against the others. The downloads' stream has the greatest
  // priority: its pack kernels would otherwise wait for SMs behind the parts' queued blocks (the
  // download phase of 10^5 realisations on an H200: 0.45-0.53 s without, 0.32-0.41 s with it).
  // Declared after every device buffer they use: destroyed (each synchronised) before those are freed.
  // (runs[2]: the realisations that keep their logs, beside the summarised parts, when they share
  // scratch rows)
  const cuda::Stream runs[3];
  const cuda::Stream copy{cuda::Stream::HighPriority{}};
  long long epoch = 0;  // the last launch's (kEpochShift)
  const long long last_epoch = knobs.epochs > 0 ? std::min(knobs.epochs, kMaxEpoch) : kMaxEpoch;
  for (std::size_t first = 0; first < which.size(); first += static_cast<std::size_t>(batch_size)) {
    if (stop && stop()) throw Stopped();
    const Clock::time_point prepare_start = Clock::now();
    const int count =
        static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch_size), which.size() - first));
    const auto n = static_cast<std::size_t>(count);
    SIMKIT_CUDA_CHECK(cudaMemcpy(batch.which.data(), which.data() + first, n * sizeof(int), cudaMemcpyHostToDevice));
    SIMKIT_CUDA_CHECK(cudaMemsetAsync(batch.state.data(), 0, n * sizeof(State)));
    const auto nodes = static_cast<std::size_t>(p.nodes);
    if (fields) {
      batch.clear_fields(n, nodes);
      for (std::size_t k = 0; k < n; ++k) {
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(batch.c.data() + 2 * k * nodes, c0.data(), nodes * sizeof(double),
                                          cudaMemcpyDeviceToDevice));
      }
    }
    const Clock::time_point kernel_start = Clock::now();
    const int threads = 128;
    const int blocks = (count * 32 + threads - 1) / threads;
    std::vector<State> state(n);
    // D_c = 0: the batch runs in parts, each a launch of its own on one of two streams (a part's
    // tail overlaps the next part's start), queued at once; each part's logs come down and are
    // rebuilt on the host while the GPU runs the parts after it, so that the host's share (most of
    // it the rebuild) hides behind the kernel instead of following it (docs/performance.md). With
    // `ring`, the batch's realisations that keep their logs (its first) are a part of their own on
    // a third stream, and the summarised parts alternate between two scratch slots after theirs,
    // one a stream (a stream's parts run in turn). D_c > 0 (a launch per step and the stencil
    // between) runs as one part.
    struct Part {
      std::size_t begin, end, scratch;
      int stream;
    };
    std::vector<Part> parts;
    if (fields) {
      parts.push_back({0, n, 0, 0});
    } else if (ring) {
      std::size_t b = 0;
      while (b < n && which[first + b] < keep_logs) ++b;
      if (b > 0) parts.push_back({0, b, 0, 2});
      for (std::size_t q = 0; b < n; b += static_cast<std::size_t>(shared_part), ++q) {
        parts.push_back({b, std::min(n, b + static_cast<std::size_t>(shared_part)),
                         static_cast<std::size_t>(kept) + (q % 2) * static_cast<std::size_t>(shared_part),
                         static_cast<int>(q % 2)});
      }
    } else {
      const std::size_t part_size =
          knobs.part > 0 ? static_cast<std::size_t>(knobs.part) : std::max<std::size_t>((n + 7) / 8, 4096);
      for (std::size_t b = 0, q = 0; b < n; b += part_size, ++q)
        parts.push_back({b, std::min(n, b + part_size), b, static_cast<int>(q % 2)});
    }
    std::vector<cuda::Event> part_done(fields ? 0 : parts.size());
    // (with a Timing: the parts' first start and each part's end, for parts_span)
    std::unique_ptr<TimedEvent> parts_start;
    std::vector<std::unique_ptr<TimedEvent>> part_end;
    if (!fields) {
      SIMKIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // the batch's uploads and clears (default stream)
      local.prepare += since(prepare_start);
      if (timing) {
        parts_start = std::make_unique<TimedEvent>();
        parts_start->record(runs[0]);
      }
      for (std::size_t q = 0; q < parts.size(); ++q) {
        const Part& part_q = parts[q];
        const cudaStream_t run = runs[part_q.stream];
        if (epoch == last_epoch) {  // (2^23 launches: never but in tests) every key empty again, epochs anew
          SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
          batch.hash_key.fill_zero();
          SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
          epoch = 0;
          ++local.key_clears;
        }
        ++epoch;
        const int part_blocks = static_cast<int>(((part_q.end - part_q.begin) * 32 + threads - 1) / threads);
        advance_kernel<false><<<part_blocks, threads, 0, run>>>(p, batch.work(), static_cast<int>(part_q.begin),
                                                                static_cast<int>(part_q.end), p.last_step,
                                                                static_cast<int>(part_q.scratch), epoch);
        SIMKIT_CUDA_CHECK_LAUNCH();
        part_done[q].record(run);
        if (timing) {
          part_end.push_back(std::make_unique<TimedEvent>());
          part_end.back()->record(run);
        }
      }
    } else {
      // One step per launch, then the stencil; every 16 steps, stop once every realisation has.
      const int tiles_x = (p.nx + detail::StageTile::kX - 1) / detail::StageTile::kX;
      const dim3 grid(static_cast<unsigned>(tiles_x * ((p.ny + detail::StageTile::kY - 1) / detail::StageTile::kY)), 1,
                      static_cast<unsigned>(count));
      for (long long s = 0; s < p.last_step; ++s) {
        advance_kernel<true><<<blocks, threads>>>(p, batch.work(), 0, count, 1, 0, 0);
        SIMKIT_CUDA_CHECK_LAUNCH();
        if (c_map.size() > 0) {
          diffuse_tma_kernel<<<grid, detail::StageTile::kThreads, kTmaSmem>>>(p, batch.work(), tiles_x, c_map.data());
        } else {
          diffuse_kernel<<<grid, detail::StageTile::kThreads>>>(p, batch.work(), tiles_x);
        }
        SIMKIT_CUDA_CHECK_LAUNCH();
        if (s % 16 == 15) {
          batch.state.download(state.data(), n);
          SIMKIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
          if (stop && stop()) throw Stopped();  // the batch's buffers are freed on the way out
          if (std::all_of(state.begin(), state.end(), [](const State& st) { return st.finished != 0; })) break;
        }
      }
      advance_kernel<true><<<blocks, threads>>>(p, batch.work(), 0, count, 0, 0, 0);  // marks the last ones finished
      SIMKIT_CUDA_CHECK_LAUNCH();
      SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
      local.kernel += since(kernel_start);
    }
    // Part by part, the logs and tip tables in chunks of realisations: packed on the GPU (each
    // realisation's own entries, one after another), one copy per array into a page-locked slot
    // (PinnedChunks; fresh pageable memory for a chunk larger than a slot) that the chunk's
    // realisations share, handed over chunk by chunk (the rebuild starts on the first while the
    // next comes down, and the GPU runs the next parts meanwhile).
    const auto seg_cap = static_cast<long long>(segments);
    const int tip_cap = static_cast<int>(tips);
    // Whether realisation k comes down as its rows: it keeps no log.
    const auto summarised = [&](std::size_t k) { return row_stride > 0 && which[first + k] >= keep_logs; };
    const auto stride = static_cast<std::size_t>(row_stride);
    // Realisations [begin, end) of the batch, downloaded chunk by chunk and handed over.
    const auto chunks = [&](std::size_t begin, std::size_t end) {
      std::size_t first_k = begin;
      while (first_k < end) {
        const Clock::time_point chunk_start = Clock::now();
        // Realisations [first_k, last_k), all with their logs or all as rows: at least one, then as
        // many as fit the chunk's entries and tip rows. Logs and tip tables are packed (each
        // realisation's own entries); rows come down as they lie, `stride` a realisation (the
        // unused rows of those that ended early and the rows of overflowed ones with them).
        const bool summary = summarised(first_k);
        std::size_t last_k = first_k, entries = 0, tip_rows = 0;
        std::vector<long long> offsets{0, 0};  // pairs: log offset, tip offset of each realisation
        while (last_k < end && summarised(last_k) == summary) {
          const State& st = state[last_k];
          std::size_t size = stride, tips_k = 0;
          if (!summary) {
            size = st.overflow ? 0 : static_cast<std::size_t>(st.log_size);
            tips_k = st.overflow ? 0 : static_cast<std::size_t>(st.tips);
          }
          if (last_k > first_k && (entries + size > chunk_entries || tip_rows + tips_k > chunk_tips)) break;
          entries += size;
          tip_rows += tips_k;
          offsets.push_back(static_cast<long long>(entries));
          offsets.push_back(static_cast<long long>(tip_rows));
          ++last_k;
        }
        const std::size_t m = last_k - first_k;
        std::unique_ptr<TimedEvent[]> marks(timing ? new TimedEvent[3] : nullptr);  // kernel, copies, end
        if (!summary) {
          if (packed_log.size() < std::max<std::size_t>(entries, 1))
            packed_log.resize(std::max<std::size_t>(entries, 1));
          if (packed_tip_node.size() < std::max<std::size_t>(tip_rows, 1)) {
            packed_tip_node.resize(std::max<std::size_t>(tip_rows, 1));
            packed_tip_active.resize(std::max<std::size_t>(tip_rows, 1));
          }
          SIMKIT_CUDA_CHECK(cudaMemcpyAsync(packed_offsets.data(), offsets.data(), offsets.size() * sizeof(long long),
                                            cudaMemcpyHostToDevice, copy));
          if (marks) marks[0].record(copy);
          pack_kernel<<<static_cast<unsigned>(m), 256, 0, copy>>>(
              batch.work(), seg_cap, tip_cap, static_cast<int>(first_k), packed_offsets.data(), packed_log.data(),
              packed_tip_node.data(), packed_tip_active.data());
          SIMKIT_CUDA_CHECK_LAUNCH();
        } else if (marks) {
          marks[0].record(copy);
        }
        if (marks) marks[1].record(copy);
        std::shared_ptr<StagedLogs> staged = entries <= pinned->entries() && tip_rows <= pinned->tips()
                                                 ? pinned->take(stop, local.slot_wait, local.slots)
                                                 : nullptr;
        if (!staged) staged = make_staged(entries, tip_rows, host_threads);  // (too large, or no page-locked memory)
        if (summary) {
          SIMKIT_CUDA_CHECK(cudaMemcpyAsync(staged->rows, batch.rows.data() + first_k * stride,
                                            entries * sizeof(SummaryRow), cudaMemcpyDeviceToHost, copy));
        } else {
          if (entries > 0)
            SIMKIT_CUDA_CHECK(cudaMemcpyAsync(staged->log, packed_log.data(), entries * sizeof(LogEntry),
                                              cudaMemcpyDeviceToHost, copy));
          if (tip_rows > 0) {
            SIMKIT_CUDA_CHECK(cudaMemcpyAsync(staged->tip_node, packed_tip_node.data(), tip_rows * sizeof(long long),
                                              cudaMemcpyDeviceToHost, copy));
            SIMKIT_CUDA_CHECK(
                cudaMemcpyAsync(staged->tip_active, packed_tip_active.data(), tip_rows, cudaMemcpyDeviceToHost, copy));
          }
        }
        if (marks) marks[2].record(copy);
        copy.synchronize();
        local.download += since(chunk_start);
        if (marks) {
          local.chunk_kernels += marks[1].since(marks[0]);
          local.chunk_copies += marks[2].since(marks[1]);
          ++local.chunks;
        }
        const Clock::time_point rows_start = Clock::now();
        for (std::size_t k = first_k; k < last_k; ++k) {
          const State& st = state[k];
          const std::size_t at = 2 * (k - first_k);
          RawRealisation raw;
          raw.index = which[first + k];
          raw.overflow = st.overflow != 0;
          raw.steps = st.step;
          raw.moves = st.moves;
          raw.clipped = st.clipped;
          if (!raw.overflow) {
            raw.staged = staged;
            if (summary) {
              raw.summary = true;
              ++local.summarised;
              raw.row_begin = (k - first_k) * stride;
              raw.passes = st.passes;
            } else {
              raw.log_begin = static_cast<std::size_t>(offsets[at]);
              raw.log_size = static_cast<std::size_t>(offsets[at + 2] - offsets[at]);
              raw.tip_begin = static_cast<std::size_t>(offsets[at + 1]);
              raw.tips = static_cast<std::size_t>(offsets[at + 3] - offsets[at + 1]);
            }
            if (fields && raw.index == 0) {  // realisation 0's final c (the others would take nodes x 8 bytes each)
              raw.final_c.resize(nodes);
              SIMKIT_CUDA_CHECK(cudaMemcpy(raw.final_c.data(),
                                           batch.c.data() + (2 * k + static_cast<std::size_t>(st.step & 1)) * nodes,
                                           nodes * sizeof(double), cudaMemcpyDeviceToHost));
            }
          }
          done(std::move(raw));
        }
        local.rows += since(rows_start);
        first_k = last_k;
      }
    };
    // The parts in the order they are waited for: the kept realisations' own part (launched first,
    // on runs[2]) last, so that the summarised parts' rows come down and are rebuilt while it still
    // runs, and its logs' pack kernel finds the SMs free (behind running parts' blocks, realisation
    // 0's held every chunk after it for 0.16 s in a run of 10^5 on an H200).
    std::vector<std::size_t> order(parts.size());
    for (std::size_t q = 0; q < parts.size(); ++q) order[q] = q;
    if (parts.size() > 1 && parts[0].stream == 2) std::rotate(order.begin(), order.begin() + 1, order.end());
    for (std::size_t o = 0; o < order.size(); ++o) {
      const std::size_t q = order[o];
      const std::size_t part_begin = parts[q].begin, part_end = parts[q].end;
      if (!fields) {  // (the time the host waits for the GPU)
        const Clock::time_point wait_start = Clock::now();
        part_done[q].synchronize();
        local.kernel += since(wait_start);
        if (stop && stop()) throw Stopped();  // (the streams finish the parts queued before the buffers go)
      }
      const Clock::time_point download_start = Clock::now();
      SIMKIT_CUDA_CHECK(cudaMemcpyAsync(state.data() + part_begin, batch.state.data() + part_begin,
                                        (part_end - part_begin) * sizeof(State), cudaMemcpyDeviceToHost, copy));
      copy.synchronize();
      local.download += since(download_start);
      chunks(part_begin, part_end);
    }
    release.start = Clock::now();
    if (parts_start) {  // (every part has ended: its chunks came down)
      double span = 0;
      for (const auto& end : part_end) {
        end->synchronize();  // (its part_done was; this event follows it on the stream)
        span = std::max(span, end->since(*parts_start));
      }
      local.parts_span += span;
    }
  }
  if (timing) timing->add(local);
}

}  // namespace simkit::angio::detail::hybrid_cuda
