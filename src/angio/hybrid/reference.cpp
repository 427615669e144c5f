// The hybrid model's reference backend: one realisation, serial, in the order docs/angio.md ("Rules") defines:
// (1) every active tip draws its move from the state at the start of the step; (2) moves are
// applied in ascending tip id (onto an occupied node: anastomosis); (3) branching in ascending
// tip id; (4) c and f are updated at every occupied node. With D_c = 0 step (4) is implicit: c and
// f at a node are closed forms of how long it has been occupied. With D_c > 0 the realisation
// carries its own c field, updated by a 7-point stencil every step.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "simkit/angio/hybrid.hpp"
#include "angio/hybrid/detail.hpp"
#include "core/dispatch.hpp"
#include "angio/hybrid/model.hpp"
#include "simkit/angio/run.hpp"
#include "simkit/core/memory.hpp"
#include "core/parallel.hpp"
#include "simkit/core/error.hpp"
#include "core/rng.hpp"

namespace simkit::angio {

namespace {

struct Tip {
  std::int32_t id = 0;
  std::int32_t parent = -1;  // the tip it branched from (-1: an initial sprout)
  std::int32_t birth = 0;    // birth step of its first segment
  std::int32_t generation = 0;
  std::int64_t node = 0, previous = -1;
  std::int64_t age = 0;       // steps since born or last branched
  std::int64_t position = 0;  // its current node's position along its path (0: its first node)
  bool active = true;
};

// One realisation's lattice: which nodes are occupied and since when, who owns them (the sprout
// whose tip last stepped on them, or the parent vessel) and at which path position, where the
// active tips are (Uptake::Tip), and c and f as the tips see them.
class Lattice {
 public:
  Lattice(const HybridProblem& p, const Fields<double>& initial)
      : p_(p),
        g_(p.grid),
        c0_(initial.c),
        f0_(initial.f),
        diffuse_(p.model.taf_diffusion > 0),
        tip_uptake_(p.hybrid.uptake == Uptake::Tip) {
    since_.assign(g_.nodes(), 0);
    owner_.assign(g_.nodes(), kVesselOwner);
    position_.assign(g_.nodes(), 0);
    if (tip_uptake_) {
      count_.assign(g_.nodes(), 0);
      present_.assign(g_.nodes(), 0);
    }
    if (diffuse_) c_ = c0_;
  }
  void coordinates(std::int64_t node, int& i, int& j, int& l) const { g_.coordinates(node, i, j, l); }
  bool occupied(std::int64_t node) const { return since_[node] != 0; }
  void occupy(std::int64_t node, std::int64_t step) { since_[node] = static_cast<std::int32_t>(step + 1); }
  int owner(std::int64_t node) const { return owner_[node]; }
  std::int64_t position(std::int64_t node) const { return position_[node]; }
  void own(std::int64_t node, int tip, std::int64_t position) {
    owner_[node] = tip;
    position_[node] = static_cast<std::int32_t>(position);
  }
  // An active tip arrives at or leaves a node (only Uptake::Tip keeps track).
  void arrive(std::int64_t node) {
    if (tip_uptake_) present_[node] = 1;
  }
  void leave(std::int64_t node) {
    if (tip_uptake_) present_[node] = 0;
  }
  // c and f at the start of `step` (the current step, or the next one with the occupation and the
  // tips as they stand).
  double c(std::int64_t node, std::int64_t step) const {
    if (!diffuse_) return occupied_c(c0_[node], p_.dt, p_.model.taf_uptake, updates(node, step));
    return step == step_ ? c_[node] : next_c(node);
  }
  double f(std::int64_t node, std::int64_t step) const {
    return occupied_f(f0_[node], p_.dt, p_.model.fn_production, p_.model.fn_uptake, updates(node, step));
  }
  // Step (4): with Uptake::Tip, one more update at each active tip's node; with D_c > 0,
  // c' = c + k (D_c Lap c / h^2 - eta n c) at every node (mirror ghosts at the boundaries).
  void end_step(const std::vector<Tip>& tips) {
    if (diffuse_) {
      std::vector<double> next(c_.size());
      for (std::size_t node = 0; node < c_.size(); ++node) next[node] = next_c(static_cast<std::int64_t>(node));
      c_.swap(next);
    }
    if (tip_uptake_)
      for (const Tip& t : tips)
        if (t.active) ++count_[t.node];
    ++step_;
  }
  // P0..P6 at `node` from c and f at the start of `step` (mirror ghosts for the gradients), and
  // which moves stay in the domain.
  // (true: the one-sided scheme had a negative weight).
  bool weights(std::int64_t node, std::int64_t step, double w[7], bool inside[7]) const {
    int i, j, l;
    coordinates(node, i, j, l);
    return move_weights(
        p_.hybrid.weights, p_.model, p_.dt / (g_.h * g_.h), g_.nx, g_.ny, g_.nz, i, j, l,
        [&](int a, int b, int e) { return static_cast<std::int64_t>(g_.index(a, b, e)); },
        [&](std::int64_t id) { return c(id, step); }, [&](std::int64_t id) { return f(id, step); }, w, inside);
  }
  std::int64_t neighbour(std::int64_t node, int d) const {
    int i, j, l, di, dj, dl;
    coordinates(node, i, j, l);
    move_offset(d, di, dj, dl);
    return static_cast<std::int64_t>(g_.index(i + di, j + dj, l + dl));
  }
  // Occupied nodes of the Moore neighbourhood of `node` (itself included).
  int crowding(std::int64_t node) const {
    int i, j, l;
    coordinates(node, i, j, l);
    return moore_occupied(g_.nx, g_.ny, g_.nz, i, j, l,
                          [&](int a, int b, int e) { return occupied(static_cast<std::int64_t>(g_.index(a, b, e))); });
  }
  const std::vector<double>& c_field() const { return c_; }

