// angio's cuda kernel variants against the reference (the default kernels through make_solver are
// in solver_test.cpp's AngioSolverBackend/cuda): random grids (3D, 2D, sizes that are not multiples
// of the 32x8 tile), random smooth fields, both forms, fp32 and fp64, the kernel variants (plane
// chunks, tiles, two steps per pass, the staged kernel, the TMA-staged kernel, register caps, the flux form's z-face
// carry, the naive kernel). Every node runs the same update_node with the same operand order and --fmad=false, so the
// fields must be bitwise equal; the documented bound (docs/angio.md, "Backends and what agrees with what"; fp64:
// max|diff| <= 1e-12 max|field| after 100 steps) is checked as well, so a failure says which promise broke. Skips, with
// the reason, when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "angio/continuous/cuda_tuning.hpp"
#include "fields.hpp"
#include "simkit/angio/angio.hpp"
#include "simkit/core/cuda_info.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

// Smooth positive fields (test_fields::cosine_fields) with the A&C scales (c, f of order 1, n a
// localised bump) so that taxis is strong but the stability check passes.
template <class T>
Fields<T> random_fields(const Grid& g, std::mt19937_64& rng) {
  return test_fields::cosine_fields<T>(g, rng);
}

// Whether device 0 has the Tensor Memory Accelerator (Hopper, sm_90), which the TMA kernels need.
bool has_tma() {
  const CudaStatus status = cuda_status();
  return !status.devices.empty() && status.devices[0].compute_major >= 9;
}

template <class T>
double max_abs(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

// The reference and the cuda backend (with `tuning`) from the same random fields, `steps` steps
// each (the last a series step): their reductions and fields.
template <class T>
struct BothRuns {
  std::unique_ptr<Solver<T>> gpu;
  Reductions r_ref, r_gpu;
  Fields<T> a, b;  // reference, cuda
};
template <class T>
BothRuns<T> run_both(const Grid& g, Form form, int steps, std::uint64_t seed, const detail::cuda::Tuning& tuning,
                     double taf_diffusion) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.grid = g;
  p.form = form;
  // D large enough that the mesh Peclet number stays below 2 on these coarse random grids: with
  // A&C's D the expanded form has negative weights there and grows without bound (NaN), which
  // would make the comparison vacuous.
  p.model.diffusion = 0.02;
  p.model.taf_diffusion = taf_diffusion;
  p.precision = std::is_same_v<T, float> ? Precision::Fp32 : Precision::Fp64;
  const Fields<T> initial = random_fields<T>(g, rng);
  p.dt = 0.5 * check_stability(p, initial).largest_stable_k;
  RunOptions options;
  auto reference = make_solver<T>(p, initial, Backend::Reference, options);
  BothRuns<T> runs;
  runs.gpu = detail::cuda::make<T>(p, initial, 0, tuning);
  runs.r_ref = reference->advance(steps, true);
  runs.r_gpu = runs.gpu->advance(steps, true);
  reference->read(runs.a);
  runs.gpu->read(runs.b);
  return runs;
}

