// Built without CUDA: the GPU matchers say so (resolve_backend already refuses cuda first).
#include "ddm/kernels.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::ddm::detail {

#define SIMKIT_DDM_NO_CUDA(NAME, T)                                                                                 \
  template <>                                                                                                       \
  std::uint64_t NAME<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, int, Output, std::size_t,            \
                        const PairSinks&, std::vector<std::uint64_t>*, std::vector<std::uint64_t>*, MatchReport&) { \
    throw_not_built(Backend::Cuda);                                                                                 \
  }
SIMKIT_DDM_NO_CUDA(gpu, std::uint32_t)
SIMKIT_DDM_NO_CUDA(gpu, std::uint64_t)
SIMKIT_DDM_NO_CUDA(gpu, double)
SIMKIT_DDM_NO_CUDA(bitmatrix, std::uint32_t)
SIMKIT_DDM_NO_CUDA(bitmatrix, std::uint64_t)
SIMKIT_DDM_NO_CUDA(bitmatrix, double)

}  // namespace simkit::ddm::detail

// The cuda backend's resident index for incremental matching: never built without CUDA
// (IncrementalMatcher only makes one when the backend resolves to cuda).
#include "ddm/resident_device.hpp"

namespace simkit::ddm::detail {

template <class T>
struct DeviceResident<T>::State {};

template <class T>
DeviceResident<T>::DeviceResident(int, const GridGeometry&, const GridGeometry&, const std::vector<std::uint8_t>&,
                                  const std::vector<T>&, const std::vector<std::uint8_t>&, const std::vector<T>&) {
  throw_not_built(Backend::Cuda);
}
template <class T>
DeviceResident<T>::~DeviceResident() = default;
template <class T>
std::size_t DeviceResident<T>::capacity_s() const {
  return 0;
}
template <class T>
std::size_t DeviceResident<T>::capacity_u() const {
  return 0;
}
template <class T>
void DeviceResident<T>::apply(Rule, const DeviceBatchSide<T>&, const DeviceBatchSide<T>&, std::vector<std::uint64_t>&,
                              std::vector<std::uint64_t>&, DeviceApplyReport&) {
  throw_not_built(Backend::Cuda);
}

template class DeviceResident<std::uint32_t>;
template class DeviceResident<std::uint64_t>;
template class DeviceResident<double>;

}  // namespace simkit::ddm::detail