 private:
  // How many updates of step (4) the node has had by the start of `step`.
  std::int64_t updates(std::int64_t node, std::int64_t step) const {
    if (tip_uptake_) return count_[node] + (step > step_ && present_[node] ? 1 : 0);
    return since_[node] == 0 ? 0 : step + 1 - since_[node];
  }
  bool takes_up(std::int64_t node) const { return tip_uptake_ ? present_[node] != 0 : occupied(node); }
  double next_c(std::int64_t node) const {
    int i, j, l;
    coordinates(node, i, j, l);
    return diffused_c(
        p_.model, p_.dt, g_.h, g_.nx, g_.ny, g_.nz, i, j, l, [&](int a, int b, int e) { return g_.index(a, b, e); },
        [&](std::size_t id) { return c_[id]; }, takes_up(node));
  }
  const HybridProblem& p_;
  Grid g_;
  const std::vector<double>& c0_;
  const std::vector<double>& f0_;
  bool diffuse_, tip_uptake_;
  std::vector<double> c_;  // D_c > 0: c at the start of step_
  std::int64_t step_ = 0;
  std::vector<std::int32_t> since_;     // 0: free; else the step it was occupied in, plus 1
  std::vector<std::int32_t> owner_;     // the occupied nodes' owners (kVesselOwner for the parent vessel)
  std::vector<std::int32_t> position_;  // the owner's path position on the node
  std::vector<std::int32_t> count_;     // Uptake::Tip: updates so far
  std::vector<std::uint8_t> present_;   // Uptake::Tip: an active tip is on the node
};

// keep_c: with D_c > 0, keep the final c field in the result (nodes x 8 bytes).
Realisation run_one(const HybridProblem& p, const Fields<double>& initial, std::uint64_t seed, bool keep_c) {
  const Grid& g = p.grid;
  const HybridParams& h = p.hybrid;
  Lattice lattice(p, initial);
  std::vector<Segment> log;
  std::int64_t moves = 0, clipped_draws = 0;
  std::vector<Tip> tips;
  // The parent vessel: the x = 0 face, occupied from the start.
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j) lattice.occupy(static_cast<std::int64_t>(g.index(0, j, l)), 0);
  for (const auto& [j, l] : detail::sprout_positions(g, p.initial, h)) {
    Tip t;
    t.id = static_cast<std::int32_t>(tips.size());
    t.previous = static_cast<std::int64_t>(g.index(0, j, l));
    t.node = static_cast<std::int64_t>(g.index(1, j, l));
    lattice.occupy(t.node, 0);
    lattice.own(t.node, t.id, 0);
    lattice.arrive(t.node);
    log.emplace_back(t.previous, t.node, 0, 0, t.id, SegmentKind::Sprout);
    tips.push_back(t);
  }
  double front = g.h;
  std::int64_t active = static_cast<std::int64_t>(tips.size());
  const std::int64_t last_step = detail::hybrid_last_step(p);
  const double reach = detail::hybrid_reach_front(p);
  std::int64_t step = 0;
  while (step < last_step && front < reach && active > 0) {
    const auto birth = static_cast<std::int32_t>(step + 1);
    // (1) every active tip draws its move from the state at the start of the step.
    std::vector<int> chosen(tips.size(), 0);
    for (const Tip& t : tips) {
      if (!t.active) continue;
      double w[7];
      bool inside[7];
      const bool negative = lattice.weights(t.node, step, w, inside);
      if (!h.back_steps)
        for (int d = 1; d < 7; ++d)
          if (inside[d] && lattice.neighbour(t.node, d) == t.previous) inside[d] = false;
      RngStream rng(seed,
                    StreamId{static_cast<std::uint32_t>(t.id), static_cast<std::uint32_t>(step), detail::kDrawMove});
      bool clipped = false;
      chosen[static_cast<std::size_t>(t.id)] = choose_move(w, inside, rng.uniform(), clipped);
      ++moves;
      clipped_draws += clipped || negative ? 1 : 0;
    }
    // (2) moves in ascending tip id; onto an occupied node: an anastomosis or a pass.
    for (Tip& t : tips) {
      if (!t.active) continue;
      ++t.age;
      const int d = chosen[static_cast<std::size_t>(t.id)];
      if (d == 0) continue;
      const std::int64_t target = lattice.neighbour(t.node, d);
      SegmentKind kind = SegmentKind::Move;
      if (lattice.occupied(target)) {
        const int owner = lattice.owner(target);
        const Tip* o = owner >= 0 ? &tips[static_cast<std::size_t>(owner)] : nullptr;
        const int outcome = occupied_move_outcome(
            h.anastomosis, h.anastomosis_window, h.fork_passes, p.dt, h.psi, t.id, t.parent, t.birth,
            owner == t.id ? t.position - lattice.position(target) : 0, owner, o ? o->parent : -1, o ? o->birth : 0,
            o && o->active, o && o->node == target, birth);
        if (outcome == kBlocked) continue;
        kind = outcome == kPassOver ? SegmentKind::Pass : fusion_segment(outcome);
      }
      log.emplace_back(t.node, target, birth, t.generation, t.id, kind);
      lattice.leave(t.node);
      if (is_fusion(kind)) {
        t.active = false;
        --active;
        continue;
      }
      if (kind == SegmentKind::Move) lattice.occupy(target, step);
      t.previous = t.node;
      t.node = target;
      ++t.position;
      lattice.own(target, t.id, t.position);
      lattice.arrive(target);
      int i, j, l;
      lattice.coordinates(target, i, j, l);
      front = std::max(front, i * g.h);
    }
    // (3) branching in ascending tip id (tips born in this step do not branch in it), from c and
    // f at the start of the next step with the occupation as it stands.
    const std::size_t existing = tips.size();
    for (std::size_t k = 0; k < existing; ++k) {
      if (!tips[k].active || static_cast<double>(tips[k].age) * p.dt <= h.psi) continue;
      if (active >= h.max_tips) break;
      const Tip parent = tips[k];
      const double c = lattice.c(parent.node, step + 1);
      if (!dense_enough(h.branch_density, h.branch_density > 0 ? lattice.crowding(parent.node) : 0, c)) continue;
      const double probability = detail::branch_probability(h, c);
      RngStream decide(
          seed, StreamId{static_cast<std::uint32_t>(parent.id), static_cast<std::uint32_t>(step), detail::kDrawBranch});
      if (!(decide.uniform() < probability)) continue;
      double w[7];
      bool free_inside[7];
      lattice.weights(parent.node, step + 1, w, free_inside);
      free_inside[0] = false;
      for (int d = 1; d < 7; ++d)
        if (free_inside[d] && lattice.occupied(lattice.neighbour(parent.node, d))) free_inside[d] = false;
      if (!place_daughter(h.daughter, w, free_inside)) continue;
      const auto id = static_cast<std::int32_t>(tips.size());
      RngStream where(seed, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step),
                                     detail::kDrawBranchDirection});
      bool clipped = false;
      const int d = choose_move(w, free_inside, where.uniform(), clipped);
      if (d == 0) continue;  // NaN weights only (--force): no free neighbour chosen
      Tip child;
      child.id = id;
      child.parent = parent.id;
      child.birth = birth;
      child.previous = parent.node;
      child.node = lattice.neighbour(parent.node, d);
      child.generation = parent.generation + 1;
      lattice.occupy(child.node, step);
      lattice.own(child.node, id, 0);
      lattice.arrive(child.node);
      log.emplace_back(parent.node, child.node, birth, child.generation, id, SegmentKind::Branch);
      tips[k].age = 0;
      tips.push_back(child);
      ++active;
      int i, j, l;
      lattice.coordinates(child.node, i, j, l);
      front = std::max(front, i * g.h);
    }
    // (4) uptake of c and production of f (implicit with D_c = 0 and Uptake::Trail).
    lattice.end_step(tips);
    ++step;
  }
  std::vector<std::int64_t> active_nodes;
  for (const Tip& t : tips)
    if (t.active) active_nodes.push_back(t.node);
  Realisation r = detail::realisation_from_log(p, seed, step, moves, clipped_draws, std::move(log),
                                               std::move(active_nodes));
  if (p.model.taf_diffusion > 0 && keep_c) r.final_c = lattice.c_field();
  return r;
}

}  // namespace

