// The hybrid model's rule choices (docs/angio.md, "Rules"): every anastomosis rule, the fork,
// uptake at the tips, the branching density condition and probability, daughter placement, back
// steps, explicit sprout positions, the constant chemotactic sensitivity and Angio_TDA's one-sided
// move weights. Most checks replay a realisation's segment log with code written here from the
// rules' description (not from the engine's), so a bookkeeping error in the engine (owners, path
// positions, births, tip presence) shows as a disagreement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "simkit/angio/config.hpp"
#include "simkit/angio/hybrid.hpp"
#include "angio/hybrid/detail.hpp"
#include "simkit/angio/hybrid_io.hpp"
#include "angio/hybrid/model.hpp"
#include "simkit/core/error.hpp"
#include "core/rng.hpp"
#include "hybrid_choices.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

// A small problem with taxis strong enough for tips to travel and branch, in 2D or 3D.
HybridProblem small_problem(int nz, double rho) {
  HybridProblem p;
  p.grid = Grid{41, 31, nz, 1.0 / 40};
  p.model.haptotaxis = rho;
  p.initial.taf = InitialTaf::Tumour;
  p.dt = 0.5 * p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.diffusion);
  p.hybrid.t_max = 600 * p.dt;
  p.hybrid.psi = 15 * p.dt;
  p.hybrid.sprouts = nz > 1 ? 9 : 4;
  return p;
}

// ---------------------------------------------------------------------------------------------
// The replay: the rules of docs/angio.md applied to a realisation's own log.

struct ReplayTip {
  int parent = -1;
  std::int64_t birth = 0, node = -1, previous = -1, position = 0;
  bool active = true;
};

struct ReplayCounts {
  std::int64_t passes = 0, fusions[kFusionKinds] = {0, 0, 0, 0}, back_steps = 0, repeated_edges = 0;
};

// What a move onto an occupied node must do, from the rule's description.
int expected_outcome(const HybridParams& h, double dt, int mover, const std::vector<ReplayTip>& tips, int owner,
                     std::int64_t gap, std::int64_t birth_now, std::int64_t target) {
  constexpr int pass = -1, blocked = -2;
  if (owner < 0) return h.anastomosis == AnastomosisRule::OtherActive ? pass : static_cast<int>(FusionKind::Vessel);
  if (owner == mover) {
    switch (h.anastomosis) {
      case AnastomosisRule::Any:
        return static_cast<int>(FusionKind::Own);
      case AnastomosisRule::Window:
        return gap >= h.anastomosis_window ? static_cast<int>(FusionKind::Own) : pass;
      default:
        return pass;
    }
  }
  const ReplayTip& m = tips[static_cast<std::size_t>(mover)];
  const ReplayTip& o = tips[static_cast<std::size_t>(owner)];
  if (h.anastomosis == AnastomosisRule::OtherActive && !o.active) return pass;
  const std::int64_t branch = m.parent == owner ? m.birth : (o.parent == mover ? o.birth : -1);
  const bool young = branch >= 0 && static_cast<double>(birth_now - branch) * dt <= h.psi;
  if (young && h.fork_passes && h.anastomosis != AnastomosisRule::Any) return o.active && o.node == target ? blocked : pass;
  return static_cast<int>(young ? FusionKind::ParentDaughter : FusionKind::Sprout);
}

// Replays the log of `r` and checks every segment against the rules; `counts` gets what it saw.
void replay(const HybridProblem& p, const Realisation& r, ReplayCounts& counts) {
  const Grid& g = p.grid;
  std::map<std::int64_t, int> owner;                // occupied nodes (the parent vessel implicit: -1)
  std::map<std::int64_t, std::int64_t> position;    // the owner's path position there
  std::vector<ReplayTip> tips;
  counts = ReplayCounts{};
  const auto vessel = [&](std::int64_t node) { return node % g.nx == 0; };
  const auto occupied = [&](std::int64_t node) { return vessel(node) || owner.count(node) > 0; };
  for (std::size_t e = 0; e < r.segments.size(); ++e) {
    const Segment& s = r.segments[e];
    SCOPED_TRACE(testing::Message() << "segment " << e << " kind " << static_cast<int>(s.kind) << " sprout "
                                    << s.sprout << " birth " << s.birth_step);
    if (s.kind == SegmentKind::Sprout || s.kind == SegmentKind::Branch) {
      EXPECT_EQ(s.sprout, static_cast<int>(tips.size())) << "new tips take the next id";
      EXPECT_FALSE(occupied(s.to)) << "a new tip on an occupied node";
      ReplayTip t;
      t.node = s.to;
      t.previous = s.from;
      t.birth = s.birth_step;
      if (s.kind == SegmentKind::Branch) {
        t.parent = -1;
        for (std::size_t k = 0; k < tips.size(); ++k)
          if (tips[k].active && tips[k].node == s.from) t.parent = static_cast<int>(k);
        EXPECT_GE(t.parent, 0) << "a branch from a node without an active tip";
      }
      tips.push_back(t);
      owner[s.to] = s.sprout;
      position[s.to] = 0;
      continue;
    }
    ASSERT_LT(static_cast<std::size_t>(s.sprout), tips.size());
    ReplayTip& t = tips[static_cast<std::size_t>(s.sprout)];
    ASSERT_TRUE(t.active) << "an inactive tip moved";
    ASSERT_EQ(s.from, t.node) << "a tip moved from where it was not";
    if (s.to == t.previous) {
      ++counts.back_steps;
      EXPECT_TRUE(p.hybrid.back_steps) << "a back step without back_steps";
    }
    if (s.kind == SegmentKind::Move) {
      EXPECT_FALSE(occupied(s.to)) << "a move onto an occupied node";
    } else {
      EXPECT_TRUE(occupied(s.to)) << "a pass or fusion onto a free node";
      const auto it = owner.find(s.to);
      const int o = it == owner.end() ? -1 : it->second;
      const std::int64_t gap = o == s.sprout ? t.position - position[s.to] : 0;
      const int expected = expected_outcome(p.hybrid, p.dt, s.sprout, tips, o, gap, s.birth_step, s.to);
      const int got = s.kind == SegmentKind::Pass ? -1 : static_cast<int>(fusion_kind(s.kind));
      EXPECT_NE(expected, -2) << "a blocked move made a segment";
      EXPECT_EQ(got, expected) << "owner " << o << " gap " << gap;
    }
    if (is_fusion(s.kind)) {
      ++counts.fusions[static_cast<int>(fusion_kind(s.kind))];
      t.active = false;
      continue;
    }
    counts.passes += s.kind == SegmentKind::Pass ? 1 : 0;
    t.previous = t.node;
    t.node = s.to;
    ++t.position;
    owner[s.to] = s.sprout;
    position[s.to] = t.position;
  }
  EXPECT_EQ(counts.passes, r.passes);
  for (int k = 0; k < kFusionKinds; ++k) EXPECT_EQ(counts.fusions[k], r.anastomoses_by_kind[k]) << k;
  // The vessel length counts each lattice edge once.
  std::set<std::pair<std::int64_t, std::int64_t>> edges;
  for (const Segment& s : r.segments) edges.insert({std::min(s.from, s.to), std::max(s.from, s.to)});
  counts.repeated_edges = static_cast<std::int64_t>(r.segments.size() - edges.size());
  EXPECT_DOUBLE_EQ(r.metrics.back().length, static_cast<double>(edges.size()) * g.h);
  std::vector<std::int64_t> active;
  for (const ReplayTip& t : tips)
    if (t.active) active.push_back(t.node);
  EXPECT_EQ(active, r.active_tip_nodes);
}

