// The hybrid model's reference backend (docs/angio.md, "Rules"): the move rule's frequencies, the
// order-of-events invariants, the network graph's invariants and determinism by seed; and every
// backend against it (AngioHybridBackend).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "simkit/angio/hybrid.hpp"
#include "simkit/angio/hybrid_io.hpp"
#include "angio/hybrid/detail.hpp"
#include "angio/hybrid/detail.hpp"
#include "angio/hybrid/model.hpp"
#include "core/rng.hpp"
#include "hybrid_choices.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

HybridProblem small_problem(int nz = 1) {
  HybridProblem p;
  p.grid = Grid{61, 61, nz, 1.0 / 60};
  p.dt = 0.002;
  p.hybrid.t_max = 2;
  return p;
}

// With chi = rho = 0 the weights are P0 = 1 - 2 dims a D and P1..P6 = a D: a tip moves
// isotropically. choose_move's frequencies over N draws must match the normalised weights of
// the allowed moves within 5 binomial standard deviations (a false alarm about once in 10^6 tests
// per direction).
TEST(AngioHybrid, MovesAreIsotropicWithoutTaxis) {
  ModelParams m;
  m.chemotaxis = 0;
  m.haptotaxis = 0;
  Stencil<double> s;
  for (int d = 0; d < 7; ++d) s.c[d] = 0.3 + 0.01 * d, s.f[d] = 0.5 - 0.02 * d;  // gradients that must not matter
  double p[7];
  movement_coefficients(m, 100.0, 3, s, p);
  for (int d = 1; d < 7; ++d) EXPECT_DOUBLE_EQ(p[d], 100.0 * m.diffusion);
  bool allowed[7] = {true, true, true, true, true, true, true};
  allowed[2] = false;  // the node the tip came from
  double total = 0;
  for (int d = 0; d < 7; ++d) total += allowed[d] ? p[d] : 0;
  const int n = 200000;
  int counts[7] = {};
  RngStream rng(test::test_seed(11), StreamId{1, 2, 3});
  for (int k = 0; k < n; ++k) {
    bool clipped = false;
    ++counts[choose_move(p, allowed, rng.uniform(), clipped)];
    ASSERT_FALSE(clipped);
  }
  for (int d = 0; d < 7; ++d) {
    const double q = allowed[d] ? p[d] / total : 0.0;
    const double sd = std::sqrt(n * q * (1 - q));
    EXPECT_NEAR(counts[d], n * q, 5 * sd + 0.5) << "direction " << d;
  }
}

TEST(AngioHybrid, NegativeWeightsAreClippedAndReported) {
  const double p[7] = {0.5, -0.2, 0.7, 0.0, 0.0, 0.0, 0.0};
  const bool allowed[7] = {true, true, true, true, true, true, true};
  bool clipped = false;
  for (double u : {0.01, 0.3, 0.5, 0.9, 0.999}) {
    const int d = choose_move(p, allowed, u, clipped);
    EXPECT_TRUE(clipped);
    EXPECT_TRUE(d == 0 || d == 2) << d;
  }
  const bool none[7] = {};
  EXPECT_EQ(choose_move(p, none, 0.5, clipped), 0);  // nowhere to go: stay
}

TEST(AngioHybrid, OccupiedClosedFormsEqualTheStepUpdates) {
  const double k = 0.01, eta = 0.1, beta = 0.05, gamma = 0.1;
  double c = 0.8, f = 0.3;
  for (int m = 1; m <= 500; ++m) {
    c = c * (1 - k * eta);
    f = f * (1 - k * gamma) + k * beta;
    ASSERT_NEAR(occupied_c(0.8, k, eta, m), c, 1e-13);
    ASSERT_NEAR(occupied_f(0.3, k, beta, gamma, m), f, 1e-13);
  }
}

