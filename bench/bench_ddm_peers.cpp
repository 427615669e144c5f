// ddm peers: two established libraries matched on bench_ddm's workloads (bench/ddm_workload.hpp:
// the same regions, same seed), beside simkit's cpu matcher in the same binary, so that every run
// compares them side by side. Built only when CGAL and Boost are installed (bench/CMakeLists.txt).
//
//   BM_BoostRtree   Boost.Geometry's R-tree: bgi::rtree<pair<box, position>, quadratic<16>>
//                   bulk-loaded from the updates with the packing constructor (so the split
//                   algorithm is never used), queried with every subscription through
//                   bgi::intersects, counting; 1 thread or all (OpenMP over subscriptions,
//                   per-thread counts). Time = construction + queries; build_s and query_s apart.
//   BM_CgalBoxIntersection  CGAL's box_intersection_d (two-sets version, BIPARTITE, sequential:
//                   CGAL's parallel mode needs TBB) on Box_with_info_d<double, d, position>,
//                   counting in the callback (store 0) or push_back of every pair into a
//                   std::vector<Match> grown from empty (store 1). Its inputs are permuted in
//                   place, so each iteration gets a fresh copy, made outside the timed part.
//   BM_SimkitCpu    simkit's parallel cpu matcher (Algorithm::Parallel, all threads), Rule::Closed:
//                   count_pairs (store 0) or match_pairs appending to a std::vector<Match> (store 1).
//
// Overlap semantics (checked, not assumed: counter touching_overlap is 1 when the peer reports the
// pair [0,1]^d / [1,2]x[0,1]^(d-1), i.e. closed ranges, and 0 for half-open ones):
//   Boost.Geometry intersects(box, box) is closed (disjoint only when max < min in some
//     dimension): its count is compared with simkit's count_pairs under Rule::Closed.
//   CGAL box_intersection_d's default Topology is CLOSED (lo <= hi on both sides; compared with
//     Rule::Closed); HALF_OPEN (lo < hi, arg closed:0) is compared with Rule::HalfOpen.
// A peer's count that differs from simkit's (counter simkit_count) is reported as an error.
// With continuous random bounds the three rules give the same count on these workloads.
//
// Time is wall clock around the matching only (regions already converted to the peer's types).
// Usage: build/<dir>/bench/bench_ddm_peers [--benchmark_filter='/d:2/']
#include <benchmark/benchmark.h>
#include <omp.h>

#include <CGAL/box_intersection_d.h>

#include <boost/geometry/algorithms/intersects.hpp>
#include <boost/geometry/core/cs.hpp>
#include <boost/geometry/geometries/box.hpp>
#include <boost/geometry/geometries/point.hpp>
#include <boost/geometry/index/rtree.hpp>
#include <boost/iterator/function_output_iterator.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "simkit/ddm/ddm.hpp"
#include "ddm_workload.hpp"

namespace {

using namespace simkit;
using namespace simkit::ddm;
namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// simkit's count on the same workload (cpu, all threads), once per workload and rule.
std::uint64_t simkit_count(std::uint64_t n, int dims, double alpha, Rule rule) {
  static std::map<std::tuple<std::uint64_t, int, double, Rule>, std::uint64_t> cache;
  const auto key = std::make_tuple(n, dims, alpha, rule);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const auto& [s, u] = workload(n, dims, alpha);
    MatchOptions o;
    o.rule = rule;
    o.backend = Backend::Cpu;
    o.algorithm = Algorithm::Parallel;
    it = cache.emplace(key, count_pairs(view(s), view(u), o).pairs).first;
  }
  return it->second;
}

// Two regions that touch in dimension 0 only: [0,1]^d and [1,2] x [0,1]^(d-1).
RegionSet<double> touching_region(int dims, double lower0) {
  RegionSet<double> r;
  r.dims = dims;
  r.ids = {0};
  r.lower.assign(static_cast<std::size_t>(dims), 0.0);
  r.upper.assign(static_cast<std::size_t>(dims), 1.0);
  r.lower[0] = lower0;
  r.upper[0] = lower0 + 1.0;
  return r;
}

