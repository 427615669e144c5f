// Built without CUDA: the GPU matchers say so (resolve_backend already refuses cuda first).
#include "simkit/core/backend.hpp"
#include "ddm/kernels.hpp"

namespace simkit::ddm::detail {

#define SIMKIT_DDM_NO_CUDA(NAME, T)                                                                                   \
  template <>                                                                                                         \
  std::uint64_t NAME<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, Output, std::size_t, const MatchSink*, \
                        std::vector<std::uint64_t>*, std::vector<std::uint64_t>*, MatchReport&) {                     \
    throw_not_built(Backend::Cuda);                                                                                   \
  }
SIMKIT_DDM_NO_CUDA(gpu, std::uint32_t)
SIMKIT_DDM_NO_CUDA(gpu, std::uint64_t)
SIMKIT_DDM_NO_CUDA(gpu, double)
SIMKIT_DDM_NO_CUDA(bitmatrix, std::uint32_t)
SIMKIT_DDM_NO_CUDA(bitmatrix, std::uint64_t)
SIMKIT_DDM_NO_CUDA(bitmatrix, double)

}  // namespace simkit::ddm::detail