std::string describe(const HybridProblem& p) {
  return fmt::format("nz {} rho {} anastomosis {} fork {} uptake {} weights {} daughter {} back {}", p.grid.nz,
                     p.model.haptotaxis, anastomosis_name(p.hybrid), p.hybrid.fork_passes ? "pass" : "fuse",
                     uptake_name(p.hybrid.uptake), weights_name(p.hybrid.weights), daughter_name(p.hybrid.daughter),
                     p.hybrid.back_steps);
}

// Every anastomosis rule and fork choice, 2D and 3D, both taxis regimes, with the other options
// drawn at random: the log agrees with the rules segment by segment, and each rule shows its
// signature (own-trail fusions only under any/window, passes only where a rule allows them).
TEST(AngioHybridRules, LogsFollowEveryAnastomosisRule) {
  std::mt19937_64 gen(test::printed_seed(1201));
  std::uniform_real_distribution<double> u(0, 1);
  for (AnastomosisRule rule :
       {AnastomosisRule::Other, AnastomosisRule::OtherActive, AnastomosisRule::Any, AnastomosisRule::Window}) {
    ReplayCounts total;
    for (int trial = 0; trial < 8; ++trial) {
      HybridProblem p = small_problem(trial % 2 == 0 ? 1 : 9, trial % 4 < 2 ? 0.34 : 0.0);
      HybridParams& h = p.hybrid;
      h.anastomosis = rule;
      // Own-trail loops on the lattice close an odd number of positions back: odd windows put
      // some exactly on the boundary (gap == N fuses, gap < N passes).
      h.anastomosis_window = 3 + 2 * static_cast<int>(u(gen) * 4);
      h.fork_passes = trial % 3 != 0;
      h.uptake = u(gen) < 0.5 ? Uptake::Tip : Uptake::Trail;
      h.weights = u(gen) < 0.3 ? MoveWeights::OneSided : MoveWeights::Central;
      h.daughter = u(gen) < 0.5 ? DaughterPlacement::Uniform : DaughterPlacement::Weights;
      h.back_steps = u(gen) < 0.5;
      SCOPED_TRACE(describe(p));
      for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        ReplayCounts c;
        replay(p, run_hybrid_reference(p, seed + 10 * trial), c);
        total.passes += c.passes;
        total.back_steps += c.back_steps;
        total.repeated_edges += c.repeated_edges;
        for (int k = 0; k < kFusionKinds; ++k) total.fusions[k] += c.fusions[k];
      }
    }
    const std::int64_t own = total.fusions[static_cast<int>(FusionKind::Own)];
    const std::int64_t fused = own + total.fusions[1] + total.fusions[2] + total.fusions[3];
    HybridParams named;
    named.anastomosis = rule;
    std::printf("%-13s passes %lld, fusions own %lld parent-daughter %lld sprout %lld vessel %lld, back steps %lld\n",
                anastomosis_name(named).c_str(), static_cast<long long>(total.passes),
                static_cast<long long>(own), static_cast<long long>(total.fusions[1]),
                static_cast<long long>(total.fusions[2]), static_cast<long long>(total.fusions[3]),
                static_cast<long long>(total.back_steps));
    EXPECT_GT(fused, 0);
    EXPECT_GT(total.back_steps, 0);
    if (rule != AnastomosisRule::Any) {
      EXPECT_GT(total.repeated_edges, 0) << "no segment retraced an edge";
    }
    switch (rule) {
      case AnastomosisRule::Any:
        EXPECT_EQ(total.passes, 0) << "any: every occupied node fuses";
        EXPECT_GT(own, 0);
        break;
      case AnastomosisRule::Window:
        EXPECT_GT(own, 0);
        EXPECT_GT(total.passes, 0);
        break;
      case AnastomosisRule::Other:
        EXPECT_EQ(own, 0);
        EXPECT_GT(total.passes, 0);
        break;
      case AnastomosisRule::OtherActive:
        EXPECT_EQ(own, 0);
        EXPECT_EQ(total.fusions[static_cast<int>(FusionKind::Vessel)], 0) << "the vessel is no active sprout";
        EXPECT_GT(total.passes, 0);
        break;
    }
  }
}