namespace detail {

double branch_probability(const HybridParams& h, double c) {
  if (std::isnan(c)) return 0.0;  // only after a forced unstable step: no branching
  if (h.branch_always) return 1.0;
  for (const BranchRule& rule : h.branching)
    if (c <= rule.c_upto) return rule.probability;
  return h.branching.empty() ? 0.0 : h.branching.back().probability;
}

std::vector<std::pair<int, int>> sprout_positions(const Grid& g, const InitialParams& ip, const HybridParams& h) {
  std::vector<std::pair<int, int>> out;
  if (!h.sprouts_at.empty()) {
    for (const SproutPosition& s : h.sprouts_at) {
      out.push_back({static_cast<int>(std::lround(s.y * (g.ny - 1))),
                     g.nz > 1 ? static_cast<int>(std::lround(s.z_or_mid_plane() * (g.nz - 1))) : 0});
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  const int count = h.sprouts;
  std::vector<double> ys, zs;
  auto spread = [](int k) {
    std::vector<double> v;
    for (int q = 0; q < k; ++q) v.push_back((q + 0.5) / k);
    return v;
  };
  if (count <= 0) {
    const int m = std::max(1, ip.sine_frequency);
    ys = spread(m);
    zs = g.nz > 1 ? spread(m) : std::vector<double>{0.0};
  } else if (g.nz == 1) {
    ys = spread(count);
    zs = {0.0};
  } else {
    const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(count))));
    ys = spread(side);
    zs = spread(side);
  }
  for (double z : zs)
    for (double y : ys) {
      if (count > 0 && static_cast<int>(out.size()) == count) break;
      out.push_back({static_cast<int>(std::lround(y * (g.ny - 1))), static_cast<int>(std::lround(z * (g.nz - 1)))});
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::int64_t hybrid_last_step(const HybridProblem& p) {
  return static_cast<std::int64_t>(std::ceil(p.hybrid.t_max / p.dt - 1e-9));
}

double hybrid_reach_front(const HybridProblem& p) { return p.hybrid.reach_x * ((p.grid.nx - 1) * p.grid.h); }

void drop_logs(Realisation& r) {
  r.segments = {};
  r.occupied = {};
  r.branch_points = {};
  r.anastomosis_points = {};
  r.anastomosis_kinds = {};
  r.active_tip_nodes = {};
}

Realisation realisation_from_log(const HybridProblem& p, std::uint64_t seed, std::int64_t steps, std::int64_t moves,
                                 std::int64_t clipped_draws, std::vector<Segment> log,
                                 std::vector<std::int64_t> active_tip_nodes) {
  const Grid& g = p.grid;
  Realisation r;
  r.seed = seed;
  r.steps = steps;
  r.moves = moves;
  r.clipped_draws = clipped_draws;
  r.segments = std::move(log);
  r.active_tip_nodes = std::move(active_tip_nodes);
  // Vessel length counts each lattice edge once: a pass or an anastomosis may retrace one. A
  // segment adds an edge unless an earlier segment joined the same two nodes: the segments are met
  // in order below, each edge's key looked up in (and added to) an open-addressing set.
  const auto nodes = static_cast<std::uint64_t>(g.nodes());
  std::size_t slots = 16;
  while (slots < 2 * r.segments.size()) slots *= 2;
  std::vector<std::uint64_t> seen(slots, 0);  // edge key + 1; 0: empty
  auto new_edge = [&](const Segment& seg) {
    const std::uint64_t key = static_cast<std::uint64_t>(std::min(seg.from, seg.to)) * nodes +
                              static_cast<std::uint64_t>(std::max(seg.from, seg.to)) + 1;
    std::size_t at = static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 20) & (slots - 1);
    while (seen[at] != 0 && seen[at] != key) at = (at + 1) & (slots - 1);
    if (seen[at] == key) return false;
    seen[at] = key;
    return true;
  };
  std::int64_t edges = 0;
  // Metrics after every step: row s counts the segments born in steps up to s (birth step <= s).
  // Sized once: growing a row at a time reallocated and copied the table about a dozen times
  // (2001 rows of 96 bytes for t_max = 20), the largest host cost of rebuilding a GPU ensemble.
  r.metrics.reserve(static_cast<std::size_t>(std::max<std::int64_t>(steps, 0)) + 1);
  r.occupied.reserve(r.segments.size());
  MetricsRow row;
  row.front = g.h;
  std::size_t e = 0;
  const std::size_t n = r.segments.size();
  for (std::int64_t s = 0; s <= steps; ++s) {
    for (; e < n && r.segments[e].birth_step <= s; ++e) {
      const Segment& seg = r.segments[e];
      bool occupies = true;
      switch (seg.kind) {
        case SegmentKind::Sprout:
          ++row.sprouts;
          ++row.tips;
          break;
        case SegmentKind::Move:
          break;
        case SegmentKind::Pass:
          ++r.passes;
          occupies = false;
          break;
        case SegmentKind::Branch:
          ++row.branches;
          ++row.sprouts;
          ++row.tips;
          r.branch_points.push_back(seg.from);
          break;
        default:  // an anastomosis
          ++row.anastomoses;
          ++row.anastomoses_by_kind[static_cast<int>(fusion_kind(seg.kind))];
          --row.tips;
          r.anastomosis_points.push_back(seg.to);
          r.anastomosis_kinds.push_back(fusion_kind(seg.kind));
          occupies = false;
          break;
      }
      edges += new_edge(seg) ? 1 : 0;
      if (occupies) {
        r.occupied.push_back(seg.to);
        int i, j, l;
        g.coordinates(seg.to, i, j, l);
        row.front = std::max(row.front, i * g.h);
      }
    }
    row.step = s;
    row.t = static_cast<double>(s) * p.dt;
    row.length = static_cast<double>(edges) * g.h;
    r.metrics.push_back(row);
  }
  totals_from_metrics(p, r);
  return r;
}

void totals_from_metrics(const HybridProblem& p, Realisation& r) {
  const MetricsRow& end = r.metrics.back();
  r.branches = end.branches;
  r.anastomoses = end.anastomoses;
  for (int k = 0; k < kFusionKinds; ++k) r.anastomoses_by_kind[k] = end.anastomoses_by_kind[k];
  r.sprouts = end.sprouts;
  r.reached = end.front >= hybrid_reach_front(p);
  r.reach_time = r.reached ? static_cast<double>(r.steps) * p.dt : 0.0;
}

}  // namespace detail

