#include "core/distributions.hpp"

#include <algorithm>
#include <cmath>

namespace simkit {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TruncatedNormal make_truncated_normal(double mu, double sigma, double lower) {
  TruncatedNormal t;
  t.mu = mu;
  t.sigma = sigma;
  t.lower = lower;
  if (sigma > 0.0) {
    const double a = (lower - mu) / sigma;
    t.mass_below = normal_cdf(a);
    t.mass_above = normal_cdf(-a);
  }
  return t;
}

Gamma make_gamma(double mean, double sd) {
  Gamma g;
  g.shape = (mean / sd) * (mean / sd);
  g.scale = sd * sd / mean;
  return g;
}

LogNormal make_lognormal(double mean, double sd) {
  LogNormal l;
  const double s2 = std::log1p((sd / mean) * (sd / mean));
  l.log_sigma = std::sqrt(s2);
  l.log_mu = std::log(mean) - 0.5 * s2;
  return l;
}

namespace {

std::uint64_t binomial_inversion(std::uint64_t n, double p, RngStream& rng) {
  // Sequential search from 0 with the pmf recurrence; expected n*p + 1 steps (< 31 here).
  const double q = 1.0 - p;
  const double ratio = p / q;
  double pmf = std::exp(static_cast<double>(n) * std::log1p(-p));
  double u = rng.uniform();
  std::uint64_t k = 0;
  while (u > pmf && k < n) {
    u -= pmf;
    pmf *= ratio * static_cast<double>(n - k) / static_cast<double>(k + 1);
    ++k;
    if (pmf <= 0.0) {  // ran past the representable tail: restart (probability below 1e-300)
      u = rng.uniform();
      pmf = std::exp(static_cast<double>(n) * std::log1p(-p));
      k = 0;
    }
  }
  return k;
}

std::uint64_t binomial_btrs(std::uint64_t n_int, double p, RngStream& rng) {
  const long double n = static_cast<long double>(n_int);
  const double q = 1.0 - p;
  const double spq = std::sqrt(static_cast<double>(n) * p * q);
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = static_cast<double>(n) * p + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double alpha = (2.83 + 5.1 / b) * spq;
  const long double lpq = std::log(static_cast<long double>(p) / q);
  const long double m = std::floor((n + 1) * p);
  const long double h = std::lgamma(m + 1) + std::lgamma(n - m + 1);
  for (;;) {
    const double u = rng.uniform() - 0.5;
    double v = rng.uniform();
    const double us = 0.5 - std::fabs(u);
    const double kd = std::floor((2.0 * a / us + b) * u + c);
    if (kd < 0.0 || kd > static_cast<double>(n)) continue;
    if (us >= 0.07 && v <= v_r) return static_cast<std::uint64_t>(kd);
    const long double k = kd;
    const long double lv = std::log(static_cast<long double>(v) * alpha / (a / (us * us) + b));
    if (lv <= h - std::lgamma(k + 1) - std::lgamma(n - k + 1) + (k - m) * lpq) return static_cast<std::uint64_t>(kd);
  }
}

}  // namespace

std::uint64_t sample_binomial(std::uint64_t n, double p, RngStream& rng) {
  if (n == 0 || p <= 0.0) return 0;
  if (p >= 1.0) return n;
  const bool flip = p > 0.5;
  const double pp = flip ? 1.0 - p : p;
  const std::uint64_t k =
      static_cast<double>(n) * pp < 30.0 ? binomial_inversion(n, pp, rng) : binomial_btrs(n, pp, rng);
  return flip ? n - k : k;
}

std::vector<std::uint64_t> sample_multinomial(std::uint64_t n, const std::vector<double>& probabilities,
                                              RngStream& rng) {
  std::vector<std::uint64_t> out(probabilities.size(), 0);
  std::uint64_t remaining = n;
  for (std::size_t i = 0; i < probabilities.size() && remaining > 0; ++i) {
    // Mass of this and the later categories, summed afresh so that no rounding drift can give a
    // zero-probability category a cell.
    double mass = 0.0;
    for (std::size_t j = i; j < probabilities.size(); ++j) mass += probabilities[j];
    const double share = mass > 0.0 ? std::clamp(probabilities[i] / mass, 0.0, 1.0) : 0.0;
    out[i] = (i + 1 == probabilities.size() && share > 0.0) ? remaining : sample_binomial(remaining, share, rng);
    remaining -= out[i];
  }
  return out;
}

}  // namespace simkit
