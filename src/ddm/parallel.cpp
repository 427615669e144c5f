// The multi-threaded CPU matcher (cpu backend): both sets sorted by (strip, lower bound) in the
// plan's dimensions, then, in parallel over regions, each region's runs of candidates
// (candidates.hpp) tested with the full rule. Every pair is found exactly once.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <tuple>
#include <type_traits>

#include "core/parallel.hpp"
#include "ddm/candidates.hpp"
#include "ddm/kernels.hpp"
#include "ddm/plan.hpp"

namespace simkit::ddm::detail {

namespace {

template <class T>
struct HostSorted {
  std::vector<std::uint64_t> index;
  std::vector<std::int64_t> strip_start;
  std::vector<T> lo, hi;
  SortedSet<T, std::uint64_t> view() const {
    return {index.data(), strip_start.data(), lo.data(), hi.data(), index.size()};
  }
};

template <class T>
HostSorted<T> sort_set(const RegionView<T>& r, const Plan<T>& p, int threads) {
  std::vector<std::tuple<std::int64_t, T, std::uint64_t>> keyed(r.size);
  std::vector<std::int64_t> count(static_cast<std::size_t>(p.cells()) + 1, 0);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < r.size; ++i) {
    const std::int64_t t = cell_of(p, p.k2 >= 0 ? r.lo(i, p.k2) : T{}, p.k3 >= 0 ? r.lo(i, p.k3) : T{});
    keyed[i] = {t, r.lo(i, p.k), i};
  }
  parallel_sort(keyed.begin(), keyed.end(), threads);
  HostSorted<T> out;
  const std::size_t n = r.size;
  out.index.resize(n);
  out.lo.resize(n * static_cast<std::size_t>(r.dims));
  out.hi.resize(n * static_cast<std::size_t>(r.dims));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t q = 0; q < n; ++q) {
    const std::uint64_t i = std::get<2>(keyed[q]);
    out.index[q] = i;
    for (int d = 0; d < r.dims; ++d) {
      out.lo[static_cast<std::size_t>(d) * n + q] = r.lo(i, d);
      out.hi[static_cast<std::size_t>(d) * n + q] = r.hi(i, d);
    }
  }
  for (const auto& e : keyed) ++count[static_cast<std::size_t>(std::get<0>(e)) + 1];
  for (std::size_t t = 1; t < count.size(); ++t) count[t] += count[t - 1];
  out.strip_start = std::move(count);
  return out;
}

// The full test of a run of candidates, in blocks of 64: each dimension's comparisons for the whole
// block in one branch-free loop (vectorised), then the hits in order. The scalar test's branches
// mispredict on about every other candidate; this costs the same whatever the outcome. Dimension
// `skip` (the primary one, when the run decides it; -1: none) is not tested.
template <Rule R, class T>
inline unsigned overlap_bits(T a_lo, T a_hi, T b_lo, T b_hi) {
  if constexpr (R == Rule::Closed) {
    return static_cast<unsigned>(a_lo <= b_hi) & static_cast<unsigned>(b_lo <= a_hi);
  } else if constexpr (R == Rule::HalfOpen) {
    return static_cast<unsigned>(a_lo < b_hi) & static_cast<unsigned>(b_lo < a_hi);
  } else {
    return static_cast<unsigned>(a_lo == b_lo) |
           (static_cast<unsigned>(a_lo < b_hi) & static_cast<unsigned>(b_lo < a_hi));
  }
}

template <Rule R, class T, class Hit>
void test_run(int dims, int skip, const SortedSet<T, std::uint64_t>& self, std::size_t r,
              const SortedSet<T, std::uint64_t>& other, std::size_t first, std::size_t last, Hit& hit) {
  constexpr std::size_t kBlock = 64;
  unsigned char ok[kBlock];
  for (std::size_t q0 = first; q0 < last; q0 += kBlock) {
    const std::size_t n = std::min(kBlock, last - q0);
    for (std::size_t k = 0; k < n; ++k) ok[k] = 1;
    for (int d = 0; d < dims; ++d) {
      if (d == skip) continue;  // decided by the run (run_decides_primary)
      const auto dd = static_cast<std::size_t>(d);
      const T a_lo = self.lo[dd * self.n + r], a_hi = self.hi[dd * self.n + r];
      const T* b_lo = other.lo + dd * other.n + q0;
      const T* b_hi = other.hi + dd * other.n + q0;
#pragma omp simd
      for (std::size_t k = 0; k < n; ++k)
        ok[k] = static_cast<unsigned char>(ok[k] & overlap_bits<R>(a_lo, a_hi, b_lo[k], b_hi[k]));
    }
    if constexpr (std::is_same_v<Hit, std::uint64_t>) {  // counting: the hits summed, no branch
      unsigned block = 0;
#pragma omp simd reduction(+ : block)
      for (std::size_t k = 0; k < n; ++k) block += ok[k];
      hit += block;
    } else {
      for (std::size_t k = 0; k < n; ++k)
        if (ok[k]) hit(q0 + k);
    }
  }
}