void expect_graph_invariants(const HybridProblem& p, const Realisation& r) {
  const Grid& g = p.grid;
  const std::vector<std::int64_t> vessel = parent_vessel(p.grid);
  std::set<std::int64_t> occupied(vessel.begin(), vessel.end());
  for (std::int64_t node : r.occupied) EXPECT_TRUE(occupied.insert(node).second) << "node occupied twice: " << node;
  std::set<std::int64_t> reached;
  for (const Segment& s : r.segments) {
    auto coords = [&](std::int64_t node, int& i, int& j, int& l) {
      i = static_cast<int>(node % g.nx);
      j = static_cast<int>((node / g.nx) % g.ny);
      l = static_cast<int>(node / (static_cast<std::int64_t>(g.nx) * g.ny));
    };
    int i0, j0, l0, i1, j1, l1;
    coords(s.from, i0, j0, l0);
    coords(s.to, i1, j1, l1);
    EXPECT_EQ(std::abs(i0 - i1) + std::abs(j0 - j1) + std::abs(l0 - l1), 1) << "segment joins non-neighbours";
    EXPECT_TRUE(occupied.count(s.from) && occupied.count(s.to)) << "segment end not occupied";
    reached.insert(s.to);
  }
  for (std::int64_t node : r.occupied)
    EXPECT_TRUE(reached.count(node)) << "occupied node " << node << " not in the graph";
  const std::set<std::int64_t> tips(r.active_tip_nodes.begin(), r.active_tip_nodes.end());
  EXPECT_EQ(tips.size(), r.active_tip_nodes.size()) << "two active tips share a node";
  for (std::size_t k = 1; k < r.metrics.size(); ++k) {
    const MetricsRow &a = r.metrics[k - 1], &b = r.metrics[k];
    EXPECT_LE(b.tips - a.tips, b.branches - a.branches) << "tips grew without branching at step " << b.step;
    EXPECT_EQ(b.tips - a.tips, (b.branches - a.branches) - (b.anastomoses - a.anastomoses)) << b.step;
    EXPECT_GE(b.front, a.front);
  }
  EXPECT_EQ(r.sprouts, r.metrics.back().sprouts);
}

TEST(AngioHybrid, NetworksKeepTheirGraphInvariants2dAnd3d) {
  for (int nz : {1, 21}) {
    HybridProblem p = small_problem(nz);
    p.initial.taf = InitialTaf::Tumour;
    p.hybrid.psi = 0.1;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      SCOPED_TRACE(testing::Message() << "nz " << nz << " seed " << seed);
      const Realisation r = run_hybrid_reference(p, seed);
      expect_graph_invariants(p, r);
    }
  }
}

TEST(AngioHybrid, SameSeedSameNetworkOtherSeedOtherNetwork) {
  HybridProblem p = small_problem();
  p.hybrid.psi = 0.1;
  const Realisation a = run_hybrid_reference(p, 42), b = run_hybrid_reference(p, 42), c = run_hybrid_reference(p, 43);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t k = 0; k < a.segments.size(); ++k) {
    EXPECT_EQ(a.segments[k].from, b.segments[k].from);
    EXPECT_EQ(a.segments[k].to, b.segments[k].to);
  }
  bool differ = a.segments.size() != c.segments.size();
  for (std::size_t k = 0; !differ && k < a.segments.size(); ++k) differ = a.segments[k].to != c.segments[k].to;
  EXPECT_TRUE(differ);
}

// Branching needs the sprout to be older than psi: the initial sprouts are born at step 0, so no
// branch segment (generation >= 1) is made before step psi / k; with psi beyond t_max, none.
TEST(AngioHybrid, NoBranchingBelowAgePsi) {
  HybridProblem p = small_problem();
  p.initial.taf = InitialTaf::Tumour;
  p.hybrid.branching = {{std::numeric_limits<double>::infinity(), 1.0}};  // always, once old enough
  p.hybrid.psi = 0.5;
  std::int64_t branches = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Realisation r = run_hybrid_reference(p, seed);
    branches += r.branches;
    for (const Segment& s : r.segments) {
      if (s.generation >= 1) {
        EXPECT_GT(s.birth_step * p.dt, p.hybrid.psi - 1e-12) << "seed " << seed;
      }
    }
  }
  EXPECT_GT(branches, 0);  // the check above had something to check
  p.hybrid.psi = 10 * p.hybrid.t_max;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) EXPECT_EQ(run_hybrid_reference(p, seed).branches, 0);
}

