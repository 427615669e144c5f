#pragma once
// The ProCell model's per-lineage code, shared by every backend (SIMKIT_HD: host and device).
//
// Random draws are keyed by lineage, never by thread: a cell is (initial cell id, heap index h),
// the initial cell is h = 1 and the daughters of h are 2h and 2h + 1, so the stream of a cell
// is a pure function of (seed, cell id, h, purpose). Any backend, any thread, any work split
// draws the same numbers; sums of division times along a path are taken in path order, so the
// times themselves are bit-identical too.
#include <cstdint>

#include "core/distributions.hpp"
#include "core/hd.hpp"
#include "core/rng.hpp"

namespace simkit::prolif::detail {

inline constexpr int kMaxGenerationsDevice = 62;  // heap index < 2^63
inline constexpr int kMaxTimes = 64;              // output times per run

enum Purpose : std::uint32_t {
  kDivisionTime = 0,   // every cell: its own division time
  kAsyncFraction = 1,  // initial cells, procell-async: U in t0 = U * X
  kAsyncClock = 2,     // initial cells, procell-async: X, a division time of the population
  kRowSplit = 3,       // per H(0) row (heap index 0, never a cell): population counts
};

SIMKIT_HD inline RngStream lineage_stream(std::uint64_t seed, std::uint32_t cell, std::uint64_t heap,
                                          std::uint32_t purpose) {
  const StreamId id{cell, static_cast<std::uint32_t>(heap), static_cast<std::uint32_t>(heap >> 32)};
  // Purpose in the top bits of the block counter: 2^24 blocks (2^26 draws) per purpose.
  return RngStream(seed, id, static_cast<std::uint64_t>(purpose) << 26);
}

enum class Kind : int { Quiescent = 0, Normal = 1, Gamma = 2, LogNormal = 3, Fixed = 4 };

// One population, ready for host or device: the distribution precomputed on the host.
struct PopulationParams {
  Kind kind = Kind::Quiescent;
  double fixed = 0;  // Kind::Fixed (sd = 0): every division takes exactly this long
  TruncatedNormal normal{};
  simkit::Gamma gamma{};
  simkit::LogNormal lognormal{};

  SIMKIT_HD double division_time(RngStream& rng) const {
    switch (kind) {
      case Kind::Normal:
        return normal.sample(rng);
      case Kind::Gamma:
        return gamma.sample(rng);
      case Kind::LogNormal:
        return lognormal.sample(rng);
      case Kind::Fixed:
        return fixed;
      default:
        return 0.0;
    }
  }
};

// Everything one run's lineage walk needs, by value (fits in kernel parameter space).
struct WalkParams {
  std::uint64_t seed = 0;
  int num_times = 0;
  double times[kMaxTimes] = {};
  double t_max = 0;
  bool async_start = false;
};

SIMKIT_HD inline double division_time(const WalkParams& w, const PopulationParams& pop, std::uint32_t cell,
                                      std::uint64_t heap) {
  RngStream rng = lineage_stream(w.seed, cell, heap, kDivisionTime);
  return pop.division_time(rng);
}

// Time at which initial cell `cell` first divides: tau (sync), or t0 + tau with t0 = U * X
// (ProCell's asynchronous start).
SIMKIT_HD inline double first_division(const WalkParams& w, const PopulationParams& pop, std::uint32_t cell) {
  const double tau = division_time(w, pop, cell, 1);
  if (!w.async_start) return tau;
  RngStream u_rng = lineage_stream(w.seed, cell, 1, kAsyncFraction);
  RngStream x_rng = lineage_stream(w.seed, cell, 1, kAsyncClock);
  const double u = u_rng.uniform();
  const double x = pop.division_time(x_rng);
  return u * x + tau;
}

struct WalkStats {
  std::uint64_t divisions = 0;  // division events at or before t_max
  std::uint64_t too_deep = 0;   // divisions whose daughters would exceed the generation limit
};

// Walks the whole lineage of one proliferating initial cell depth-first, without recursion:
// the only state is the heap index, the generation and the birth time of each generation on the
// current path (births[k]; at most kMaxGenerationsDevice + 1 doubles). A cell exists at t iff
// birth <= t < division; it divides iff division <= t_max, and its daughters live iff the
// generation k + 1 <= max_generation (phi / 2^(k+1) > phi_min, decided on the host per row).
// count(t_index, k) is called once for every (cell, output time) at which the cell exists.
template <class Count>
SIMKIT_HD WalkStats walk_lineage(const WalkParams& w, const PopulationParams& pop, std::uint32_t cell,
                                 int max_generation, bool depth_limited, double* births, Count&& count) {
  WalkStats stats;
  std::uint64_t heap = 1;
  int k = 0;
  double birth = 0.0;
  double division = first_division(w, pop, cell);
  for (;;) {
    for (int j = 0; j < w.num_times; ++j) {
      if (birth <= w.times[j] && w.times[j] < division) count(j, k);
    }
    const bool divides = division <= w.t_max;
    if (divides) {
      ++stats.divisions;
      if (k < max_generation) {
        births[k + 1] = division;
        heap <<= 1;
        ++k;
        birth = division;
        division = birth + division_time(w, pop, cell, heap);
        continue;
      }
      if (depth_limited) {
        // The run is rejected (check_stats); walking on would visit up to 2^62 cells first.
        ++stats.too_deep;
        return stats;
      }
    }
    // Next node: climb while this is a second daughter; the root (heap 1) ends the walk.
    while (heap & 1u) {
      if (heap == 1) return stats;
      heap >>= 1;
      --k;
    }
    heap += 1;  // the second daughter, born with her sister
    birth = births[k];
    division = birth + division_time(w, pop, cell, heap);
  }
}

// A run of initial cells of one H(0) row and one population: cell ids first_cell .. first_cell + count - 1.
struct Segment {
  std::uint32_t row = 0;
  std::uint32_t population = 0;
  std::uint32_t first_cell = 0;
  std::uint32_t count = 0;
};

}  // namespace simkit::prolif::detail
