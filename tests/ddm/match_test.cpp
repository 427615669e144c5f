// Every ddm algorithm, on every backend, against the oracle written in the test (one suite
// parameterised over the algorithms: brute force, sbm, interval tree and grid on the reference
// backend, the parallel matcher on cpu, the GPU and bit-matrix matchers on cuda, which skip with
// the reason without a usable device): random inputs in d = 1..4 under each overlap rule, integer
// coordinates on a small range (many ties, zero-length ranges), doubles, 64-bit bounds above 2^53,
// small regions in a large space, empty sets, one region, all-overlapping sets, and pair outputs
// in many windows and staging pieces (chunk sizes far below the pair count).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>

#include "simkit/ddm/ddm.hpp"
#if SIMKIT_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#include "ddm/model.hpp"
#include "ddm/regions.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

using test::brute_pairs;
using test::random_set;
using PairList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

using test::host_runs;
using Matcher = test::Run;

// Runs all three outputs of one algorithm and checks them against the oracle's pair list.
template <class T>
void expect_matches(const RegionSet<T>& s, const RegionSet<T>& u, Rule rule, const Matcher& run, std::size_t chunk,
                    int threads, const std::string& what) {
  SCOPED_TRACE(what + " algorithm " + std::string(to_string(run.algorithm)) + " rule " + std::string(to_string(rule)));
  const PairList expected = brute_pairs(s, u, rule);
  MatchOptions o;
  o.rule = rule;
  o.algorithm = run.algorithm;
  o.backend = run.backend;
  o.chunk_pairs = chunk;
  o.threads = threads;
  PairList got;
  std::size_t largest_chunk = 0;
  const MatchReport r = match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t n) {
    largest_chunk = std::max(largest_chunk, n);
    for (std::size_t k = 0; k < n; ++k) got.push_back({m[k].s, m[k].u});
  });
  std::sort(got.begin(), got.end());
  EXPECT_EQ(r.pairs, expected.size());
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "pair lists differ";
  EXPECT_LE(largest_chunk, chunk);
  test::expect_counts(s, u, o, expected);

  // Concurrent delivery: the same pairs; a worker's calls never overlap; chunks bounded.
  const int workers = match_workers(o);
  std::vector<PairList> per_worker(static_cast<std::size_t>(workers));
  std::vector<std::atomic<int>> busy(static_cast<std::size_t>(workers));
  std::atomic<std::size_t> bad_worker{0}, overlapping{0}, too_big{0};
  const MatchReport rc = match_pairs_concurrent(view(s), view(u), o, [&](int w, const Match* m, std::size_t n) {
    if (w < 0 || w >= workers) {
      ++bad_worker;
      return;
    }
    const auto k = static_cast<std::size_t>(w);
    if (busy[k].exchange(1) != 0) ++overlapping;
    if (n > std::min<std::size_t>(chunk, 65536)) ++too_big;
    for (std::size_t q = 0; q < n; ++q) per_worker[k].push_back({m[q].s, m[q].u});
    busy[k].store(0);
  });
  PairList concurrent;
  for (const PairList& part : per_worker) concurrent.insert(concurrent.end(), part.begin(), part.end());
  std::sort(concurrent.begin(), concurrent.end());
  EXPECT_EQ(rc.pairs, expected.size());
  EXPECT_TRUE(concurrent == expected) << "concurrent pair lists differ";
  EXPECT_EQ(bad_worker.load(), 0u);
  EXPECT_EQ(overlapping.load(), 0u);
  EXPECT_EQ(too_big.load(), 0u);
  if (run.backend == Backend::Reference) {
    EXPECT_EQ(workers, 1);
  }

  // Pairs left in device memory: cuda only.
  const DeviceSink to_host = [&](const std::uint32_t* ds, const std::uint32_t* du, std::size_t n, void*) {
#if SIMKIT_HAVE_CUDA
    std::vector<std::uint32_t> hs(n), hu(n);
    ASSERT_EQ(cudaMemcpy(hs.data(), ds, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(hu.data(), du, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_LE(n, chunk);
    for (std::size_t q = 0; q < n; ++q) got.push_back({hs[q], hu[q]});
#else
    (void)ds, (void)du, (void)n;
#endif
  };
  got.clear();
  if (run.backend == Backend::Cuda) {
    EXPECT_EQ(match_pairs_on_device(view(s), view(u), o, to_host).pairs, expected.size());
    std::sort(got.begin(), got.end());
    EXPECT_TRUE(got == expected) << "device pair lists differ";
  } else {
    EXPECT_THROW(match_pairs_on_device(view(s), view(u), o, to_host), UserError);
  }
}

// Every algorithm with its backend: the parameter of the suite.
std::vector<Matcher> every_run() {
  std::vector<Matcher> runs = host_runs();
  runs.push_back({Algorithm::Gpu, Backend::Cuda});
  runs.push_back({Algorithm::BitMatrix, Backend::Cuda});
  return runs;
}

class DdmAlgorithm : public testing::TestWithParam<Matcher> {
 protected:
  void SetUp() override {
    if (GetParam().backend == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
  // Random sets of up to `most` regions in d = 1..4, each rule, random chunk sizes.
  template <class T>
  void random_cases(T base, std::uint64_t span, int trials, std::size_t most = 120) {
    std::mt19937_64 gen(20261122 + span);
    for (int trial = 0; trial < trials; ++trial) {
      const int dims = 1 + trial % 4;
      const std::size_t ns = 1 + gen() % most, nu = 1 + gen() % most;
      const RegionSet<T> s = random_set<T>(gen, ns, dims, base, span);
      const RegionSet<T> u = random_set<T>(gen, nu, dims, base, span, 5, 1000000);
      for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
        expect_matches(s, u, rule, GetParam(), 1 + gen() % 50, 1 + trial % 3, "trial " + std::to_string(trial));
    }
  }
};

TEST_P(DdmAlgorithm, IntegerTiesU32) { random_cases<std::uint32_t>(0u, 12, 24); }
TEST_P(DdmAlgorithm, IntegerTiesU64Above2To53) { random_cases<std::uint64_t>((std::uint64_t{1} << 60) + 3, 20, 24); }
TEST_P(DdmAlgorithm, Doubles) { random_cases<double>(-7.25, 40, 24); }
TEST_P(DdmAlgorithm, WideRangesU64) { random_cases<std::uint64_t>(0, 1u << 20, 12); }
TEST_P(DdmAlgorithm, LargerSets) { random_cases<std::uint32_t>(0u, 30, 8, 300); }

// Small regions in a large space (the literature's workloads): the sort-based matchers cut the
// secondary dimension into many strips; integer bounds keep ties at strip edges; pairs come in
// windows of 333.
TEST_P(DdmAlgorithm, SmallRegionsManyStripsAndWindows) {
  std::mt19937_64 gen(77);
  for (int dims : {1, 2, 3}) {
    RegionSet<std::uint64_t> s = random_set<std::uint64_t>(gen, 1500, dims, 0, 4000, 9);
    RegionSet<std::uint64_t> u = random_set<std::uint64_t>(gen, 1300, dims, 0, 4000, 11, 50000);
    for (RegionSet<std::uint64_t>* r : {&s, &u})
      for (std::size_t k = 0; k < r->lower.size(); ++k) r->upper[k] = std::min(r->upper[k], r->lower[k] + 60 + k % 7);
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
      expect_matches(s, u, rule, GetParam(), 333, 4, "dims " + std::to_string(dims));
  }
}

// 2^53 + 1 is not a double: a matcher that went through double would see [2^53, 2^53 + 1) and
// [2^53 + 1, 2^53 + 2) as overlapping under half-open.
TEST_P(DdmAlgorithm, SixtyFourBitBoundsAreNotRounded) {
  const std::uint64_t big = std::uint64_t{1} << 53;
  RegionSet<std::uint64_t> s{1, {10}, {big}, {big + 1}}, u{1, {20}, {big + 1}, {big + 2}};
  MatchOptions o;
  o.rule = Rule::HalfOpen;
  o.algorithm = GetParam().algorithm;
  o.backend = GetParam().backend;
  EXPECT_EQ(count_pairs(view(s), view(u), o).pairs, 0u);
  o.rule = Rule::Closed;
  EXPECT_EQ(count_pairs(view(s), view(u), o).pairs, 1u);
}

TEST_P(DdmAlgorithm, EdgeCases) {
  std::mt19937_64 gen(5);
  const RegionSet<std::uint32_t> empty{2, {}, {}, {}};
  const RegionSet<std::uint32_t> some = random_set<std::uint32_t>(gen, 30, 2, 0, 10);
  const RegionSet<std::uint32_t> one = random_set<std::uint32_t>(gen, 1, 2, 0, 10, 0, 500);
  // All overlapping: every range [0, 100] (and equal lowers).
  RegionSet<std::uint32_t> all_s{2, {}, {}, {}}, all_u{2, {}, {}, {}};
  for (std::uint64_t i = 0; i < 40; ++i) all_s.ids.push_back(i), all_u.ids.push_back(i);
  all_s.lower.assign(80, 0), all_s.upper.assign(80, 100), all_u.lower.assign(80, 0), all_u.upper.assign(80, 100);
  for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
    expect_matches(empty, some, rule, GetParam(), 7, 2, "empty S");
    expect_matches(some, empty, rule, GetParam(), 7, 2, "empty U");
    expect_matches(one, some, rule, GetParam(), 7, 2, "one S");
    expect_matches(some, one, rule, GetParam(), 7, 2, "one U");
    expect_matches(all_s, all_u, rule, GetParam(), 64, 3, "all overlapping");
  }
}

// Windows larger than the GPU's staging pieces (2^20 pairs): 3000 x 3000 all-overlapping regions
// give 9e6 pairs in windows of 2^21 + 5 (three pieces each, the last a few pairs; a smaller last
// window): every (s, u) pair arrives exactly once, in sink chunks of at most chunk_pairs.
TEST_P(DdmAlgorithm, LargeOutputInManyWindowsAndPieces) {
  const std::size_t n = 3000, chunk = (std::size_t{1} << 21) + 5;
  RegionSet<std::uint32_t> s{1, {}, std::vector<std::uint32_t>(n, 10u), std::vector<std::uint32_t>(n, 20u)};
  for (std::size_t i = 0; i < n; ++i) s.ids.push_back(i);
  const RegionSet<std::uint32_t> u = s;
  MatchOptions o;
  o.backend = GetParam().backend;
  o.algorithm = GetParam().algorithm;
  o.chunk_pairs = chunk;
  std::vector<unsigned char> seen(n * n, 0);
  std::size_t calls = 0, bad = 0, largest = 0;
  const MatchReport r = match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t k) {
    ++calls;
    largest = std::max(largest, k);
    for (std::size_t q = 0; q < k; ++q) {
      if (m[q].s >= n || m[q].u >= n || seen[m[q].s * n + m[q].u]++ != 0) ++bad;
    }
  });
  EXPECT_EQ(r.pairs, n * n);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(n * n));
  EXPECT_LE(largest, chunk);
  EXPECT_GE(calls, 5u);  // 9e6 pairs in sink chunks of at most 2^21 + 5
}