// window:N with N beyond any path is `other`, bit for bit; and `any` never passes.
TEST(AngioHybridRules, WideWindowIsOther) {
  for (int nz : {1, 9}) {
    HybridProblem p = small_problem(nz, 0.34);
    HybridProblem wide = p;
    wide.hybrid.anastomosis = AnastomosisRule::Window;
    wide.hybrid.anastomosis_window = 1 << 30;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const Realisation a = run_hybrid_reference(p, seed), b = run_hybrid_reference(wide, seed);
      ASSERT_EQ(a.segments.size(), b.segments.size());
      for (std::size_t k = 0; k < a.segments.size(); ++k) {
        EXPECT_EQ(a.segments[k].to, b.segments[k].to);
        EXPECT_EQ(a.segments[k].kind, b.segments[k].kind);
      }
    }
  }
}

// With the fork fusing, parent and daughter meet within psi of their branch (the lattice artefact
// of docs/angio.md); with the default fork they never fuse then, and the branches survive.
TEST(AngioHybridRules, ForkChoiceDecidesParentDaughterFusions) {
  HybridProblem p = small_problem(1, 0.0);
  std::int64_t fused[2] = {0, 0}, branches[2] = {0, 0};
  for (int fork = 0; fork < 2; ++fork) {
    p.hybrid.fork_passes = fork == 1;
    for (const Realisation& r : run_hybrid_ensemble(p, 5, 40, Backend::Cpu, 2)) {
      fused[fork] += r.anastomoses_by_kind[static_cast<int>(FusionKind::ParentDaughter)];
      branches[fork] += r.branches;
    }
  }
  std::printf("fork fuse: %lld parent-daughter fusions of %lld branches; fork pass: %lld of %lld\n",
              static_cast<long long>(fused[0]), static_cast<long long>(branches[0]), static_cast<long long>(fused[1]),
              static_cast<long long>(branches[1]));
  EXPECT_GT(fused[0], branches[0] / 4);
  EXPECT_EQ(fused[1], 0);
}

// ---------------------------------------------------------------------------------------------
// Re-simulation: the rules of docs/angio.md written out again here (D_c = 0), driven by the same
// keyed Philox draws and the shared formulas (move weights, closed forms, the branching table),
// but with this file's own state: occupation steps, owners and path positions, update counts and
// tip presence, tips with parents and births. Every segment the engine logged must be predicted
// exactly, in order, and nothing else: a bookkeeping slip in the engine (an uptake count, an owner,
// a birth step) changes the c or f a later draw sees and shows as a mismatch.

class Resimulation {
 public:
  Resimulation(const HybridProblem& p, std::uint64_t seed)
      : p_(p), g_(p.grid), h_(p.hybrid), seed_(seed), u0_(initial_fields<double>(p.grid, p.initial)) {}

