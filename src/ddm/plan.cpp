// The matching plan of the sort-based matchers (plan.hpp).
#include "ddm/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace simkit::ddm::detail {

namespace {

template <class T>
struct DimStats {
  T min = std::numeric_limits<T>::max();
  T max = std::numeric_limits<T>::lowest();
  T widest = T(0);
  double side_sum = 0;
};

template <class T>
DimStats<T> stats_of(const RegionView<T>& r, int d, int threads) {
  DimStats<T> out;
  T lo_min = std::numeric_limits<T>::max(), hi_max = std::numeric_limits<T>::lowest(), widest = T(0);
  double sum = 0;
  const auto n = static_cast<std::int64_t>(r.size);
#pragma omp parallel for num_threads(threads) reduction(min : lo_min) reduction(max : hi_max, widest) \
    reduction(+ : sum) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const T lo = r.lo(static_cast<std::size_t>(i), d), hi = r.hi(static_cast<std::size_t>(i), d);
    lo_min = std::min(lo_min, lo);
    hi_max = std::max(hi_max, hi);
    widest = std::max(widest, static_cast<T>(hi - lo));
    sum += static_cast<double>(hi - lo);
  }
  out.min = lo_min;
  out.max = hi_max;
  out.widest = widest;
  out.side_sum = sum;
  return out;
}

}  // namespace

template <class T>
Plan<T> make_plan(const RegionView<T>& s, const RegionView<T>& u, int threads) {
  Plan<T> p;
  if (s.size == 0 || u.size == 0) return p;
  const int dims = s.dims;
  std::vector<DimStats<T>> ss(static_cast<std::size_t>(dims)), us(static_cast<std::size_t>(dims));
  std::vector<double> cost(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    ss[static_cast<std::size_t>(d)] = stats_of(s, d, threads);
    us[static_cast<std::size_t>(d)] = stats_of(u, d, threads);
    const T lo = std::min(ss[static_cast<std::size_t>(d)].min, us[static_cast<std::size_t>(d)].min);
    const T hi = std::max(ss[static_cast<std::size_t>(d)].max, us[static_cast<std::size_t>(d)].max);
    const double extent = std::max(static_cast<double>(hi - lo), 1e-300);
    const double mean = ss[static_cast<std::size_t>(d)].side_sum / static_cast<double>(s.size) +
                        us[static_cast<std::size_t>(d)].side_sum / static_cast<double>(u.size);
    // Expected candidates, plus a floor for zero-width ranges (ties still make candidates).
    cost[static_cast<std::size_t>(d)] =
        static_cast<double>(s.size) * static_cast<double>(u.size) * (mean / extent + 1e-12);
    if (!std::isfinite(cost[static_cast<std::size_t>(d)])) cost[static_cast<std::size_t>(d)] = 1e300;
  }
  std::vector<int> order(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) order[static_cast<std::size_t>(d)] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost[static_cast<std::size_t>(a)] < cost[static_cast<std::size_t>(b)]; });
  p.k = order[0];
  if (dims < 2) return p;
  const int k2 = order[1];
  const DimStats<T>&a = ss[static_cast<std::size_t>(k2)], &b = us[static_cast<std::size_t>(k2)];
  const T lo = std::min(a.min, b.min), hi = std::max(a.max, b.max);
  const double target = std::max(1.0, static_cast<double>(s.size + u.size) / 8.0);
  T width = std::max(a.widest, b.widest);
  if constexpr (std::is_floating_point_v<T>) {
    const double extent = static_cast<double>(hi) - static_cast<double>(lo);
    if (!(extent > 0) || !std::isfinite(extent)) return p;
    width = std::max(width, static_cast<T>(extent / target));
    if (!(width > 0)) return p;
    const double strips = std::floor(extent / width) + 1;
    if (!(strips > 1) || strips > 4 * target) return p;
    p.strips = static_cast<std::int64_t>(strips);
  } else {
    const T extent = static_cast<T>(hi - lo);
    if (extent == 0) return p;
    width = std::max<T>(width, static_cast<T>(static_cast<T>(static_cast<double>(extent) / target) + 1));
    if (width == 0) return p;
    const std::uint64_t strips = static_cast<std::uint64_t>(extent / width) + 1;
    if (strips < 2) return p;
    p.strips = static_cast<std::int64_t>(std::min<std::uint64_t>(strips, static_cast<std::uint64_t>(4 * target)));
    if (static_cast<std::uint64_t>(p.strips) < strips) return Plan<T>{p.k};  // too many: one strip
  }
  p.k2 = k2;
  p.min2 = lo;
  p.width = width;
  p.side_s2 = a.widest;
  p.side_u2 = b.widest;
  return p;
}

template Plan<std::uint32_t> make_plan<std::uint32_t>(const RegionView<std::uint32_t>&,
                                                      const RegionView<std::uint32_t>&, int);
template Plan<std::uint64_t> make_plan<std::uint64_t>(const RegionView<std::uint64_t>&,
                                                      const RegionView<std::uint64_t>&, int);
template Plan<double> make_plan<double>(const RegionView<double>&, const RegionView<double>&, int);

}  // namespace simkit::ddm::detail
