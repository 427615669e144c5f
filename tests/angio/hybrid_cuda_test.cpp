// The hybrid model's cuda ensemble against the reference through its device path with tiny
// starting capacities (realisations overflow and are run again; GPU; skipped without a usable
// device). Both evaluate the same double-precision formulas in the same order (--fmad=false) with
// the same Philox draws, so every realisation must be identical: segments, metrics, branch and
// anastomosis points, active tips, counters. The public entry point on every backend:
// AngioHybridBackend in hybrid_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "angio/hybrid/cuda.hpp"
#include "angio/hybrid/detail.hpp"
#include "hybrid_choices.hpp"
#include "simkit/angio/hybrid.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

using test_choices::expect_same;
using test_choices::randomise_rules;

// Every realisation of `gpu` (seeds seed, seed + 1, ...) equals the reference's, without its logs
// from keep_logs on.
void expect_reference(const HybridProblem& p, std::uint64_t seed, int replicates, int keep_logs,
                      const std::vector<Realisation>& gpu) {
  ASSERT_EQ(gpu.size(), static_cast<std::size_t>(replicates));
  for (std::size_t r = 0; r < gpu.size(); ++r) {
    Realisation ref = run_hybrid_reference(p, seed + r);
    if (static_cast<int>(r) >= keep_logs) detail::drop_logs(ref);
    expect_same(gpu[r], ref, "r " + std::to_string(r));
  }
}

// Random problems: 2D and 3D grids, random taxis and branching parameters, the linear and the
// tumour TAF source, chemotaxis-dominated and A&C cases; the ensemble runs with deliberately tiny
// starting capacities, so that most realisations overflow and are run again (the result must not
// depend on it).
TEST(AngioHybridCuda, EnsembleEqualsReferenceBitwise) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(20261122);
  int overflowing = 0, retraced = 0, passing = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const HybridProblem p = test_choices::random_problem(gen, trial, 1.0, 400);
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(trial) * 77;
    const int replicates = 24;
    // Odd trials download every realisation's log on its own (the pageable path), even ones in
    // packed chunks (the page-locked slots); half the trials run the batch in parts of 5
    // realisations (five launches on two streams, each part downloaded while the next ones run),
    // the others in one part; the host rebuild runs on the caller's thread count (trial % 3 == 0),
    // one thread or two (--threads).
    // Realisations from keep_logs on keep no log: they come down as per-step rows summarised on the
    // GPU (the ensemble kernel's per-step rows) and must equal the reference's with its logs dropped; keep_logs -1
    // (every log down), 0 (every realisation summarised) or 5 (chunks of both kinds), with either
    // download path.
    // With rows and parts of 5, the summarised parts take turns in two scratch slots of 5
    // realisations (after the kept ones'), so that a realisation's hash table holds an earlier
    // one's keys of an older epoch, which must read as empty; every fourth trial's epochs wrap after
    // 2 launches, so that a slot would meet its own epoch again (keys taken for current ones) if
    // the tables were not cleared then.
    const int part = trial % 4 < 2 ? 5 : 0;
    const detail::hybrid_cuda::Capacity capacity{8, 4, trial % 2 == 1, part, trial % 4 == 1 ? 2 : 0};
    const int keep_logs = std::array{-1, 0, 5}[static_cast<std::size_t>(trial / 2 % 3)];
    detail::hybrid_cuda::Timing timing;
    const std::vector<Realisation> gpu =
        detail::hybrid_cuda::run(p, seed, replicates, 0, {}, capacity, &timing, {}, trial % 3, keep_logs);
    ASSERT_EQ(gpu.size(), static_cast<std::size_t>(replicates));
    EXPECT_EQ(timing.summarised, keep_logs < 0 ? 0 : replicates - keep_logs);
    if (timing.summarised > 0 && part > 0) {
      EXPECT_EQ(timing.scratch_rows, std::max(keep_logs, 0) + 2 * part) << "trial " << trial;
    } else {
      EXPECT_EQ(timing.scratch_rows, replicates) << "trial " << trial;
    }
    if (trial % 4 == 1) {
      EXPECT_GE(timing.key_clears, 1) << "trial " << trial;
    }
    std::int64_t segments = 0;
    for (int r = 0; r < replicates; ++r) {
      Realisation ref = run_hybrid_reference(p, seed + static_cast<std::uint64_t>(r));
      segments += static_cast<std::int64_t>(ref.segments.size());
      if (keep_logs >= 0 && r >= keep_logs) {
        // (a retraced edge: fewer distinct edges than segments; the summary's edge table decides it)
        const auto edges = std::llround(ref.metrics.back().length / p.grid.h);
        retraced += edges < static_cast<std::int64_t>(ref.segments.size()) ? 1 : 0;
        passing += ref.passes > 0 ? 1 : 0;
        detail::drop_logs(ref);
      }
      expect_same(gpu[static_cast<std::size_t>(r)], ref, "trial " + std::to_string(trial) + " r " + std::to_string(r));
    }
    overflowing += segments > replicates * 8 ? 1 : 0;
  }
  // Most trials outgrow the starting capacities (some rule choices end every tip early).
  EXPECT_GE(overflowing, 10) << "the capacities were meant to overflow";
  // Summarised realisations that retrace an edge (a pass or an anastomosis along an existing one)
  // and that pass over occupied nodes.
  EXPECT_GE(retraced, 10);
  EXPECT_GE(passing, 10);
}