  std::vector<Segment> run(std::int64_t& steps) {
    for (int l = 0; l < g_.nz; ++l)
      for (int j = 0; j < g_.ny; ++j) node(static_cast<std::int64_t>(g_.index(0, j, l))).since = 1;
    for (const auto& [j, l] : detail::sprout_positions(g_, p_.initial, h_)) {
      Tip t;
      t.previous = static_cast<std::int64_t>(g_.index(0, j, l));
      t.node = static_cast<std::int64_t>(g_.index(1, j, l));
      add_tip(t, 0, SegmentKind::Sprout);
    }
    double front = g_.h;
    const std::int64_t last = detail::hybrid_last_step(p_);
    std::int64_t step = 0;
    for (; step < last && front < detail::hybrid_reach_front(p_) && active() > 0; ++step) {
      now_ = step;
      std::vector<int> chosen(tips_.size(), 0);
      for (std::size_t id = 0; id < tips_.size(); ++id) {
        const Tip& t = tips_[id];
        if (!t.active) continue;
        double w[7];
        bool inside[7];
        weights(t.node, step, w, inside);
        for (int d = 1; d < 7 && !h_.back_steps; ++d)
          if (inside[d] && neighbour(t.node, d) == t.previous) inside[d] = false;
        RngStream rng(seed_, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), 0});
        bool clipped = false;
        chosen[id] = choose_move(w, inside, rng.uniform(), clipped);
      }
      const auto birth = static_cast<std::int32_t>(step + 1);
      for (std::size_t id = 0; id < chosen.size(); ++id) {
        Tip& t = tips_[id];
        if (!t.active) continue;
        ++t.age;
        if (chosen[id] == 0) continue;
        const std::int64_t target = neighbour(t.node, chosen[id]);
        SegmentKind kind = SegmentKind::Move;
        if (occupied(target)) {
          const int owner = nodes_.count(target) ? nodes_.at(target).owner : -1;
          const std::int64_t gap = owner == static_cast<int>(id) ? t.position - nodes_.at(target).position : 0;
          std::vector<ReplayTip> view;
          for (const Tip& x : tips_) view.push_back(ReplayTip{x.parent, x.birth, x.node, x.previous, x.position, x.active});
          const int outcome = expected_outcome(h_, p_.dt, static_cast<int>(id), view, owner, gap, birth, target);
          if (outcome == -2) continue;
          kind = outcome == -1 ? SegmentKind::Pass : static_cast<SegmentKind>(kFuseBase + outcome);
        }
        log_.emplace_back(t.node, target, birth, t.generation, static_cast<std::int32_t>(id), kind);
        node(t.node).present = false;
        if (is_fusion(kind)) {
          t.active = false;
          continue;
        }
        if (kind == SegmentKind::Move) node(target).since = step + 1;
        t.previous = t.node;
        t.node = target;
        ++t.position;
        Node& n = node(target);
        n.owner = static_cast<int>(id);
        n.position = t.position;
        n.present = true;
        int i, j, l;
        g_.coordinates(target, i, j, l);
        front = std::max(front, i * g_.h);
      }
      const std::size_t existing = tips_.size();
      for (std::size_t id = 0; id < existing; ++id) {
        if (!tips_[id].active || static_cast<double>(tips_[id].age) * p_.dt <= h_.psi) continue;
        if (active() >= h_.max_tips) break;
        const std::int64_t at = tips_[id].node;
        const double c = c_at(at, step + 1);
        int i, j, l;
        g_.coordinates(at, i, j, l);
        const int crowd = moore_occupied(g_.nx, g_.ny, g_.nz, i, j, l, [&](int a, int b, int e) {
          return occupied(static_cast<std::int64_t>(g_.index(a, b, e)));
        });
        if (!dense_enough(h_.branch_density, crowd, c)) continue;
        RngStream decide(seed_, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), 1});
        if (!(decide.uniform() < detail::branch_probability(h_, c))) continue;
        double w[7];
        bool free_inside[7];
        weights(at, step + 1, w, free_inside);
        free_inside[0] = false;
        for (int d = 1; d < 7; ++d)
          if (free_inside[d] && occupied(neighbour(at, d))) free_inside[d] = false;
        if (!place_daughter(h_.daughter, w, free_inside)) continue;
        RngStream where(seed_, StreamId{static_cast<std::uint32_t>(tips_.size()), static_cast<std::uint32_t>(step), 2});
        bool clipped = false;
        const int d = choose_move(w, free_inside, where.uniform(), clipped);
        if (d == 0) continue;
        Tip child;
        child.parent = static_cast<int>(id);
        child.birth = birth;
        child.previous = at;
        child.node = neighbour(at, d);
        child.generation = tips_[id].generation + 1;
        tips_[id].age = 0;
        add_tip(child, step, SegmentKind::Branch);
        g_.coordinates(child.node, i, j, l);
        front = std::max(front, i * g_.h);
      }
      if (h_.uptake == Uptake::Tip)
        for (const Tip& t : tips_)
          if (t.active) ++node(t.node).count;
    }
    steps = step;
    return log_;
  }

 private:
  struct Tip {
    int parent = -1;
    std::int32_t birth = 0, generation = 0;
    std::int64_t node = 0, previous = -1, age = 0, position = 0;
    bool active = true;
  };
  struct Node {
    std::int64_t since = 0;  // occupation step + 1
    int owner = -1;
    std::int64_t position = 0, count = 0;
    bool present = false;
  };
  Node& node(std::int64_t n) { return nodes_[n]; }
  bool occupied(std::int64_t n) const {
    const auto it = nodes_.find(n);
    return it != nodes_.end() && it->second.since != 0;
  }
  std::int64_t active() const {
    std::int64_t a = 0;
    for (const Tip& t : tips_) a += t.active ? 1 : 0;
    return a;
  }
  void add_tip(const Tip& t, std::int64_t step, SegmentKind kind) {
    const auto id = static_cast<std::int32_t>(tips_.size());
    tips_.push_back(t);
    Node& n = node(t.node);
    n.since = step + 1;
    n.owner = id;
    n.position = 0;
    n.present = true;
    log_.emplace_back(t.previous, t.node, t.birth, t.generation, id, kind);
  }
  // Updates of step (4) a node has had by the start of `step` (the next step: as things stand).
  std::int64_t updates(std::int64_t n, std::int64_t step) const {
    const auto it = nodes_.find(n);
    if (it == nodes_.end()) return 0;
    const Node& x = it->second;
    if (h_.uptake == Uptake::Tip) return x.count + (step > now_ && x.present ? 1 : 0);
    return x.since == 0 ? 0 : step + 1 - x.since;
  }
  double c_at(std::int64_t n, std::int64_t step) const {
    return occupied_c(u0_.c[static_cast<std::size_t>(n)], p_.dt, p_.model.taf_uptake, updates(n, step));
  }
  double f_at(std::int64_t n, std::int64_t step) const {
    return occupied_f(u0_.f[static_cast<std::size_t>(n)], p_.dt, p_.model.fn_production, p_.model.fn_uptake,
                      updates(n, step));
  }
  void weights(std::int64_t n, std::int64_t step, double w[7], bool inside[7]) const {
    int i, j, l;
    g_.coordinates(n, i, j, l);
    move_weights(
        h_.weights, p_.model, p_.dt / (g_.h * g_.h), g_.nx, g_.ny, g_.nz, i, j, l,
        [&](int a, int b, int e) { return static_cast<std::int64_t>(g_.index(a, b, e)); },
        [&](std::int64_t id) { return c_at(id, step); }, [&](std::int64_t id) { return f_at(id, step); }, w, inside);
  }
  std::int64_t neighbour(std::int64_t n, int d) const {
    int i, j, l, di, dj, dl;
    g_.coordinates(n, i, j, l);
    move_offset(d, di, dj, dl);
    return static_cast<std::int64_t>(g_.index(i + di, j + dj, l + dl));
  }

  const HybridProblem& p_;
  Grid g_;
  const HybridParams& h_;
  std::uint64_t seed_;
  Fields<double> u0_;
  std::int64_t now_ = 0;
  std::map<std::int64_t, Node> nodes_;
  std::vector<Tip> tips_;
  std::vector<Segment> log_;
};