// Up a TAF gradient (the tumour source, strong chemotaxis, no haptotaxis) tips move +x far more
// often than -x: count the x-moves of every segment over an ensemble.
TEST(AngioHybrid, TipsClimbTheTafGradient) {
  HybridProblem p = small_problem();
  p.initial.taf = InitialTaf::Tumour;
  p.model.haptotaxis = 0;
  std::int64_t up = 0, down = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Realisation r = run_hybrid_reference(p, seed);
    for (const Segment& s : r.segments) {
      const std::int64_t di = (s.to % p.grid.nx) - (s.from % p.grid.nx);
      up += di == 1 ? 1 : 0;
      down += di == -1 ? 1 : 0;
    }
  }
  std::printf("x-moves up %lld, down %lld\n", static_cast<long long>(up), static_cast<long long>(down));
  EXPECT_GT(up, 3 * down);
  EXPECT_GT(up, 50);
}

// Realisation r of an ensemble with --seed S is the single run with seed S + r, whatever the
// backend and thread count (D_c = 0; every draw is keyed by seed, tip id, step and purpose).
TEST(AngioHybrid, ReplicateIsTheSingleRunWithShiftedSeed) {
  HybridProblem p = small_problem();
  p.hybrid.psi = 0.1;
  for (int threads : {1, 3}) {
    const std::vector<Realisation> cpu = run_hybrid_ensemble(p, 40, 6, Backend::Cpu, threads);
    const std::vector<Realisation> ref = run_hybrid_ensemble(p, 40, 6, Backend::Reference, 1);
    for (std::size_t r = 0; r < cpu.size(); ++r) {
      const Realisation single = run_hybrid_reference(p, 40 + r);
      for (const Realisation* x : {&cpu[r], &ref[r]}) {
        EXPECT_EQ(x->seed, single.seed);
        ASSERT_EQ(x->segments.size(), single.segments.size());
        for (std::size_t k = 0; k < single.segments.size(); ++k) {
          EXPECT_EQ(x->segments[k].to, single.segments[k].to);
          EXPECT_EQ(x->segments[k].birth_step, single.segments[k].birth_step);
        }
        EXPECT_EQ(x->branch_points, single.branch_points);
        EXPECT_EQ(x->anastomosis_points, single.anastomosis_points);
        EXPECT_EQ(x->reach_time, single.reach_time);
        EXPECT_EQ(x->steps, single.steps);
      }
    }
  }
}

// D_c > 0: each realisation carries its own c field. With eta = 0 the tips do not touch c, so the
// field must follow the continuous solver's c (fp64, same explicit stencil) to round-off: the
// relative difference after 200 steps is bounded by 200 steps x a few ulps (1e-12 leaves a wide
// margin and still catches a wrong coefficient, a missing mirror ghost or a skipped step).
TEST(AngioHybrid, TafDiffusionFollowsTheContinuousStencil) {
  for (int nz : {1, 9}) {
    HybridProblem p = small_problem(nz);
    p.grid = Grid{31, 21, nz, 1.0 / 30};
    p.model.taf_diffusion = 0.01;
    p.model.taf_uptake = 0;
    p.initial.taf = InitialTaf::Tumour;
    p.dt = 0.002;
    p.hybrid.t_max = 200 * p.dt;
    p.hybrid.reach_x = 1;
    const Realisation r = run_hybrid_reference(p, 3);
    ASSERT_EQ(r.final_c.size(), p.grid.nodes());
    Problem cp;
    cp.grid = p.grid;
    cp.model = p.model;
    cp.initial = p.initial;
    cp.dt = p.dt;
    cp.precision = Precision::Fp64;
    auto solver = make_solver<double>(cp, initial_fields<double>(cp.grid, cp.initial), Backend::Reference, {});
    solver->advance(r.steps, false);
    Fields<double> u;
    solver->read(u);
    double worst = 0;
    for (std::size_t k = 0; k < u.c.size(); ++k)
      worst = std::max(worst, std::abs(u.c[k] - r.final_c[k]) / std::max(1e-3, std::abs(u.c[k])));
    EXPECT_LT(worst, 1e-12) << "nz " << nz << ", " << r.steps << " steps";
    EXPECT_GT(r.steps, 100);
  }
}