// Test names take letters, digits and underscores: "interval-tree" becomes "interval_tree".
std::string algorithm_name(const testing::TestParamInfo<Matcher>& run) {
  std::string name(to_string(run.param.algorithm));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}
// Complete (self) matching: every unordered pair i < j of one set, once, against the oracle written
// out here (regions of zero length included: under the half-open rule they meet nothing, not even
// themselves), with the count, for every algorithm, rule and coordinate type.
template <class T>
void expect_self_matches(const RegionSet<T>& s, const Matcher& run, std::size_t chunk, const std::string& what) {
  for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
    SCOPED_TRACE(what + " rule " + std::string(to_string(rule)));
    PairList expected;
    for (const auto& [i, j] : brute_pairs(s, s, rule))
      if (i < j) expected.push_back({i, j});
    MatchOptions o;
    o.rule = rule;
    o.algorithm = run.algorithm;
    o.backend = run.backend;
    o.chunk_pairs = chunk;
    PairList got;
    const MatchReport r = match_self_pairs(view(s), o, [&](const Match* m, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k) got.push_back({m[k].s, m[k].u});
    });
    PairList sorted = got;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(r.pairs, expected.size());
    EXPECT_TRUE(sorted == expected) << "self pair lists differ";
    EXPECT_EQ(count_self_pairs(view(s), o).pairs, expected.size());
    // The order is fixed: a second call gives the same sequence.
    PairList again;
    match_self_pairs(view(s), o, [&](const Match* m, std::size_t n) {
      for (std::size_t k = 0; k < n; ++k) again.push_back({m[k].s, m[k].u});
    });
    EXPECT_EQ(again, got);
  }
}

