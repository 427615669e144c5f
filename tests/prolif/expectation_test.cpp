// The simulation against the model's exact expectation.
//
// For a proliferating cell whose clock starts at t0, the expected number of its generation-k
// descendants that exist at t is 2^k [P(T_k <= t) - P(T_{k+1} <= t)], with T_k = t0 + the sum of
// k division times (k = 0: 1 - P(T_1 <= t)), for k >= 1 only while phi / 2^k > phi_min. The
// distribution of T_k is computed here numerically: division-time masses on a fine grid,
// convolved k times (truncated normal, gamma and log-normal CDFs are exact; the grid error is
// O(dt^2), below 1e-4 relative for the grids used).
//
// Tolerance: counts within one lineage are strongly correlated, so a Poisson bound is wrong.
// Each case puts its N initial cells in R rows of n cells with the same fate (phi far above
// phi_min, or the same cut-off); the per-row totals of a generation are then R independent,
// identically distributed sums, whose sample standard deviation s gives the standard error of
// the mean s / sqrt(R) (floored for rare events, see check_case). A generation passes when |mean - expected| <= 5 SE +
// 1e-3 expected: with about 200 (case, time, generation) checks in this file, 5 standard errors keep the chance of a
// false failure below 1e-4 while a 2 % bias (a lost division, a wrong clock) fails clearly.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "core/distributions.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace {

using simkit::prolif::Distribution;
using simkit::prolif::InitialHistogram;
using simkit::prolif::Model;
using simkit::prolif::Population;
using simkit::prolif::Result;
using simkit::prolif::StartMode;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Regularized lower incomplete gamma P(a, x): series for x < a + 1, continued fraction otherwise.
double gamma_p(double a, double x) {
  if (x <= 0) return 0.0;
  const double lg = std::lgamma(a);
  if (x < a + 1.0) {
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1.0 - a, c = 1e300, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-16) break;
  }
  return 1.0 - std::exp(-x + a * std::log(x) - lg) * h;
}

// CDF of a population's division time, as the model defines it (mean and sd of the time itself).
std::function<double(double)> division_cdf(const Population& p) {
  if (p.sd == 0.0) return [m = p.mean](double x) { return x >= m ? 1.0 : 0.0; };
  switch (p.distribution) {
    case Distribution::TruncatedNormal: {
      const double lo = normal_cdf(-p.mean / p.sd), hi = normal_cdf(p.mean / p.sd);
      return [=](double x) { return x <= 0 ? 0.0 : (normal_cdf((x - p.mean) / p.sd) - lo) / hi; };
    }
    case Distribution::Gamma: {
      const double shape = (p.mean / p.sd) * (p.mean / p.sd), scale = p.sd * p.sd / p.mean;
      return [=](double x) { return gamma_p(shape, x / scale); };
    }
    case Distribution::LogNormal: {
      const double s2 = std::log1p((p.sd / p.mean) * (p.sd / p.mean));
      const double mu = std::log(p.mean) - 0.5 * s2, s = std::sqrt(s2);
      return [=](double x) { return x <= 0 ? 0.0 : normal_cdf((std::log(x) - mu) / s); };
    }
  }
  return {};
}

// Probability masses on cells [j dt, (j+1) dt), thought of as spread uniformly over the cell.
struct Masses {
  double dt = 0;
  std::vector<double> m;  // m[j]: mass of cell j (shifted by `offset` cells, see below)
  double offset = 0;      // the sum of `offset` uniform cells: locations are (j + offset) dt

  // P(T <= t), with each mass spread uniformly over its cell.
  double cdf(double t) const {
    double s = 0;
    for (std::size_t j = 0; j < m.size(); ++j) {
      const double left = (static_cast<double>(j) + offset - 0.5) * dt;
      s += m[j] * std::clamp((t - left) / dt, 0.0, 1.0);
    }
    return s;
  }
};

Masses masses_of(const std::function<double(double)>& cdf, double dt, std::size_t n) {
  Masses out;
  out.dt = dt;
  out.offset = 0.5;
  out.m.resize(n);
  for (std::size_t j = 0; j < n; ++j)
    out.m[j] = cdf((static_cast<double>(j) + 1) * dt) - cdf(static_cast<double>(j) * dt);
  return out;
}