// ----------------------------------------------------------------------------------------------
// Every backend against the reference (one suite parameterised over the backends: cpu on 3
// threads, cuda; the cuda instances skip with the reason without a usable device), through the
// public entry point: realisation r is the reference's run with seed + r, bit for bit.

class AngioHybridBackend : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
  std::vector<Realisation> ensemble(const HybridProblem& p, std::uint64_t seed, int replicates) const {
    RunOptions o;
    o.backend = GetParam();
    o.seed = seed;
    o.threads = 3;
    HybridEnsemble e = run_hybrid_ensemble(p, replicates, o);
    EXPECT_EQ(e.backend, GetParam());
    return std::move(e.realisations);
  }
};

// Random problems (test_choices::random_problem): 2D and 3D grids, random taxis and branching
// parameters, both TAF sources, random rule choices.
TEST_P(AngioHybridBackend, RandomRulesEqualReference) {
  std::mt19937_64 gen(20261124);
  for (int trial = 0; trial < 8; ++trial) {
    const HybridProblem p = test_choices::random_problem(gen, trial, 0.75, 300);
    const std::uint64_t seed = 500 + static_cast<std::uint64_t>(trial) * 31;
    const int replicates = 6;
    const std::vector<Realisation> got = ensemble(p, seed, replicates);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(replicates));
    for (int r = 0; r < replicates; ++r) {
      test_choices::expect_same(got[static_cast<std::size_t>(r)], run_hybrid_reference(p, seed + static_cast<std::uint64_t>(r)),
                                "trial " + std::to_string(trial) + " r " + std::to_string(r));
    }
  }
}

// keep_logs: the realisations from keep_logs on come without their logs and are otherwise the full
// run's, bit for bit (counts, metrics, the points' absence included); those before keep theirs.
TEST_P(AngioHybridBackend, KeepLogsDropsOnlyTheLaterRealisationsLogs) {
  HybridProblem p;
  p.grid = Grid{41, 33, 11, 1.0 / 40};
  p.dt = 0.01;
  p.hybrid.t_max = 1.5;
  RunOptions o;
  o.backend = GetParam();
  o.seed = 77;
  o.threads = 3;
  const std::vector<Realisation> full = run_hybrid_ensemble(p, 7, o).realisations;
  for (int keep : {0, 1, 3}) {
    const std::vector<Realisation> lean = run_hybrid_ensemble(p, 7, o, keep).realisations;
    ASSERT_EQ(lean.size(), full.size());
    for (std::size_t r = 0; r < full.size(); ++r) {
      const std::string what = "keep " + std::to_string(keep) + " r " + std::to_string(r);
      if (static_cast<int>(r) < keep) {
        test_choices::expect_same(lean[r], full[r], what);
        continue;
      }
      EXPECT_FALSE(full[r].segments.empty()) << what;
      EXPECT_TRUE(lean[r].segments.empty() && lean[r].occupied.empty() && lean[r].branch_points.empty() &&
                  lean[r].anastomosis_points.empty() && lean[r].anastomosis_kinds.empty() &&
                  lean[r].active_tip_nodes.empty())
          << what;
      Realisation stripped = full[r];
      detail::drop_logs(stripped);
      test_choices::expect_same(lean[r], stripped, what);
    }
  }
}

// The 2D A&C case with chemotaxis only and the default capacities (on the GPU: the usual sizes).
TEST_P(AngioHybridBackend, TwoDimensionalCaseEqualsReference) {
  HybridProblem p;
  p.grid = Grid{201, 201, 1, 0.005};
  p.model.haptotaxis = 0;
  p.dt = 0.01;
  const std::vector<Realisation> got = ensemble(p, 7, 12);
  for (std::size_t r = 0; r < got.size(); ++r) {
    test_choices::expect_same(got[r], run_hybrid_reference(p, 7 + r), "r " + std::to_string(r));
  }
}