template <class T>
void compare_with_reference(const Grid& g, Form form, int steps, std::uint64_t seed, const detail::cuda::Tuning& tuning,
                            double taf_diffusion = 0) {
  const BothRuns<T> runs = run_both<T>(g, form, steps, seed, tuning, taf_diffusion);
  const Fields<T>&a = runs.a, &b = runs.b;
  const Reductions &r_ref = runs.r_ref, &r_gpu = runs.r_gpu;
  const std::vector<T>* fa[3] = {&a.n, &a.f, &a.c};
  const std::vector<T>* fb[3] = {&b.n, &b.f, &b.c};
  const char* names[3] = {"n", "f", "c"};
  for (int q = 0; q < 3; ++q) {
    double worst = 0;
    std::size_t differ = 0;
    for (std::size_t id = 0; id < g.nodes(); ++id) {
      const double d = std::abs(static_cast<double>((*fa[q])[id]) - static_cast<double>((*fb[q])[id]));
      worst = std::max(worst, d);
      differ += std::memcmp(&(*fa[q])[id], &(*fb[q])[id], sizeof(T)) != 0;
    }
    const double scale = max_abs(*fa[q]);
    ASSERT_TRUE(std::isfinite(scale)) << names[q] << " is not finite: the test problem is unstable";
    SCOPED_TRACE(testing::Message() << names[q] << " grid " << g.nx << "x" << g.ny << "x" << g.nz << " form "
                                    << (form == Form::Flux ? "flux" : "expanded") << " chunk " << tuning.chunk
                                    << (tuning.naive ? " naive" : "") << (tuning.pair ? " pair" : "")
                                    << (tuning.staged > 0 ? " staged " : "") << tuning.staged << " tma " << tuning.tma
                                    << " blocks " << tuning.blocks << (tuning.tma_pair ? " tma pair" : "")
                                    << (tuning.tma_wide ? " wide" : "") << " rows " << tuning.tma_rows << " width "
                                    << tuning.tma_width << " tma chunk " << tuning.tma_chunk
                                    << (tuning.tma_release ? " release" : "") << " pair rows " << tuning.tma_pair_rows
                                    << " chain " << tuning.chain << " steps " << steps << " seed " << seed);
    if (std::is_same_v<T, double>) {
      EXPECT_LE(worst, 1e-12 * scale);  // the documented bound
    }
    EXPECT_EQ(differ, 0u) << "max|diff| = " << worst << " of max " << scale;
    // Extrema are order-independent: exact. Integrals are double sums in another order: the
    // difference is bounded by nodes * eps(double) * sum|x|, far below 1e-11 relative here.
    EXPECT_EQ(r_ref.min[q], r_gpu.min[q]);
    EXPECT_EQ(r_ref.max[q], r_gpu.max[q]);
    EXPECT_NEAR(r_ref.integral[q], r_gpu.integral[q], 1e-11 * std::abs(r_ref.integral[q]));
  }
  // reduce() (a separate pass) agrees with the fused reduction of the same state.
  const Reductions again = runs.gpu->reduce();
  for (int q = 0; q < 3; ++q) {
    EXPECT_EQ(again.min[q], r_gpu.min[q]);
    EXPECT_EQ(again.max[q], r_gpu.max[q]);
    EXPECT_NEAR(again.integral[q], r_gpu.integral[q], 1e-12 * std::abs(r_gpu.integral[q]));
  }
}

TEST(AngioCuda, EqualsReferenceBitwiseOnRandomGrids) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = simkit::test::test_seed(4242);
  std::printf("AngioCuda seed: %llu (set SIMKIT_TEST_SEED to repeat)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> side(2, 70), depth(1, 19);
  for (int trial = 0; trial < 6; ++trial) {
    Grid g{side(rng), side(rng), trial % 3 == 0 ? 1 : depth(rng), 0};
    g.h = 1.0 / (g.nx - 1);
    const Form form = trial % 2 == 0 ? Form::Expanded : Form::Flux;
    detail::cuda::Tuning tuning;
    tuning.chunk = trial % 2 == 0 ? 0 : 4;
    const std::uint64_t s = rng();
    compare_with_reference<double>(g, form, 100, s, tuning);
    compare_with_reference<float>(g, form, 100, s, tuning);
    // Two steps per pass, with an odd step count (the last step single) and an even one.
    tuning.pair = true;
    tuning.chunk = trial % 2 == 0 ? 0 : 3;
    compare_with_reference<double>(g, form, 101, s, tuning);
    compare_with_reference<float>(g, form, 100, s, tuning);
    // The staged kernel.
    tuning.pair = false;
    tuning.staged = trial % 3 == 1 ? 1 : 2;
    tuning.chunk = trial % 2 == 0 ? 0 : 5;
    compare_with_reference<double>(g, form, 101, s, tuning);
    compare_with_reference<float>(g, form, 100, s, tuning);
    // The TMA-staged kernel (rows that are not a multiple of 16 bytes take the others).
    tuning.staged = 0;
    tuning.tma = 1 + trial % 2;
    tuning.tma_wide = trial % 4 >= 2;
    tuning.tma_rows = (1 + trial % 3 / 2) * (tuning.tma_wide ? 2 : 1);
    tuning.tma_release = trial % 2 == 0;
    compare_with_reference<double>(g, form, 101, s, tuning);
    compare_with_reference<float>(g, form, 100, s, tuning);
  }
}