TEST(AngioHybridRules, ResimulationPredictsEverySegment) {
  std::mt19937_64 gen(test::printed_seed(4242));
  std::uniform_real_distribution<double> u(0, 1);
  std::int64_t segments = 0;
  for (int trial = 0; trial < 24; ++trial) {
    HybridProblem p = small_problem(trial % 3 == 2 ? 7 : 1, trial % 2 == 0 ? 0.34 : 0.05);
    test_choices::random_rules(p, gen, trial % 4);
    p.hybrid.max_tips = u(gen) < 0.2 ? 6 : 100000;
    p.hybrid.t_max = 300 * p.dt;
    SCOPED_TRACE(describe(p) + fmt::format(" trial {}", trial));
    const std::uint64_t seed = 500 + static_cast<std::uint64_t>(trial);
    const Realisation r = run_hybrid_reference(p, seed);
    std::int64_t steps = 0;
    const std::vector<Segment> predicted = Resimulation(p, seed).run(steps);
    EXPECT_EQ(steps, r.steps);
    ASSERT_EQ(predicted.size(), r.segments.size());
    for (std::size_t k = 0; k < predicted.size(); ++k) {
      const Segment &a = predicted[k], &b = r.segments[k];
      ASSERT_TRUE(a.from == b.from && a.to == b.to && a.birth_step == b.birth_step && a.kind == b.kind &&
                  a.sprout == b.sprout && a.generation == b.generation)
          << "segment " << k << " of " << predicted.size() << ": predicted " << a.from << "->" << a.to << " kind "
          << static_cast<int>(a.kind) << " birth " << a.birth_step << ", engine " << b.from << "->" << b.to << " kind "
          << static_cast<int>(b.kind) << " birth " << b.birth_step;
    }
    segments += static_cast<std::int64_t>(predicted.size());
  }
  std::printf("%lld segments predicted\n", static_cast<long long>(segments));
  EXPECT_GT(segments, 2000);
}

// ---------------------------------------------------------------------------------------------
// Uptake at the tips: replay where the active tips stood after each step and run step (4) here:
// with D_c > 0 the realisation's final c field must be these very bits, and the end-of-run fields
// (hybrid_fields, from the log) must use the same update counts.

struct TipTrack {
  std::vector<std::vector<std::int64_t>> at;  // per step s: the active tips' nodes at its update
};

TipTrack tip_track(const Realisation& r) {
  TipTrack track;
  std::map<int, std::int64_t> where;  // active tips
  std::size_t e = 0;
  for (std::int64_t s = 0; s < r.steps; ++s) {
    for (; e < r.segments.size() && r.segments[e].birth_step <= s + 1; ++e) {
      const Segment& seg = r.segments[e];
      if (is_fusion(seg.kind)) {
        where.erase(seg.sprout);
      } else {
        where[seg.sprout] = seg.to;
      }
    }
    std::vector<std::int64_t> nodes;
    for (const auto& [tip, node] : where) nodes.push_back(node);
    track.at.push_back(nodes);
  }
  return track;
}

TEST(AngioHybridRules, TipUptakeFollowsTheTips) {
  for (int nz : {1, 7}) {
    HybridProblem p = small_problem(nz, 0.1);
    p.hybrid.uptake = Uptake::Tip;
    p.hybrid.t_max = 250 * p.dt;
    p.model.taf_diffusion = 0.002;
    p.dt = std::min(p.dt, 0.9 * p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.taf_diffusion));
    const Realisation r = run_hybrid_reference(p, 17);
    ASSERT_GT(r.steps, 50);
    const TipTrack track = tip_track(r);
    const Grid& g = p.grid;
    std::vector<double> c = initial_fields<double>(g, p.initial).c, next(c.size());
    for (std::int64_t s = 0; s < r.steps; ++s) {
      std::vector<bool> n(g.nodes(), false);
      for (std::int64_t node : track.at[static_cast<std::size_t>(s)]) n[static_cast<std::size_t>(node)] = true;
      for (int l = 0; l < g.nz; ++l)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i) {
            const std::size_t id = g.index(i, j, l);
            next[id] = diffused_c(
                p.model, p.dt, g.h, g.nx, g.ny, g.nz, i, j, l, [&](int a, int b, int e) { return g.index(a, b, e); },
                [&](std::size_t k) { return c[k]; }, n[id]);
          }
      c.swap(next);
    }
    EXPECT_TRUE(c == r.final_c) << "nz " << nz << ": c from the replayed tip positions differs";
  }
  // D_c = 0: the end-of-run fields count one update per step a tip stood on a node.
  HybridProblem p = small_problem(1, 0.1);
  p.hybrid.uptake = Uptake::Tip;
  const Realisation r = run_hybrid_reference(p, 3);
  const TipTrack track = tip_track(r);
  std::map<std::int64_t, long long> updates;
  for (const auto& nodes : track.at)
    for (std::int64_t node : nodes) ++updates[node];
  const Fields<double> u = hybrid_fields(p, r), u0 = initial_fields<double>(p.grid, p.initial);
  std::size_t behind = 0;
  for (std::size_t k = 0; k < u.c.size(); ++k) {
    const auto it = updates.find(static_cast<std::int64_t>(k));
    const long long m = it == updates.end() ? 0 : it->second;
    ASSERT_EQ(u.c[k], occupied_c(u0.c[k], p.dt, p.model.taf_uptake, m)) << k;
    ASSERT_EQ(u.f[k], occupied_f(u0.f[k], p.dt, p.model.fn_production, p.model.fn_uptake, m)) << k;
    behind += (u.n[k] == 1.0 && m > 0 && m < r.steps) ? 1 : 0;
  }
  EXPECT_GT(behind, 10u) << "nodes the tips passed and left";
}

