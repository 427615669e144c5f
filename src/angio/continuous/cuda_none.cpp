// Built without CUDA: the cuda backend says so (resolve_backend already refuses it first).
#include "angio/continuous/cuda_tuning.hpp"
#include "angio/continuous/kernels.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio::detail::cuda {

namespace {
[[noreturn]] void no_cuda() { throw_not_built(Backend::Cuda); }
}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make(const Problem&, const Fields<T>&, int, const Tuning&) {
  no_cuda();
}
template <class T>
std::unique_ptr<Solver<T>> make(const Problem&, const Fields<T>&, const RunOptions&, const SlabSetup&) {
  no_cuda();
}

template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, int, const Tuning&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, int, const Tuning&);
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, const RunOptions&,
                                                   const SlabSetup&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, const RunOptions&,
                                                     const SlabSetup&);

}  // namespace simkit::angio::detail::cuda
