// The serial matchers (sbm, interval-tree, grid) on targeted inputs: identical intervals, the full
// 64-bit and 32-bit extents, zero-length ranges piled on one coordinate, infinite and huge double
// bounds, a few very wide regions among many small ones, and 1000+ regions in three dimensions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "simkit/ddm/ddm.hpp"
#include "ddm/model.hpp"
#include "ddm/regions.hpp"

namespace simkit::ddm {
namespace {

using PairList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

constexpr Algorithm kSerial[] = {Algorithm::Sbm, Algorithm::IntervalTree, Algorithm::Grid};
constexpr Rule kRules[] = {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed};

template <class T>
PairList pairs_of(const RegionSet<T>& s, const RegionSet<T>& u, Rule rule, Algorithm algorithm) {
  MatchOptions o;
  o.rule = rule;
  o.algorithm = algorithm;
  o.backend = Backend::Reference;
  o.chunk_pairs = 1000;
  PairList got;
  const MatchReport r = match_pairs(view(s), view(u), o, [&](const Match* m, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) got.push_back({m[k].s, m[k].u});
  });
  EXPECT_EQ(r.pairs, got.size());
  std::sort(got.begin(), got.end());
  return got;
}

// Every serial matcher's pair list against the oracle, under every rule.
template <class T>
void expect_all_agree(const RegionSet<T>& s, const RegionSet<T>& u, const std::string& what) {
  for (Rule rule : kRules) {
    const PairList want = test::brute_pairs(s, u, rule);
    for (Algorithm a : kSerial) {
      SCOPED_TRACE(what + ": " + std::string(to_string(a)) + ", " + std::string(to_string(rule)));
      const PairList got = pairs_of(s, u, rule, a);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_TRUE(got == want);
    }
  }
}

// A 1-D set from (lower, upper) pairs, ids 1, 2, ...
template <class T>
RegionSet<T> one_d(const std::vector<std::pair<T, T>>& ranges) {
  RegionSet<T> r;
  r.dims = 1;
  for (const auto& [lo, hi] : ranges) {
    r.ids.push_back(r.ids.size() + 1);
    r.lower.push_back(lo);
    r.upper.push_back(hi);
  }
  return r;
}

std::uint64_t count(const auto& s, const auto& u, Rule rule, Algorithm algorithm) {
  MatchOptions o;
  o.rule = rule;
  o.algorithm = algorithm;
  o.backend = Backend::Reference;
  return count_pairs(view(s), view(u), o).pairs;
}

// 2000 x 2000 identical regions: every pair is a candidate in every cell / sweep / tree query.
TEST(DdmSerial, AllIdenticalIntervals) {
  const std::size_t n = 2000;
  RegionSet<std::uint32_t> wide, point;
  wide.dims = point.dims = 2;
  for (std::size_t i = 0; i < n; ++i) wide.ids.push_back(i), point.ids.push_back(i);
  wide.lower.assign(2 * n, 10), wide.upper.assign(2 * n, 90);
  point.lower.assign(2 * n, 50), point.upper.assign(2 * n, 50);
  for (Algorithm a : kSerial) {
    SCOPED_TRACE(std::string(to_string(a)));
    for (Rule rule : kRules) EXPECT_EQ(count(wide, wide, rule, a), n * n);
    // [50, 50] against itself: equal lowers (ieee1516), closed, but not half-open.
    EXPECT_EQ(count(point, point, Rule::Ieee1516, a), n * n);
    EXPECT_EQ(count(point, point, Rule::Closed, a), n * n);
    EXPECT_EQ(count(point, point, Rule::HalfOpen, a), 0u);
    // [50, 50] inside [10, 90]: all three rules.
    for (Rule rule : kRules) EXPECT_EQ(count(point, wide, rule, a), n * n);
  }
}

// Bounds at both ends of the uint64 range: the grid's extent is 2^64 - 1 wide.
TEST(DdmSerial, FullUint64Extent) {
  constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  std::mt19937_64 gen(64);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rs = {{0, top}, {0, 0}, {top, top}, {top - 1, top}, {0, 1}},
                                                       ru = {{0, top}, {0, 0}, {top, top}, {1, top - 1}, {0, top / 2}};
  for (int k = 0; k < 300; ++k) {
    std::uint64_t a = gen(), b = gen();
    if (a > b) std::swap(a, b);
    if (k % 3 == 0) b = std::min(top, a + gen() % 1000);  // narrow, anywhere
    if (k % 5 == 0) a = b;                                // zero-length
    if (k % 7 == 0) b = top;
    if (k % 11 == 0) a = 0;
    (k % 2 ? rs : ru).push_back({a, b});
  }
  expect_all_agree(one_d(rs), one_d(ru), "u64 [0, 2^64 - 1]");
}

TEST(DdmSerial, FullUint32Extent) {
  constexpr std::uint32_t top = std::numeric_limits<std::uint32_t>::max();
  std::mt19937 gen(32);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rs = {{0, top}, {top, top}}, ru = {{0, 0}, {top, top}};
  for (int k = 0; k < 300; ++k) {
    auto a = static_cast<std::uint32_t>(gen()), b = static_cast<std::uint32_t>(gen());
    if (a > b) std::swap(a, b);
    if (k % 5 == 0) a = b;
    (k % 2 ? rs : ru).push_back({a, b});
  }
  expect_all_agree(one_d(rs), one_d(ru), "u32 [0, 2^32 - 1]");
}

// Hundreds of zero-length ranges at one coordinate, with ranges ending and starting there.
TEST(DdmSerial, ZeroLengthRangesAtOneCoordinate) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rs, ru;
  for (std::uint64_t k = 0; k < 400; ++k) {
    auto& r = k % 2 ? rs : ru;
    switch (k % 8) {
      case 0:
      case 1:
      case 2:
        r.push_back({1000, 1000});
        break;
      case 3:
      case 4:
        r.push_back({1000 - 1 - k, 1000});  // ends there
        break;
      case 5:
      case 6:
        r.push_back({1000, 1001 + k});  // starts there
        break;
      default:
        r.push_back({1000 - 1 - k, 1001 + k});  // straddles
    }
  }
  expect_all_agree(one_d(rs), one_d(ru), "zero-length at 1000");
  // The same in the second dimension, with all first-dimension ranges identical.
  RegionSet<std::uint64_t> s = one_d(rs), u = one_d(ru);
  for (RegionSet<std::uint64_t>* r : {&s, &u}) {
    r->dims = 2;
    std::vector<std::uint64_t> lo(r->size(), 7), hi(r->size(), 7);
    lo.insert(lo.end(), r->lower.begin(), r->lower.end());
    hi.insert(hi.end(), r->upper.begin(), r->upper.end());
    r->lower = lo, r->upper = hi;
  }
  expect_all_agree(s, u, "zero-length at 1000, dimension 1");
}

