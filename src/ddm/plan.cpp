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
  if (s.size == 0 || u.size == 0) return Plan<T>{};
  std::vector<DimStats<T>> ss(static_cast<std::size_t>(s.dims)), us(static_cast<std::size_t>(s.dims));
  for (int d = 0; d < s.dims; ++d) {
    ss[static_cast<std::size_t>(d)] = stats_of(s, d, threads);
    us[static_cast<std::size_t>(d)] = stats_of(u, d, threads);
  }
  return plan_from_stats(ss, us, s.size, u.size);
}

template <class T>
Plan<T> plan_from_stats(const std::vector<DimStats<T>>& ss, const std::vector<DimStats<T>>& us, std::size_t ns,
                        std::size_t nu) {
  Plan<T> p;
  if (ns == 0 || nu == 0) return p;
  const int dims = static_cast<int>(ss.size());
  std::vector<double> cost(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    const T lo = std::min(ss[static_cast<std::size_t>(d)].min, us[static_cast<std::size_t>(d)].min);
    const T hi = std::max(ss[static_cast<std::size_t>(d)].max, us[static_cast<std::size_t>(d)].max);
    const double extent = std::max(static_cast<double>(hi - lo), 1e-300);
    const double mean = ss[static_cast<std::size_t>(d)].side_sum / static_cast<double>(ns) +
                        us[static_cast<std::size_t>(d)].side_sum / static_cast<double>(nu);
    // Expected candidates, plus a floor for zero-width ranges (ties still make candidates).
    cost[static_cast<std::size_t>(d)] = static_cast<double>(ns) * static_cast<double>(nu) * (mean / extent + 1e-12);
    if (!std::isfinite(cost[static_cast<std::size_t>(d)])) cost[static_cast<std::size_t>(d)] = 1e300;
  }
  std::vector<int> order(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) order[static_cast<std::size_t>(d)] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost[static_cast<std::size_t>(a)] < cost[static_cast<std::size_t>(b)]; });
  p.k = order[0];
  if (dims < 2) return p;
  // Secondary dimensions: the next one or two. Cells no narrower than the widest region there (so
  // a query touches at most 2-3 per dimension), and about (|S| + |U|) / 8 cells in all.
  const int k2 = order[1], k3 = dims >= 3 ? order[2] : -1;
  const double limit = std::max(1.0, static_cast<double>(ns + nu) / 8.0);
  struct Axis {
    T lo{}, width{}, side_s{}, side_u{};
    double extent = 0, count = 1;
  };
  auto axis_of = [&](int d) {
    Axis a;
    const DimStats<T>&x = ss[static_cast<std::size_t>(d)], &y = us[static_cast<std::size_t>(d)];
    a.lo = std::min(x.min, y.min);
    a.extent = static_cast<double>(std::max(x.max, y.max)) - static_cast<double>(a.lo);
    a.side_s = x.widest;
    a.side_u = y.widest;
    return a;
  };
  Axis a2 = axis_of(k2), a3 = k3 >= 0 ? axis_of(k3) : Axis{};
  // Widths as doubles first: at least the widest region, and few enough cells.
  auto count_for = [](const Axis& a, double width) {
    return (a.extent > 0 && width > 0 && std::isfinite(a.extent)) ? std::floor(a.extent / width) + 1 : 1.0;
  };
  double w2 = std::max(static_cast<double>(std::max(a2.side_s, a2.side_u)), a2.extent / limit);
  double w3 = k3 >= 0 ? std::max(static_cast<double>(std::max(a3.side_s, a3.side_u)), a3.extent / limit) : 0;
  double n2 = count_for(a2, w2), n3 = k3 >= 0 ? count_for(a3, w3) : 1.0;
  if (n2 * n3 > limit) {
    const double f = k3 >= 0 ? std::sqrt(n2 * n3 / limit) : n2 / limit;
    w2 *= f;
    w3 *= f;
    n2 = count_for(a2, w2);
    n3 = k3 >= 0 ? count_for(a3, w3) : 1.0;
  }
  auto set_axis = [&](double w, double n, const Axis& a, T& min, T& width, std::int64_t& cells) {
    if (!(n > 1) || !std::isfinite(w)) return false;
    if constexpr (std::is_floating_point_v<T>) {
      width = static_cast<T>(w);
      if (!(width > 0)) return false;
    } else {
      if (w >= 18446744073709551615.0) return false;
      width = std::max<T>(static_cast<T>(std::ceil(w)), T(1));
    }
    min = a.lo;
    cells = static_cast<std::int64_t>(std::max(1.0, std::floor(a.extent / static_cast<double>(width)) + 1));
    return cells > 1;
  };
  if (set_axis(w2, n2, a2, p.min2, p.width2, p.cells2)) {
    p.k2 = k2;
    p.side_s2 = a2.side_s;
    p.side_u2 = a2.side_u;
  } else {
    p.cells2 = 1;
  }
  if (k3 >= 0 && set_axis(w3, n3, a3, p.min3, p.width3, p.cells3)) {
    p.k3 = k3;
    p.side_s3 = a3.side_s;
    p.side_u3 = a3.side_u;
  } else {
    p.cells3 = 1;
  }
  return p;
}

#define SIMKIT_DDM_PLAN(T)                                                                                           \
  template Plan<T> make_plan<T>(const RegionView<T>&, const RegionView<T>&, int);                                    \
  template Plan<T> plan_from_stats<T>(const std::vector<DimStats<T>>&, const std::vector<DimStats<T>>&, std::size_t, \
                                      std::size_t);
SIMKIT_DDM_PLAN(std::uint32_t)
SIMKIT_DDM_PLAN(std::uint64_t)
SIMKIT_DDM_PLAN(double)
#undef SIMKIT_DDM_PLAN

}  // namespace simkit::ddm::detail
