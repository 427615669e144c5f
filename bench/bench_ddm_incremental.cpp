// ddm incremental matching benchmark: bench_ddm's workload (N extents split evenly into
// subscriptions and updates, L = 10^6 per dimension, overlapping degree alpha, sides
// L (alpha / N)^(1/d), doubles) kept matched by an IncrementalMatcher while batches move a share
// of the regions (both sides) by a small random displacement (each bound shifted by up to a tenth
// of the side, staying in [0, L]). Time is the wall time of apply() per batch (checking the
// batch, the prefilter, the two match_pairs calls, the comparison with the old pairs and the
// update of the pair lists); making a batch is not timed. For comparison, counters give one full
// rematch of the final sets with the same backend (match_pairs with every pair delivered to a
// sink that only counts them: a lower bound for computing the delta that way) and the
// construction time. BM_DdmReplay replays a federation's ticks (ddm::replay, as `simkit ddm
// replay` does) on `generate --moving` entities with waypoint mobility: the latency of a tick's batch.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <unordered_set>

#include "core/rng.hpp"
#include "ddm_workload.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/incremental.hpp"
#include "simkit/ddm/replay.hpp"

namespace {

using namespace simkit;
using namespace simkit::ddm;
using Clock = std::chrono::steady_clock;

constexpr double kLength = 1e6;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double side_of(std::uint64_t n, int dims, double alpha) {
  return kLength * std::pow(alpha / static_cast<double>(n), 1.0 / dims);
}

struct Kept {
  std::unique_ptr<IncrementalMatcher<double>> matcher;
  double build_seconds = 0;
};

// One matcher per (backend, N, d, alpha), kept across benchmarks (it drifts with every batch).
Kept& kept(Backend backend, std::uint64_t n, int dims, double alpha) {
  static std::map<std::tuple<Backend, std::uint64_t, int, double>, Kept> cache;
  const auto key = std::make_tuple(backend, n, dims, alpha);
  auto it = cache.find(key);
  if (it == cache.end()) {
    cache.clear();  // one large workload at a time
    MatchOptions o;
    o.backend = backend;
    const auto& [s, u] = workload(n, dims, alpha);
    RegionSet<double> subscriptions = s, updates = u;  // the matcher's own copies: they drift
    const auto start = Clock::now();
    Kept k;
    k.matcher = std::make_unique<IncrementalMatcher<double>>(std::move(subscriptions), std::move(updates), o);
    k.build_seconds = since(start);
    it = cache.emplace(key, std::move(k)).first;
  }
  return it->second;
}

// `count` distinct regions (of both sets together) moved by up to side / 10 per dimension.
std::vector<Change<double>> make_batch(const IncrementalMatcher<double>& m, std::size_t count, double side,
                                       std::mt19937_64& gen) {
  const RegionSet<double>& s = m.subscriptions();
  const RegionSet<double>& u = m.updates();
  const std::size_t total = s.size() + u.size();
  std::uniform_int_distribution<std::size_t> pick(0, total - 1);
  std::uniform_real_distribution<double> shift(-side / 10, side / 10);
  std::unordered_set<std::size_t> chosen;
  std::vector<Change<double>> batch;
  batch.reserve(count);
  while (batch.size() < count) {
    const std::size_t g = pick(gen);
    if (!chosen.insert(g).second) continue;
    const bool sub = g < s.size();
    const RegionSet<double>& r = sub ? s : u;
    const std::size_t i = sub ? g : g - s.size();
    Change<double> c;
    c.kind = Change<double>::Kind::Move;
    c.role = sub ? Role::Subscription : Role::Update;
    c.id = r.ids[i];
    for (int d = 0; d < r.dims; ++d) {
      const double width = r.hi(i, d) - r.lo(i, d);
      const double lo = std::clamp(r.lo(i, d) + shift(gen), 0.0, kLength - width);
      c.lower.push_back(lo);
      c.upper.push_back(lo + width);
    }
    batch.push_back(std::move(c));
  }
  return batch;
}

// Args: backend (2 cpu, 3 cuda), N, dims, alpha, regions moved per batch in per mille of N.
void BM_DdmIncremental(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (skip_without_cuda(state, backend)) return;
  const auto n = static_cast<std::uint64_t>(state.range(1));
  const int dims = static_cast<int>(state.range(2));
  const double alpha = static_cast<double>(state.range(3));
  const auto moved = static_cast<std::size_t>(static_cast<double>(n) * static_cast<double>(state.range(4)) / 1000.0);
  Kept& k = kept(backend, n, dims, alpha);
  IncrementalMatcher<double>& m = *k.matcher;
  std::mt19937_64 gen(42 + static_cast<std::uint64_t>(state.range(4)));
  const double side = side_of(n, dims, alpha);
  double gained = 0, lost = 0, match_seconds = 0, filter_seconds = 0, prepare_seconds = 0, candidates = 0,
         batch_seconds = 0, batches = 0;
  for (auto _ : state) {
    const std::vector<Change<double>> batch = make_batch(m, moved, side, gen);
    const auto start = Clock::now();
    const Delta delta = m.apply(batch);
    const double seconds = since(start);
    state.SetIterationTime(seconds);
    batch_seconds += seconds;
    gained += static_cast<double>(delta.gained.size());
    lost += static_cast<double>(delta.lost.size());
    const ApplyReport& r = m.last_report();
    match_seconds += r.match_seconds;
    filter_seconds += r.filter_seconds;
    prepare_seconds += r.prepare_seconds;
    candidates += static_cast<double>(r.candidates_s + r.candidates_u);
    ++batches;
  }
  // One full rematch of the final sets, with the same backend.
  MatchOptions o = m.options();
  std::uint64_t delivered = 0;
  const auto start = Clock::now();
  const MatchReport full = match_pairs(view(m.subscriptions()), view(m.updates()), o,
                                       [&](const Match*, std::size_t count) { delivered += count; });
  const double full_seconds = since(start);
  if (full.pairs != m.pairs() || delivered != full.pairs)
    state.SkipWithError("full rematch disagrees with the matcher");
  state.counters["moved"] = static_cast<double>(moved);
  state.counters["gained"] = gained / batches;
  state.counters["lost"] = lost / batches;
  state.counters["match_s"] = match_seconds / batches;
  state.counters["filter_s"] = filter_seconds / batches;
  state.counters["prepare_s"] = prepare_seconds / batches;
  state.counters["candidates"] = candidates / batches;
  state.counters["pairs"] = static_cast<double>(m.pairs());
  state.counters["full_rematch_s"] = full_seconds;
  state.counters["full_match_s"] = full.seconds;
  state.counters["speedup"] = full_seconds / (batch_seconds / batches);
  state.counters["build_s"] = k.build_seconds;
  state.SetLabel(std::string(to_string(full.algorithm)) + " " + full.device);
}
BENCHMARK(BM_DdmIncremental)
    ->ArgNames({"backend", "N", "d", "alpha", "permille"})
    ->Args({2, 1000000, 2, 100, 1})
    ->Args({2, 1000000, 2, 100, 10})
    ->Args({3, 1000000, 2, 100, 1})
    ->Args({3, 1000000, 2, 100, 10})
    ->UseManualTime()
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

// `simkit ddm replay --mobility waypoint --ticks 200` on `generate --moving`'s workload: one replay per iteration
// (the matcher built afresh, not timed), its mean tick (apply() of the batch) as the manual time.
// Args: backend (2 cpu, 3 cuda), N, dims, alpha, entities moved per tick in per mille.
void BM_DdmReplay(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (skip_without_cuda(state, backend)) return;
  // `simkit ddm generate --moving`: N/2 entities, each an update and its area of interest.
  const Regions<double>& regions =
      generated(static_cast<std::uint64_t>(state.range(1)), static_cast<int>(state.range(2)),
                static_cast<double>(state.range(3)), true);
  ReplayOptions options;
  options.ticks = 200;
  options.mobility = Mobility::Waypoint;
  options.move_fraction = static_cast<double>(state.range(4)) / 1000.0;
  MatchOptions o;
  o.backend = backend;
  ReplayResult r;
  for (auto _ : state) {
    r = replay(regions, options, o);
    state.SetIterationTime(r.mean_seconds);
  }
  state.counters["p50_s"] = r.p50_seconds;
  state.counters["p99_s"] = r.p99_seconds;
  state.counters["max_s"] = r.max_seconds;
  state.counters["ticks_per_s"] = r.ticks_per_second;
  state.counters["moves"] = static_cast<double>(r.moves_per_tick);
  state.counters["pairs"] = static_cast<double>(r.final_pairs);
  state.counters["build_s"] = r.build_seconds;
  state.SetLabel(device_description(resolve_backend(backend, o.device), o.device, o.threads));
}
BENCHMARK(BM_DdmReplay)
    ->ArgNames({"backend", "N", "d", "alpha", "permille"})
    ->Args({2, 1000000, 2, 100, 1})
    ->Args({2, 1000000, 2, 100, 10})
    ->Args({3, 1000000, 2, 100, 1})
    ->Args({3, 1000000, 2, 100, 10})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
