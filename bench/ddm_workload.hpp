#pragma once
// The ddm benchmarks' workloads, shared by bench_ddm and bench_ddm_peers so that both match
// exactly the same regions: N extents split evenly into subscriptions and updates, space length
// L = 10^6 per dimension, overlapping degree alpha, `volume` sides L (alpha / N)^(1/d), lower
// bounds uniform in [0, L - side]; doubles. Bench-only (not part of the ddm library).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "simkit/core/cuda_info.hpp"
#include "core/rng.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

// Subscriptions get ceil(N/2) regions; region r of set k draws from stream (r, k).
inline RegionSet<double> workload_set(std::uint64_t n, int dims, double side, int set, std::uint64_t seed) {
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

inline const std::pair<RegionSet<double>, RegionSet<double>>& workload(std::uint64_t n, int dims, double alpha) {
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

// Marks a cuda case skipped (and returns true) when no CUDA device is usable.
inline bool skip_without_cuda(benchmark::State& state, Backend backend) {
  if (backend != Backend::Cuda || cuda_status().usable) return false;
  state.SkipWithError("no usable CUDA device");
  return true;
}

}  // namespace simkit::ddm
