#pragma once
// Internals of the hybrid model shared by its backends: the initial sprouts, the branching
// table, and the segment log from which the realisations are built.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "simkit/angio/hybrid.hpp"

namespace simkit::angio::detail {

// Purposes of the random draws: each draw is keyed by (seed, tip id, step, purpose).
enum HybridPurpose : std::uint32_t { kDrawMove = 0, kDrawBranch = 1, kDrawBranchDirection = 2 };

// Initial tips on the face next to the parent vessel (i = 1), as (j, l) pairs in ascending order:
// the explicit positions `sprouts_at` (nearest nodes), else one per maximum of the initial n profile
// sin^2(m pi y) (sin^2(m pi z) in 3D), or `sprouts` on a regular grid of the face.
std::vector<std::pair<int, int>> sprout_positions(const Grid& g, const InitialParams& ip, const HybridParams& h);

// P_n(c) from the table: the first row with c <= c_upto (the last row's probability above all);
// 1 with branch_always; 0 for a NaN c (only after a forced unstable step).
double branch_probability(const HybridParams& h, double c);

// The step the realisation stops after (ceil(t_max / k)) and the front it stops at.
std::int64_t hybrid_last_step(const HybridProblem& p);
double hybrid_reach_front(const HybridProblem& p);

// The realisation a segment log (every segment in the order it was made) describes: occupied
// nodes, branch and anastomosis points and the per-step metrics; the reference and cuda backends
// both build their realisations with it.
Realisation realisation_from_log(const HybridProblem& p, std::uint64_t seed, std::int64_t steps, std::int64_t moves,
                                 std::int64_t clipped_draws, std::vector<Segment> log,
                                 std::vector<std::int64_t> active_tip_nodes);

// The realisation's totals (branches, anastomoses and their kinds, sprouts, reached and its
// time) from its last metrics row and `steps`.
void totals_from_metrics(const HybridProblem& p, Realisation& r);

// A realisation without its logs (segments, occupied, branch and anastomosis points, active tips),
// their memory freed: its counts and metrics stay.
void drop_logs(Realisation& r);

// The backends, identical in namespaces hybrid::reference, hybrid::cpu and hybrid::cuda
// (SIMKIT_DISPATCH): `replicates` realisations, realisation r seeded options.seed + r. options:
// threads (cpu), device (cuda), progress (realisations done out of replicates).
// keep_logs: as run_hybrid_ensemble's (drop_logs on realisations keep_logs and up; -1: none).
#define SIMKIT_HYBRID_BACKEND                                                                              \
  std::vector<Realisation> run(const HybridProblem& problem, int replicates, const RunOptions& options, \
                               int keep_logs)
namespace hybrid {
namespace reference {
SIMKIT_HYBRID_BACKEND;
}
namespace cpu {
SIMKIT_HYBRID_BACKEND;
}
namespace cuda {
SIMKIT_HYBRID_BACKEND;
}  // namespace cuda
}  // namespace hybrid
#undef SIMKIT_HYBRID_BACKEND

// initial_fields' values (continuous/reference.cpp) for planes [l_begin, l_end) into the caller's
// memory, each node written (first touched) by the thread that computes it; `n` may be nullptr (not
// wanted).
template <class T>
void fill_initial_fields(const Grid& g, const InitialParams& p, int l_begin, int l_end, T* n, T* f, T* c);

namespace hybrid_cuda {
// Initial per-realisation capacities of the GPU ensemble (segments, tips); a realisation that
// outgrows them is run again with four times as much, so they only change speed, never results.
struct Capacity {
  std::int64_t segments = 1 << 14;
  std::int64_t tips = 1 << 12;
  bool row_copies = false;  // tests: download each realisation's log on its own (chunks of one)
  int part = 0;             // tests: realisations a part of a D_c = 0 batch (0: the default, run_realisations)
  long long epochs = 0;     // tests: launches before the D_c = 0 hash keys are cleared (0: the default, 2^23 - 1)
  std::size_t pinned_entries = 0;  // tests: log entries a page-locked chunk slot (0: a chunk's; huge: none can be had)
  long long batch = 0;             // tests: realisations a batch at most (0: as many as fit)
};
struct Timing;  // hybrid/cuda.hpp
std::vector<Realisation> run(const HybridProblem& p, std::uint64_t seed, int replicates, int device,
                             const ProgressCallback& progress, const Capacity& capacity, Timing* timing = nullptr,
                             const StopCallback& stop = {}, int threads = 0, int keep_logs = -1);
}  // namespace hybrid_cuda

}  // namespace simkit::angio::detail
