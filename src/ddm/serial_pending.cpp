// Placeholders for the serial matchers while they are written (replaced by sbm.cpp,
// interval_tree.cpp and grid.cpp): they refuse to run rather than return anything.
#include "core/error.hpp"
#include "ddm/kernels.hpp"

namespace simkit::ddm::detail {

#define SIMKIT_DDM_PENDING(NAME, T)                                            \
  template <>                                                                  \
  void NAME<T>(const RegionView<T>&, const RegionView<T>&, Rule, Collector&) { \
    throw UserError("--algorithm " #NAME ": not built yet");                   \
  }
SIMKIT_DDM_PENDING(sort_based, std::uint32_t)
SIMKIT_DDM_PENDING(sort_based, std::uint64_t)
SIMKIT_DDM_PENDING(sort_based, double)
SIMKIT_DDM_PENDING(interval_tree, std::uint32_t)
SIMKIT_DDM_PENDING(interval_tree, std::uint64_t)
SIMKIT_DDM_PENDING(interval_tree, double)
SIMKIT_DDM_PENDING(grid, std::uint32_t)
SIMKIT_DDM_PENDING(grid, std::uint64_t)
SIMKIT_DDM_PENDING(grid, double)

}  // namespace simkit::ddm::detail
