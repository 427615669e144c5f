// The oracle: every (s, u) pair tested with the full rule, O(|S| |U| d).
#include "ddm/kernels.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::detail {

template <class T>
void brute_force(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out) {
  for (std::size_t i = 0; i < s.size; ++i)
    for (std::size_t j = 0; j < u.size; ++j)
      if (intersects(rule, s.dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) out.emit(i, j);
  out.flush();
}

template void brute_force<std::uint32_t>(const RegionView<std::uint32_t>&, const RegionView<std::uint32_t>&, Rule,
                                         Collector&);
template void brute_force<std::uint64_t>(const RegionView<std::uint64_t>&, const RegionView<std::uint64_t>&, Rule,
                                         Collector&);
template void brute_force<double>(const RegionView<double>&, const RegionView<double>&, Rule, Collector&);

}  // namespace simkit::ddm::detail
