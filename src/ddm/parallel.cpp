// The multi-threaded CPU matcher (cpu backend): sort both sets by lower bound in the most selective
// dimension, then, in parallel over regions, walk each region's contiguous run of candidates
// (candidates.hpp) and test each with the full rule. Every pair is found exactly once.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <parallel/algorithm>
#include <utility>

#include "ddm/candidates.hpp"
#include "ddm/kernels.hpp"
#include "ddm/model.hpp"
#include "ddm/sorted.hpp"

namespace simkit::ddm::detail {

template <class T>
SortedDim<T> sort_by_lower(const RegionView<T>& r, int d, int threads) {
  std::vector<std::pair<T, std::uint64_t>> keyed(r.size);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < r.size; ++i) keyed[i] = {r.lo(i, d), i};
  __gnu_parallel::sort(keyed.begin(), keyed.end(),
                       __gnu_parallel::multiway_mergesort_tag(static_cast<__gnu_parallel::_ThreadIndex>(threads)));
  SortedDim<T> out;
  out.lower.resize(r.size);
  out.index.resize(r.size);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < r.size; ++i) {
    out.lower[i] = keyed[i].first;
    out.index[i] = keyed[i].second;
  }
  return out;
}

template <class T>
std::uint64_t candidates(Rule rule, const SortedDim<T>& s, const SortedDim<T>& u, const RegionView<T>& sv,
                         const RegionView<T>& uv, int d, int threads) {
  std::uint64_t total = 0;
  const auto ns = static_cast<std::int64_t>(sv.size), nu = static_cast<std::int64_t>(uv.size);
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
  for (std::int64_t i = 0; i < ns; ++i) {
    std::size_t b, e;
    run_from_subscription(rule, u.lower.data(), uv.size, sv.lo(static_cast<std::size_t>(i), d),
                          sv.hi(static_cast<std::size_t>(i), d), b, e);
    total += e - b;
  }
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
  for (std::int64_t j = 0; j < nu; ++j) {
    std::size_t b, e;
    run_from_update(rule, s.lower.data(), sv.size, uv.lo(static_cast<std::size_t>(j), d),
                    uv.hi(static_cast<std::size_t>(j), d), b, e);
    total += e - b;
  }
  return total;
}

template <class T>
std::uint64_t parallel(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int threads, Output mode,
                       std::size_t chunk, const MatchSink* sink, std::vector<std::uint64_t>* per_s,
                       std::vector<std::uint64_t>* per_u) {
  const int workers = effective_threads(threads);
  if (s.size == 0 || u.size == 0) return 0;
  // The most selective dimension: the fewest candidates.
  int best = 0;
  SortedDim<T> best_s = sort_by_lower(s, 0, workers), best_u = sort_by_lower(u, 0, workers);
  std::uint64_t fewest = s.dims > 1 ? candidates(rule, best_s, best_u, s, u, 0, workers) : 0;
  for (int d = 1; d < s.dims; ++d) {
    SortedDim<T> ds = sort_by_lower(s, d, workers), du = sort_by_lower(u, d, workers);
    const std::uint64_t c = candidates(rule, ds, du, s, u, d, workers);
    if (c < fewest) {
      fewest = c;
      best = d;
      best_s = std::move(ds);
      best_u = std::move(du);
    }
  }
  const int k = best;
  std::uint64_t total = 0;
  const std::size_t flush_at = std::max<std::size_t>(chunk, 1);
#pragma omp parallel num_threads(workers) reduction(+ : total)
  {
    std::vector<Match> buffer;
    auto emit = [&](std::uint64_t i, std::uint64_t j) {
      ++total;
      if (mode == Output::Pairs) {
        buffer.push_back({i, j});
        if (buffer.size() >= flush_at) {
#pragma omp critical(simkit_ddm_sink)
          (*sink)(buffer.data(), buffer.size());
          buffer.clear();
        }
      } else if (mode == Output::PerRegion) {
        std::atomic_ref<std::uint64_t>((*per_s)[i]).fetch_add(1, std::memory_order_relaxed);
        std::atomic_ref<std::uint64_t>((*per_u)[j]).fetch_add(1, std::memory_order_relaxed);
      }
    };
    const auto ns = static_cast<std::int64_t>(s.size), nu = static_cast<std::int64_t>(u.size);
#pragma omp for schedule(dynamic, 256) nowait
    for (std::int64_t a = 0; a < ns; ++a) {
      const auto i = static_cast<std::size_t>(a);
      std::size_t b, e;
      run_from_subscription(rule, best_u.lower.data(), u.size, s.lo(i, k), s.hi(i, k), b, e);
      for (std::size_t p = b; p < e; ++p) {
        const std::uint64_t j = best_u.index[p];
        if (intersects(rule, s.dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) emit(i, j);
      }
    }
#pragma omp for schedule(dynamic, 256) nowait
    for (std::int64_t a = 0; a < nu; ++a) {
      const auto j = static_cast<std::size_t>(a);
      std::size_t b, e;
      run_from_update(rule, best_s.lower.data(), s.size, u.lo(j, k), u.hi(j, k), b, e);
      for (std::size_t p = b; p < e; ++p) {
        const std::uint64_t i = best_s.index[p];
        if (intersects(rule, s.dims, s.lower, s.upper, s.size, i, u.lower, u.upper, u.size, j)) emit(i, j);
      }
    }
    if (mode == Output::Pairs && !buffer.empty()) {
#pragma omp critical(simkit_ddm_sink)
      (*sink)(buffer.data(), buffer.size());
    }
  }
  return total;
}

#define SIMKIT_DDM_PARALLEL(T)                                                                                   \
  template SortedDim<T> sort_by_lower<T>(const RegionView<T>&, int, int);                                        \
  template std::uint64_t candidates<T>(Rule, const SortedDim<T>&, const SortedDim<T>&, const RegionView<T>&,     \
                                       const RegionView<T>&, int, int);                                          \
  template std::uint64_t parallel<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, Output, std::size_t, \
                                     const MatchSink*, std::vector<std::uint64_t>*, std::vector<std::uint64_t>*);
SIMKIT_DDM_PARALLEL(std::uint32_t)
SIMKIT_DDM_PARALLEL(std::uint64_t)
SIMKIT_DDM_PARALLEL(double)
#undef SIMKIT_DDM_PARALLEL

}  // namespace simkit::ddm::detail