// With uptake (eta > 0) TAF falls where the tips have been, and every backend equals the reference
// with D_c > 0 as it does without, realisation 0's final c field included.
TEST_P(AngioHybridBackend, TafDiffusionWithUptakeEqualsReference) {
  HybridProblem p = small_problem();
  p.model.taf_diffusion = 0.005;
  p.model.haptotaxis = 0;
  p.hybrid.t_max = 0.6;
  const std::vector<Realisation> got = ensemble(p, 5, 4);
  for (int r = 0; r < 4; ++r) {
    const Realisation ref = run_hybrid_reference(p, 5 + static_cast<std::uint64_t>(r));
    EXPECT_EQ(got[static_cast<std::size_t>(r)].segments.size(), ref.segments.size());
    EXPECT_EQ(got[static_cast<std::size_t>(r)].occupied, ref.occupied);
    // An ensemble keeps realisation 0's final c field only (nodes x 8 bytes each).
    if (r == 0) {
      EXPECT_EQ(got[0].final_c, ref.final_c);
    } else {
      EXPECT_TRUE(got[static_cast<std::size_t>(r)].final_c.empty());
    }
  }
  // Uptake: c is lower at the occupied nodes than the same run without tips would give there.
  const Realisation& r = got.front();
  ASSERT_FALSE(r.final_c.empty());
  HybridProblem no_uptake = p;
  no_uptake.model.taf_uptake = 0;
  const Realisation free_c = run_hybrid_reference(no_uptake, 5);
  std::size_t lower = 0;
  for (const std::int64_t node : r.occupied)
    lower += r.final_c[static_cast<std::size_t>(node)] < free_c.final_c[static_cast<std::size_t>(node)] ? 1 : 0;
  EXPECT_EQ(lower, r.occupied.size());
}

std::string backend_name(const testing::TestParamInfo<Backend>& info) { return std::string(to_string(info.param)); }
INSTANTIATE_TEST_SUITE_P(, AngioHybridBackend, testing::Values(Backend::Cpu, Backend::Cuda), backend_name);

// The end-of-run fields of a realisation: n = 1 exactly on the vessel and the occupied nodes,
// f and c untouched elsewhere, and at an initial sprout's node (occupied at step 0) the closed
// forms after `steps` updates.
TEST(AngioHybrid, EndFieldsMarkTheNetwork) {
  HybridProblem p = small_problem(9);
  p.grid = Grid{41, 31, 9, 1.0 / 40};
  p.dt = 0.002;
  p.hybrid.t_max = 0.5;
  const Realisation r = run_hybrid_reference(p, 9);
  const Fields<double> u = hybrid_fields(p, r);
  const Fields<double> u0 = initial_fields<double>(p.grid, p.initial);
  const std::vector<std::int64_t> vessel = parent_vessel(p.grid);
  std::set<std::int64_t> network(vessel.begin(), vessel.end());
  network.insert(r.occupied.begin(), r.occupied.end());
  for (std::size_t k = 0; k < u.n.size(); ++k) {
    const bool on = network.count(static_cast<std::int64_t>(k)) > 0;
    ASSERT_EQ(u.n[k], on ? 1.0 : 0.0) << k;
    if (!on) {
      ASSERT_EQ(u.f[k], u0.f[k]);
      ASSERT_EQ(u.c[k], u0.c[k]);
    }
  }
  const std::int64_t sprout = r.segments.front().to;  // an initial sprout, occupied at step 0
  const auto s = static_cast<std::size_t>(sprout);
  EXPECT_EQ(u.c[s], occupied_c(u0.c[s], p.dt, p.model.taf_uptake, r.steps));
  EXPECT_EQ(u.f[s], occupied_f(u0.f[s], p.dt, p.model.fn_production, p.model.fn_uptake, r.steps));
  EXPECT_LT(u.c[s], u0.c[s]);
}

// Backend auto runs the machine's fast backend (cuda when usable, else cpu), never the serial
// reference in its place, and says which one ran; its realisations are the reference's.
TEST(HybridEnsemble, AutoResolvesToAFastBackendAndMatchesReference) {
  HybridProblem p = small_problem();
  RunOptions options;
  options.backend = Backend::Auto;
  options.seed = 11;
  options.threads = 2;
  const HybridEnsemble automatic = run_hybrid_ensemble(p, 3, options);
  EXPECT_EQ(automatic.backend, resolve_backend(Backend::Auto, 0));
  EXPECT_NE(automatic.backend, Backend::Reference);
  EXPECT_FALSE(automatic.device.empty());
  options.backend = Backend::Reference;
  const HybridEnsemble reference = run_hybrid_ensemble(p, 3, options);
  EXPECT_EQ(reference.backend, Backend::Reference);
  ASSERT_EQ(automatic.realisations.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(automatic.realisations[r].seed, 11 + r);
    EXPECT_EQ(automatic.realisations[r].segments.size(), reference.realisations[r].segments.size()) << r;
    EXPECT_EQ(automatic.realisations[r].occupied, reference.realisations[r].occupied) << r;
  }
}