TEST_P(DdmAlgorithm, CompleteSelfMatchingEachUnorderedPairOnce) {
  std::mt19937_64 gen(20261124);
  for (int trial = 0; trial < 12; ++trial) {
    const int dims = 1 + trial % 3;
    const std::size_t n = 2 + gen() % 150;
    expect_self_matches(random_set<std::uint32_t>(gen, n, dims, 0u, 24), GetParam(), 1 + gen() % 40,
                        "u32 trial " + std::to_string(trial));
    expect_self_matches(random_set<std::uint64_t>(gen, n, dims, std::uint64_t{1} << 60, 30), GetParam(), 1 + gen() % 40,
                        "u64 trial " + std::to_string(trial));
    expect_self_matches(random_set<double>(gen, n, dims, -3.5, 40), GetParam(), 1 + gen() % 40,
                        "f64 trial " + std::to_string(trial));
  }
}

INSTANTIATE_TEST_SUITE_P(, DdmAlgorithm, testing::ValuesIn(every_run()), algorithm_name);

// The rules on the examples of docs/ddm.md ("The three overlap rules").
TEST(DdmMatch, RulesOnTheDocumentedExamples) {
  EXPECT_FALSE(overlaps<int>(Rule::HalfOpen, 5, 8, 5, 5));  // s = [5,8), u = [5,5)
  EXPECT_TRUE(overlaps<int>(Rule::Ieee1516, 5, 8, 5, 5));   // equal lowers
  EXPECT_TRUE(overlaps<int>(Rule::Closed, 5, 8, 8, 9));     // touching closed ranges
  EXPECT_FALSE(overlaps<int>(Rule::HalfOpen, 5, 8, 8, 9));
  EXPECT_FALSE(overlaps<int>(Rule::Ieee1516, 5, 8, 8, 9));
  EXPECT_TRUE(overlaps<int>(Rule::HalfOpen, 3, 8, 5, 5));  // a zero-length range inside
}