// The TMA-staged kernel on widths of whole 16-byte rows: a tile wider than the grid, exactly one
// tile, a tile and a bit (the box past the grid's end), 3D and 2D, both forms, chunks from one
// plane to whole columns (and the chunk rule), 1 or 2 planes ahead, the tiles (32 or 64 wide, 1 to
// 4 rows a thread; 80 x 8 in 10 warps, whose warps straddle rows), slots handed back by barrier or by mbarrier,
// TAF diffusion on. In the flux form the last tiles have warps past the stand-in column (72 and 132 wide on 64-wide
// tiles) or row (19 rows on 16-row tiles; 88 x 13 and 88 x 18 on 80 x 8 tiles, the latter with a straddling warp split
// by the y edge), which skip their work.
TEST(AngioCuda, TmaKernelAgrees) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const Grid grids[] = {{4, 9, 7, 1.0 / 3},    {32, 8, 5, 1.0 / 31},  {36, 19, 23, 1.0 / 35}, {132, 37, 1, 1.0 / 131},
                        {72, 13, 9, 1.0 / 71}, {88, 13, 9, 1.0 / 87}, {80, 16, 6, 1.0 / 79},  {88, 18, 9, 1.0 / 87}};
  for (const Grid& g : grids) {
    for (int shape = 0; shape < 5; ++shape)
      for (int chunk : {0, 1, 3, 5}) {
        detail::cuda::Tuning tma;
        tma.tma = 1 + chunk % 2;
        tma.tma_wide = shape == 2 || shape == 3;  // 32 x 8, 32 x 16, 64 x 8, 64 x 16
        tma.tma_rows = (shape % 2 + 1) * (tma.tma_wide ? 2 : 1);
        // 4: 80 x 8 in blocks of 10 warps, whose warps straddle rows
        if (shape == 4) tma.tma_width = 80;
        tma.tma_release = (chunk + shape) % 2 == 1;
        tma.chain = (chunk + shape) % 3;  // consecutive launches: stream order, griddepcontrol.wait, flags
        tma.chunk = chunk;
        tma.tma_chunk = chunk;  // (0: the solver's rule)
        compare_with_reference<float>(g, Form::Expanded, 21, 80 + chunk, tma);
        compare_with_reference<float>(g, Form::Flux, 20, 81 + chunk, tma, 0.002);
        compare_with_reference<double>(g, Form::Expanded, 20, 82 + chunk, tma, 0.002);
        compare_with_reference<double>(g, Form::Flux, 21, 83 + chunk, tma);
        tma.carry = false;
        compare_with_reference<float>(g, Form::Flux, 20, 84 + chunk, tma);
      }
  }
}

