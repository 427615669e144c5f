#pragma once
// Shared by the prolif test suites: small builders and random problems for cross-backend checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif::test_problems {

// A fit model (prolif fit --config): fast's proportion, mean and sd free; a quiescent population.
inline constexpr const char* kFitToml = R"(phi_min = 1

[[population]]
name = "fast"
proportion = { min = 0, max = 1 }
mean = { min = 10, max = 40 }
sd = { min = 1, max = 10 }

[[population]]
name = "rest"
proportion = { min = 0, max = 1 }
quiescent = true
)";

inline InitialHistogram histogram(std::vector<double> values, std::vector<std::uint64_t> counts) {
  InitialHistogram h;
  h.values = std::move(values);
  h.counts = std::move(counts);
  h.source = "test";
  return h;
}

inline Population proliferating(std::string name, double proportion, double mean, double sd,
                                Distribution distribution = Distribution::TruncatedNormal) {
  Population p;
  p.name = std::move(name);
  p.proportion = proportion;
  p.mean = mean;
  p.sd = sd;
  p.distribution = distribution;
  return p;
}

inline Population quiescent(double proportion) {
  Population p;
  p.name = "quiescent";
  p.proportion = proportion;
  p.quiescent = true;
  return p;
}

inline Model model_of(std::vector<Population> populations, double phi_min, std::vector<double> times,
                      StartMode start = StartMode::Sync) {
  Model m;
  m.populations = std::move(populations);
  m.phi_min = phi_min;
  m.times = std::move(times);
  m.start = start;
  return m;
}

inline RunOptions options(Backend backend, std::uint64_t seed, int threads = 1) {
  RunOptions o;
  o.backend = backend;
  o.seed = seed;
  o.threads = threads;
  return o;
}

// Counts of one output time, as a flat vector (row, generation, population).
inline std::vector<std::uint64_t> slice(const Result& r, std::size_t t) {
  const std::size_t n = r.rows * r.generations * r.populations;
  return {r.counts.begin() + static_cast<std::ptrdiff_t>(t * n),
          r.counts.begin() + static_cast<std::ptrdiff_t>((t + 1) * n)};
}

inline void expect_same(const Result& expected, const Result& got, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.times, expected.times);
  EXPECT_EQ(got.rows, expected.rows);
  EXPECT_EQ(got.generations, expected.generations);
  EXPECT_EQ(got.populations, expected.populations);
  EXPECT_EQ(got.seed, expected.seed);
  EXPECT_EQ(got.divisions, expected.divisions);
  ASSERT_EQ(got.counts.size(), expected.counts.size());
  std::size_t differing = 0, first = got.counts.size();
  for (std::size_t n = 0; n < got.counts.size(); ++n) {
    if (got.counts[n] != expected.counts[n]) {
      if (differing++ == 0) first = n;
    }
  }
  EXPECT_EQ(differing, 0u) << "first difference at flat index " << first << ": expected "
                           << (first < got.counts.size() ? expected.counts[first] : 0) << ", got "
                           << (first < got.counts.size() ? got.counts[first] : 0);
}

// ----------------------------------------------------------------------------------------------
// Random problems

struct Problem {
  InitialHistogram initial;
  Model model;
  std::string description;
};

// Largest generation whose cells exist for a row of fluorescence `phi` (as prolif computes it).
inline int generation_limit(double phi, double phi_min) {
  int k = 0;
  while (k < 62 && phi / 2.0 > phi_min) {
    phi /= 2.0;
    ++k;
  }
  return k;
}

// A problem as described in the suite's brief; cell counts are scaled down when the estimated
// number of lineage nodes would make the test slow (it keeps every parameter's range).
// `budget`: a rough cap on lineage nodes per problem, to keep a test quick.
inline Problem random_problem(std::mt19937_64& rng, double budget = 3e5) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Problem p;
  const int rows = integer(1, 50);
  std::vector<double> values;
  std::vector<std::uint64_t> counts;
  for (int i = 0; i < rows; ++i) {
    values.push_back(uniform(20, 5000));
    counts.push_back(static_cast<std::uint64_t>(integer(0, 300)));
  }

  const int npop = integer(1, 4);
  const bool with_quiescent = npop > 1 && integer(0, 2) == 0;
  std::vector<double> weights;
  double sum = 0;
  for (int q = 0; q < npop; ++q) {
    weights.push_back(uniform(0.05, 1.0));
    sum += weights.back();
  }
  std::vector<Population> pops;
  double min_mean = 1e9;
  for (int q = 0; q < npop; ++q) {
    const double proportion = weights[static_cast<std::size_t>(q)] / sum;
    if (with_quiescent && q == 0) {
      pops.push_back(quiescent(proportion));
      continue;
    }
    const double mean = uniform(5, 60);
    const double sd = integer(0, 4) == 0 ? 0.0 : uniform(0, 20);
    const auto dist = static_cast<Distribution>(integer(0, 2));
    pops.push_back(proliferating("P" + std::to_string(q), proportion, mean, sd, dist));
    min_mean = std::min(min_mean, mean);
  }
  // Proportions computed as w / sum add to 1 within rounding: the last absorbs the remainder.
  double rest = 1.0;
  for (std::size_t q = 0; q + 1 < pops.size(); ++q) rest -= pops[q].proportion;
  pops.back().proportion = rest;

  std::vector<double> times;
  const int ntimes = integer(1, 3);
  for (int j = 0; j < ntimes; ++j) times.push_back(std::round(uniform(0, 150) * 4) / 4);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  const double phi_min = uniform(1, 50);
  const StartMode start = integer(0, 1) == 0 ? StartMode::Sync : StartMode::ProcellAsync;

  // Estimated lineage nodes: 2^(depth + 1) per cell, depth limited by phi_min and by t_max over
  // the fastest mean (with margin for short draws).
  double work = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int by_phi = generation_limit(values[i], phi_min);
    const int by_time = static_cast<int>(times.back() / min_mean) + 2;
    work += static_cast<double>(counts[i]) * std::ldexp(1.0, std::min(by_phi, by_time) + 1);
  }
  if (work > budget) {
    for (auto& c : counts) c = static_cast<std::uint64_t>(static_cast<double>(c) * budget / work);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (counts[i] == 0) continue;  // the readers drop empty rows; InitialHistogram never has them
    p.initial.values.push_back(values[i]);
    p.initial.counts.push_back(counts[i]);
  }
  if (p.initial.values.empty()) {
    p.initial.values.push_back(values.front());
    p.initial.counts.push_back(1);
  }
  p.initial.source = "random";
  p.model = model_of(pops, phi_min, times, start);

  p.description = "rows=" + std::to_string(p.initial.values.size()) +
                  " cells=" + std::to_string(p.initial.total_cells()) + " phi_min=" + std::to_string(phi_min) +
                  (start == StartMode::Sync ? " sync" : " procell-async") + " times=";
  for (double t : times) p.description += std::to_string(t) + " ";
  for (const auto& pop : pops) {
    p.description += "[" + pop.name + " p=" + std::to_string(pop.proportion);
    if (pop.quiescent) {
      p.description += " quiescent]";
    } else {
      p.description += " mean=" + std::to_string(pop.mean) + " sd=" + std::to_string(pop.sd) + " " +
                       std::to_string(static_cast<int>(pop.distribution)) + "]";
    }
  }
  return p;
}

}  // namespace simkit::prolif::test_problems
