// Built without CUDA: the hybrid model's cuda backend says so.
#include "angio/hybrid_detail.hpp"
#include "simkit/core/error.hpp"

namespace simkit::angio::detail::hybrid_cuda {

std::vector<Realisation> run(const HybridProblem&, std::uint64_t, int, int, const ProgressCallback&, const Capacity&,
                             Timing*) {
  throw UserError("backend", " cuda: this simkit was built without CUDA support");
}

}  // namespace simkit::angio::detail::hybrid_cuda