// The single-step TMA kernel's chunk rule (host arithmetic, no device): the cases measured on the
// H200 at 400 x 400 x 140 (fp32 80 x 8 tiles: 250 tiles, 396 blocks at once; fp64 32 x 16: 325
// tiles, 264 at once; fp64 80 x 8: 250 tiles, 264 at once), the clamps, and a requested chunk.
TEST(AngioCudaTuning, TmaChunkRule) {
  using detail::cuda::tma_chunk;
  EXPECT_EQ(tma_chunk(0, 250, 396, 140, false), 18);     // 8 chunks, 5.05 waves
  EXPECT_EQ(tma_chunk(0, 325, 264, 140, false), 35);     // 4 chunks, 4.9 waves
  EXPECT_EQ(tma_chunk(0, 250, 396, 140, true), 47);      // 3 chunks, 1.9 waves
  EXPECT_EQ(tma_chunk(0, 250, 264, 140, true), 47);      // 2 chunks by waves, 3 by the 48-plane bound
  EXPECT_EQ(tma_chunk(0, 20, 396, 400, true), 14);       // many waves: at least 14 planes
  EXPECT_EQ(tma_chunk(0, 20, 396, 9, false), 9);         // a thin slab: all of its planes
  EXPECT_EQ(tma_chunk(0, 10000, 264, 140, false), 140);  // more tiles than five waves: whole columns
  EXPECT_EQ(tma_chunk(0, 10000, 264, 140, true), 47);    // chained: still at most 48 planes
  EXPECT_EQ(tma_chunk(0, 0, 0, 0, true), 1);             // no planes: never a chunk of 0
  EXPECT_EQ(tma_chunk(5, 250, 396, 140, true), 5);       // requested
  EXPECT_EQ(tma_chunk(500, 250, 396, 140, false), 140);  // requested, at most the planes
}

// Chained launches of the single-step TMA kernel (Tuning::chain 2: a block waits only for the
// blocks of the launch before whose boxes meet its own, through flags): about 40 steps (the last a
// series step), on grids of less than one wave of blocks, where each launch's blocks start as soon
// as every block of the one before has (UnorderedChainedLaunchesDiffer shows that they overlap), and
// on a grid of three waves (400 x 40 x 48 in one-plane chunks: 1200 blocks of 80 x 8), with chunks
// of one plane up to the rule's, every tile, both forms and precisions. A dependency missed (a block
// that read a plane of the launch before too early, or overwrote one a block of it still reads)
// shows as bits that differ from the reference's.
TEST(AngioCuda, ChainedTmaLaunchesAgree) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const Grid grids[] = {
      {96, 40, 20, 1.0 / 95}, {88, 18, 9, 1.0 / 87}, {160, 24, 12, 1.0 / 159}, {400, 40, 48, 1.0 / 399}};
  int trial = 0;
  for (const Grid& g : grids) {
    const bool many = g.nx == 400;
    for (int shape = many ? 1 : 0; shape < 5; shape += many ? 3 : 1)  // (many waves: 32 x 16 and 80 x 8)
      for (int chunk : {1, 3, 0}) {
        if (many && chunk == 3) continue;
        detail::cuda::Tuning tma;
        tma.tma = 1 + trial % 2;
        tma.tma_wide = shape == 2 || shape == 3;
        tma.tma_rows = (shape % 2 + 1) * (tma.tma_wide ? 2 : 1);
        if (shape == 4) tma.tma_width = 80;
        tma.tma_release = trial % 4 >= 2;
        tma.chain = 2;
        tma.chunk = chunk;
        tma.tma_chunk = chunk;
        const std::uint64_t seed = 300 + trial++;
        compare_with_reference<float>(g, Form::Flux, 41, seed, tma);
        compare_with_reference<float>(g, Form::Expanded, 40, seed, tma, 0.002);
        compare_with_reference<double>(g, Form::Flux, 40, seed, tma, 0.002);
        if (chunk == 1) compare_with_reference<double>(g, Form::Expanded, 41, seed, tma);
      }
  }
}

// The control for the test above: launches chained with no ordering at all (Tuning::chain 3, tests
// only) give fields that differ from the reference's, so chained launches do overlap here and a
// missed dependency would show. (If the driver ran them one after another, the fields would agree
// and this test would fail: then ChainedTmaLaunchesAgree would test nothing.)
TEST(AngioCuda, UnorderedChainedLaunchesDiffer) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  if (!has_tma()) GTEST_SKIP() << "no TMA kernels on this GPU";
  detail::cuda::Tuning tma;
  tma.tma = 2;
  tma.tma_rows = 2;
  tma.tma_width = 80;
  tma.tma_chunk = 1;
  tma.chain = 3;
  const BothRuns<float> runs = run_both<float>(Grid{96, 40, 20, 1.0 / 95}, Form::Flux, 40, 97, tma, 0);
  ASSERT_TRUE(detail::cuda::takes_tma_kernels(*runs.gpu));
  std::size_t differ = 0;
  for (std::size_t id = 0; id < runs.a.n.size(); ++id)
    differ += std::memcmp(&runs.a.n[id], &runs.b.n[id], sizeof(float)) != 0;
  EXPECT_GT(differ, 0u) << "39 launches chained with no ordering gave the reference's bits: they did not overlap";
}

