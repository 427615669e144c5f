// Accuracy of the portable math (pmath::log, exp, normal_quantile) against libm and a long double
// reference. Inputs are random (printed seed, replay with SIMKIT_TEST_SEED) plus fixed edge cases.
#include "core/pmath.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"

namespace {

using simkit::pmath::bits_of;
namespace pmath = simkit::pmath;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDenormMin = std::numeric_limits<double>::denorm_min();
constexpr double kMinNormal = std::numeric_limits<double>::min();
constexpr double kMax = std::numeric_limits<double>::max();

// Bounds against glibc's std::log / std::exp (themselves within 1 ulp, in practice correctly rounded).
// Measured over 2e7 random inputs: pmath::log is within 2.0 ulp of the exact value and pmath::exp
// within 1.0 ulp; one more ulp is allowed for the libm reference's own rounding.
constexpr std::uint64_t kLogMaxUlp = 3;
constexpr std::uint64_t kExpMaxUlp = 2;

std::uint64_t announce_seed(const char* what, std::uint64_t fallback) {
  const std::uint64_t seed = simkit::test::test_seed(fallback);
  std::printf("[ seed     ] %s: %llu (replay with SIMKIT_TEST_SEED=%llu)\n", what,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

// Maps a double onto a signed integer line where adjacent doubles differ by 1 (+0 and -0 both map to 0).
std::int64_t ordered(double x) {
  const std::uint64_t b = bits_of(x);
  const auto magnitude = static_cast<std::int64_t>(b & 0x7fffffffffffffffULL);
  return (b >> 63) != 0 ? -magnitude : magnitude;
}

// Distance in ulps between two non-NaN doubles (infinities count as the next value past DBL_MAX).
std::uint64_t ulp_distance(double a, double b) {
  const std::int64_t ia = ordered(a), ib = ordered(b);
  return ia > ib ? static_cast<std::uint64_t>(ia - ib) : static_cast<std::uint64_t>(ib - ia);
}

double random_positive_double(std::mt19937_64& gen) {
  // Uniform over bit patterns: every binade from subnormals to DBL_MAX equally likely.
  for (;;) {
    const double x = pmath::double_of(gen() & 0x7fffffffffffffffULL);
    if (x > 0.0 && x <= kMax) return x;
  }
}

// Checks f against ref on every input, reporting the worst case found.
template <class F, class Ref>
void expect_within_ulp(const std::vector<double>& inputs, F f, Ref ref, std::uint64_t bound, const char* name) {
  std::uint64_t worst = 0;
  double worst_x = 0;
  for (const double x : inputs) {
    const double got = f(x), want = ref(x);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << name << "(" << x << ") = " << got << ", expected NaN";
      continue;
    }
    const std::uint64_t d = ulp_distance(got, want);
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  std::printf("[ info     ] %s: worst %llu ulp at x = %a over %zu inputs\n", name,
              static_cast<unsigned long long>(worst), worst_x, inputs.size());
  EXPECT_LE(worst, bound) << name << " at x = " << std::hexfloat << worst_x << std::defaultfloat << " (" << worst_x
                          << "): got " << f(worst_x) << ", libm " << ref(worst_x);
}

double std_log(double x) { return std::log(x); }
double std_exp(double x) { return std::exp(x); }
double p_log(double x) { return pmath::log(x); }
double p_exp(double x) { return pmath::exp(x); }

TEST(PmathLog, RandomBitPatternsAcrossTheWholeRange) {
  std::mt19937_64 gen(announce_seed("PmathLog", 101));
  std::vector<double> xs;
  for (int i = 0; i < (1 << 21); ++i) xs.push_back(random_positive_double(gen));
  expect_within_ulp(xs, p_log, std_log, kLogMaxUlp, "log");
}

TEST(PmathLog, Subnormals) {
  std::mt19937_64 gen(announce_seed("PmathLog.Subnormals", 102));
  std::vector<double> xs = {kDenormMin,
                            2 * kDenormMin,
                            3 * kDenormMin,
                            kMinNormal - kDenormMin,
                            std::nextafter(kMinNormal, 0.0),
                            kMinNormal,
                            std::nextafter(kMinNormal, 1.0)};
  for (int i = 0; i < (1 << 18); ++i) {
    const std::uint64_t mantissa = gen() & 0x000fffffffffffffULL;
    // Also vary the number of leading zero bits so that every subnormal binade is hit.
    const double x = pmath::double_of(mantissa >> (gen() % 52));
    if (x > 0.0) xs.push_back(x);
  }
  expect_within_ulp(xs, p_log, std_log, kLogMaxUlp, "log (subnormal)");
}

TEST(PmathLog, NearOneKeepsRelativeAccuracy) {
  // log(1 + e) ~ e: the result is small, so only relative accuracy near 1 is a fair test.
  std::mt19937_64 gen(announce_seed("PmathLog.NearOne", 103));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> xs = {1.0,
                            std::nextafter(1.0, 2.0),
                            std::nextafter(1.0, 0.0),
                            0.7071067811865475,
                            0.7071067811865476,
                            1.4142135623730951,
                            1.4142135623730950,
                            0.5,
                            2.0};
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(1.0 + std::ldexp(unit(gen), -static_cast<int>(gen() % 53)));
  expect_within_ulp(xs, p_log, std_log, kLogMaxUlp, "log (near 1)");
  EXPECT_EQ(pmath::log(1.0), 0.0);
}

TEST(PmathLog, PowersOfTwoAndExtremes) {
  std::vector<double> xs = {kDenormMin, kMinNormal, kMax, std::nextafter(kMax, 0.0), 1e-300, 1e300, 1e-310, 1e308};
  for (int k = -1074; k <= 1023; ++k) {
    const double p = std::ldexp(1.0, k);
    xs.insert(xs.end(), {p, std::nextafter(p, 0.0), std::nextafter(p, kInf)});
  }
  expect_within_ulp(xs, p_log, std_log, kLogMaxUlp, "log (powers of two)");
}

TEST(PmathLog, SpecialValues) {
  EXPECT_EQ(pmath::log(0.0), -kInf);
  EXPECT_EQ(pmath::log(-0.0), -kInf);
  EXPECT_TRUE(std::isnan(pmath::log(-1.0)));
  EXPECT_TRUE(std::isnan(pmath::log(-kDenormMin)));
  EXPECT_TRUE(std::isnan(pmath::log(-kInf)));
  EXPECT_TRUE(std::isnan(pmath::log(kNaN)));
  EXPECT_EQ(pmath::log(kInf), kInf);
  EXPECT_EQ(pmath::log(1.0), 0.0);
}

TEST(PmathExp, RandomInputsAcrossTheWholeRange) {
  std::mt19937_64 gen(announce_seed("PmathExp", 201));
  // [-745.2, 709.8] covers every finite result, including subnormal ones, and a little underflow.
  std::uniform_real_distribution<double> range(-745.2, 709.8);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> xs;
  for (int i = 0; i < (1 << 21); ++i) xs.push_back(range(gen));
  // Small arguments of every magnitude: exp(x) ~ 1 + x.
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(std::ldexp(unit(gen), -static_cast<int>(gen() % 1080)));
  // Subnormal results.
  std::uniform_real_distribution<double> deep(-745.2, -708.3);
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(deep(gen));
  expect_within_ulp(xs, p_exp, std_exp, kExpMaxUlp, "exp");
}

TEST(PmathExp, ReductionBoundariesAndExtremes) {
  // Near multiples of ln2/2 the reduction switches k; near +-709/745 the result over/underflows.
  std::vector<double> xs = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            709.0,
                            709.78,
                            709.782712893384,
                            -708.3964185322641,
                            -708.4,
                            -744.44007192138126,
                            -745.0,
                            -745.1332191019411,
                            -745.1332191019412,
                            1e-300,
                            -1e-300,
                            kDenormMin,
                            -kDenormMin,
                            5e-17,
                            -5e-17};
  for (int k = -2150; k <= 2048; ++k) {
    const double centre = k * 0.34657359027997264;  // k * ln2 / 2
    if (centre < -745.2 || centre > 709.78) continue;
    double below = centre, above = centre;
    xs.push_back(centre);
    for (int i = 0; i < 4; ++i) {
      below = std::nextafter(below, -kInf);
      above = std::nextafter(above, kInf);
      xs.push_back(below);
      xs.push_back(above);
    }
  }
  expect_within_ulp(xs, p_exp, std_exp, kExpMaxUlp, "exp (boundaries)");
}

TEST(PmathExp, SpecialValues) {
  EXPECT_EQ(pmath::exp(0.0), 1.0);
  EXPECT_EQ(pmath::exp(-0.0), 1.0);
  EXPECT_EQ(pmath::exp(kInf), kInf);
  EXPECT_EQ(pmath::exp(-kInf), 0.0);
  EXPECT_TRUE(std::isnan(pmath::exp(kNaN)));
  EXPECT_EQ(pmath::exp(710.0), kInf);
  EXPECT_EQ(pmath::exp(1e300), kInf);
  EXPECT_EQ(pmath::exp(-746.0), 0.0);
  EXPECT_EQ(pmath::exp(-1e300), 0.0);
  EXPECT_TRUE(std::isfinite(pmath::exp(709.78)));
  EXPECT_GT(pmath::exp(-745.0), 0.0);  // subnormal, not flushed
}

// ---- normal_quantile ---------------------------------------------------------------------------

constexpr long double kSqrt2 = 1.414213562373095048801688724209698079L;
constexpr long double kSqrt2Pi = 2.506628274631000502415765284811045253L;

// Phi(x) and its complement 1 - Phi(x) = Phi(-x), in long double (about 19 digits, both tails).
long double phi_cdf(long double x) { return 0.5L * std::erfc(-x / kSqrt2); }
long double phi_pdf(long double x) { return std::exp(-0.5L * x * x) / kSqrt2Pi; }

// The brief's criterion: Phi(x) equals the requested tail probability t to 1e-14 relative. Rounding
// x to a double alone moves Phi(x) by kappa * 2^-53 relative, kappa = |x| phi(x) / t (the condition
// number of Phi, about x^2 + 1 in the tails, 1369 at p = 1e-300), so the bound is scaled by
// max(1, kappa): in the centre it is 1e-14 relative in p, in the tails 1e-14 relative in x.
constexpr double kQuantileTolerance = 1e-14;

// x = normal_quantile(t, 1 - t) (lower tail, t = p) or x = normal_quantile(1 - t, t) (upper tail, t = q).
::testing::AssertionResult quantile_accurate(double t, bool upper) {
  const double x = upper ? pmath::normal_quantile(1.0 - t, t) : pmath::normal_quantile(t, 1.0 - t);
  if (!std::isfinite(x)) return ::testing::AssertionFailure() << "quantile of " << t << " is " << x;
  const long double achieved = upper ? phi_cdf(-static_cast<long double>(x)) : phi_cdf(x);
  const long double lt = t;
  const long double relative = std::fabs(achieved / lt - 1.0L);
  const long double kappa = std::fabs(static_cast<long double>(x)) * phi_pdf(x) / lt;
  const long double allowed = kQuantileTolerance * (kappa > 1.0L ? kappa : 1.0L);
  if (relative <= allowed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << (upper ? "q = " : "p = ") << t << std::defaultfloat << " ("
                                       << t << "): x = " << x << ", Phi gives back " << static_cast<double>(achieved)
                                       << ", relative error " << static_cast<double>(relative) << " > "
                                       << static_cast<double>(allowed);
}

TEST(PmathNormalQuantile, InvertsPhiToWithin1e14) {
  std::mt19937_64 gen(announce_seed("PmathNormalQuantile", 301));
  std::uniform_real_distribution<double> half(0.0, 0.5);
  std::uniform_real_distribution<double> decades(0.0, 300.0);
  int failures = 0;
  for (int i = 0; i < 200000 && failures < 10; ++i) {
    // Linear in (0, 0.5] exercises the central branch; log-uniform down to 1e-300 both tail branches.
    const double linear = half(gen);
    const double logarithmic = std::pow(10.0, -decades(gen));
    for (const double t : {linear, logarithmic}) {
      if (!(t > 0.0)) continue;
      for (const bool upper : {false, true}) {
        const auto r = quantile_accurate(t, upper);
        EXPECT_TRUE(r);
        failures += r ? 0 : 1;
      }
    }
  }
}

TEST(PmathNormalQuantile, BranchBoundaries) {
  // Central branch for |p - 0.5| <= 0.425; tail branches split at r = sqrt(-log p) = 5.
  std::vector<double> ts = {0.5,
                            0.075,
                            0.07500000000000001,
                            0.07499999999999999,
                            std::exp(-25.0),
                            std::nextafter(std::exp(-25.0), 0.0),
                            std::nextafter(std::exp(-25.0), 1.0),
                            1e-300,
                            1e-310,
                            kDenormMin,
                            1e-16,
                            1e-100,
                            0.25,
                            0.4999999999999999};
  for (const double t : ts) {
    EXPECT_TRUE(quantile_accurate(t, false));
    EXPECT_TRUE(quantile_accurate(t, true));
  }
  // Monotone across each boundary, stepping one double at a time. Each branch is accurate to about
  // an ulp, so where two branches meet the result may step back by one ulp (it does at p = 0.075,
  // -1.4395314709384555 then -1.4395314709384557) but never more.
  for (const double centre : {0.075, 0.925, std::exp(-25.0), 1.0 - std::exp(-25.0)}) {
    double p = centre;
    for (int i = 0; i < 64; ++i) p = std::nextafter(p, 0.0);
    double previous = -kInf;
    for (int i = 0; i < 128; ++i, p = std::nextafter(p, 1.0)) {
      const double x = pmath::normal_quantile(p, 1.0 - p);
      EXPECT_GE(x, std::nextafter(previous, -kInf)) << "not monotone at p = " << std::hexfloat << p;
      previous = x;
    }
  }
}

TEST(PmathNormalQuantile, SymmetricBitForBit) {
  // With an exact complement pair (q = 1 - p without rounding), quantile(p, q) == -quantile(q, p).
  std::mt19937_64 gen(announce_seed("PmathNormalQuantile.Symmetry", 302));
  std::uniform_real_distribution<double> upper_half(0.5, 1.0);
  std::uniform_real_distribution<double> decades(1.2, 300.0);  // t < 0.064: the tail branches
  for (int i = 0; i < 100000; ++i) {
    const double p = upper_half(gen);
    const double q = 1.0 - p;  // exact for p in [0.5, 1] (Sterbenz)
    ASSERT_EQ(1.0 - q, p);
    ASSERT_EQ(bits_of(pmath::normal_quantile(p, q)), bits_of(-pmath::normal_quantile(q, p))) << "p = " << p;
    // Tiny tails: only the tail and the sign matter, so the rounded complement is fine.
    const double t = std::pow(10.0, -decades(gen));
    ASSERT_EQ(pmath::normal_quantile(t, 1.0 - t), -pmath::normal_quantile(1.0 - t, t)) << "t = " << t;
  }
}

TEST(PmathNormalQuantile, KnownValuesAndExtremeTails) {
  EXPECT_EQ(pmath::normal_quantile(0.5, 0.5), 0.0);
  EXPECT_NEAR(pmath::normal_quantile(0.975, 0.025), 1.959963984540054, 2e-15);
  EXPECT_NEAR(pmath::normal_quantile(0.025, 0.975), -1.959963984540054, 2e-15);
  EXPECT_NEAR(pmath::normal_quantile(0.8413447460685429, 0.15865525393145707), 1.0, 1e-14);
  // p = 1e-300: x = -37.0470962993612..., still finite and accurate.
  const double x300 = pmath::normal_quantile(1e-300, 1.0);
  EXPECT_NEAR(x300, -37.047096299361201, 37.05 * kQuantileTolerance);
  EXPECT_EQ(pmath::normal_quantile(1.0, 1e-300), -x300);
  EXPECT_TRUE(quantile_accurate(1e-300, false));
  EXPECT_TRUE(quantile_accurate(1e-300, true));
  // The smallest subnormal still gives a finite quantile (about -38.47).
  const double x_min = pmath::normal_quantile(kDenormMin, 1.0);
  EXPECT_TRUE(std::isfinite(x_min));
  EXPECT_NEAR(x_min, -38.4674056, 1e-6);
  // Zero tails are infinite.
  EXPECT_EQ(pmath::normal_quantile(0.0, 1.0), -kInf);
  EXPECT_EQ(pmath::normal_quantile(1.0, 0.0), kInf);
}

}  // namespace
