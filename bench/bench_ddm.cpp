// ddm benchmarks: the DDM literature's workloads (N extents split evenly into subscriptions and
// updates, space length L = 10^6 per dimension, overlapping degree alpha, `volume` sides
// L (alpha / N)^(1/d), lower bounds uniform in [0, L - side]; doubles), matched with every pair
// enumerated, or counted. Time is the matcher's own (MatchReport::seconds: regions already in
// place, for cuda pairs in device memory); upload and output are counters.
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <tuple>

#include "core/cuda_info.hpp"
#include "core/rng.hpp"
#include "ddm/ddm.hpp"

namespace {

using namespace simkit;
using namespace simkit::ddm;

// Subscriptions get ceil(N/2) regions; region r of set k draws from stream (r, k).
RegionSet<double> workload_set(std::uint64_t n, int dims, double side, int set, std::uint64_t seed) {
  const double length = 1e6;
  RegionSet<double> r;
  r.dims = dims;
  r.ids.resize(n);
  r.lower.resize(n * static_cast<std::size_t>(dims));
  r.upper.resize(n * static_cast<std::size_t>(dims));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    const auto k = static_cast<std::size_t>(i);
    r.ids[k] = k;
    RngStream rng(seed, StreamId::from64(k, static_cast<std::uint32_t>(set)));
    for (int d = 0; d < dims; ++d) {
      const double lo = rng.uniform() * (length - side);
      r.lower[static_cast<std::size_t>(d) * n + k] = lo;
      r.upper[static_cast<std::size_t>(d) * n + k] = lo + side;
    }
  }
  return r;
}

const std::pair<RegionSet<double>, RegionSet<double>>& workload(std::uint64_t n, int dims, double alpha) {
  static std::map<std::tuple<std::uint64_t, int, double>, std::pair<RegionSet<double>, RegionSet<double>>> cache;
  const auto key = std::make_tuple(n, dims, alpha);
  auto it = cache.find(key);
  if (it == cache.end()) {
    cache.clear();  // one large workload at a time
    const double side = 1e6 * std::pow(alpha / static_cast<double>(n), 1.0 / dims);
    it = cache
             .emplace(key, std::make_pair(workload_set((n + 1) / 2, dims, side, 0, 1),
                                          workload_set(n / 2, dims, side, 1, 1)))
             .first;
  }
  return it->second;
}

// Args: backend (2 cpu, 3 cuda), N, dims, alpha, mode (0 pairs, 1 count).
void BM_Ddm(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (backend == Backend::Cuda && !cuda_status().usable) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  const auto n = static_cast<std::uint64_t>(state.range(1));
  const int dims = static_cast<int>(state.range(2));
  const double alpha = static_cast<double>(state.range(3));
  const bool count_only = state.range(4) == 1;
  const auto& [s, u] = workload(n, dims, alpha);
  MatchOptions o;
  o.backend = backend;
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
    ->ArgNames({"backend", "N", "d", "alpha", "count"})
    ->Args({3, 1000000, 1, 100, 0})
    ->Args({3, 1000000, 2, 100, 0})
    ->Args({3, 1000000, 3, 100, 0})
    ->Args({3, 1000000, 2, 100, 1})
    ->Args({2, 1000000, 1, 100, 0})
    ->Args({2, 1000000, 2, 100, 0})
    ->Args({2, 1000000, 3, 100, 0})
    ->Args({2, 1000000, 2, 100, 1})
    ->Args({3, 100000000, 1, 100, 1})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