std::vector<std::int64_t> parent_vessel(const Grid& g) {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(g.ny) * static_cast<std::size_t>(g.nz));
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j) out.push_back(static_cast<std::int64_t>(g.index(0, j, l)));
  return out;
}

void validate(const HybridProblem& p) {
  Problem continuous;
  continuous.grid = p.grid;
  continuous.model = p.model;
  continuous.dt = p.dt;
  continuous.initial = p.initial;
  validate(continuous);
  if (p.grid.nx < 3) throw UserError("grid", ": the hybrid model needs NX >= 3 (the parent vessel is the x = 0 face)");
  const HybridParams& h = p.hybrid;
  if (!(std::isfinite(h.psi) && h.psi >= 0)) throw UserError("psi", fmt::format(" {}: must be a number >= 0", h.psi));
  if (!(h.reach_x > 0 && h.reach_x <= 1)) throw UserError("reach_x", fmt::format(" {}: must be in (0, 1]", h.reach_x));
  if (!(std::isfinite(h.t_max) && h.t_max > 0)) throw UserError("t_max", fmt::format(" {}: must be positive", h.t_max));
  if (h.t_max / p.dt > 2e9) {
    throw UserError("t_max", fmt::format(" {}: {:.3g} steps of k = {}; at most 2e9", h.t_max, h.t_max / p.dt, p.dt));
  }
  if (h.max_tips < 1) throw UserError("max_tips", fmt::format(" {}: must be >= 1", h.max_tips));
  if (h.sprouts < 0) throw UserError("sprouts", fmt::format(" {}: must be >= 0", h.sprouts));
  const std::int64_t face = static_cast<std::int64_t>(p.grid.ny) * p.grid.nz;
  if (h.sprouts > face) {
    throw UserError("sprouts", fmt::format(" {}: the parent vessel's face has only {} nodes", h.sprouts, face));
  }
  if (!h.sprouts_at.empty()) {
    if (h.sprouts > 0) throw UserError("sprouts", " and `sprouts_at`: give one of them");
    if (static_cast<std::int64_t>(h.sprouts_at.size()) > face) {
      throw UserError("sprouts_at", fmt::format(": {} positions, but the parent vessel's face has only {} nodes",
                                  h.sprouts_at.size(), face));
    }
    std::set<std::pair<long, long>> seen;
    for (std::size_t k = 0; k < h.sprouts_at.size(); ++k) {
      const SproutPosition& s = h.sprouts_at[k];
      if (!(s.y >= 0 && s.y <= 1)) {
        throw UserError("sprouts_at", fmt::format(": position {} has y = {}; expected a fraction of the box in [0, 1]",
                                    k + 1, s.y));
      }
      if (p.grid.nz == 1 && s.z != SproutPosition::kMidPlane) {
        throw UserError("sprouts_at", fmt::format(": position {} gives z = {} on a 2D grid (NZ = 1); give y only",
                                    k + 1, s.z));
      }
      if (p.grid.nz > 1 && s.z != SproutPosition::kMidPlane && !(s.z >= 0 && s.z <= 1)) {
        throw UserError("sprouts_at", fmt::format(": position {} has z = {}; expected a fraction of the box in [0, 1]",
                                    k + 1, s.z));
      }
      const long j = std::lround(s.y * (p.grid.ny - 1)), l = p.grid.nz > 1 ? std::lround(s.z_or_mid_plane() * (p.grid.nz - 1)) : 0;
      if (!seen.insert({j, l}).second) {
        throw UserError("sprouts_at", fmt::format(": position {} (y = {}) falls on the same node as an earlier one "
                                    "(node j = {}); use distinct positions or a finer grid",
                                    k + 1, s.y, j));
      }
    }
  }
  if (!(std::isfinite(h.branch_density) && h.branch_density >= 0)) {
    throw UserError("branch_density", fmt::format(" {}: must be a number >= 0 (0: off)", h.branch_density));
  }
  if (h.anastomosis_window < 1) {
    throw UserError("anastomosis", fmt::format(" window:{}: the window must be at least 1 position", h.anastomosis_window));
  }
  if (h.sprouts > 0) {
    const std::size_t distinct = detail::sprout_positions(p.grid, p.initial, h).size();
    if (distinct < static_cast<std::size_t>(h.sprouts)) {
      throw UserError(
          "sprouts", fmt::format(" {}: the regular pattern on a {} x {} face gives only {} distinct nodes; "
                      "use at most {} or a finer grid",
                      h.sprouts, p.grid.ny, p.grid.nz, distinct, distinct));
    }
  }
  if (h.branching.empty() || h.branching.size() > 16) {
    throw UserError("branching table: between 1 and 16 rows of [c_upto, probability]");
  }
  double previous = -std::numeric_limits<double>::infinity();
  for (const BranchRule& rule : h.branching) {
    if (!(rule.c_upto > previous) || !(rule.probability >= 0 && rule.probability <= 1)) {
      throw UserError("branching table: c thresholds must increase and probabilities lie in [0, 1]");
    }
    previous = rule.c_upto;
  }
}