void common_counters(benchmark::State& state, std::uint64_t n, int dims, double alpha, std::uint64_t pairs,
                     double seconds) {
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["pairs_per_s"] = static_cast<double>(pairs) / seconds;
  state.counters["regions_per_s"] = static_cast<double>(n) / seconds;
  state.counters["expected_pairs"] = std::pow(2.0, dims - 2) * alpha * static_cast<double>(n);
}

void check_count(benchmark::State& state, std::uint64_t pairs, std::uint64_t reference, Rule rule) {
  state.counters["simkit_count"] = static_cast<double>(reference);
  if (pairs != reference) {
    state.SkipWithError(("count " + std::to_string(pairs) + " differs from simkit's " + std::to_string(reference) +
                         " under rule " + std::string(to_string(rule)))
                            .c_str());
  }
}

// ---------------------------------------------------------------- Boost.Geometry R-tree

template <int D>
using BgPoint = bg::model::point<double, D, bg::cs::cartesian>;
template <int D>
using BgBox = bg::model::box<BgPoint<D>>;
template <int D>
using BgValue = std::pair<BgBox<D>, std::uint32_t>;
template <int D>
using BgTree = bgi::rtree<BgValue<D>, bgi::quadratic<16>>;

template <int D>
BgBox<D> bg_box(const RegionSet<double>& r, std::size_t i) {
  BgBox<D> b;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((bg::set<bg::min_corner, K>(b, r.lo(i, static_cast<int>(K))),
      bg::set<bg::max_corner, K>(b, r.hi(i, static_cast<int>(K)))),
     ...);
  }
  (std::make_index_sequence<D>{});
  return b;
}

// Counts, for every query box, the values of the tree it intersects.
template <int D>
std::uint64_t bg_count(const BgTree<D>& tree, const std::vector<BgBox<D>>& queries, int threads) {
  std::uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    std::uint64_t mine = 0;  // per-thread count
    auto counter = boost::make_function_output_iterator([&mine](const BgValue<D>&) { ++mine; });
#pragma omp for schedule(dynamic, 1024) nowait
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(queries.size()); ++i) {
      tree.query(bgi::intersects(queries[static_cast<std::size_t>(i)]), counter);
    }
    total += mine;
  }
  return total;
}

template <int D>
void boost_rtree(benchmark::State& state, std::uint64_t n, double alpha, int threads) {
  const auto& [s, u] = workload(n, D, alpha);
  std::vector<BgValue<D>> values(u.size());
  for (std::size_t j = 0; j < u.size(); ++j) values[j] = {bg_box<D>(u, j), static_cast<std::uint32_t>(j)};
  std::vector<BgBox<D>> queries(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) queries[i] = bg_box<D>(s, i);

  std::uint64_t pairs = 0;
  double build = 0, query = 0, last = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const BgTree<D> tree(values.begin(), values.end());  // packing (bulk-loading) constructor
    const double b = seconds_since(t0);
    const auto t1 = Clock::now();
    pairs = bg_count<D>(tree, queries, threads);
    const double q = seconds_since(t1);
    build += b;
    query += q;
    last = b + q;
    state.SetIterationTime(last);
  }
  const auto iterations = static_cast<double>(state.iterations());
  common_counters(state, n, D, alpha, pairs, last);
  state.counters["build_s"] = build / iterations;
  state.counters["query_s"] = query / iterations;
  state.counters["threads"] = threads;

  // Semantics probe: one box in the tree, one query touching it.
  const auto a = touching_region(D, 0.0), c = touching_region(D, 1.0);
  std::vector<BgValue<D>> one = {{bg_box<D>(a, 0), 0u}};
  const BgTree<D> probe(one.begin(), one.end());
  state.counters["touching_overlap"] = static_cast<double>(bg_count<D>(probe, {bg_box<D>(c, 0)}, 1));
  check_count(state, pairs, simkit_count(n, D, alpha, Rule::Closed), Rule::Closed);
}