// The hybrid model's step (a library rule, the CLI only passes --dt and --force): 0.9 x the
// diffusion limit or 100 steps to t_max, two significant digits rounded down; a given k above
// the limit needs force; without diffusion a k must be given.
TEST(HybridStep, AutomaticGivenAndRefused) {
  EXPECT_DOUBLE_EQ(round_step_down(0.000153563), 1.5e-4);
  EXPECT_DOUBLE_EQ(round_step_down(0.0099), 9.9e-3);
  EXPECT_DOUBLE_EQ(round_step_down(1.0), 1.0);
  EXPECT_DOUBLE_EQ(round_step_down(123.4), 120.0);
  HybridProblem p = small_problem();
  const double limit = hybrid_step_limit(p);
  EXPECT_DOUBLE_EQ(limit, p.grid.h * p.grid.h / (2 * 2 * std::max(p.model.diffusion, p.model.taf_diffusion)));
  choose_hybrid_step(p, std::nullopt, false);
  EXPECT_DOUBLE_EQ(p.dt, round_step_down(std::min(0.9 * limit, p.hybrid.t_max / 100)));
  EXPECT_LE(p.dt, 0.9 * limit);
  try {
    choose_hybrid_step(p, 2 * limit, false);
    ADD_FAILURE() << "accepted a step above the limit";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "dt");
    EXPECT_NE(std::string(e.what()).find("`force`"), std::string::npos) << e.what();
  }
  choose_hybrid_step(p, 2 * limit, true);
  EXPECT_EQ(p.dt, 2 * limit);
  p.model.diffusion = p.model.taf_diffusion = 0;
  try {
    choose_hybrid_step(p, std::nullopt, false);
    ADD_FAILURE() << "no step without diffusion";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "dt");
  }
  choose_hybrid_step(p, 0.01, false);
  EXPECT_EQ(p.dt, 0.01);
}

// The vessel length counts each undirected lattice edge once (the rebuild every backend shares):
// against a brute-force set of the edges born up to each step, on random logs of a tiny grid,
// so that edges repeat often, in both directions and across steps.
TEST(AngioHybrid, VesselLengthCountsEachEdgeOnce) {
  HybridProblem p;
  p.grid = Grid{7, 6, 5, 0.1};
  p.dt = 0.01;
  std::mt19937_64 rng(simkit::test::test_seed(3));
  const std::int64_t steps = 50;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = static_cast<int>(rng() % 400);
    std::vector<Segment> log;
    for (int e = 0; e < n; ++e) {
      const auto from = static_cast<std::int64_t>(rng() % p.grid.nodes());
      const auto to = static_cast<std::int64_t>(rng() % p.grid.nodes());
      log.emplace_back(from, to, static_cast<int>(e * steps / std::max(n, 1)), 1, e % 5, SegmentKind::Move);
    }
    const std::vector<Segment> copy = log;
    const Realisation r = detail::realisation_from_log(p, 1, steps, 0, 0, std::move(log), {});
    ASSERT_EQ(r.metrics.size(), static_cast<std::size_t>(steps + 1));
    std::set<std::pair<std::int64_t, std::int64_t>> edges;
    std::size_t e = 0;
    for (std::int64_t s = 0; s <= steps; ++s) {
      for (; e < copy.size() && copy[e].birth_step <= s; ++e)
        edges.insert({std::min(copy[e].from, copy[e].to), std::max(copy[e].from, copy[e].to)});
      ASSERT_EQ(r.metrics[static_cast<std::size_t>(s)].length, static_cast<double>(edges.size()) * p.grid.h)
          << "trial " << trial << " step " << s;
    }
  }
}

}  // namespace
}  // namespace simkit::angio

