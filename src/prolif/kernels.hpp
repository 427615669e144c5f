#pragma once
// The backend interface: the same signature in namespace reference, cpu and cuda.
#include <cstdint>
#include <functional>
#include <vector>

#include "prolif/model.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif::detail {

// One run, prepared on the host: populations ready for sampling, per-row generation limits, and
// the proliferating initial cells as segments (quiescent cells are counted on the host).
struct PreparedRun {
  WalkParams walk;
  std::vector<PopulationParams> populations;
  std::vector<std::uint8_t> max_generation;  // per H(0) row
  std::vector<std::uint8_t> depth_limited;   // per row: 1 when phi_min, not kMaxGenerations, would stop it
  std::vector<Segment> segments;
  std::uint64_t proliferating_cells = 0;
};

// Each backend adds the lineage counts of every segment into `result` (already sized and holding
// the quiescent counts) and returns the walk statistics.
// `progress(cells)` is called now and then with the number of initial cells walked since the last
// call (from one thread only).
using CellProgress = std::function<void(std::uint64_t)>;
namespace reference {
WalkStats run(const PreparedRun& run, Result& result, const CellProgress& progress);
}
namespace cpu {
WalkStats run(const PreparedRun& run, Result& result, int threads, const CellProgress& progress);
}
namespace cuda {
// All runs share the H(0) layout; results[r] belongs to runs[r].
std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results, int device);
}  // namespace cuda

}  // namespace simkit::prolif::detail