// Args: N, d, alpha, threads (0 = all).
void BM_BoostRtree(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const double alpha = static_cast<double>(state.range(2));
  const int threads = state.range(3) == 0 ? omp_get_max_threads() : static_cast<int>(state.range(3));
  switch (state.range(1)) {
    case 1:
      boost_rtree<1>(state, n, alpha, threads);
      break;
    case 2:
      boost_rtree<2>(state, n, alpha, threads);
      break;
    case 3:
      boost_rtree<3>(state, n, alpha, threads);
      break;
    default:
      state.SkipWithError("d must be 1, 2 or 3");
  }
  state.SetLabel("boost.geometry rtree quadratic<16> packed, closed");
}

// ---------------------------------------------------------------- CGAL box_intersection_d

template <int D>
using CgalBox = CGAL::Box_intersection_d::Box_with_info_d<double, D, std::uint32_t>;  // ids: ID_EXPLICIT

template <int D>
std::vector<CgalBox<D>> cgal_boxes(const RegionSet<double>& r) {
  std::vector<CgalBox<D>> boxes;
  boxes.reserve(r.size());
  double lo[D], hi[D];
  for (std::size_t i = 0; i < r.size(); ++i) {
    for (int d = 0; d < D; ++d) {
      lo[d] = r.lo(i, d);
      hi[d] = r.hi(i, d);
    }
    boxes.emplace_back(lo, hi, static_cast<std::uint32_t>(i));
  }
  return boxes;
}

// Counts (sink == nullptr) or stores the pairs (subscription position, update position).
template <int D>
std::uint64_t cgal_match(std::vector<CgalBox<D>>& s, std::vector<CgalBox<D>>& u, bool closed,
                         std::vector<Match>* sink) {
  const auto topology = closed ? CGAL::Box_intersection_d::CLOSED : CGAL::Box_intersection_d::HALF_OPEN;
  std::uint64_t count = 0;
  if (sink == nullptr) {
    CGAL::box_intersection_d(
        s.begin(), s.end(), u.begin(), u.end(), [&count](const CgalBox<D>&, const CgalBox<D>&) { ++count; },
        std::ptrdiff_t{10}, topology);
  } else {
    // Callback arguments: a box of the first sequence, then one of the second.
    CGAL::box_intersection_d(
        s.begin(), s.end(), u.begin(), u.end(),
        [sink](const CgalBox<D>& a, const CgalBox<D>& b) {
          sink->push_back(Match{a.info(), b.info()});
        },
        std::ptrdiff_t{10}, topology);
    count = sink->size();
  }
  return count;
}

template <int D>
void cgal_box_intersection(benchmark::State& state, std::uint64_t n, double alpha, bool store, bool closed) {
  const auto& [s, u] = workload(n, D, alpha);
  const auto s_boxes = cgal_boxes<D>(s), u_boxes = cgal_boxes<D>(u);
  std::uint64_t pairs = 0;
  double last = 0;
  bool pairs_ok = true;
  for (auto _ : state) {
    auto s_work = s_boxes, u_work = u_boxes;  // permuted in place by CGAL: a fresh copy each time
    std::vector<Match> stored;
    const auto t0 = Clock::now();
    pairs = cgal_match<D>(s_work, u_work, closed, store ? &stored : nullptr);
    last = seconds_since(t0);
    state.SetIterationTime(last);
    if (store && !stored.empty()) {  // spot check: the first pair really intersects
      const Match m = stored.front();
      for (int d = 0; d < D; ++d) {
        pairs_ok = pairs_ok && s.lo(m.s, d) <= u.hi(m.u, d) && u.lo(m.u, d) <= s.hi(m.s, d);
      }
    }
  }
  common_counters(state, n, D, alpha, pairs, last);
  const auto a = touching_region(D, 0.0), c = touching_region(D, 1.0);
  auto pa = cgal_boxes<D>(a), pc = cgal_boxes<D>(c);
  state.counters["touching_overlap"] = static_cast<double>(cgal_match<D>(pa, pc, closed, nullptr));
  if (!pairs_ok) state.SkipWithError("a stored pair does not intersect");
  const Rule rule = closed ? Rule::Closed : Rule::HalfOpen;
  check_count(state, pairs, simkit_count(n, D, alpha, rule), rule);
}