double hybrid_step_limit(const HybridProblem& p) {
  const double diffusion = std::max(p.model.diffusion, p.model.taf_diffusion);
  return p.grid.h * p.grid.h / (2 * p.grid.dims() * diffusion);
}

void choose_hybrid_step(HybridProblem& p, std::optional<double> dt, bool force) {
  const double limit = hybrid_step_limit(p);
  if (dt) {
    p.dt = *dt;
    if (p.dt > limit && !force) {
      throw UserError("dt", fmt::format(" {:.6g}: unstable: the diffusion limit h^2/(2 dims max(D, D_c)) allows at most "
                                        "k = {:.6g}; use `force` to run anyway",
                                        p.dt, limit));
    }
    return;
  }
  if (!std::isfinite(limit)) throw UserError("dt", ": required when D = D_c = 0 (no diffusion limit to derive k from)");
  if (!(std::isfinite(p.hybrid.t_max) && p.hybrid.t_max > 0)) {
    throw UserError("t_max", fmt::format(" {}: must be positive", p.hybrid.t_max));
  }
  const double target = std::min(0.9 * limit, p.hybrid.t_max / 100);
  if (!(target > 0)) throw UserError("h", fmt::format(" {}: the spacing must be a positive number", p.grid.h));
  p.dt = round_step_down(target);
}

