// The GPU matcher against brute force (GPU; skipped without a usable device): random inputs in
// d = 1..4 under each rule with many ties and zero-length ranges, u32/u64 above 2^53/f64, small
// regions in a large space (strips), empty and single-region sets, and outputs written in many
// windows (chunk_pairs far below the pair count).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "simkit/ddm/ddm.hpp"
#include "ddm/regions.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

using PairList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

template <class T>
void expect_gpu_algorithm(const RegionSet<T>& s, const RegionSet<T>& u, Rule rule, std::size_t chunk,
                          const std::string& what, Algorithm algorithm) {
  SCOPED_TRACE(what + " rule " + std::string(to_string(rule)));
  const PairList expected = test::brute_pairs(s, u, rule);
  MatchOptions o;
  o.rule = rule;
  o.backend = Backend::Cuda;
  o.algorithm = algorithm;
  o.chunk_pairs = chunk;
  PairList got;
  const MatchReport r = match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t n) {
    EXPECT_LE(n, chunk);
    for (std::size_t k = 0; k < n; ++k) got.push_back({m[k].s, m[k].u});
  });
  std::sort(got.begin(), got.end());
  EXPECT_EQ(r.pairs, expected.size());
  EXPECT_TRUE(got == expected) << "pair lists differ: " << got.size() << " vs " << expected.size();
  test::expect_counts(s, u, o, expected);
}

template <class T>
void expect_gpu_matches(const RegionSet<T>& s, const RegionSet<T>& u, Rule rule, std::size_t chunk,
                        const std::string& what) {
  for (Algorithm algorithm : {Algorithm::Gpu, Algorithm::BitMatrix}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    expect_gpu_algorithm(s, u, rule, chunk, what, algorithm);
  }
}

template <class T>
void random_gpu_cases(T base, std::uint64_t span, int trials) {
  std::mt19937_64 gen(99 + span);
  for (int trial = 0; trial < trials; ++trial) {
    const int dims = 1 + trial % 4;
    const RegionSet<T> s = test::random_set<T>(gen, 1 + gen() % 300, dims, base, span);
    const RegionSet<T> u = test::random_set<T>(gen, 1 + gen() % 300, dims, base, span, 5, 1000000);
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
      expect_gpu_matches(s, u, rule, 1 + gen() % 200, "trial " + std::to_string(trial));
  }
}

TEST(DdmCuda, IntegerTiesU32) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  random_gpu_cases<std::uint32_t>(0u, 12, 16);
}
TEST(DdmCuda, IntegerTiesU64Above2To53) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  random_gpu_cases<std::uint64_t>((std::uint64_t{1} << 60) + 3, 20, 16);
}
TEST(DdmCuda, Doubles) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  random_gpu_cases<double>(-7.25, 40, 16);
}

TEST(DdmCuda, SmallRegionsManyStripsAndWindows) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(78);
  for (int dims : {1, 2, 3}) {
    RegionSet<std::uint64_t> s = test::random_set<std::uint64_t>(gen, 3000, dims, 0, 6000, 9);
    RegionSet<std::uint64_t> u = test::random_set<std::uint64_t>(gen, 2500, dims, 0, 6000, 11, 50000);
    for (RegionSet<std::uint64_t>* r : {&s, &u})
      for (std::size_t k = 0; k < r->lower.size(); ++k) r->upper[k] = std::min(r->upper[k], r->lower[k] + 90 + k % 7);
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
      expect_gpu_matches(s, u, rule, 333, "dims " + std::to_string(dims));
  }
}

// Windows larger than one staging piece (2^20 pairs): 3000 x 3000 all-overlapping regions give
// 9e6 pairs in windows of 2^21 + 5 (three pieces each, the last a few pairs; a smaller last
// window): every (s, u) pair arrives exactly once, in sink chunks of at most chunk_pairs.
TEST(DdmCuda, PairsCrossManyPinnedPiecesAndWindows) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const std::size_t n = 3000, chunk = (std::size_t{1} << 21) + 5;
  RegionSet<std::uint32_t> s{1, {}, std::vector<std::uint32_t>(n, 10u), std::vector<std::uint32_t>(n, 20u)};
  for (std::size_t i = 0; i < n; ++i) s.ids.push_back(i);
  const RegionSet<std::uint32_t> u = s;
  for (Algorithm algorithm : {Algorithm::Gpu, Algorithm::BitMatrix}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    MatchOptions o;
    o.backend = Backend::Cuda;
    o.algorithm = algorithm;
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
    EXPECT_GE(calls, 9u);  // at least one call per piece
  }
}

TEST(DdmCuda, EmptyAndSingleRegionSets) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(6);
  const RegionSet<double> empty{2, {}, {}, {}};
  const RegionSet<double> some = test::random_set<double>(gen, 40, 2, 0.0, 10);
  const RegionSet<double> one = test::random_set<double>(gen, 1, 2, 0.0, 10, 0, 700);
  for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
    expect_gpu_matches(empty, some, rule, 16, "empty S");
    expect_gpu_matches(some, empty, rule, 16, "empty U");
    expect_gpu_matches(one, some, rule, 16, "one S");
    expect_gpu_matches(some, one, rule, 16, "one U");
  }
}

}  // namespace
}  // namespace simkit::ddm