// Two steps per pass through TMA (expanded form; the flux form's run takes single steps): grids a
// tile exactly, less than a tile, and a few tiles and a bit wide and tall (the 2D one takes single
// steps), the three tiles (32 x 8, 64 x 8, 32 x 16), chunks from one plane to whole columns, an odd
// step count (the last step single) and an even one (the pair that would end on the series row
// runs as two single steps), TAF diffusion on.
TEST(AngioCuda, TmaPairKernelAgrees) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const Grid grids[] = {{4, 9, 7, 1.0 / 3},      {32, 8, 5, 1.0 / 31},  {36, 19, 23, 1.0 / 35}, {132, 37, 3, 1.0 / 131},
                        {68, 17, 1, 1.0 / 67},   {64, 32, 9, 1.0 / 63}, {40, 33, 12, 1.0 / 39}};
  for (const Grid& g : grids) {
    for (int chunk : {0, 1, 3, 5, 2}) {
      detail::cuda::Tuning tma;
      tma.tma = 1;
      tma.tma_rows = 2;
      tma.tma_pair = true;
      tma.tma_wide = chunk % 2 == 1;
      tma.tma_pair_rows = chunk % 3 == 2 ? 16 : 8;  // 32 x 8 (chunk 0), 64 x 8 (1, 3), 32 x 16 (2, and 5: rows first)
      tma.chunk = chunk;
      compare_with_reference<float>(g, Form::Expanded, 21, 90 + chunk, tma);
      compare_with_reference<float>(g, Form::Expanded, 20, 91 + chunk, tma, 0.002);
      compare_with_reference<double>(g, Form::Expanded, 21, 92 + chunk, tma, 0.002);
      compare_with_reference<double>(g, Form::Expanded, 20, 93 + chunk, tma);
      tma.staged = 2;  // as the fp64 defaults: single steps with reductions by the staged kernel
      compare_with_reference<double>(g, Form::Expanded, 21, 96 + chunk, tma);
      tma.staged = 0;
      tma.chunk = chunk + 1;  // the flux form takes the one-step TMA kernel
      tma.tma_chunk = chunk + 1;
      compare_with_reference<float>(g, Form::Flux, 21, 94 + chunk, tma, 0.002);
    }
  }
}