// Calls hit(q) for every region of `other` at sorted position q that intersects region r of
// `self` and is found from r's side (candidates.hpp's walk, blocks of tests as above); with a
// std::uint64_t for `hit`, adds their number to it instead.
template <bool kFromSubscription, class T, class Hit>
void walk(Rule rule, int dims, const Plan<T>& plan, const SortedSet<T, std::uint64_t>& self, std::size_t r,
          const SortedSet<T, std::uint64_t>& other, Hit&& hit) {
  const int skip = run_decides_primary(rule, kFromSubscription) ? plan.k : -1;
  const auto runs = [&](std::size_t first, std::size_t last) {
    switch (rule) {
      case Rule::Closed:
        test_run<Rule::Closed>(dims, skip, self, r, other, first, last, hit);
        break;
      case Rule::HalfOpen:
        test_run<Rule::HalfOpen>(dims, skip, self, r, other, first, last, hit);
        break;
      default:
        test_run<Rule::Ieee1516>(dims, skip, self, r, other, first, last, hit);
    }
  };
  if constexpr (kFromSubscription) {
    for_each_run(plan, self, r, other, plan.side_u2, plan.side_u3, RunFromSubscription<T>{rule}, runs);
  } else {
    for_each_run(plan, self, r, other, plan.side_s2, plan.side_s3, RunFromUpdate<T>{rule}, runs);
  }
}

}  // namespace