// Args: N, d, alpha, store (0 count, 1 pairs into a vector), closed (1 CLOSED, 0 HALF_OPEN).
void BM_CgalBoxIntersection(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const double alpha = static_cast<double>(state.range(2));
  const bool store = state.range(3) == 1, closed = state.range(4) == 1;
  switch (state.range(1)) {
    case 1:
      cgal_box_intersection<1>(state, n, alpha, store, closed);
      break;
    case 2:
      cgal_box_intersection<2>(state, n, alpha, store, closed);
      break;
    case 3:
      cgal_box_intersection<3>(state, n, alpha, store, closed);
      break;
    default:
      state.SkipWithError("d must be 1, 2 or 3");
  }
  state.SetLabel(std::string("cgal box_intersection_d sequential, ") + (closed ? "closed" : "half-open"));
}

// ---------------------------------------------------------------- simkit

// Args: N, d, alpha, store (0 count_pairs, 1 match_pairs into a vector), threads (0 = all).
void BM_SimkitCpu(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const int dims = static_cast<int>(state.range(1));
  const double alpha = static_cast<double>(state.range(2));
  const bool store = state.range(3) == 1;
  const auto& [s, u] = workload(n, dims, alpha);
  MatchOptions o;
  o.rule = Rule::Closed;
  o.backend = Backend::Cpu;
  o.algorithm = Algorithm::Parallel;
  o.threads = static_cast<int>(state.range(4));
  MatchReport r;
  std::uint64_t pairs = 0;
  double last = 0;
  for (auto _ : state) {
    std::vector<Match> stored;
    const auto t0 = Clock::now();
    if (store) {
      r = match_pairs(view(s), view(u), o,
                      [&stored](const Match* p, std::size_t k) { stored.insert(stored.end(), p, p + k); });
      pairs = stored.size();
    } else {
      r = count_pairs(view(s), view(u), o);
      pairs = r.pairs;
    }
    last = seconds_since(t0);
    state.SetIterationTime(last);
  }
  common_counters(state, n, dims, alpha, pairs, last);
  state.counters["matcher_s"] = r.seconds;
  state.counters["threads"] = o.threads == 0 ? omp_get_max_threads() : o.threads;
  MatchOptions probe = o;
  probe.threads = 1;
  const auto a = touching_region(dims, 0.0), c = touching_region(dims, 1.0);
  state.counters["touching_overlap"] = static_cast<double>(count_pairs(view(c), view(a), probe).pairs);
  check_count(state, pairs, simkit_count(n, dims, alpha, Rule::Closed), Rule::Closed);
  state.SetLabel(std::string(to_string(r.algorithm)) + ", closed");
}

// d-major order, so that one workload serves all peers before the next is generated.
void register_cases() {
  constexpr std::int64_t n = 1000000, alpha = 100;
  for (std::int64_t d = 1; d <= 3; ++d) {
    auto tune = [](benchmark::internal::Benchmark* b) {
      b->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
    };
    tune(benchmark::RegisterBenchmark("BM_BoostRtree", BM_BoostRtree)
             ->ArgNames({"N", "d", "alpha", "threads"})
             ->Args({n, d, alpha, 1})
             ->Args({n, d, alpha, 0}));
    auto* cgal = benchmark::RegisterBenchmark("BM_CgalBoxIntersection", BM_CgalBoxIntersection)
                     ->ArgNames({"N", "d", "alpha", "store", "closed"})
                     ->Args({n, d, alpha, 0, 1})
                     ->Args({n, d, alpha, 1, 1});
    if (d == 2) cgal->Args({n, d, alpha, 0, 0});
    tune(cgal);
    tune(benchmark::RegisterBenchmark("BM_SimkitCpu", BM_SimkitCpu)
             ->ArgNames({"N", "d", "alpha", "store", "threads"})
             ->Args({n, d, alpha, 0, 0})
             ->Args({n, d, alpha, 1, 0}));
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
