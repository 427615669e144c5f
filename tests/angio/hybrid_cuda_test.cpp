// The hybrid model's cuda backend against the reference (GPU; skipped without a usable device).
// Both evaluate the same double-precision formulas in the same order (--fmad=false) with the same
// Philox draws, so every realisation must be identical: segments, metrics, branch and anastomosis
// points, active tips, counters.
#include <gtest/gtest.h>

#include <random>

#include "simkit/angio/hybrid.hpp"
#include "angio/hybrid/detail.hpp"
#include "hybrid_choices.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

void expect_same(const Realisation& a, const Realisation& b, const std::string& what) {
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
    EXPECT_EQ(a.metrics[s].tips, b.metrics[s].tips) << s;
    EXPECT_EQ(a.metrics[s].front, b.metrics[s].front) << s;
    EXPECT_EQ(a.metrics[s].length, b.metrics[s].length) << s;
    for (int k = 0; k < kFusionKinds; ++k) EXPECT_EQ(a.metrics[s].anastomoses_by_kind[k], b.metrics[s].anastomoses_by_kind[k]);
  }
}

// Random rule choices (hybrid_choices.hpp) and, one time in three, explicit sprout positions.
void randomise_rules(HybridProblem& p, std::mt19937_64& gen) {
  test_choices::random_rules(p, gen);
  if (std::uniform_real_distribution<double>(0, 1)(gen) < 0.3) {
    HybridParams& h = p.hybrid;
    h.sprouts = 0;
    h.sprouts_at = {SproutPosition(0.2), SproutPosition(0.55), SproutPosition(0.8)};
    if (p.grid.nz > 1) h.sprouts_at[1].z = 0.3;
  }
}

// Random problems: 2D and 3D grids, random taxis and branching parameters, the linear and the
// tumour TAF source, chemotaxis-dominated and A&C cases; the ensemble runs with deliberately tiny
// starting capacities, so that most realisations overflow and are run again (the result must not
// depend on it).
TEST(AngioHybridCuda, EnsembleEqualsReferenceBitwise) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(20261122);
  std::uniform_real_distribution<double> u(0, 1);
  int overflowing = 0;
  for (int trial = 0; trial < 16; ++trial) {
    HybridProblem p;
    const bool three_d = trial % 2 == 1;
    const int nx = 21 + static_cast<int>(u(gen) * 40);
    p.grid = Grid{nx, 15 + static_cast<int>(u(gen) * 30), three_d ? 9 + static_cast<int>(u(gen) * 20) : 1, 0};
    p.grid.h = 1.0 / (nx - 1);
    p.model.haptotaxis = trial % 3 == 0 ? 0.34 : 0.34 * u(gen);
    p.model.chemotaxis = 0.2 + 0.4 * u(gen);
    p.initial.taf = trial % 4 == 2 ? InitialTaf::Tumour : InitialTaf::Linear;
    const double limit = p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.diffusion);
    p.dt = limit * (0.3 + 0.6 * u(gen));
    p.hybrid.t_max = 400 * p.dt;
    p.hybrid.psi = 20 * p.dt * u(gen);
    p.hybrid.sprouts = trial % 3 == 1 ? 0 : 1 + static_cast<int>(u(gen) * 6);
    p.hybrid.max_tips = trial == 5 ? 4 : 100000;
    if (trial >= 2) randomise_rules(p, gen);  // trials 0 and 1 keep the default rules
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(trial) * 77;
    const int replicates = 24;
    // Odd trials download every realisation's log on its own, even ones in one strided copy.
    const std::vector<Realisation> gpu = detail::hybrid_cuda::run(p, seed, replicates, 0, {}, {8, 4, trial % 2 == 1});
    ASSERT_EQ(gpu.size(), static_cast<std::size_t>(replicates));
    std::int64_t segments = 0;
    for (int r = 0; r < replicates; ++r) {
      const Realisation ref = run_hybrid_reference(p, seed + static_cast<std::uint64_t>(r));
      segments += static_cast<std::int64_t>(ref.segments.size());
      expect_same(gpu[static_cast<std::size_t>(r)], ref, "trial " + std::to_string(trial) + " r " + std::to_string(r));
    }
    overflowing += segments > replicates * 8 ? 1 : 0;
  }
  // Most trials outgrow the starting capacities (some rule choices end every tip early).
  EXPECT_GE(overflowing, 10) << "the capacities were meant to overflow";
}

// The public entry point with the default capacities, on the 2D A&C case with chemotaxis only.
TEST(AngioHybridCuda, EnsembleEntryPointEqualsCpu) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  HybridProblem p;
  p.grid = Grid{201, 201, 1, 0.005};
  p.model.haptotaxis = 0;
  p.dt = 0.01;
  const std::vector<Realisation> gpu = run_hybrid_ensemble(p, 7, 40, Backend::Cuda, 0);
  const std::vector<Realisation> cpu = run_hybrid_ensemble(p, 7, 40, Backend::Cpu, 0);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t r = 0; r < gpu.size(); ++r) expect_same(gpu[r], cpu[r], "r " + std::to_string(r));
}

// D_c > 0: every realisation carries its own c field on the GPU (one step per launch and a stencil
// kernel between launches); realisations and realisation 0's final c field equal the reference's
// bit for bit (the same diffused_c, --fmad=false). 2D and 3D, with uptake, tiny capacities.
TEST(AngioHybridCuda, TafDiffusionEqualsReferenceBitwise) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 4; ++trial) {
    const int nz = trial % 2 == 0 ? 1 : 11;
    HybridProblem p;
    p.grid = Grid{41, 33, nz, 1.0 / 40};
    p.model.taf_diffusion = 0.002;
    p.model.haptotaxis = 0.1;
    p.initial.taf = InitialTaf::Tumour;
    p.dt = 0.9 * p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.taf_diffusion);
    p.hybrid.t_max = 300 * p.dt;
    p.hybrid.psi = 30 * p.dt;
    if (trial >= 2) {
      randomise_rules(p, gen);
      p.hybrid.uptake = Uptake::Tip;  // the stencil's n from the tips' positions
    }
    const int replicates = 12;
    const std::vector<Realisation> gpu = detail::hybrid_cuda::run(p, 31, replicates, 0, {}, {16, 4});
    for (int r = 0; r < replicates; ++r) {
      const Realisation ref = run_hybrid_reference(p, 31 + static_cast<std::uint64_t>(r));
      expect_same(gpu[static_cast<std::size_t>(r)], ref, "nz " + std::to_string(nz) + " r " + std::to_string(r));
      if (r == 0) {
        ASSERT_EQ(gpu[0].final_c.size(), ref.final_c.size());
        EXPECT_TRUE(gpu[0].final_c == ref.final_c) << "final c differs";
      } else {
        EXPECT_TRUE(gpu[static_cast<std::size_t>(r)].final_c.empty());
      }
    }
  }
}

}  // namespace
}  // namespace simkit::angio
