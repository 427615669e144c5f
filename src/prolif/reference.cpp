// The oracle: one initial cell after another, in file order.
#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::reference {

namespace {

WalkStats run_one(const PreparedRun& run, Result& result, const RunOptions& options, const CellProgress& progress) {
  WalkStats total;
  double births[kMaxGenerationsDevice + 1];
  for (const Segment& s : run.segments) {
    throw_if_stopped(options);
    const PopulationParams& pop = run.populations[s.population];
    for (std::uint32_t c = 0; c < s.count; ++c) {
      const WalkStats st =
          walk_lineage(run.walk, pop, s.first_cell + c, run.max_generation[s.row], run.depth_limited[s.row] != 0,
                       births, [&](int j, int k) { ++result.at(j, s.row, k, s.population); });
      total.divisions += st.divisions;
      total.too_deep += st.too_deep;
    }
    if (progress) progress(s.count);
  }
  return total;
}

}  // namespace

std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results,
                           const RunOptions& options, const CellProgress& progress) {
  std::vector<WalkStats> stats(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) stats[r] = run_one(runs[r], results[r], options, progress);
  return stats;
}

}  // namespace simkit::prolif::detail::reference
