// The hybrid model's reference backend: one realisation, serial, in the order the issue defines:
// (1) every active tip draws its move from the state at the start of the step; (2) moves are
// applied in ascending tip id (onto an occupied node: anastomosis); (3) branching in ascending
// tip id; (4) c and f are updated at every occupied node (here implicitly: with D_c = 0 they are
// closed forms of the node's occupation time).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "angio/hybrid.hpp"
#include "angio/hybrid_model.hpp"
#include "angio/run.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace simkit::angio {

namespace {

enum Purpose : std::uint32_t { kMove = 0, kBranch = 1, kBranchDirection = 2 };

struct Tip {
  std::int64_t id = 0;
  std::int64_t node = 0, previous = -1;
  std::int64_t age = 0;  // steps since born or last branched
  std::int32_t generation = 0;
  bool active = true;
};

class Lattice {
 public:
  Lattice(const HybridProblem& p) : p_(p), g_(p.grid) {
    const Fields<double> u = initial_fields<double>(g_, p.initial);
    c0_ = u.c;
    f0_ = u.f;
    since_.assign(g_.nodes(), 0);
  }
  void coordinates(std::int64_t node, int& i, int& j, int& l) const { g_.coordinates(node, i, j, l); }
  bool occupied(std::int64_t node) const { return since_[node] != 0; }
  void occupy(std::int64_t node, std::int64_t step) { since_[node] = step + 1; }
  // c and f at the start of `step` (the number of updates a node has had so far).
  double c(std::int64_t node, std::int64_t step) const {
    return occupied_c(c0_[node], p_.dt, p_.model.taf_uptake, updates(node, step));
  }
  double f(std::int64_t node, std::int64_t step) const {
    return occupied_f(f0_[node], p_.dt, p_.model.fn_production, p_.model.fn_uptake, updates(node, step));
  }
  // P0..P6 at `node` from c and f at the start of `step` (mirror ghosts for the gradients), and
  // which moves stay in the domain.
  void weights(std::int64_t node, std::int64_t step, double w[7], bool inside[7]) const {
    int i, j, l;
    coordinates(node, i, j, l);
    const int at[7][3] = {{i, j, l},
                          {upper_neighbour(i, g_.nx), j, l},
                          {lower_neighbour(i, g_.nx), j, l},
                          {i, upper_neighbour(j, g_.ny), l},
                          {i, lower_neighbour(j, g_.ny), l},
                          {i, j, upper_neighbour(l, g_.nz)},
                          {i, j, lower_neighbour(l, g_.nz)}};
    Stencil<double> s;
    for (int d = 0; d < 7; ++d) {
      const std::int64_t id = static_cast<std::int64_t>(g_.index(at[d][0], at[d][1], at[d][2]));
      s.c[d] = c(id, step);
      s.f[d] = f(id, step);
    }
    movement_coefficients(p_.model, p_.dt / (g_.h * g_.h), g_.dims(), s, w);
    for (int d = 0; d < 7; ++d) {
      int di, dj, dl;
      move_offset(d, di, dj, dl);
      inside[d] = i + di >= 0 && i + di < g_.nx && j + dj >= 0 && j + dj < g_.ny && l + dl >= 0 && l + dl < g_.nz;
    }
  }
  std::int64_t neighbour(std::int64_t node, int d) const {
    int i, j, l, di, dj, dl;
    coordinates(node, i, j, l);
    move_offset(d, di, dj, dl);
    return static_cast<std::int64_t>(g_.index(i + di, j + dj, l + dl));
  }

