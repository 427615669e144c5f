#pragma once
// Portable math: log, exp and the normal quantile written with +, -, *, / and sqrt only.
// IEEE 754 rounds each of those identically on x86-64 and on NVIDIA GPUs, so, compiled without
// FMA contraction (-ffp-contract=off, nvcc --fmad=false: see cmake/options.cmake), these functions
// return bit-identical results on host and device. libm and CUDA's own log/exp do not.
// They are accurate to a few ulp, which is all the samplers need.
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/hd.hpp"

namespace simkit::pmath {

SIMKIT_HD inline std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}

SIMKIT_HD inline double double_of(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

SIMKIT_HD inline double sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);  // IEEE round-to-nearest, as on the host
#else
  return __builtin_sqrt(x);
#endif
}

// 2^k for integer k in the normal range [-1022, 1023].
SIMKIT_HD inline double pow2(int k) { return double_of(static_cast<std::uint64_t>(k + 1023) << 52); }

// Natural logarithm. x = 2^k * m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1),
// |s| < 0.1716, summed to s^23 (the next term is below 1e-18 relative).
SIMKIT_HD inline double log(double x) {
  if (!(x > 0.0)) {
    return x == 0.0 ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (x == std::numeric_limits<double>::infinity()) return x;
  int k = 0;
  if (x < 2.2250738585072014e-308) {  // subnormal: scale into the normal range
    x *= 18014398509481984.0;         // 2^54
    k = -54;
  }
  const std::uint64_t b = bits_of(x);
  k += static_cast<int>((b >> 52) & 0x7ff) - 1023;
  double m = double_of((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (m > 1.4142135623730951) {
    m *= 0.5;
    k += 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  double p = 1.0 / 23.0;
  p = p * z + 1.0 / 21.0;
  p = p * z + 1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z + 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  const double log_m = 2.0 * s + 2.0 * s * z * p;
  // ln 2 split so that k * ln2_hi is exact for |k| < 2^11.
  constexpr double ln2_hi = 6.93147180369123816490e-01;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  const double dk = static_cast<double>(k);
  return dk * ln2_hi + (log_m + dk * ln2_lo);
}

// Exponential. x = k ln 2 + r, |r| <= ln2/2, exp r by its Taylor series to r^14.
SIMKIT_HD inline double exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.1332191019412) return 0.0;
  constexpr double inv_ln2 = 1.44269504088896338700e+00;
  constexpr double ln2_hi = 6.93147180369123816490e-01;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  const double kd = x * inv_ln2 + (x < 0.0 ? -0.5 : 0.5);
  const int k = static_cast<int>(kd);  // rounds to nearest by truncating the shifted value
  const double dk = static_cast<double>(k);
  const double r = (x - dk * ln2_hi) - dk * ln2_lo;
  double p = 1.0 / 87178291200.0;  // 1/14!
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  const double e = 1.0 + (r + r * r * p);
  // Scale in two halves so that k down to -1074 (subnormal results) and up to 1024 stays exact.
  const int k1 = k / 2;
  return e * pow2(k1) * pow2(k - k1);
}

namespace detail {
SIMKIT_HD inline double horner8(double x, double c0, double c1, double c2, double c3, double c4, double c5, double c6,
                                double c7) {
  return ((((((c7 * x + c6) * x + c5) * x + c4) * x + c3) * x + c2) * x + c1) * x + c0;
}
}  // namespace detail

// Standard normal quantile Phi^{-1}(p), given p and its complement q = 1 - p (both in (0,1)).
// Passing q separately keeps full relative accuracy in the upper tail, where 1 - p would cancel.
// Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988), relative error about 1e-16.
SIMKIT_HD inline double normal_quantile(double p, double q) {
  const double d = p - 0.5;
  if (d >= -0.425 && d <= 0.425) {
    const double r = 0.180625 - d * d;
    return d *
           detail::horner8(r, 3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3,
                           1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
                           3.3430575583588128105e+4, 2.5090809287301226727e+3) /
           detail::horner8(r, 1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3,
                           2.1213794301586595867e+4, 3.9307895800092710610e+4, 2.8729085735721942674e+4,
                           5.2264952788528545610e+3);
  }
  const double tail = d < 0.0 ? p : q;
  if (!(tail > 0.0)) {
    return d < 0.0 ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  double r = pmath::sqrt(-pmath::log(tail));
  double value;
  if (r <= 5.0) {
    r -= 1.6;
    value = detail::horner8(r, 1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
                            3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
                            2.27238449892691845833e-2, 7.74545014278341407640e-4) /
            detail::horner8(r, 1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
                            1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4,
                            1.05075007164441684324e-9);
  } else {
    r -= 5.0;
    value = detail::horner8(r, 6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
                            2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
                            2.71155556874348757815e-5, 2.01033439929228813265e-7) /
            detail::horner8(r, 1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
                            7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7,
                            2.04426310338993978564e-15);
  }
  return d < 0.0 ? -value : value;
}

}  // namespace simkit::pmath
