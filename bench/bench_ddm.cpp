// ddm benchmarks: the DDM literature's workloads (N extents split evenly into subscriptions and
// updates, space length L = 10^6 per dimension, overlapping degree alpha, `volume` sides
// L (alpha / N)^(1/d), lower bounds uniform in [0, L - side]; doubles), matched with every pair
// enumerated, or counted. Time is the matcher's own (MatchReport::seconds: regions already in
// place, for cuda pairs in device memory); upload and output are counters.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "core/rng.hpp"
#include "ddm_workload.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/ddm/ddm.hpp"

namespace {

using namespace simkit;
using namespace simkit::ddm;

// Args: backend (1 reference, 2 cpu, 3 cuda), N, dims, alpha, mode (0 pairs, 1 count),
// algorithm (an Algorithm value; 0 = Auto: the backend's own).
void BM_Ddm(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (skip_without_cuda(state, backend)) return;
  const auto n = static_cast<std::uint64_t>(state.range(1));
  const int dims = static_cast<int>(state.range(2));
  const double alpha = static_cast<double>(state.range(3));
  const bool count_only = state.range(4) == 1;
  const auto& [s, u] = workload(n, dims, alpha);
  MatchOptions o;
  o.backend = backend;
  o.algorithm = static_cast<Algorithm>(state.range(5));
  o.chunk_pairs = std::size_t{1} << 30;  // one window: every pair in device memory at once
  MatchReport r;
  std::uint64_t delivered = 0;
  for (auto _ : state) {
    delivered = 0;
    r = count_only ? count_pairs(view(s), view(u), o)
                   : match_pairs(view(s), view(u), o, [&](const Match*, std::size_t k) { delivered += k; });
    state.SetIterationTime(r.seconds);
  }
  state.counters["pairs"] = static_cast<double>(r.pairs);
  state.counters["pairs_per_s"] = static_cast<double>(r.pairs) / r.seconds;
  state.counters["regions_per_s"] = static_cast<double>(n) / r.seconds;
  state.counters["upload_s"] = r.upload_seconds;
  state.counters["output_s"] = r.output_seconds;
  state.counters["expected_pairs"] = std::pow(2.0, dims - 2) * alpha * static_cast<double>(n);
  if (!count_only && delivered != r.pairs) state.SkipWithError("sink did not receive every pair");
  state.SetLabel(std::string(to_string(r.algorithm)) + " " + r.device);
}
BENCHMARK(BM_Ddm)
    ->ArgNames({"backend", "N", "d", "alpha", "count", "algorithm"})
    ->Args({3, 1000000, 1, 100, 0, 0})
    ->Args({3, 1000000, 2, 100, 0, 0})
    ->Args({3, 1000000, 3, 100, 0, 0})
    ->Args({3, 1000000, 2, 100, 1, 0})
    ->Args({2, 1000000, 1, 100, 0, 0})
    ->Args({2, 1000000, 2, 100, 0, 0})
    ->Args({2, 1000000, 3, 100, 0, 0})
    ->Args({2, 1000000, 2, 100, 1, 0})
    ->Args({3, 100000000, 1, 100, 1, 0})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
// The serial reference backend's fastest matcher (sort-based matching over dimension 0) for the
// ratios in docs/performance.md; one iteration (d = 2 examines about 5e9 candidates).
BENCHMARK(BM_Ddm)
    ->ArgNames({"backend", "N", "d", "alpha", "count", "algorithm"})
    ->Args({1, 1000000, 1, 100, 0, static_cast<std::int64_t>(Algorithm::Sbm)})
    ->Args({1, 1000000, 2, 100, 1, static_cast<std::int64_t>(Algorithm::Sbm)})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Storing every pair on the host: the d = 2 case's 10^8 pairs appended to vectors, either one
// vector through the serial sink (the callback runs on one thread at a time) or one vector per
// worker through match_pairs_concurrent. Time is the whole call's wall time (matching, and on cuda
// the copies back), with the vectors' growth: what a caller that stores the pairs waits for.
// Args: backend (2 cpu, 3 cuda), concurrent (0 serial sink, 1 per-thread vectors, 2 per-thread
// vectors reserved from a count_pairs call first, timed with the rest: a caller that knows roughly
// how many pairs come avoids the vectors' regrowth, which costs more than the matching).
void BM_DdmStorePairs(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (skip_without_cuda(state, backend)) return;
  const bool concurrent = state.range(1) >= 1;
  const auto& [s, u] = workload(1000000, 2, 100);
  MatchOptions o;
  o.backend = backend;
  const int workers = match_workers(o);
  MatchReport r;
  std::size_t stored = 0;
  for (auto _ : state) {
    std::vector<std::vector<Match>> per_worker(static_cast<std::size_t>(workers));
    std::vector<Match> one;
    if (state.range(1) == 3) {
      const auto expected = static_cast<std::uint64_t>(1.01e8);  // 2^(2-2) x 100 x 10^6, and 1 % more
      for (auto& v : per_worker) v.reserve(2 * expected / static_cast<std::uint64_t>(workers));  // untouched: free
    }
    const auto start = std::chrono::steady_clock::now();
    if (state.range(1) == 2) {
      const std::uint64_t expected = count_pairs(view(s), view(u), o).pairs;
      for (auto& v : per_worker) v.reserve(2 * expected / static_cast<std::uint64_t>(workers));  // untouched: free
    }
    if (concurrent) {
      r = match_pairs_concurrent(view(s), view(u), o, [&](int w, const Match* m, std::size_t k) {
        auto& v = per_worker[static_cast<std::size_t>(w)];
        v.insert(v.end(), m, m + k);
      });
    } else {
      r = match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t k) { one.insert(one.end(), m, m + k); });
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    stored = one.size();
    for (const auto& v : per_worker) stored += v.size();
  }
  if (stored != r.pairs) state.SkipWithError("not every pair was stored");
  state.counters["pairs"] = static_cast<double>(r.pairs);
  state.counters["workers"] = concurrent ? workers : 1;
  state.counters["match_s"] = r.seconds;
  state.SetLabel(std::string(to_string(r.algorithm)) + " " + r.device);
}
BENCHMARK(BM_DdmStorePairs)
    ->ArgNames({"backend", "concurrent"})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Args({2, 2})
    ->Args({2, 3})
    ->Args({3, 0})
    ->Args({3, 1})
    ->Args({3, 2})
    ->Args({3, 3})
    ->UseManualTime()
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
