// Built without CUDA: the cuda backend says so (resolve_backend already refuses it first).
#include "simkit/core/backend.hpp"
#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::cuda {

std::vector<WalkStats> run(const std::vector<PreparedRun>&, std::vector<Result>&, const RunOptions&,
                           const CellProgress&) {
  throw_not_built(Backend::Cuda);
}

}  // namespace simkit::prolif::detail::cuda
