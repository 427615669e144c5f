#pragma once
// Continuous distributions for division times, parametrised by mean and standard deviation.
// Each is a plain struct built on the host (make_*: where libm is needed, once) and sampled
// on host or device with the portable math of pmath.hpp, so samples are bit-identical.
#include <cstdint>
#include <vector>

#include "core/hd.hpp"
#include "core/pmath.hpp"
#include "core/rng.hpp"

namespace simkit {

// Normal(mu, sigma) truncated to x > lower, sampled exactly by inversion with one uniform:
// x = mu + sigma * Phi^{-1}(Phi(a) + u (1 - Phi(a))), a = (lower - mu) / sigma. No rejection loop.
struct TruncatedNormal {
  double mu = 0, sigma = 0, lower = 0;
  double mass_below = 0;  // Phi(a)
  double mass_above = 1;  // 1 - Phi(a), computed directly so the upper tail keeps its precision

  SIMKIT_HD double from_uniform(double u) const {
    if (sigma == 0.0) return mu;
    const double p = mass_below + u * mass_above;
    const double q = (1.0 - u) * mass_above;
    const double x = mu + sigma * pmath::normal_quantile(p, q);
    // Rounding can land exactly on the bound when u is within 2^-52 of 0; keep the support open.
    return x > lower ? x : lower + (lower == 0.0 ? 4.9406564584124654e-324 : (lower > 0 ? lower : -lower) * 1e-16);
  }
  SIMKIT_HD double sample(RngStream& rng) const { return from_uniform(rng.uniform()); }
};

// Gamma with the given mean and sd: shape k = (mean/sd)^2, scale = sd^2/mean (ProCell's gamma
// option passes mean and sd as shape and scale; that is not copied). Marsaglia & Tsang (2000);
// the acceptance rate exceeds 0.95, so the loop ends after one try in all but a few percent of draws.
struct Gamma {
  double shape = 1, scale = 1;
  SIMKIT_HD double sample(RngStream& rng) const {
    const double k = shape < 1.0 ? shape + 1.0 : shape;
    const double d = k - 1.0 / 3.0;
    const double c = 1.0 / pmath::sqrt(9.0 * d);
    double x;
    for (;;) {
      const double z = rng.normal();
      double v = 1.0 + c * z;
      if (v <= 0.0) continue;
      v = v * v * v;
      const double u = rng.uniform();
      if (pmath::log(u) < 0.5 * z * z + d - d * v + d * pmath::log(v)) {
        x = d * v;
        break;
      }
    }
    if (shape < 1.0) x *= pmath::exp(pmath::log(rng.uniform()) / shape);  // boost: X_k = X_{k+1} U^{1/k}
    x *= scale;
    return x > 0.0 ? x : 4.9406564584124654e-324;
  }
};

// Log-normal with the given mean and sd of the variable itself (not of its logarithm).
struct LogNormal {
  double log_mu = 0, log_sigma = 0;
  SIMKIT_HD double from_uniform(double u) const {
    return pmath::exp(log_mu + log_sigma * pmath::normal_quantile(u, 1.0 - u));
  }
  SIMKIT_HD double sample(RngStream& rng) const { return from_uniform(rng.uniform()); }
};

// Host-only exact discrete samplers (used once per H(0) row, not per cell).
// Binomial(n, p): inversion when min(p, 1-p) * n < 30, else Hormann's BTRS (transformed rejection
// with squeeze, 1993) with log-factorials from lgammal.
std::uint64_t sample_binomial(std::uint64_t n, double p, RngStream& rng);
// Multinomial(n, probabilities) by conditional binomials; probabilities sum to 1.
std::vector<std::uint64_t> sample_multinomial(std::uint64_t n, const std::vector<double>& probabilities,
                                              RngStream& rng);

// Host-side constructors (they use libm once per distribution).
TruncatedNormal make_truncated_normal(double mu, double sigma, double lower = 0.0);
Gamma make_gamma(double mean, double sd);
LogNormal make_lognormal(double mean, double sd);

// Standard normal CDF on the host, accurate in both tails.
double normal_cdf(double x);

}  // namespace simkit