TEST(AngioCuda, KernelVariantsAgree) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const Grid g{67, 45, 23, 1.0 / 66};
  for (int chunk : {0, 1, 5, 8, 64}) {
    detail::cuda::Tuning tuning;
    tuning.chunk = chunk;
    compare_with_reference<float>(g, Form::Expanded, 20, 7, tuning);
  }
  // The flux form's z-face carry: chunks of one plane (never carried), short and whole columns,
  // and the carry off; registers for 3 blocks a SM.
  for (int chunk : {0, 1, 5}) {
    detail::cuda::Tuning tuning;
    tuning.chunk = chunk;
    compare_with_reference<float>(g, Form::Flux, 20, 31, tuning);
    compare_with_reference<double>(g, Form::Flux, 20, 32, tuning);
    tuning.carry = false;
    compare_with_reference<float>(g, Form::Flux, 20, 33, tuning);
    detail::cuda::Tuning three;
    three.chunk = chunk;
    three.blocks = 3;
    compare_with_reference<double>(g, Form::Flux, 20, 36, three);
    compare_with_reference<double>(g, Form::Expanded, 20, 37, three);
  }
  for (int tile : {64, 128, 256}) {
    detail::cuda::Tuning wide;
    wide.tile_x = tile;
    compare_with_reference<float>(g, Form::Expanded, 20, 13, wide);
  }
  for (int chunk : {0, 1, 2, 7}) {
    detail::cuda::Tuning pair;
    pair.pair = true;
    pair.chunk = chunk;
    compare_with_reference<float>(g, Form::Expanded, 20, 21, pair);
    compare_with_reference<double>(g, Form::Flux, 21, 22, pair);
  }
  // The staged kernel: planes in flight, register caps, chunks of one plane up to whole columns.
  for (int chunk : {0, 1, 3}) {
    for (int ahead : {1, 2, 3, 4}) {
      detail::cuda::Tuning st;
      st.staged = ahead;
      st.chunk = chunk;
      st.blocks = ahead == 2 ? 6 : (ahead == 3 ? 4 : 0);
      compare_with_reference<float>(g, Form::Expanded, 20, 50, st);
      compare_with_reference<float>(g, Form::Flux, 21, 51, st);
      compare_with_reference<double>(g, Form::Expanded, 21, 52, st);
      compare_with_reference<double>(g, Form::Flux, 20, 53, st);
    }
  }
  for (int blocks : {4, 6}) {  // registers allowing other numbers of blocks per SM (6 spills a little)
    detail::cuda::Tuning capped;
    capped.blocks = blocks;
    compare_with_reference<float>(g, Form::Expanded, 20, 25, capped);
    compare_with_reference<float>(g, Form::Flux, 20, 26, capped);
    compare_with_reference<double>(g, Form::Expanded, 20, 29, capped);
  }
  detail::cuda::Tuning pair3;
  pair3.pair = true;
  pair3.blocks = 3;
  compare_with_reference<double>(g, Form::Expanded, 21, 27, pair3);
  compare_with_reference<double>(g, Form::Flux, 20, 28, pair3);
  detail::cuda::Tuning naive;
  naive.naive = true;
  compare_with_reference<double>(g, Form::Flux, 20, 8, naive);
  compare_with_reference<float>(g, Form::Expanded, 20, 9, naive);
}

// (The default kernels, through make_solver, on random grids: AngioSolverBackend/cuda in
// solver_test.cpp.)

TEST(AngioCuda, AndersonChaplainInitialStateStaysBitwiseEqual) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  // The real initial conditions (sharp n front, eps3 = 0.001) on a 3D grid, both TAF profiles.
  for (InitialTaf taf : {InitialTaf::Linear, InitialTaf::Tumour}) {
    Problem p;
    p.grid = Grid{81, 81, 33, 1.0 / 80};
    p.initial.taf = taf;
    p.precision = Precision::Fp32;
    const Fields<float> initial = initial_fields<float>(p.grid, p.initial);
    p.dt = 0.9 * check_stability(p, initial).largest_stable_k;
    RunOptions options;
    auto reference = make_solver<float>(p, initial, Backend::Reference, options);
    auto gpu = make_solver<float>(p, initial, Backend::Cuda, options);
    detail::cuda::Tuning pair;
    pair.pair = true;
    auto paired = detail::cuda::make<float>(p, initial, 0, pair);
    reference->advance(100, false);
    gpu->advance(100, false);
    paired->advance(100, false);
    Fields<float> a, b, d;
    reference->read(a);
    gpu->read(b);
    paired->read(d);
    EXPECT_TRUE(a.n == b.n && a.f == b.f && a.c == b.c);
    EXPECT_TRUE(a.n == d.n && a.f == d.f && a.c == d.c) << "two steps per pass";
  }
}

