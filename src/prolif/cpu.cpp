// Multi-threaded backend: chunks of initial cells spread over OpenMP threads, each thread
// counting into its own array, summed at the end. Counts are integers, so the result is the
// reference's exactly, whatever the thread count or schedule.
#include <omp.h>

#include <algorithm>
#include <atomic>

#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::cpu {

namespace {

WalkStats run_one(const PreparedRun& run, Result& result, const RunOptions& options, const CellProgress& progress) {
  struct Chunk {
    std::uint32_t segment, first, count;
  };
  constexpr std::uint32_t kChunk = 64;
  std::vector<Chunk> chunks;
  for (std::uint32_t s = 0; s < run.segments.size(); ++s) {
    for (std::uint32_t c = 0; c < run.segments[s].count; c += kChunk) {
      chunks.push_back({s, c, std::min(kChunk, run.segments[s].count - c)});
    }
  }
  const int nthreads = effective_threads(options.threads);
  std::vector<std::vector<std::uint64_t>> partial(static_cast<std::size_t>(nthreads));
  std::vector<WalkStats> stats(static_cast<std::size_t>(nthreads));
  const std::int64_t nchunks = static_cast<std::int64_t>(chunks.size());
  std::atomic<std::uint64_t> cells_done{0};
  const std::size_t rows = result.rows, generations = result.generations, populations = result.populations;

#pragma omp parallel num_threads(nthreads)
  {
    const auto tid = static_cast<std::size_t>(omp_get_thread_num());
    std::vector<std::uint64_t>& counts = partial[tid];
    counts.assign(result.counts.size(), 0);
    double births[kMaxGenerationsDevice + 1];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t n = 0; n < nchunks; ++n) {
      if (stop_requested(options)) continue;  // asked to stop: the rest is skipped, run() throws
      const Chunk& ch = chunks[static_cast<std::size_t>(n)];
      const Segment& s = run.segments[ch.segment];
      const PopulationParams& pop = run.populations[s.population];
      for (std::uint32_t c = 0; c < ch.count; ++c) {
        const WalkStats st = walk_lineage(
            run.walk, pop, s.first_cell + ch.first + c, run.max_generation[s.row], run.depth_limited[s.row] != 0,
            births, [&](int j, int k) {
              ++counts[((static_cast<std::size_t>(j) * rows + s.row) * generations + static_cast<std::size_t>(k)) *
                           populations +
                       s.population];
            });
        stats[tid].divisions += st.divisions;
        stats[tid].too_deep += st.too_deep;
      }
      // Progress from the first thread only, counting every thread's finished cells.
      cells_done.fetch_add(ch.count, std::memory_order_relaxed);
      if (tid == 0 && progress) progress(cells_done.exchange(0, std::memory_order_relaxed));
    }
  }
  WalkStats total;
  for (std::size_t t = 0; t < partial.size(); ++t) {
    for (std::size_t i = 0; i < result.counts.size(); ++i) result.counts[i] += partial[t][i];
    total.divisions += stats[t].divisions;
    total.too_deep += stats[t].too_deep;
  }
  return total;
}

}  // namespace

std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results,
                           const RunOptions& options, const CellProgress& progress) {
  std::vector<WalkStats> stats(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    stats[r] = run_one(runs[r], results[r], options, progress);
    throw_if_stopped(options);
  }
  return stats;
}

}  // namespace simkit::prolif::detail::cpu
