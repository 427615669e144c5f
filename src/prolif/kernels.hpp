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

// The backend interface, identical in namespaces reference, cpu and cuda (SIMKIT_DISPATCH): each
// adds the lineage counts of every run's segments into results[r] (already sized and holding the
// quiescent counts) and returns each run's walk statistics. All runs share the H(0) layout.
// `progress(cells)` is called now and then with the number of initial cells walked since the last
// call (from one thread only; the cuda backend reports once at the end). options: threads (cpu),
// device (cuda).
using CellProgress = std::function<void(std::uint64_t)>;
#define SIMKIT_PROLIF_BACKEND                                                                                 \
  std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results,           \
                             const RunOptions& options, const CellProgress& progress)
namespace reference {
SIMKIT_PROLIF_BACKEND;
}
namespace cpu {
SIMKIT_PROLIF_BACKEND;
}
namespace cuda {
SIMKIT_PROLIF_BACKEND;
}  // namespace cuda
#undef SIMKIT_PROLIF_BACKEND

}  // namespace simkit::prolif::detail