// ---------------------------------------------------------------------------------------------
// Branching

// Every branch satisfies the density condition at the moment it was made: the occupied nodes of
// the parent's Moore neighbourhood (replayed from the log, vessel included) exceed kappa / c, with
// c from the closed form of how long the parent's node had been occupied (D_c = 0, trail uptake).
TEST(AngioHybridRules, BranchesSatisfyTheDensityCondition) {
  for (int nz : {1, 9}) {
    HybridProblem p = small_problem(nz, 0.34);
    p.hybrid.branch_density = 3.5;
    p.hybrid.branch_always = true;
    const Grid& g = p.grid;
    const std::vector<double> c0 = initial_fields<double>(g, p.initial).c;
    std::int64_t branches = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const Realisation r = run_hybrid_reference(p, seed);
      std::map<std::int64_t, std::int64_t> occupied_at;  // node -> step it was occupied in
      for (int l = 0; l < g.nz; ++l)
        for (int j = 0; j < g.ny; ++j) occupied_at[static_cast<std::int64_t>(g.index(0, j, l))] = 0;
      for (const Segment& s : r.segments) {
        const std::int64_t step = std::max(s.birth_step - 1, 0);
        if (s.kind == SegmentKind::Branch) {
          ++branches;
          int i, j, l;
          g.coordinates(s.from, i, j, l);
          int count = 0;
          for (int dl = nz > 1 ? -1 : 0; dl <= (nz > 1 ? 1 : 0); ++dl)
            for (int dj = -1; dj <= 1; ++dj)
              for (int di = -1; di <= 1; ++di) {
                const int a = i + di, b = j + dj, e = l + dl;
                if (a < 0 || a >= g.nx || b < 0 || b >= g.ny || e < 0 || e >= g.nz) continue;
                count += occupied_at.count(static_cast<std::int64_t>(g.index(a, b, e))) ? 1 : 0;
              }
          const double c = occupied_c(c0[static_cast<std::size_t>(s.from)], p.dt, p.model.taf_uptake,
                                      step + 1 - occupied_at.at(s.from));
          EXPECT_GT(count, p.hybrid.branch_density / c) << "branch at node " << s.from << " step " << step;
        }
        if (s.kind == SegmentKind::Sprout || s.kind == SegmentKind::Move || s.kind == SegmentKind::Branch)
          occupied_at.emplace(s.to, step);
      }
    }
    EXPECT_GT(branches, 5) << "nz " << nz;
    // A threshold no neighbourhood can meet stops branching altogether.
    p.hybrid.branch_density = 1e9;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) EXPECT_EQ(run_hybrid_reference(p, seed).branches, 0);
  }
}

// A table of zeros never branches; branch_probability "one" ignores it.
TEST(AngioHybridRules, BranchProbabilityOneIgnoresTheTable) {
  HybridProblem p = small_problem(1, 0.0);
  p.hybrid.branching = {{std::numeric_limits<double>::infinity(), 0.0}};
  std::int64_t table = 0, one = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) table += run_hybrid_reference(p, seed).branches;
  p.hybrid.branch_always = true;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) one += run_hybrid_reference(p, seed).branches;
  EXPECT_EQ(table, 0);
  EXPECT_GT(one, 4);
}

// Daughter placement: among the free neighbours, in proportion to P1..P6 or uniformly. The draw's
// frequencies over 2e5 uniforms are within 5 binomial standard deviations of those proportions.
TEST(AngioHybridRules, DaughterPlacementFrequencies) {
  const double p[7] = {0.4, 0.05, 0.3, 0.1, 0.1, 0.02, 0.03};
  const bool free_inside[7] = {false, true, true, false, true, true, true};  // d = 3 occupied
  for (DaughterPlacement placement : {DaughterPlacement::Weights, DaughterPlacement::Uniform}) {
    double w[7];
    std::copy(p, p + 7, w);
    ASSERT_TRUE(place_daughter(placement, w, free_inside));
    double total = 0;
    for (int d = 1; d < 7; ++d) total += free_inside[d] ? (placement == DaughterPlacement::Uniform ? 1.0 : p[d]) : 0;
    const int n = 200000;
    int counts[7] = {};
    RngStream rng(test::test_seed(5), StreamId{9, 9, 9});
    for (int k = 0; k < n; ++k) {
      bool clipped = false;
      ++counts[choose_move(w, free_inside, rng.uniform(), clipped)];
    }
    for (int d = 0; d < 7; ++d) {
      const double q = free_inside[d] ? (placement == DaughterPlacement::Uniform ? 1.0 : p[d]) / total : 0.0;
      EXPECT_NEAR(counts[d], n * q, 5 * std::sqrt(n * q * (1 - q)) + 0.5) << "direction " << d;
    }
  }
  const bool none[7] = {};
  double w[7] = {1, 1, 1, 1, 1, 1, 1};
  EXPECT_FALSE(place_daughter(DaughterPlacement::Uniform, w, none));
}

// ---------------------------------------------------------------------------------------------
// Sprout positions

