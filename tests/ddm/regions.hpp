#pragma once
// Random region sets for the ddm tests: integer coordinates on a small range (many ties and
// zero-length ranges), doubles, and 64-bit values above 2^53; and a brute-force pair list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "simkit/ddm/ddm.hpp"
#include "ddm/model.hpp"

namespace simkit::ddm::test {

// n regions in `dims` dimensions; bounds drawn from base + [0, span] (lower <= upper), every
// `zero_every`-th range of zero length; ids shuffled, unique.
template <class T>
RegionSet<T> random_set(std::mt19937_64& gen, std::size_t n, int dims, T base, std::uint64_t span, int zero_every = 7,
                        std::uint64_t id_base = 1) {
  RegionSet<T> r;
  r.dims = dims;
  r.ids.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.ids[i] = id_base + 3 * i;
  std::shuffle(r.ids.begin(), r.ids.end(), gen);
  r.lower.resize(n * static_cast<std::size_t>(dims));
  r.upper.resize(n * static_cast<std::size_t>(dims));
  std::uniform_int_distribution<std::uint64_t> pick(0, span);
  for (int d = 0; d < dims; ++d)
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t a = pick(gen), b = pick(gen);
      if (a > b) std::swap(a, b);
      if (zero_every > 0 && (i + static_cast<std::size_t>(d)) % static_cast<std::size_t>(zero_every) == 0) b = a;
      const std::size_t k = static_cast<std::size_t>(d) * n + i;
      if constexpr (std::is_floating_point_v<T>) {
        // half-units give ties and non-integers
        r.lower[k] = base + static_cast<T>(a) * T(0.5);
        r.upper[k] = base + static_cast<T>(b) * T(0.5);
      } else {
        r.lower[k] = static_cast<T>(base + a);
        r.upper[k] = static_cast<T>(base + b);
      }
    }
  return r;
}

// The host algorithms and their backends (every one the tests run against the oracle).
struct Run {
  Algorithm algorithm;
  Backend backend;
};
inline std::vector<Run> host_runs() {
  return {{Algorithm::BruteForce, Backend::Reference},
          {Algorithm::Sbm, Backend::Reference},
          {Algorithm::IntervalTree, Backend::Reference},
          {Algorithm::Grid, Backend::Reference},
          {Algorithm::Parallel, Backend::Cpu}};
}

// Every intersecting (s position, u position), sorted: the oracle written out in the test itself.
template <class T>
std::vector<std::pair<std::uint64_t, std::uint64_t>> brute_pairs(const RegionSet<T>& s, const RegionSet<T>& u,
                                                                 Rule rule) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < u.size(); ++j) {
      bool all = true;
      for (int d = 0; d < s.dims && all; ++d) all = overlaps(rule, s.lo(i, d), s.hi(i, d), u.lo(j, d), u.hi(j, d));
      if (all) out.push_back({i, j});
    }
  return out;
}

// The count and per-region outputs of options `o` against the oracle's pair list.
template <class T>
void expect_counts(const RegionSet<T>& s, const RegionSet<T>& u, const MatchOptions& o,
                   const std::vector<std::pair<std::uint64_t, std::uint64_t>>& expected) {
  EXPECT_EQ(count_pairs(view(s), view(u), o).pairs, expected.size());
  std::vector<std::uint64_t> per_s, per_u, want_s(s.size(), 0), want_u(u.size(), 0);
  for (const auto& [i, j] : expected) ++want_s[i], ++want_u[j];
  count_per_region(view(s), view(u), o, per_s, per_u);
  EXPECT_EQ(per_s, want_s);
  EXPECT_EQ(per_u, want_u);
}

}  // namespace simkit::ddm::test
