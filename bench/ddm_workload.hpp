#pragma once
// The ddm benchmarks' workloads, shared by bench_ddm and bench_ddm_peers so that both match
// exactly the same regions: `simkit ddm generate`'s (docs/ddm.md, "Generated workloads"): N
// extents split into ceil(N/2) subscriptions and floor(N/2) updates, space length L = 10^6 per
// dimension, overlapping degree alpha, `volume` sides L (alpha / N)^(1/d), lower bounds uniform in
// [0, L - side]; doubles.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <variant>

#include "simkit/core/cuda_info.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/generate.hpp"
#include "simkit/ddm/io.hpp"

namespace simkit::ddm {

// The workload of `simkit ddm generate --n N --alpha A --dims D [--moving]` (seed 1, doubles,
// volume sides, uniform lower bounds): ddm::generate itself, cached so that the benchmark cases of
// one workload share it (one large workload at a time).
inline const Regions<double>& generated(std::uint64_t n, int dims, double alpha, bool moving = false) {
  static std::map<std::tuple<std::uint64_t, int, double, bool>, Regions<double>> cache;
  const auto key = std::make_tuple(n, dims, alpha, moving);
  auto it = cache.find(key);
  if (it == cache.end()) {
    cache.clear();
    GenerateOptions options;
    options.n = n;
    options.alpha = alpha;
    options.dims = dims;
    options.side = SideRule::Volume;
    options.seed = 1;
    options.length = 1e6;
    options.moving = moving;
    it = cache.emplace(key, std::get<Regions<double>>(generate(options))).first;
  }
  return it->second;
}

// The same as (subscriptions, updates).
inline std::pair<const RegionSet<double>&, const RegionSet<double>&> workload(std::uint64_t n, int dims, double alpha) {
  const Regions<double>& r = generated(n, dims, alpha);
  return {r.subscriptions, r.updates};
}

// Marks a cuda case skipped (and returns true) when no CUDA device is usable.
inline bool skip_without_cuda(benchmark::State& state, Backend backend) {
  if (backend != Backend::Cuda || cuda_status().usable) return false;
  state.SkipWithError("no usable CUDA device");
  return true;
}

}  // namespace simkit::ddm