// Infinite bounds, and finite ones whose extent overflows a double (the grid halves first).
TEST(DdmSerial, InfiniteAndHugeDoubles) {
  constexpr double inf = std::numeric_limits<double>::infinity(), big = std::numeric_limits<double>::max();
  std::mt19937_64 gen(8);
  std::uniform_real_distribution<double> pick(-big, big);
  std::vector<std::pair<double, double>> rs = {{-inf, inf}, {-inf, -inf}, {inf, inf},  {-inf, 0},
                                               {0, inf},    {-big, big},  {-0.0, 0.0}, {0.0, 0.0}},
                                         ru = {{-inf, -big}, {big, inf}, {0.0, 0.0}, {-0.0, -0.0},
                                               {-big, -big}, {1.0, 2.0}, {-inf, inf}};
  for (int k = 0; k < 300; ++k) {
    double a = pick(gen), b = pick(gen);
    if (a > b) std::swap(a, b);
    if (k % 4 == 0) a = b;
    if (k % 9 == 0) b = std::nextafter(a, inf);
    (k % 2 ? rs : ru).push_back({a, b});
  }
  expect_all_agree(one_d(rs), one_d(ru), "infinite and huge doubles");
  // Only infinite bounds: no finite extent at all.
  expect_all_agree(one_d<double>({{-inf, inf}, {inf, inf}}), one_d<double>({{-inf, -inf}, {inf, inf}, {-inf, inf}}),
                   "only infinities");
}

// A few regions spanning everything among many small ones (the grid caps its registrations).
TEST(DdmSerial, FewWideRegionsAmongManySmall) {
  std::mt19937_64 gen(3);
  RegionSet<std::uint64_t> s = test::random_set<std::uint64_t>(gen, 20000, 1, 0, 1000000, 0);
  RegionSet<std::uint64_t> u = test::random_set<std::uint64_t>(gen, 20000, 1, 0, 1000000, 0, 1000000);
  for (RegionSet<std::uint64_t>* r : {&s, &u})
    for (std::size_t k = 0; k < r->size(); ++k)
      r->upper[k] = k % 100 == 0 ? 1000000 : std::min<std::uint64_t>(r->lower[k] + k % 50, 1000000);
  for (Rule rule : kRules) {
    const std::uint64_t want = count(s, u, rule, Algorithm::BruteForce);
    for (Algorithm a : kSerial) EXPECT_EQ(count(s, u, rule, a), want) << to_string(a) << " " << to_string(rule);
  }
}

// 1000+ regions in three dimensions, each coordinate type, against brute force.
template <class T>
void three_d(T base, std::uint64_t span) {
  std::mt19937_64 gen(1000 + span);
  const RegionSet<T> s = test::random_set<T>(gen, 1200, 3, base, span, 6);
  const RegionSet<T> u = test::random_set<T>(gen, 1100, 3, base, span, 9, 100000);
  expect_all_agree(s, u, "d = 3");
}
TEST(DdmSerial, ThreeDimsU32) { three_d<std::uint32_t>(0, 60); }
TEST(DdmSerial, ThreeDimsU64) { three_d<std::uint64_t>((std::uint64_t{1} << 62) + 1, 200); }
TEST(DdmSerial, ThreeDimsF64) { three_d<double>(-30.5, 120); }

// Per-region counts agree too (the collector's other outputs).
TEST(DdmSerial, PerRegionCounts) {
  std::mt19937_64 gen(11);
  const RegionSet<std::uint32_t> s = test::random_set<std::uint32_t>(gen, 500, 2, 0, 30);
  const RegionSet<std::uint32_t> u = test::random_set<std::uint32_t>(gen, 700, 2, 0, 30, 4, 5000);
  for (Rule rule : kRules) {
    MatchOptions o;
    o.rule = rule;
    o.backend = Backend::Reference;
    o.algorithm = Algorithm::BruteForce;
    std::vector<std::uint64_t> want_s, want_u, got_s, got_u;
    count_per_region(view(s), view(u), o, want_s, want_u);
    for (Algorithm a : kSerial) {
      o.algorithm = a;
      count_per_region(view(s), view(u), o, got_s, got_u);
      EXPECT_EQ(got_s, want_s) << to_string(a);
      EXPECT_EQ(got_u, want_u) << to_string(a);
    }
  }
}

}  // namespace
}  // namespace simkit::ddm