Masses convolve(const Masses& a, const Masses& b) {
  Masses out;
  out.dt = a.dt;
  out.offset = a.offset + b.offset;
  out.m.assign(a.m.size(), 0.0);
  for (std::size_t i = 0; i < a.m.size(); ++i) {
    if (a.m[i] == 0.0) continue;
    for (std::size_t j = 0; i + j < out.m.size() && j < b.m.size(); ++j) out.m[i + j] += a.m[i] * b.m[j];
  }
  return out;
}

// Expected descendants of generation k per initial cell of population p at each time, k = 0..max_k.
std::vector<std::vector<double>> expected_per_cell(const Population& p, StartMode start,
                                                   const std::vector<double>& times, int max_k) {
  std::vector<std::vector<double>> e(times.size(), std::vector<double>(static_cast<std::size_t>(max_k) + 1, 0.0));
  if (p.quiescent) {
    for (auto& row : e) row[0] = 1.0;
    return e;
  }
  const double t_end = times.back();
  if (p.sd == 0.0) {  // closed forms: T_k = t0 + k mean, t0 = 0 or U * mean
    auto cdf_tk = [&](int k, double t) {
      if (k == 0) return 1.0;
      if (start == StartMode::Sync) return t >= k * p.mean ? 1.0 : 0.0;
      return std::clamp((t - k * p.mean) / p.mean, 0.0, 1.0);
    };
    for (std::size_t j = 0; j < times.size(); ++j)
      for (int k = 0; k <= max_k; ++k) {
        const double upper = cdf_tk(k + 1, times[j]);
        e[j][static_cast<std::size_t>(k)] = std::ldexp(cdf_tk(k, times[j]) - upper, k);
      }
    return e;
  }
  const double dt = 0.01;
  const auto n = static_cast<std::size_t>(std::ceil(t_end / dt)) + 4;
  const auto cdf = division_cdf(p);
  const Masses tau = masses_of(cdf, dt, n);
  Masses tk;  // T_1
  if (start == StartMode::Sync) {
    tk = tau;
  } else {
    // t0 = U X: P(t0 <= s) = F(s) + s * E[1/X; X > s], from the masses of X.
    const Masses x = masses_of(cdf, dt / 4, 4 * n);
    std::vector<double> suffix(x.m.size() + 1, 0.0);
    for (std::size_t j = x.m.size(); j-- > 0;)
      suffix[j] = suffix[j + 1] + x.m[j] / ((static_cast<double>(j) + 0.5) * x.dt);
    auto g = [&](double s) {
      const auto idx = std::min(x.m.size(), static_cast<std::size_t>(s / x.dt));
      double below = 0;
      for (std::size_t j = 0; j < idx; ++j) below += x.m[j];
      return below + s * suffix[idx];
    };
    tk = convolve(masses_of(g, dt, n), tau);
  }
  std::vector<double> prev(times.size(), 1.0);  // P(T_0 <= t) = 1 (initial cells exist from 0)
  for (int k = 0; k <= max_k; ++k) {
    std::vector<double> next(times.size());
    for (std::size_t j = 0; j < times.size(); ++j) next[j] = tk.cdf(times[j]);
    for (std::size_t j = 0; j < times.size(); ++j) e[j][static_cast<std::size_t>(k)] = std::ldexp(prev[j] - next[j], k);
    prev = next;
    if (k < max_k) tk = convolve(tk, tau);
  }
  return e;
}

struct Case {
  std::string name;
  std::vector<Population> populations;
  StartMode start = StartMode::Sync;
  std::vector<double> times;
  double phi = 5000, phi_min = 1;  // every row has fluorescence phi
  int rows = 60;
  std::uint64_t cells_per_row = 300;
};