TEST(AngioHybridRules, SproutsAtTheGivenPositions) {
  HybridProblem p = small_problem(1, 0.34);
  p.hybrid.sprouts = 0;
  p.hybrid.sprouts_at = {SproutPosition(0.1), SproutPosition(0.5), SproutPosition(0.9)};
  const Realisation r = run_hybrid_reference(p, 1);
  std::vector<std::int64_t> starts;
  for (const Segment& s : r.segments)
    if (s.kind == SegmentKind::Sprout) starts.push_back(s.to);
  const Grid& g = p.grid;
  EXPECT_EQ(starts, (std::vector<std::int64_t>{static_cast<std::int64_t>(g.index(1, 3, 0)),
                                               static_cast<std::int64_t>(g.index(1, 15, 0)),
                                               static_cast<std::int64_t>(g.index(1, 27, 0))}));
  HybridProblem p3 = small_problem(9, 0.34);
  p3.hybrid.sprouts = 0;
  p3.hybrid.sprouts_at = {SproutPosition(0.5), SproutPosition(0.5, 0.0)};
  const Realisation r3 = run_hybrid_reference(p3, 1);
  std::set<std::int64_t> starts3;
  for (const Segment& s : r3.segments)
    if (s.kind == SegmentKind::Sprout) starts3.insert(s.to);
  EXPECT_EQ(starts3, (std::set<std::int64_t>{static_cast<std::int64_t>(p3.grid.index(1, 15, 4)),
                                             static_cast<std::int64_t>(p3.grid.index(1, 15, 0))}));
}

TEST(AngioHybridRules, BadRuleValuesAreUserErrors) {
  const auto refused = [](const HybridProblem& p, const std::string& needle) {
    try {
      validate(p);
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << needle;
  };
  HybridProblem p = small_problem(1, 0.34);
  p.hybrid.sprouts = 0;
  p.hybrid.sprouts_at = {SproutPosition(0.5), SproutPosition(0.51)};
  refused(p, "same node");
  p.hybrid.sprouts_at = {SproutPosition(1.5)};
  refused(p, "y = 1.5");
  p.hybrid.sprouts_at = {SproutPosition(0.5, 0.5)};
  refused(p, "2D grid");
  p.hybrid.sprouts_at = {SproutPosition(0.5)};
  p.hybrid.sprouts = 3;
  refused(p, "give one of them");
  p = small_problem(1, 0.34);
  p.hybrid.branch_density = -1;
  refused(p, "branch_density -1");
  p.hybrid.branch_density = std::numeric_limits<double>::quiet_NaN();
  refused(p, "branch_density nan");
  p = small_problem(1, 0.34);
  p.hybrid.anastomosis = AnastomosisRule::Window;
  p.hybrid.anastomosis_window = 0;
  refused(p, "window");
  // The parsers of the config keys and flags.
  EXPECT_FALSE(parse_anastomosis("window:0"));
  EXPECT_FALSE(parse_anastomosis("window:"));
  EXPECT_FALSE(parse_anastomosis("window:-3"));
  EXPECT_FALSE(parse_anastomosis("window:1e3"));
  EXPECT_FALSE(parse_anastomosis("others"));
  EXPECT_EQ(parse_anastomosis("window:12")->window, 12);
  EXPECT_EQ(parse_anastomosis("other-active")->rule, AnastomosisRule::OtherActive);
  EXPECT_FALSE(parse_sprouts_at("0.1,,0.3"));
  EXPECT_FALSE(parse_sprouts_at("0.1,x"));
  EXPECT_FALSE(parse_sprouts_at("0.1:0.2:0.3"));
  EXPECT_FALSE(parse_sprouts_at("nan"));
  ASSERT_TRUE(parse_sprouts_at("0.17,0.3:0.25"));
  EXPECT_EQ(parse_sprouts_at("0.17,0.3:0.25")->at(1).z, 0.25);
  EXPECT_FALSE(parse_uptake("tips"));
  EXPECT_FALSE(parse_weights("upwind"));
  EXPECT_FALSE(parse_daughter("random"));
  EXPECT_FALSE(parse_branch_always("1"));
  EXPECT_FALSE(parse_sensitivity("hill"));
}

// ---------------------------------------------------------------------------------------------
// Chemotactic sensitivity and move weights

// A constant sensitivity is chi0 exactly: the same bits as alpha = 0, in the tip weights and in
// the continuous solver's step.
TEST(AngioHybridRules, ConstantSensitivityIsAlphaZero) {
  ModelParams constant, zero;
  constant.sensitivity = Sensitivity::Constant;
  zero.chemo_saturation = 0;
  Stencil<double> s;
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 100; ++trial) {
    for (int d = 0; d < 7; ++d) s.c[d] = u(gen), s.f[d] = u(gen);
    double a[7], b[7];
    movement_coefficients(constant, 50.0, 3, s, a);
    movement_coefficients(zero, 50.0, 3, s, b);
    for (int d = 0; d < 7; ++d) ASSERT_EQ(a[d], b[d]);
    ModelParams receptor;
    movement_coefficients(receptor, 50.0, 3, s, b);
    bool differ = false;
    for (int d = 0; d < 7; ++d) differ = differ || a[d] != b[d];
    EXPECT_TRUE(differ);
  }
  Problem cp;
  cp.grid = Grid{21, 17, 5, 0.05};
  cp.dt = 0.01;
  cp.model = constant;
  Problem zp = cp;
  zp.model = zero;
  const Fields<double> u0 = initial_fields<double>(cp.grid, cp.initial);
  auto sa = make_solver<double>(cp, u0, Backend::Reference, {});
  auto sb = make_solver<double>(zp, u0, Backend::Reference, {});
  sa->advance(20, false);
  sb->advance(20, false);
  Fields<double> fa, fb;
  sa->read(fa);
  sb->read(fb);
  EXPECT_TRUE(fa.n == fb.n);
}