// A run with more steps than a realisation's log may hold (here 2^15 to t_max, against 2^14 log
// entries) keeps no rows: its realisations past keep_logs bring their logs down and drop them,
// equal to the reference's all the same.
TEST(AngioHybridCuda, LongRunsWithoutRowsStillDropTheLogs) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(5);
  HybridProblem p = test_choices::random_problem(gen, 0, 1.0, 1 << 15);
  const int replicates = 6;
  detail::hybrid_cuda::Timing timing;
  const std::vector<Realisation> gpu = detail::hybrid_cuda::run(p, 77, replicates, 0, {}, {}, &timing, {}, 0, 1);
  EXPECT_EQ(timing.summarised, 0);
  expect_reference(p, 77, replicates, 1, gpu);
}

// Batches of 5 realisations (a test knob), realisations 0..6 keeping their logs: the kept ones
// span the first two batches (5, then 2 beside 3 summarised ones), and every later batch's
// summarised parts of 2 take turns in the same two scratch slots after the kept ones' 7 rows,
// which still hold the earlier batches' keys (older epochs). Bitwise the reference's.
TEST(AngioHybridCuda, SharedScratchAcrossBatches) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(13);
  const HybridProblem p = test_choices::random_problem(gen, 3, 1.0, 300);
  const int replicates = 24, keep_logs = 7;
  detail::hybrid_cuda::Capacity capacity;
  capacity.part = 2;
  capacity.batch = 5;
  detail::hybrid_cuda::Timing timing;
  const std::vector<Realisation> gpu =
      detail::hybrid_cuda::run(p, 9, replicates, 0, {}, capacity, &timing, {}, 0, keep_logs);
  EXPECT_EQ(timing.summarised, replicates - keep_logs);
  EXPECT_EQ(timing.scratch_rows, keep_logs + 2 * capacity.part);
  expect_reference(p, 9, replicates, keep_logs, gpu);
}

// Page-locked host memory that cannot be had (a chunk slot of 2^40 log entries, 32 TiB, which
// cudaMallocHost refuses): every chunk comes down into pageable memory instead, no slot is made,
// and the realisations are the reference's all the same (logs and rows, several chunks of each).
TEST(AngioHybridCuda, NoPageLockedMemoryFallsBackToPageable) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(11);
  const HybridProblem p = test_choices::random_problem(gen, 1, 1.0, 300);
  const int replicates = 30;
  detail::hybrid_cuda::Capacity capacity;
  capacity.part = 4;
  capacity.pinned_entries = std::size_t{1} << 40;
  detail::hybrid_cuda::Timing timing;
  const std::vector<Realisation> gpu = detail::hybrid_cuda::run(p, 5, replicates, 0, {}, capacity, &timing, {}, 0, 6);
  EXPECT_EQ(timing.slots, 0);
  EXPECT_GE(timing.chunks, 2);  // (the kept logs, then the rows part by part)
  EXPECT_EQ(timing.summarised, replicates - 6);
  expect_reference(p, 5, replicates, 6, gpu);
}

// D_c > 0: every realisation carries its own c field on the GPU (one step per launch and a stencil
// kernel between launches); realisations and realisation 0's final c field equal the reference's
// bit for bit (the same diffused_c, --fmad=false). 2D and 3D, with uptake, tiny capacities; odd
// widths (the cp.async stencil) and even ones (on Hopper the TMA-staged stencil: one x tile, three).
TEST(AngioHybridCuda, TafDiffusionEqualsReferenceBitwise) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 8; ++trial) {
    const int nz = trial % 2 == 0 ? 1 : 11;
    const int nx = trial < 4 ? 41 : (trial < 6 ? 42 : 70);
    HybridProblem p;
    p.grid = Grid{nx, 33, nz, 1.0 / (nx - 1)};
    p.model.taf_diffusion = 0.002;
    p.model.haptotaxis = 0.1;
    p.initial.taf = InitialTaf::Tumour;
    p.dt = 0.9 * p.grid.h * p.grid.h / (2 * p.grid.dims() * p.model.taf_diffusion);
    p.hybrid.t_max = 300 * p.dt;
    p.hybrid.psi = 30 * p.dt;
    if (trial % 4 >= 2) {
      randomise_rules(p, gen);
      p.hybrid.uptake = Uptake::Tip;  // the stencil's n from the tips' positions
    }
    const int replicates = 12;
    // Trials 1 and 5 keep realisation 0's log only (the others summarised on the GPU), 3 and 7
    // none (realisation 0 summarised too, its final c still down); even trials every log.
    const int keep_logs = trial % 2 == 0 ? -1 : (trial % 4 == 1 ? 1 : 0);
    const std::vector<Realisation> gpu =
        detail::hybrid_cuda::run(p, 31, replicates, 0, {}, {16, 4}, nullptr, {}, 0, keep_logs);
    for (int r = 0; r < replicates; ++r) {
      Realisation ref = run_hybrid_reference(p, 31 + static_cast<std::uint64_t>(r));
      if (keep_logs >= 0 && r >= keep_logs) detail::drop_logs(ref);
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
