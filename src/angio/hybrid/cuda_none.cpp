// Built without CUDA: the hybrid model's cuda backend says so.
#include "angio/hybrid/detail.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio::detail::hybrid_cuda {

std::vector<Realisation> run(const HybridProblem&, std::uint64_t, int, int, const ProgressCallback&, const Capacity&,
                             Timing*, const StopCallback&, int, int) {
  throw_not_built(Backend::Cuda);
}

}  // namespace simkit::angio::detail::hybrid_cuda

namespace simkit::angio::detail::hybrid::cuda {

std::vector<Realisation> run(const HybridProblem&, int, const RunOptions&, int) { throw_not_built(Backend::Cuda); }

}  // namespace simkit::angio::detail::hybrid::cuda