// Angio_TDA's move probabilities, written here as its angio.py move_sprouts computes them (2D),
// and its draw done literally: p uniform in [0, total) against the running sums in the order
// stay, +x, -x, +y, -y, a move out of the domain staying put. The frequencies of 2e5 draws must
// match the weights tip_weights_one_sided gives within 5 binomial standard deviations, at interior
// and boundary nodes, with positive and negative probabilities among them.
TEST(AngioHybridRules, OneSidedWeightsReproduceAngioTdaDraws) {
  ModelParams m;
  m.sensitivity = Sensitivity::Constant;
  const int nx = 9, ny = 7;
  std::mt19937_64 gen(test::printed_seed(77));
  std::uniform_real_distribution<double> u(0, 1);
  int negative_cases = 0;
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<double> c(nx * ny), f(nx * ny);
    for (int k = 0; k < nx * ny; ++k) {
      c[static_cast<std::size_t>(k)] = 0.5 + 0.05 * u(gen);
      f[static_cast<std::size_t>(k)] = 0.3 + 0.05 * u(gen);
    }
    const double a = 2.0 + 18 * u(gen);
    m.haptotaxis = 0.5 * u(gen);
    const int i = trial % 3 == 0 ? 0 : (trial % 3 == 1 ? nx - 1 : 1 + static_cast<int>(u(gen) * (nx - 2)));
    const int j = trial % 4 == 0 ? ny - 1 : 1 + static_cast<int>(u(gen) * (ny - 2));
    const auto at = [&](const std::vector<double>& v, int x, int y) { return v[static_cast<std::size_t>(y * nx + x)]; };
    // Angio_TDA's grad_est and the probabilities of move_sprouts, with chi constant.
    auto grad = [&](const std::vector<double>& v, bool x_axis, double& g, double& dn, double& up) {
      const int q = x_axis ? i : j, n = x_axis ? nx : ny;
      auto val = [&](int r) { return x_axis ? at(v, r, j) : at(v, i, r); };
      if (q == 0) {
        g = dn = up = val(1) - val(0);
      } else if (q == n - 1) {
        g = dn = up = val(q) - val(q - 1);
      } else {
        dn = val(q) - val(q - 1);
        up = val(q + 1) - val(q);
        g = (val(q + 1) - val(q - 1)) / 2;
      }
    };
    double P[5] = {1 - 4 * a * m.diffusion, a * m.diffusion, a * m.diffusion, a * m.diffusion, a * m.diffusion};
    for (int axis = 0; axis < 2; ++axis) {
      double g, dn, up, fg, fdn, fup;
      grad(c, axis == 0, g, dn, up);
      grad(f, axis == 0, fg, fdn, fup);
      double& plus = P[1 + 2 * axis];
      double& minus = P[2 + 2 * axis];
      if (g > 0) {
        P[0] -= a * m.chemotaxis * dn;
        plus += a * m.chemotaxis * up;
      } else if (g < 0) {
        P[0] += a * m.chemotaxis * up;
        minus -= a * m.chemotaxis * dn;
      }
      if (fg > 0) {
        P[0] += m.haptotaxis * a * fdn;
        minus -= m.haptotaxis * a * fup;
      } else if (fg < 0) {
        P[0] -= m.haptotaxis * a * fup;
        plus += m.haptotaxis * a * fdn;
      }
    }
    bool negative = false;
    for (double x : P) negative = negative || x < 0;
    negative_cases += negative ? 1 : 0;
    const double total = P[0] + P[1] + P[2] + P[3] + P[4];
    ASSERT_GT(total, 0);
    // Literal draws: which outcome (as a stencil direction: 0 stay, 2 +x, 1 -x, 4 +y, 3 -y).
    const int to_stencil[5] = {0, 2, 1, 4, 3};
    const int inside_x[5] = {0, 1, -1, 0, 0}, inside_y[5] = {0, 0, 0, 1, -1};
    const int n = 200000;
    int literal[7] = {};
    std::mt19937_64 draw(trial);
    for (int k = 0; k < n; ++k) {
      const double p = std::uniform_real_distribution<double>(0, total)(draw);
      double sum = 0;
      int chosen = -1;
      for (int o = 0; o < 5 && chosen < 0; ++o) {
        sum += P[o];
        if (p < sum) chosen = o;
      }
      if (chosen < 0) chosen = 0;  // past every sum: no move
      const int x = i + inside_x[chosen], y = j + inside_y[chosen];
      ++literal[x >= 0 && x < nx && y >= 0 && y < ny ? to_stencil[chosen] : 0];
    }
    double w[7];
    bool inside[7];
    const bool reported = tip_weights_one_sided(
        m, a, nx, ny, 1, i, j, 0, [&](int x, int y, int) { return static_cast<std::size_t>(y * nx + x); },
        [&](std::size_t id) { return c[id]; }, [&](std::size_t id) { return f[id]; }, w, inside);
    EXPECT_EQ(reported, negative);
    double wsum = 0;
    for (int d = 0; d < 7; ++d) wsum += inside[d] ? w[d] : 0;
    for (int d = 0; d < 7; ++d) {
      const double q = inside[d] ? w[d] / wsum : 0.0;
      EXPECT_NEAR(literal[d], n * q, 5 * std::sqrt(n * q * (1 - q)) + 0.5)
          << "trial " << trial << " node " << i << "," << j << " direction " << d;
    }
  }
  EXPECT_GT(negative_cases, 2) << "the negative-probability path was not exercised";
}

}  // namespace
}  // namespace simkit::angio