TEST(DdmMatch, BadInputIsAUserError) {
  RegionSet<double> s{1, {1, 2}, {0, 5}, {1, 4}}, u{1, {1}, {0}, {1}};  // s[1]: lower 5 > upper 4
  EXPECT_THROW(count_pairs(view(s), view(u), {}), UserError);
  s.lower[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(count_pairs(view(s), view(u), {}), UserError);
  RegionSet<double> dup{1, {3, 3}, {0, 1}, {1, 2}};
  EXPECT_THROW(count_pairs(view(dup), view(u), {}), UserError);
  RegionSet<double> two_d{2, {9}, {0, 0}, {1, 1}};
  EXPECT_THROW(count_pairs(view(two_d), view(u), {}), UserError);
  MatchOptions o;
  o.algorithm = Algorithm::Sbm;
  o.backend = Backend::Cpu;
  EXPECT_THROW(count_pairs(view(u), view(u), o), UserError);  // sbm runs on reference
}

// Large sets (validation on all threads) report what a serial scan in input order would: the
// first region with a bad bound, else the earliest second occurrence of an id.
TEST(DdmMatch, ValidationOfLargeSetsReportsTheFirstProblem) {
  const std::size_t n = 40000;
  RegionSet<std::uint64_t> s;
  s.dims = 2;
  for (std::size_t i = 0; i < n; ++i) s.ids.push_back(1000 + ((i * 7919) % n));  // unique, unsorted
  s.lower.assign(2 * n, 1);
  s.upper.assign(2 * n, 2);
  const RegionSet<std::uint64_t> u{2, {1}, {0, 0}, {5, 5}};
  EXPECT_EQ(count_pairs(view(s), view(u), {}).pairs, n);
  auto message = [&](const RegionSet<std::uint64_t>& bad) {
    try {
      validate(view(bad), view(u));
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  RegionSet<std::uint64_t> dup = s;
  dup.ids[300] = 7;
  dup.ids[100] = 7;  // 7 occurs at 100 and 300
  dup.ids[200] = 5;
  dup.ids[30000] = 5;  // 5 at 200 and 30000: 7's repeat (300) comes first
  EXPECT_EQ(message(dup), "S region 7: duplicate id");
  dup.upper[n + 39000] = 0;  // region 39000, dimension 1: lower 1 > upper 0, reported first
  EXPECT_NE(message(dup).find("S region " + std::to_string(dup.ids[39000]) + ", dimension 1"), std::string::npos)
      << message(dup);
  RegionSet<std::uint64_t> sorted = s;
  std::sort(sorted.ids.begin(), sorted.ids.end());
  sorted.ids[n - 1] = sorted.ids[n - 2];  // sorted but for the last: not strictly increasing
  EXPECT_EQ(message(sorted), "S region " + std::to_string(sorted.ids[n - 1]) + ": duplicate id");
}

}  // namespace
}  // namespace simkit::ddm

namespace simkit::ddm {
namespace {

// The pairs in the order the sink receives them.
template <class T>
PairList pair_sequence(const RegionSet<T>& s, const RegionSet<T>& u, Algorithm algorithm, Backend backend, int threads,
                       std::size_t chunk) {
  MatchOptions o;
  o.algorithm = algorithm;
  o.backend = backend;
  o.threads = threads;
  o.chunk_pairs = chunk;
  PairList got;
  match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) got.push_back({m[k].s, m[k].u});
  });
  return got;
}

