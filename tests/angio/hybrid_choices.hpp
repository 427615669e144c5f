#pragma once
// Random rule choices of the hybrid model for the tests that compare backends or replay logs, and
// the comparison of two realisations field by field. Rule choices: every
// anastomosis rule (the given one, or one drawn), window (odd, so that own-trail loops, which close an
// odd number of positions back on the lattice, also land on its boundary), fork, uptake, move
// weights, daughter placement, branching probability and density condition, back steps and the
// chemotactic sensitivity.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "simkit/angio/hybrid.hpp"

namespace simkit::angio::test_choices {

inline void random_rules(HybridProblem& p, std::mt19937_64& gen, int rule = -1) {
  std::uniform_real_distribution<double> u(0, 1);
  HybridParams& h = p.hybrid;
  h.anastomosis = static_cast<AnastomosisRule>(rule >= 0 ? rule : static_cast<int>(u(gen) * 4));
  h.anastomosis_window = 3 + 2 * static_cast<int>(u(gen) * 4);
  h.fork_passes = u(gen) < 0.5;
  h.uptake = u(gen) < 0.5 ? Uptake::Tip : Uptake::Trail;
  h.weights = u(gen) < 0.4 ? MoveWeights::OneSided : MoveWeights::Central;
  h.daughter = u(gen) < 0.5 ? DaughterPlacement::Uniform : DaughterPlacement::Weights;
  h.branch_always = u(gen) < 0.3;
  h.branch_density = u(gen) < 0.4 ? 2.5 * u(gen) : 0.0;
  h.back_steps = u(gen) < 0.5;
  p.model.sensitivity = u(gen) < 0.5 ? Sensitivity::Constant : Sensitivity::Receptor;
}


inline void expect_same(const Realisation& a, const Realisation& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.reached, b.reached);
  EXPECT_EQ(a.reach_time, b.reach_time);
  EXPECT_EQ(a.branches, b.branches);
  EXPECT_EQ(a.anastomoses, b.anastomoses);
  for (int k = 0; k < kFusionKinds; ++k) EXPECT_EQ(a.anastomoses_by_kind[k], b.anastomoses_by_kind[k]) << k;
  EXPECT_EQ(a.passes, b.passes);
  EXPECT_EQ(a.sprouts, b.sprouts);
  EXPECT_EQ(a.moves, b.moves);
  EXPECT_EQ(a.clipped_draws, b.clipped_draws);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t k = 0; k < a.segments.size(); ++k) {
    EXPECT_EQ(a.segments[k].from, b.segments[k].from) << k;
    EXPECT_EQ(a.segments[k].to, b.segments[k].to) << k;
    EXPECT_EQ(a.segments[k].birth_step, b.segments[k].birth_step) << k;
    EXPECT_EQ(a.segments[k].generation, b.segments[k].generation) << k;
    EXPECT_EQ(a.segments[k].sprout, b.segments[k].sprout) << k;
    EXPECT_EQ(a.segments[k].kind, b.segments[k].kind) << k;
  }
  EXPECT_EQ(a.occupied, b.occupied);
  EXPECT_EQ(a.branch_points, b.branch_points);
  EXPECT_EQ(a.anastomosis_points, b.anastomosis_points);
  EXPECT_EQ(a.anastomosis_kinds, b.anastomosis_kinds);
  EXPECT_EQ(a.active_tip_nodes, b.active_tip_nodes);
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (std::size_t s = 0; s < a.metrics.size(); ++s) {
    EXPECT_EQ(a.metrics[s].step, b.metrics[s].step) << s;
    EXPECT_EQ(a.metrics[s].t, b.metrics[s].t) << s;
    EXPECT_EQ(a.metrics[s].tips, b.metrics[s].tips) << s;
    EXPECT_EQ(a.metrics[s].sprouts, b.metrics[s].sprouts) << s;
    EXPECT_EQ(a.metrics[s].branches, b.metrics[s].branches) << s;
    EXPECT_EQ(a.metrics[s].anastomoses, b.metrics[s].anastomoses) << s;
    EXPECT_EQ(a.metrics[s].front, b.metrics[s].front) << s;
    EXPECT_EQ(a.metrics[s].length, b.metrics[s].length) << s;
    for (int k = 0; k < kFusionKinds; ++k) EXPECT_EQ(a.metrics[s].anastomoses_by_kind[k], b.metrics[s].anastomoses_by_kind[k]);
  }
}

// Random rule choices (hybrid_choices.hpp) and, one time in three, explicit sprout positions.
inline void randomise_rules(HybridProblem& p, std::mt19937_64& gen) {
  random_rules(p, gen);
  if (std::uniform_real_distribution<double>(0, 1)(gen) < 0.3) {
    HybridParams& h = p.hybrid;
    h.sprouts = 0;
    h.sprouts_at = {SproutPosition(0.2), SproutPosition(0.55), SproutPosition(0.8)};
    if (p.grid.nz > 1) h.sprouts_at[1].z = 0.3;
  }
}

// A random problem for backend comparisons (trial: 2D when even; the size scale stretches the
// grid): random taxis and branching parameters, both TAF sources, random sprout counts, a tip cap
// in trial 5, random rule choices from trial 2 on (trials 0 and 1 keep the defaults); t_max is
// `steps` steps.
inline HybridProblem random_problem(std::mt19937_64& gen, int trial, double size, int steps) {
  std::uniform_real_distribution<double> u(0, 1);
  HybridProblem p;
  const bool three_d = trial % 2 == 1;
  const int nx = 21 + static_cast<int>(u(gen) * 40 * size);
  p.grid = Grid{nx, 15 + static_cast<int>(u(gen) * 30 * size), three_d ? 9 + static_cast<int>(u(gen) * 20 * size) : 1, 0};
  p.grid.h = 1.0 / (nx - 1);
  p.model.haptotaxis = trial % 3 == 0 ? 0.34 : 0.34 * u(gen);
  p.model.chemotaxis = 0.2 + 0.4 * u(gen);
  p.initial.taf = trial % 4 == 2 ? InitialTaf::Tumour : InitialTaf::Linear;
  const double limit = p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.diffusion);
  p.dt = limit * (0.3 + 0.6 * u(gen));
  p.hybrid.t_max = steps * p.dt;
  p.hybrid.psi = 20 * p.dt * u(gen);
  p.hybrid.sprouts = trial % 3 == 1 ? 0 : 1 + static_cast<int>(u(gen) * 6);
  p.hybrid.max_tips = trial == 5 ? 4 : 100000;
  if (trial >= 2) randomise_rules(p, gen);
  return p;
}

}  // namespace simkit::angio::test_choices