template <class T>
std::uint64_t parallel(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int threads, Output mode,
                       std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                       std::vector<std::uint64_t>* per_u) {
  const int workers = effective_threads(threads);
  if (s.size == 0 || u.size == 0) return 0;
  const Plan<T> plan = make_plan(s, u, workers);
  const HostSorted<T> sorted_s = sort_set(s, plan, workers), sorted_u = sort_set(u, plan, workers);
  const SortedSet<T, std::uint64_t> vs = sorted_s.view(), vu = sorted_u.view();
  const int dims = s.dims;
  std::uint64_t total = 0;
  // A sink that throws must not leave the parallel region: the first exception is kept, every
  // thread stops at its next block, and it is rethrown afterwards. Sink calls are serial (the
  // ordered construct) and hold at most 64 Ki pairs (and at most chunk); a thread's buffer holds one
  // block's pairs (256 regions' partners).
  ErrorSlot errors;
  const std::size_t flush_at = std::clamp<std::size_t>(chunk, 1, std::size_t{1} << 16);
#pragma omp parallel num_threads(workers) reduction(+ : total)
  {
    std::vector<Match> buffer;                           // pairs of the thread's current block
    auto emit = [&](std::uint64_t i, std::uint64_t j) {  // counts and per-region counts
      ++total;
      if (mode == Output::PerRegion) {
        std::atomic_ref<std::uint64_t>((*per_s)[i]).fetch_add(1, std::memory_order_relaxed);
        std::atomic_ref<std::uint64_t>((*per_u)[j]).fetch_add(1, std::memory_order_relaxed);
      }
    };
    const auto ns = static_cast<std::int64_t>(s.size), nu = static_cast<std::int64_t>(u.size);
    if (mode == Output::Pairs && sinks.concurrent != nullptr) {
      // Concurrent delivery: each thread hands its own buffer over whenever it fills, no ordering.
      const int me = omp_get_thread_num();
      const auto flush = [&] {
        for (std::size_t at = 0; at < buffer.size() && !errors.failed(); at += flush_at) {
          const std::size_t n = std::min(flush_at, buffer.size() - at);
          errors.guard([&] { (*sinks.concurrent)(me, buffer.data() + at, n); });
        }
        buffer.clear();
      };
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t a = 0; a < ns; ++a) {
        if (errors.failed()) continue;
        const auto r = static_cast<std::size_t>(a);
        const std::uint64_t i = vs.index[r];
        walk<true>(rule, dims, plan, vs, r, vu, [&](std::size_t q) {
          ++total;
          buffer.push_back({i, vu.index[q]});
        });
        if (buffer.size() >= flush_at) flush();
      }
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t b = 0; b < nu; ++b) {
        if (errors.failed()) continue;
        const auto r = static_cast<std::size_t>(b);
        const std::uint64_t j = vu.index[r];
        walk<false>(rule, dims, plan, vu, r, vs, [&](std::size_t q) {
          ++total;
          buffer.push_back({vs.index[q], j});
        });
        if (buffer.size() >= flush_at) flush();
      }
      flush();
    } else if (mode == Output::Pairs) {
      // Pairs in a fixed order whatever the thread count (the same bytes in a pair file): blocks of
      // kBlock sorted subscriptions, then of sorted updates, each block's pairs found by one
      // thread in order and delivered in block order (the ordered construct).
      constexpr std::int64_t kBlock = 256;
      const std::int64_t blocks_s = (ns + kBlock - 1) / kBlock, blocks = blocks_s + (nu + kBlock - 1) / kBlock;
#pragma omp for ordered schedule(dynamic, 1)
      for (std::int64_t blk = 0; blk < blocks; ++blk) {
        if (!errors.failed()) {
          const bool subs = blk < blocks_s;
          const std::int64_t first = (subs ? blk : blk - blocks_s) * kBlock;
          const std::int64_t last = std::min(first + kBlock, subs ? ns : nu);
          for (std::int64_t a = first; a < last; ++a) {
            const auto r = static_cast<std::size_t>(a);
            if (subs) {
              const std::uint64_t i = vs.index[r];
              walk<true>(rule, dims, plan, vs, r, vu, [&](std::size_t q) {
                ++total;
                buffer.push_back({i, vu.index[q]});
              });
            } else {
              const std::uint64_t j = vu.index[r];
              walk<false>(rule, dims, plan, vu, r, vs, [&](std::size_t q) {
                ++total;
                buffer.push_back({vs.index[q], j});
              });
            }
          }
        }
#pragma omp ordered
        {
          for (std::size_t at = 0; at < buffer.size() && !errors.failed(); at += flush_at) {
            const std::size_t n = std::min(flush_at, buffer.size() - at);
            errors.guard([&] { (*sinks.serial)(buffer.data() + at, n); });
          }
          buffer.clear();
        }
      }
    } else {
      // Counts in one dimension: run lengths, no candidate read (candidates.hpp, counts_by_run).
      const bool by_run_s = mode == Output::Count && counts_by_run(rule, dims, true);
      const bool by_run_u = mode == Output::Count && counts_by_run(rule, dims, false);
#pragma omp for schedule(dynamic, 256) nowait
      for (std::int64_t a = 0; a < ns; ++a) {
        if (errors.failed()) continue;
        const auto r = static_cast<std::size_t>(a);
        if (by_run_s) {
          total += run_count_from_subscription(rule, vs, r, vu);
          continue;
        }
        if (mode == Output::Count) {
          walk<true>(rule, dims, plan, vs, r, vu, total);
          continue;
        }
        const std::uint64_t i = vs.index[r];
        walk<true>(rule, dims, plan, vs, r, vu, [&](std::size_t q) { emit(i, vu.index[q]); });
      }
#pragma omp for schedule(dynamic, 256) nowait
      for (std::int64_t b = 0; b < nu; ++b) {
        if (errors.failed()) continue;
        const auto r = static_cast<std::size_t>(b);
        if (by_run_u) {
          total += run_count_from_update(rule, vs, vu, r);
          continue;
        }
        if (mode == Output::Count) {
          walk<false>(rule, dims, plan, vu, r, vs, total);
          continue;
        }
        const std::uint64_t j = vu.index[r];
        walk<false>(rule, dims, plan, vu, r, vs, [&](std::size_t q) { emit(vs.index[q], j); });
      }
    }
  }
  errors.rethrow();
  return total;
}

#define SIMKIT_DDM_PARALLEL(T)                                                                                   \
  template std::uint64_t parallel<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, Output, std::size_t, \
                                     const PairSinks&, std::vector<std::uint64_t>*, std::vector<std::uint64_t>*);
SIMKIT_DDM_PARALLEL(std::uint32_t)
SIMKIT_DDM_PARALLEL(std::uint64_t)
SIMKIT_DDM_PARALLEL(double)
#undef SIMKIT_DDM_PARALLEL

void widen_pairs(const unsigned* s, const unsigned* u, std::size_t n, Match* out) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::int64_t q = 0; q < static_cast<std::int64_t>(n); ++q) {
    out[q] = Match{s[q], u[q]};
  }
}

void widen_pairs_concurrently(const unsigned* s, const unsigned* u, std::size_t n, Match* out,
                              const ConcurrentSink& sink, int threads) {
  constexpr std::size_t kSlice = 65536;
  const auto slices = static_cast<std::int64_t>((n + kSlice - 1) / kSlice);
  ErrorSlot errors;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::int64_t k = 0; k < slices; ++k) {
    if (errors.failed()) continue;
    const std::size_t first = static_cast<std::size_t>(k) * kSlice, count = std::min(kSlice, n - first);
    for (std::size_t q = 0; q < count; ++q) out[first + q] = Match{s[first + q], u[first + q]};
    errors.guard([&] { sink(omp_get_thread_num(), out + first, count); });
  }
  errors.rethrow();
}

}  // namespace simkit::ddm::detail