// The TMA kernels' fp32 division by 1 + alpha c (quotient's fast path, model.hpp: no range check, no
// slow path) gives the same bits as a / b as the other kernels and the host divide (subnormals
// flushed). Its refined reciprocal is the correctly rounded 1/b for every float b in [1, 2) (with
// Markstein's theorem, the quotient is then correctly rounded for every a and b away from overflow
// and underflow); and, directly: for every float b in [1, 2^24) with A&C's chi0, the expanded form's
// 1 and other numerators; for every float b in [2^-60, 2^60) with 1 and 0.38; for 2^32 random pairs
// with exponents in [-60, 60] and either sign. Beyond that range the dropped check matters, which
// the last line shows (a reciprocal below 2^-126 is flushed, the quotient is not), so the
// comparison can fail.
TEST(AngioCuda, QuotientFastPathIsDivision) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  EXPECT_EQ(detail::cuda::reciprocal_mismatches(), 0u);
  for (float a : {1.0f, 0.38f, 0.26f, 2.6f, 0.0f, 1e-3f, 7.5e-7f, 123.456f, 1e6f}) {
    EXPECT_EQ(detail::cuda::quotient_mismatches(a, 1.0f, 0x1p24f), 0u) << "a = " << a;
  }
  for (float a : {1.0f, 0.38f}) EXPECT_EQ(detail::cuda::quotient_mismatches(a, 0x1p-60f, 0x1p60f), 0u) << "a = " << a;
  const std::uint64_t seed = simkit::test::test_seed(977);
  EXPECT_EQ(detail::cuda::random_quotient_mismatches(std::uint64_t{1} << 32, seed), 0u) << "seed " << seed;
  EXPECT_GT(detail::cuda::quotient_mismatches(2.6f, 0x1p126f, 0x1p127f), 1000000u);
}

// The solver takes the TMA kernels (on a GPU that has them) only where that division is exact: not
// for a starting c below 0, above 2^40 / alpha or NaN, nor for chi0 = -0 or above 2^60. Where it
// does not, the classic kernels run: one node's c at 3.3e38 makes 1 + alpha c about 1e38 on its
// faces, where chi0 / (1 + alpha c) is a normal float but the fast path's reciprocal is flushed to
// zero. Bitwise equal to the reference with the check; with Tuning::unchecked_quotient the TMA
// kernel runs anyway and its n differs at that node, so the case does exercise the check.
TEST(AngioCuda, TmaKernelsStepAsideOutsideQuotientRange) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const bool hopper = has_tma();
  std::mt19937_64 rng(5);
  Problem p;
  p.grid = Grid{36, 19, 23, 1.0 / 35};
  p.form = Form::Flux;
  p.model.diffusion = 0.02;
  p.model.chemotaxis = 2.6;
  p.precision = Precision::Fp32;
  const Fields<float> smooth = random_fields<float>(p.grid, rng);
  detail::cuda::Tuning tuning;
  tuning.chunk = 5;
  tuning.tma = 2;
  tuning.tma_rows = 2;
  tuning.tma_wide = true;
  const std::size_t big = p.grid.index(17, 9, 11);
  {
    // Which starts the check admits.
    auto takes = [&](const Problem& problem, const Fields<float>& u) {
      return detail::cuda::takes_tma_kernels(*detail::cuda::make<float>(problem, u, 0, tuning));
    };
    EXPECT_EQ(takes(p, smooth), hopper);
    Fields<float> u = smooth;
    u.c[big] = -1e-3f;
    EXPECT_FALSE(takes(p, u)) << "c < 0";
    u.c[big] = 0x1p41f;
    EXPECT_FALSE(takes(p, u)) << "c > 2^40 / alpha";
    u.c[big] = std::nanf("");
    EXPECT_FALSE(takes(p, u)) << "c NaN";
    Problem q = p;
    q.model.chemotaxis = -0.0;
    EXPECT_FALSE(takes(q, smooth)) << "chi0 = -0";
    q.model.chemotaxis = 0x1p61;
    EXPECT_FALSE(takes(q, smooth)) << "chi0 > 2^60";
    q.model.chemotaxis = 0.0;
    EXPECT_EQ(takes(q, smooth), hopper) << "chi0 = +0";
  }
  Fields<float> initial = smooth;
  initial.c[big] = 3.3e38f;
  p.dt = 1e-6;  // (the stability check's k, about 1e-77 here, is 0 in fp32: n would not move)
  RunOptions options;
  auto reference = make_solver<float>(p, initial, Backend::Reference, options);
  reference->advance(5, false);
  Fields<float> want;
  reference->read(want);
  ASSERT_TRUE(std::all_of(want.n.begin(), want.n.end(), [](float v) { return std::isfinite(v); }));
  for (bool unchecked : {false, true}) {
    tuning.unchecked_quotient = unchecked;
    auto gpu = detail::cuda::make<float>(p, initial, 0, tuning);
    EXPECT_EQ(detail::cuda::takes_tma_kernels(*gpu), unchecked && hopper);
    gpu->advance(5, false);
    Fields<float> got;
    gpu->read(got);
    std::size_t differ = 0;
    for (std::size_t id = 0; id < p.grid.nodes(); ++id)
      differ += std::memcmp(&want.n[id], &got.n[id], sizeof(float)) != 0;
    if (unchecked && hopper) {
      EXPECT_GT(differ, 0u) << "the TMA kernel without the check: expected n to differ near node " << big;
    } else {
      EXPECT_EQ(differ, 0u);
      EXPECT_TRUE(want.f == got.f && want.c == got.c);
    }
  }
}

