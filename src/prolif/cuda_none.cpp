// Built without CUDA: the cuda backend says so (resolve_backend already refuses it first).
#include "simkit/core/error.hpp"
#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::cuda {

std::vector<WalkStats> run(const std::vector<PreparedRun>&, std::vector<Result>&, int) {
  throw UserError("backend", " cuda: this simkit was built without CUDA support");
}

}  // namespace simkit::prolif::detail::cuda