void check_case(const Case& c, std::uint64_t seed) {
  SCOPED_TRACE(c.name + " (seed " + std::to_string(seed) + ")");
  InitialHistogram h;
  h.source = "expectation";
  for (int r = 0; r < c.rows; ++r) {
    h.values.push_back(c.phi);
    h.counts.push_back(c.cells_per_row);
  }
  Model m;
  m.populations = c.populations;
  m.phi_min = c.phi_min;
  m.times = c.times;
  m.start = c.start;
  simkit::RunOptions o;
  o.backend = simkit::Backend::Cpu;
  o.seed = seed;
  const Result res = simkit::prolif::simulate(h, m, o);

  int max_k = 0;  // phi / 2^k > phi_min
  while (std::ldexp(c.phi, -(max_k + 1)) > c.phi_min) ++max_k;
  ASSERT_LE(static_cast<std::size_t>(max_k) + 1, res.generations + 0);

  std::vector<std::vector<double>> expected(c.times.size(),
                                            std::vector<double>(static_cast<std::size_t>(max_k) + 1, 0.0));
  for (const Population& p : c.populations) {
    const auto e = expected_per_cell(p, c.start, c.times, max_k);
    for (std::size_t j = 0; j < c.times.size(); ++j)
      for (int k = 0; k <= max_k; ++k)
        expected[j][static_cast<std::size_t>(k)] +=
            p.proportion * e[j][static_cast<std::size_t>(k)] * static_cast<double>(c.cells_per_row);
  }
  for (std::size_t j = 0; j < c.times.size(); ++j) {
    for (std::size_t k = 0; k < res.generations; ++k) {
      std::vector<double> per_row(static_cast<std::size_t>(c.rows), 0.0);
      for (std::size_t i = 0; i < res.rows; ++i)
        for (std::size_t p = 0; p < res.populations; ++p) per_row[i] += static_cast<double>(res.at(j, i, k, p));
      const double mean = std::accumulate(per_row.begin(), per_row.end(), 0.0) / c.rows;
      if (k > static_cast<std::size_t>(max_k)) {
        EXPECT_EQ(mean, 0.0) << "generation " << k << " is beyond phi_min's cut-off";
        continue;
      }
      double ss = 0;
      for (double v : per_row) ss += (v - mean) * (v - mean);
      const double want = expected[j][k];
      // A row's count is a sum of independent lineage contributions, each in [0, 2^k], so its
      // variance is at most 2^k times its mean: the floor for events too rare to show in s.
      const double se =
          std::max(std::sqrt(ss / (c.rows - 1) / c.rows), std::sqrt(std::ldexp(want, static_cast<int>(k)) / c.rows));
      EXPECT_NEAR(mean, want, 5 * se + 1e-3 * want + 1e-9)
          << "t = " << c.times[j] << ", generation " << k << ", standard error " << se;
    }
  }
}

Population proliferating(const std::string& name, double prop, double mean, double sd,
                         Distribution d = Distribution::TruncatedNormal) {
  Population p;
  p.name = name;
  p.proportion = prop;
  p.mean = mean;
  p.sd = sd;
  p.distribution = d;
  return p;
}

Population quiescent(double prop) {
  Population p;
  p.name = "quiescent";
  p.proportion = prop;
  p.quiescent = true;
  return p;
}

const std::uint64_t kSeed = simkit::test::test_seed(20261122);

TEST(ProlifExpectation, TwoPopulationsSyncSeveralTimes) {
  check_case(
      {"sync", {proliferating("slow", 0.5, 20, 6), proliferating("fast", 0.5, 12, 3)}, StartMode::Sync, {10, 30, 55}},
      kSeed);
}

TEST(ProlifExpectation, QuiescentAndTwoPopulationsProcellAsync) {
  check_case({"async",
              {quiescent(0.1), proliferating("slow", 0.45, 20, 6), proliferating("fast", 0.45, 12, 3)},
              StartMode::ProcellAsync,
              {5, 24, 50}},
             kSeed + 1);
}

TEST(ProlifExpectation, TruncationMattersWhenSdIsLarge) {
  // mean/sd = 0.8: a fifth of the untruncated normal lies below 0; the sampler must stay exact.
  check_case({"wide", {proliferating("wide", 1.0, 8, 10)}, StartMode::Sync, {6, 15, 25}, 5000, 40, 60, 200}, kSeed + 2);
}

TEST(ProlifExpectation, PhiMinCutsGenerations) {
  // phi = 100, phi_min = 20: generations 0..2 exist (100/8 = 12.5 <= 20 is discarded).
  check_case({"phi_min", {proliferating("p", 1.0, 10, 2)}, StartMode::Sync, {8, 15, 40}, 100, 20}, kSeed + 3);
  check_case({"phi_min async", {proliferating("p", 1.0, 10, 2)}, StartMode::ProcellAsync, {8, 15, 40}, 100, 20},
             kSeed + 4);
}