 private:
  std::int64_t updates(std::int64_t node, std::int64_t step) const {
    return since_[node] == 0 ? 0 : step + 1 - since_[node];
  }
  const HybridProblem& p_;
  Grid g_;
  std::vector<double> c0_, f0_;
  std::vector<std::int64_t> since_;  // 0: free; else the step it was occupied in, plus 1
};

double branch_probability(const std::vector<BranchRule>& table, double c) {
  for (const BranchRule& rule : table)
    if (c <= rule.c_upto) return rule.probability;
  return table.empty() ? 0.0 : table.back().probability;
}

// Initial tips on the face next to the parent vessel (i = 1): one per maximum of the initial n
// profile sin^2(m pi y) (sin^2(m pi z)), or `count` on a regular grid of the face.
std::vector<std::pair<int, int>> sprout_positions(const Grid& g, const InitialParams& ip, int count) {
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
  std::vector<std::pair<int, int>> out;
  for (double z : zs)
    for (double y : ys) {
      if (count > 0 && static_cast<int>(out.size()) == count) break;
      out.push_back({static_cast<int>(std::lround(y * (g.ny - 1))), static_cast<int>(std::lround(z * (g.nz - 1)))});
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

void validate(const HybridProblem& p) {
  Problem continuous;
  continuous.grid = p.grid;
  continuous.model = p.model;
  continuous.dt = p.dt;
  continuous.initial = p.initial;
  validate(continuous);
  if (p.grid.nx < 3) throw UserError("--grid: the hybrid model needs NX >= 3 (the parent vessel is the x = 0 face)");
  if (p.model.taf_diffusion != 0) {
    throw UserError("D_c: the hybrid model takes D_c = 0 for now (TAF diffusion needs full fields per realisation)");
  }
  const HybridParams& h = p.hybrid;
  if (!(std::isfinite(h.psi) && h.psi >= 0)) throw UserError(fmt::format("--psi {}: must be a number >= 0", h.psi));
  if (!(h.reach_x > 0 && h.reach_x <= 1)) throw UserError(fmt::format("--reach-x {}: must be in (0, 1]", h.reach_x));
  if (!(std::isfinite(h.t_max) && h.t_max > 0)) throw UserError(fmt::format("--t-max {}: must be positive", h.t_max));
  if (h.max_tips < 1) throw UserError(fmt::format("--max-tips {}: must be >= 1", h.max_tips));
  if (h.sprouts < 0) throw UserError(fmt::format("--sprouts {}: must be >= 0", h.sprouts));
  double previous = -std::numeric_limits<double>::infinity();
  for (const BranchRule& rule : h.branching) {
    if (!(rule.c_upto > previous) || !(rule.probability >= 0 && rule.probability <= 1)) {
      throw UserError("branching table: c thresholds must increase and probabilities lie in [0, 1]");
    }
    previous = rule.c_upto;
  }
}

Realisation run_hybrid_reference(const HybridProblem& p, std::uint64_t seed) {
  validate(p);
  const Grid& g = p.grid;
  Lattice lattice(p);
  Realisation r;
  r.seed = seed;
  const double lx = (g.nx - 1) * g.h;
  std::vector<Tip> tips;
  // The parent vessel: the x = 0 face, occupied from the start.
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j) {
      const auto node = static_cast<std::int64_t>(g.index(0, j, l));
      lattice.occupy(node, 0);
      r.vessel.push_back(node);
    }
  for (const auto& [j, l] : sprout_positions(g, p.initial, p.hybrid.sprouts)) {
    Tip t;
    t.id = static_cast<std::int64_t>(tips.size());
    t.previous = static_cast<std::int64_t>(g.index(0, j, l));
    t.node = static_cast<std::int64_t>(g.index(1, j, l));
    lattice.occupy(t.node, 0);
    r.occupied.push_back(t.node);
    r.segments.push_back({t.previous, t.node, 0, 0});
    tips.push_back(t);
  }
  r.sprouts = static_cast<std::int64_t>(tips.size());
  double front = g.h;
  auto record = [&](std::int64_t step) {
    MetricsRow m;
    m.step = step;
    m.t = static_cast<double>(step) * p.dt;
    for (const Tip& t : tips) m.tips += t.active ? 1 : 0;
    m.sprouts = r.sprouts;
    m.branches = r.branches;
    m.anastomoses = r.anastomoses;
    m.length = static_cast<double>(r.segments.size()) * g.h;
    m.front = front;
    r.metrics.push_back(m);
  };
  record(0);
  const auto last_step = static_cast<std::int64_t>(std::ceil(p.hybrid.t_max / p.dt - 1e-9));
  std::int64_t step = 0;
  while (step < last_step && front < p.hybrid.reach_x * lx) {
    // (1) every active tip draws its move from the state at the start of the step.
    std::vector<int> moves(tips.size(), 0);
    for (const Tip& t : tips) {
      if (!t.active) continue;
      double w[7];
      bool inside[7];
      lattice.weights(t.node, step, w, inside);
      for (int d = 1; d < 7; ++d)
        if (inside[d] && lattice.neighbour(t.node, d) == t.previous) inside[d] = false;
      RngStream rng(seed, StreamId{static_cast<std::uint32_t>(t.id), static_cast<std::uint32_t>(step), kMove});
      bool clipped = false;
      moves[static_cast<std::size_t>(t.id)] = choose_move(w, inside, rng.uniform(), clipped);
      ++r.moves;
      r.clipped_draws += clipped ? 1 : 0;
    }
    // (2) moves in ascending tip id; onto an occupied node: anastomosis.
    for (Tip& t : tips) {
      if (!t.active) continue;
      ++t.age;
      const int d = moves[static_cast<std::size_t>(t.id)];
      if (d == 0) continue;
      const std::int64_t target = lattice.neighbour(t.node, d);
      r.segments.push_back({t.node, target, static_cast<std::int32_t>(step + 1), t.generation});
      if (lattice.occupied(target)) {
        t.active = false;
        ++r.anastomoses;
        r.anastomosis_points.push_back(target);
        continue;
      }
      lattice.occupy(target, step);
      r.occupied.push_back(target);
      t.previous = t.node;
      t.node = target;
      int i, j, l;
      lattice.coordinates(target, i, j, l);
      front = std::max(front, i * g.h);
    }
    // (3) branching in ascending tip id (tips born in this step do not branch in it).
    const std::size_t existing = tips.size();
    std::int64_t active = 0;
    for (const Tip& t : tips) active += t.active ? 1 : 0;
    for (std::size_t k = 0; k < existing; ++k) {
      if (!tips[k].active || static_cast<double>(tips[k].age) * p.dt <= p.hybrid.psi) continue;
      if (active >= p.hybrid.max_tips) break;
      const Tip parent = tips[k];
      const double probability = branch_probability(p.hybrid.branching, lattice.c(parent.node, step + 1));
      RngStream decide(seed,
                       StreamId{static_cast<std::uint32_t>(parent.id), static_cast<std::uint32_t>(step), kBranch});
      if (!(decide.uniform() < probability)) continue;
      double w[7];
      bool free_inside[7];
      lattice.weights(parent.node, step + 1, w, free_inside);
      free_inside[0] = false;
      for (int d = 1; d < 7; ++d)
        if (free_inside[d] && lattice.occupied(lattice.neighbour(parent.node, d))) free_inside[d] = false;
      bool any = false;
      for (int d = 1; d < 7; ++d) any = any || (free_inside[d] && w[d] > 0);
      if (!any) continue;
      const auto id = static_cast<std::int64_t>(tips.size());
      RngStream where(seed,
                      StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), kBranchDirection});
      bool clipped = false;
      const int d = choose_move(w, free_inside, where.uniform(), clipped);
      Tip child;
      child.id = id;
      child.previous = parent.node;
      child.node = lattice.neighbour(parent.node, d);
      child.generation = parent.generation + 1;
      lattice.occupy(child.node, step);
      r.occupied.push_back(child.node);
      r.segments.push_back({parent.node, child.node, static_cast<std::int32_t>(step + 1), child.generation});
      r.branch_points.push_back(parent.node);
      tips[k].age = 0;
      tips.push_back(child);
      ++r.branches;
      ++r.sprouts;
      ++active;
      int i, j, l;
      lattice.coordinates(child.node, i, j, l);
      front = std::max(front, i * g.h);
    }
    // (4) c and f at occupied nodes: implicit in Lattice::c and ::f (closed forms of the updates).
    ++step;
    record(step);
  }
  r.steps = step;
  r.reached = front >= p.hybrid.reach_x * lx;
  r.reach_time = r.reached ? static_cast<double>(step) * p.dt : 0.0;
  for (const Tip& t : tips)
    if (t.active) r.active_tip_nodes.push_back(t.node);
  return r;
}

std::vector<Realisation> run_hybrid_ensemble(const HybridProblem& problem, std::uint64_t seed, int replicates,
                                             Backend backend, int threads, const ProgressCallback& progress) {
  validate(problem);
  if (replicates < 1) throw UserError(fmt::format("--replicates {}: must be >= 1", replicates));
  if (backend == Backend::Cuda) {
    throw UserError(
        "--backend cuda: the hybrid model has no cuda backend yet (issue 5 in progress); use --backend cpu");
  }
  std::vector<Realisation> out(static_cast<std::size_t>(replicates));
  const int workers = backend == Backend::Cpu ? effective_threads(threads) : 1;
  int done = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
  for (int r = 0; r < replicates; ++r) {
    out[static_cast<std::size_t>(r)] = run_hybrid_reference(problem, seed + static_cast<std::uint64_t>(r));
#pragma omp critical(simkit_angio_hybrid_progress)
    {
      ++done;
      if (progress) progress(done, replicates);
    }
  }
  return out;
}

}  // namespace simkit::angio
