#pragma once
// Knobs of the cuda backend's step kernel, for benchmarks and tests (the CLI uses the defaults).
#include <cstdint>
#include <memory>

#include "angio/continuous/kernels.hpp"
#include "simkit/angio/angio.hpp"

namespace simkit::angio::detail::cuda {

struct Tuning {
  int chunk = 8;             // planes per block column (0: all of them; marching kernel: 8 to 47 measured best; the
                             // TMA pair: 35, docs/performance.md; the single-step TMA kernel: tma_chunk)
  bool naive = false;        // one thread per node, every load through the caches (baseline)
  int tile_x = 32;           // block tile: tile_x by 256 / tile_x nodes (32, 64, 128 or 256)
  bool pair = false;         // two steps per pass (temporal blocking, 32 x 8 tiles; an odd last step single)
  int blocks = 0;            // blocks per SM the registers must allow (0: the kernel's own, 5 marching fp32; 3, 4 or 6
                             // marching; 3 pairs; 4 or 6 staged)
  int staged = 0;            // > 0: the staged kernel with this many planes' copies in flight (1, 2; fp32 also 3, 4)
  int tma = 0;               // > 0: the TMA-staged kernel with this many planes ahead (1, 2; rows of 16-byte multiples)
  int tma_rows = 1;          // the TMA kernel's tile: 1, 2 (32 x 8, 32 x 16); wide 2, 4 (64 x 8, 64 x 16 in 16 warps)
  bool tma_wide = false;     // the TMA kernel's tiles 64 columns wide (64 x 8 or 64 x 16) instead of 32
  int tma_width = 0;         // 80: the TMA kernel's tiles 80 x 8 in blocks of 10 warps, whatever tma_wide and
                             // tma_rows say (other values: ignored)
  int tma_chunk = 0;         // planes a block of the single-step TMA kernel marches (0: tma_chunk's rule, below)
  bool tma_pair = false;     // with tma: two steps per pass through TMA (expanded form, 3D)
  int tma_pair_rows = 8;     // the TMA pair's tile: 16: 32 x 16; 8: 64 x 8 with tma_wide, else 32 x 8
  bool tma_release = false;  // the TMA kernel hands slots back through mbarriers instead of a block barrier
  int chain = 0;             // consecutive single-step TMA launches of an advance: 0 each waits for the one before
                             // (the stream), 1 may start early and waits at griddepcontrol.wait, 2 may start
                             // early and waits for the blocks next to it only (flags; cuda.cu, Chain), 3 tests
                             // only: may start early and waits for nothing (wrong results: shows the overlap)
  bool carry = true;         // marching flux form: each column's z face computed once, carried up (the same bits)
  bool unchecked_quotient = false;  // tests: the TMA kernels even where the c the run starts from puts their fast
                                    // division out of its exact range (quotient_in_range in cuda.cu)
};

// Planes a block column of the single-step TMA kernel marches (Tuning::tma_chunk; 0: this rule),
// given the tiles of a plane, the blocks the device holds at once (the occupancy API) and the
// planes: at least 14 (each chunk also reads the planes just below and above it) and at most the
// planes.
// - Launches one after another (stream order): about five waves of blocks (tiles x chunks over
//   the blocks held at once), so that the last wave's idle slots are a small part.
// - Chained launches (Tuning::chain > 0: the next launch takes the slots of this one's last
//   wave): about two waves, and chunks of at most 48 planes.
// Measured on an H200 at 400 x 400 x 140 (docs/performance.md, 2026-11-28 night and late night).
// Unchained: fp32 flux on 80 x 8 tiles 79.0-80.1 % of copy at the rule's 18 planes, as good as 47
// (1.9 waves) and 0.6-2.5 points above 14, 24 and 35; fp64 flux on 32 x 16 tiles best at the rule's
// 35 (4.9 waves). Chained, on 80 x 8 tiles: 35 to 47 planes within a point of each other, 47 best
// or tied in every start (fp64: 0.4 points above 35, 0.9 above 28); fp32 6-7 points lower at 70
// (1.3 waves).
inline int tma_chunk(int requested, long long tiles, long long resident, int planes, bool chained) {
  const long long most = planes > 1 ? planes : 1;
  if (requested > 0) return static_cast<int>(requested < most ? requested : most);
  tiles = tiles > 1 ? tiles : 1;
  long long chunks = ((chained ? 2 : 5) * resident + tiles / 2) / tiles;
  if (chained) chunks = chunks > (most + 47) / 48 ? chunks : (most + 47) / 48;
  chunks = chunks > 1 ? chunks : 1;
  const long long chunk = (most + chunks - 1) / chunks, least = most < 14 ? most : 14;
  return static_cast<int>(chunk < least ? least : (chunk > most ? most : chunk));
}

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, int device, const Tuning& tuning);
// The same for one slab of a distributed run (kernels.hpp's SlabSetup: with two ghost planes a side the
// slabs take two steps per pass where every rank can).
template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, int device, const Tuning& tuning,
                                const SlabSetup& slab);

// Tests: whether `solver` (made by make above, or make_solver with the cuda backend) takes the TMA
// kernels (the tma kernel's maps are made: Tuning::tma, the grid, the device and the range of
// quotient's fast path allow it).
template <class T>
bool takes_tma_kernels(const Solver<T>& solver);

// Tests: how many results of the TMA kernels' fp32 division (quotient's fast path, model.hpp) differ
// from a / b on the device, over the floats b in [b_lo, b_hi) (0 < b_lo < b_hi) for a fixed a, or over
// `count` random pairs (a, b) with exponents in [-60, 60] and random signs.
std::uint64_t quotient_mismatches(float a, float b_lo, float b_hi);
// Tests: how many floats b in [1, 2) give a refined reciprocal (model.hpp) other than the correctly
// rounded 1 / b.
std::uint64_t reciprocal_mismatches();
std::uint64_t random_quotient_mismatches(std::uint64_t count, std::uint64_t seed);

}  // namespace simkit::angio::detail::cuda