TEST(ProlifExpectation, ZeroSdIsDeterministicWhenSync) {
  // sd = 0, sync: at t = 25 every cell is in generation 2 (divisions at 10 and 20), exactly.
  check_case({"sd0 sync", {proliferating("p", 1.0, 10, 0)}, StartMode::Sync, {5, 10, 25}}, kSeed + 5);
  check_case({"sd0 async", {proliferating("p", 1.0, 10, 0)}, StartMode::ProcellAsync, {5, 10, 25}}, kSeed + 6);
}

TEST(ProlifExpectation, GammaAndLogNormal) {
  check_case(
      {"gamma",
       {proliferating("g", 0.6, 15, 5, Distribution::Gamma), proliferating("g2", 0.4, 9, 6, Distribution::Gamma)},
       StartMode::Sync,
       {12, 30}},
      kSeed + 7);
  check_case(
      {"lognormal", {proliferating("l", 1.0, 15, 5, Distribution::LogNormal)}, StartMode::ProcellAsync, {12, 30}},
      kSeed + 8);
}

// Sibling independence: both daughters draw their own division times. A keying bug that gives
// sisters the same time leaves every mean exact but changes the variance of the generation-1
// total. Sync start, one population: X = number of daughters of one initial cell alive at t.
// With S the survival function of a division time and f its density,
//   q = int_0^t f(s) S(t-s) ds, r = int_0^t f(s) S(t-s)^2 ds, E X = 2q, E X^2 = 2q + 2r,
// so Var X = 2q + 2r - 4q^2 and the total over N cells has variance N Var X. Over R replicates
// the sample variance has relative standard error about sqrt(2 / (R - 1)) (near-normal totals);
// we allow 5 of those. Identical sisters would give Var X = 4q - 4q^2, more than 30 % more here.
TEST(ProlifExpectation, SistersDrawIndependentDivisionTimes) {
  const Population p = proliferating("p", 1.0, 10, 3);
  const double t = 19;  // daughters half-way through their cycle: sisters' correlation shows most
  const auto cdf = division_cdf(p);
  const int steps = 20000;
  const double h = t / steps;
  double q = 0, r = 0;
  for (int i = 0; i < steps; ++i) {  // midpoint rule on the density (dF over each step)
    const double s0 = i * h, s1 = (i + 1) * h, mid = 0.5 * (s0 + s1);
    const double mass = cdf(s1) - cdf(s0);
    const double surv = 1.0 - cdf(t - mid);
    q += mass * surv;
    r += mass * surv * surv;
  }
  const double var_x = 2 * q + 2 * r - 4 * q * q;
  const double var_identical_sisters = 4 * q - 4 * q * q;
  ASSERT_GT(var_identical_sisters / var_x, 1.3) << "the test would not tell the two apart";

  InitialHistogram hist;
  hist.source = "siblings";
  hist.values = {5000};
  const std::uint64_t n = 100;
  hist.counts = {n};
  Model m;
  m.populations = {p};
  m.phi_min = 1;
  m.times = {t};
  const int replicates = 1500;
  std::vector<Model> models(replicates, m);
  std::vector<std::uint64_t> seeds(replicates);
  std::iota(seeds.begin(), seeds.end(), kSeed * 7);
  simkit::RunOptions o;
  o.backend = simkit::Backend::Cpu;
  const auto results = simkit::prolif::simulate_batch(hist, models, seeds, o);
  std::vector<double> g1;
  for (const auto& res : results)
    g1.push_back(static_cast<double>(res.by_generation(0).size() > 1 ? res.by_generation(0)[1] : 0));
  const double mean = std::accumulate(g1.begin(), g1.end(), 0.0) / replicates;
  double ss = 0;
  for (double v : g1) ss += (v - mean) * (v - mean);
  const double var = ss / (replicates - 1);
  const double want = static_cast<double>(n) * var_x;
  EXPECT_NEAR(mean, 2 * q * static_cast<double>(n), 5 * std::sqrt(want / replicates));
  EXPECT_NEAR(var, want, 5 * std::sqrt(2.0 / (replicates - 1)) * want)
      << "identical sisters would give " << static_cast<double>(n) * var_identical_sisters;
}

}  // namespace