Realisation run_hybrid_reference(const HybridProblem& p, std::uint64_t seed) {
  validate(p);
  const Fields<double> initial = initial_fields<double>(p.grid, p.initial);
  return run_one(p, initial, seed, true);
}

std::vector<Realisation> run_hybrid_ensemble(const HybridProblem& problem, std::uint64_t seed, int replicates,
                                             Backend backend, int threads, const ProgressCallback& progress,
                                             int device) {
  return run_hybrid_ensemble(problem, replicates, RunOptions{backend, device, seed, threads, progress, {}}).realisations;
}

namespace detail::hybrid {
namespace {

// The host backends: realisations shared among `workers` threads (1: the serial oracle), each
// realisation serial, so the results are the same whatever the count.
std::vector<Realisation> host_run(const HybridProblem& problem, int replicates, const RunOptions& options,
                                  int workers, int keep_logs) {
  // Host memory: the shared initial fields (3 arrays) and, per worker, the occupation table (and
  // with D_c > 0 two c fields), 8 bytes a node each.
  const double nodes = static_cast<double>(problem.grid.nodes());
  const double per_worker = nodes * 8.0 * (problem.model.taf_diffusion > 0 ? 3.0 : 1.0);
  const double needed = nodes * 24.0 + per_worker * workers;
  require_host_memory(needed, "grid",
                      fmt::format(" {},{},{}: {} workers", problem.grid.nx, problem.grid.ny, problem.grid.nz, workers),
                      "use fewer `threads`, a smaller grid or `backend` cuda");
  const Fields<double> initial = initial_fields<double>(problem.grid, problem.initial);
  std::vector<Realisation> out(static_cast<std::size_t>(replicates));
  const std::uint64_t seed = options.seed;
  const ProgressCallback& progress = options.progress;
  int done = 0;
  parallel_for(0, replicates, Schedule{workers, 1}, [&](std::int64_t r) {
    if (stop_requested(options)) return;  // asked to stop: the rest is skipped, then Stopped below
    out[static_cast<std::size_t>(r)] = run_one(problem, initial, seed + static_cast<std::uint64_t>(r), r == 0);
    if (keep_logs >= 0 && r >= keep_logs) drop_logs(out[static_cast<std::size_t>(r)]);
#pragma omp critical(simkit_angio_hybrid_progress)
    {
      ++done;
      if (progress) progress(done, replicates);
    }
  });
  throw_if_stopped(options);
  return out;
}

}  // namespace

namespace reference {
std::vector<Realisation> run(const HybridProblem& problem, int replicates, const RunOptions& options, int keep_logs) {
  return host_run(problem, replicates, options, 1, keep_logs);
}
}  // namespace reference
namespace cpu {
std::vector<Realisation> run(const HybridProblem& problem, int replicates, const RunOptions& options, int keep_logs) {
  return host_run(problem, replicates, options, effective_threads(options.threads), keep_logs);
}
}  // namespace cpu

std::vector<Realisation> run_backend(Backend backend, const HybridProblem& problem, int replicates,
                                     const RunOptions& options, int keep_logs) {
  return SIMKIT_DISPATCH(backend, run(problem, replicates, options, keep_logs));
}

}  // namespace detail::hybrid