// The CLI's own choice of kernels and tiles (make with RunOptions: the TMA pair on 32 x 16 tiles
// in fp32 and 32 x 8 in fp64, the single-step TMA kernel for odd steps and series rows, the flux
// form's, on 80 x 8 tiles here, where they pad the width less than 64 x 8 or 32 x 16, with chained launches and their
// chunk rule), forced onto a
// grid below its size rule by SIMKIT_ANGIO_KERNEL=tma: bitwise equal to the reference, fields and series rows, both
// precisions and forms, TAF diffusion on and off.
TEST(AngioCuda, DefaultTmaKernelsAgree) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  struct Env {
    Env() { setenv("SIMKIT_ANGIO_KERNEL", "tma", 1); }
    ~Env() { unsetenv("SIMKIT_ANGIO_KERNEL"); }
  } env;
  auto check = [](auto zero, Form form, double taf_diffusion) {
    using T = decltype(zero);
    std::mt19937_64 rng(71);
    Problem p;
    p.grid = Grid{68, 35, 12, 1.0 / 67};
    p.form = form;
    p.model.diffusion = 0.02;  // (as compare_with_reference: stable on this coarse grid)
    p.model.taf_diffusion = taf_diffusion;
    p.precision = std::is_same_v<T, float> ? Precision::Fp32 : Precision::Fp64;
    const Fields<T> initial = random_fields<T>(p.grid, rng);
    p.dt = 0.5 * check_stability(p, initial).largest_stable_k;
    RunOptions options;
    auto reference = make_solver<T>(p, initial, Backend::Reference, options);
    auto gpu = make_solver<T>(p, initial, Backend::Cuda, options);
    const bool hopper = has_tma();
    EXPECT_EQ(detail::cuda::takes_tma_kernels(*gpu), hopper) << "the TMA kernels on a GPU that has them";
    for (int steps : {7, 10, 4}) {  // odd (a single step last), a series row on a pair's end, even
      SCOPED_TRACE(testing::Message() << (std::is_same_v<T, float> ? "fp32 " : "fp64 ")
                                      << (form == Form::Flux ? "flux" : "expanded") << " D_c " << taf_diffusion
                                      << " steps " << steps);
      const Reductions r_ref = reference->advance(steps, true);
      const Reductions r_gpu = gpu->advance(steps, true);
      Fields<T> a, b;
      reference->read(a);
      gpu->read(b);
      EXPECT_TRUE(a.n == b.n && a.f == b.f && a.c == b.c);
      for (int q = 0; q < 3; ++q) {
        EXPECT_EQ(r_ref.min[q], r_gpu.min[q]);
        EXPECT_EQ(r_ref.max[q], r_gpu.max[q]);
      }
    }
  };
  for (Form form : {Form::Expanded, Form::Flux}) {
    for (double taf : {0.0, 0.002}) {
      check(0.0f, form, taf);
      check(0.0, form, taf);
    }
  }
}

}  // namespace
}  // namespace simkit::angio