// The cpu backend's parallel matcher delivers its pairs in one order whatever the thread count
// and chunk size, so that a pair file has the same bytes (issue 14: `ddm match --pairs` with two or
// more threads used to write them in a different order each run); the order is the serial walk's
// (sorted subscriptions, then sorted updates).
TEST(DdmMatch, ParallelPairOrderIsTheSameForEveryThreadCount) {
  std::mt19937_64 gen(simkit::test::printed_seed(20261124));
  for (int trial = 0; trial < 6; ++trial) {
    const int dims = 1 + trial % 3;
    const RegionSet<double> s = test::random_set<double>(gen, 3000 + gen() % 2000, dims, 0.0, 400);
    const RegionSet<double> u = test::random_set<double>(gen, 3000 + gen() % 2000, dims, 0.0, 400);
    const PairList one = pair_sequence(s, u, Algorithm::Parallel, Backend::Cpu, 1, 1u << 22);
    ASSERT_GT(one.size(), 10000u) << "too few pairs to exercise several blocks";
    for (int threads : {2, 3, 8}) {
      EXPECT_EQ(pair_sequence(s, u, Algorithm::Parallel, Backend::Cpu, threads, 1 + gen() % 5000), one)
          << "trial " << trial << ", " << threads << " threads";
    }
    PairList sorted = one;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, test::brute_pairs(s, u, Rule::Ieee1516));
  }
}

// The GPU matcher writes each region's pairs at its offset in the scan of the counts: the same
// order on every run and for every window size.
TEST(DdmMatch, GpuPairOrderIsFixed) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(simkit::test::printed_seed(20261125));
  const RegionSet<double> s = test::random_set<double>(gen, 4000, 2, 0.0, 400);
  const RegionSet<double> u = test::random_set<double>(gen, 4000, 2, 0.0, 400);
  const PairList first = pair_sequence(s, u, Algorithm::Gpu, Backend::Cuda, 0, 1u << 22);
  EXPECT_EQ(pair_sequence(s, u, Algorithm::Gpu, Backend::Cuda, 0, 977), first);
  PairList sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, test::brute_pairs(s, u, Rule::Ieee1516));
}

}  // namespace
}  // namespace simkit::ddm