HybridEnsemble run_hybrid_ensemble(const HybridProblem& problem, int replicates, const RunOptions& options,
                                   int keep_logs) {
  validate(problem);
  if (replicates < 1) throw UserError("replicates", fmt::format(" {}: must be >= 1", replicates));
  // Every realisation keeps a metrics row per step and at least its sprouts' first segments: a
  // lower bound of what the ensemble holds, checked before any work (an ensemble of 10^6 used to
  // grow until the kernel killed it).
  const double steps = static_cast<double>(detail::hybrid_last_step(problem)) + 1.0;
  const double per_realisation = steps * sizeof(MetricsRow) + sizeof(Realisation) +
                                 (static_cast<double>(problem.hybrid.sprouts) + static_cast<double>(problem.hybrid.sprouts_at.size())) *
                                     sizeof(Segment);
  require_host_memory(per_realisation * static_cast<double>(replicates), "replicates",
                      fmt::format(" {}: {} realisations of {} steps", replicates, replicates,
                                  static_cast<std::int64_t>(steps)),
                      "run fewer realisations at once (their seeds continue: --seed S + r)");
  HybridEnsemble result;
  result.backend = resolve_backend(options.backend, options.device);
  const int workers = result.backend == Backend::Cpu ? effective_threads(options.threads) : 1;
  result.device = device_description(result.backend, options.device, workers);
  result.realisations = detail::hybrid::run_backend(result.backend, problem, replicates, options, keep_logs);
  return result;
}

}  // namespace simkit::angio
