// RngStream (Philox4x32-10 keyed by seed and stream id, indexed by draw) and the samplers of
// distributions.hpp: reproducibility, layout, and statistics against exact CDFs and moments.
//
// Statistical tolerances, stated once:
//  - Kolmogorov-Smirnov tests at significance 1e-3 each (asymptotic critical value, n = 2^17), so
//    a correct sampler fails one given test with probability 1e-3 for a random seed; the default
//    seeds are fixed, so CI is deterministic. With n = 2^17 the test detects CDF errors > 0.54%.
//  - Moments: the sample mean is within 5 standard errors (sqrt(var / n)) of the exact mean, and the
//    sample variance within 5 standard errors (sqrt((mu4 - var^2) / n), exact fourth central moment)
//    of the exact variance: a false alarm has probability below 1e-6 per check.
// Every test prints its seed; replay with SIMKIT_TEST_SEED=<seed>.
#include "core/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/distributions.hpp"
#include "support/test_support.hpp"

namespace {

using simkit::RngStream;
using simkit::StreamId;

constexpr double kKsAlpha = 1e-3;
constexpr std::size_t kKsSamples = std::size_t{1} << 17;
constexpr double kMomentSigmas = 5.0;
constexpr double kTwoPow53 = 9007199254740992.0;

std::uint64_t announce_seed(const char* what, std::uint64_t fallback) {
  const std::uint64_t seed = simkit::test::test_seed(fallback);
  std::printf("[ seed     ] %s: %llu (replay with SIMKIT_TEST_SEED=%llu)\n", what,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

// Upper tail of the standard normal, accurate far out (erfc, not 1 - erf).
double normal_upper(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }
double normal_lower(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi); }

// Regularized lower incomplete gamma P(a, x): series for x < a + 1, else Lentz's continued fraction
// for the complement (Numerical Recipes, 6.2). Accurate to about 1e-14, far below the KS resolution.
double gamma_p(double a, double x) {
  if (!(x > 0.0)) return 0.0;
  const double log_prefactor = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
    }
    return sum * std::exp(log_prefactor);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return 1.0 - std::exp(log_prefactor) * h;
}

struct Moments {
  double mean = 0, variance = 0, fourth = 0;  // central
};

Moments sample_moments(const std::vector<double>& xs) {
  long double sum = 0;
  for (const double x : xs) sum += x;
  const long double mean = sum / static_cast<long double>(xs.size());
  long double s2 = 0, s4 = 0;
  for (const double x : xs) {
    const long double d = x - mean;
    s2 += d * d;
    s4 += d * d * d * d;
  }
  const auto n = static_cast<long double>(xs.size());
  return {static_cast<double>(mean), static_cast<double>(s2 / (n - 1)), static_cast<double>(s4 / n)};
}

// Sample mean and variance against the exact mean, variance and fourth central moment.
void expect_moments(const std::vector<double>& xs, double mean, double variance, double fourth,
                    const std::string& what) {
  const Moments m = sample_moments(xs);
  const double n = static_cast<double>(xs.size());
  const double se_mean = std::sqrt(variance / n);
  const double se_variance = std::sqrt((fourth - variance * variance) / n);
  EXPECT_NEAR(m.mean, mean, kMomentSigmas * se_mean) << what << ": mean";
  EXPECT_NEAR(m.variance, variance, kMomentSigmas * se_variance) << what << ": variance";
}

template <class Cdf>
void expect_ks(const std::vector<double>& xs, Cdf cdf, const std::string& what) {
  const double d = simkit::test::ks_statistic(xs, cdf);
  const double critical = simkit::test::ks_critical(xs.size(), kKsAlpha);
  std::printf("[ info     ] %s: KS D = %.5f (critical %.5f at alpha %g, n = %zu)\n", what.c_str(), d, critical,
              kKsAlpha, xs.size());
  EXPECT_LT(d, critical) << what;
}

template <class Sampler>
std::vector<double> draw(std::size_t n, std::uint64_t seed, StreamId id, Sampler sample) {
  RngStream rng(seed, id);
  std::vector<double> xs(n);
  for (auto& x : xs) x = sample(rng);
  return xs;
}

// ---- Layout and reproducibility --------------------------------------------------------------------

TEST(RngStream, MatchesRandom123KnownAnswers) {
  // Philox4x32-10 known-answer vectors from Random123's kat_vectors; the counter is
  // (block, stream a, b, c) and the key is (seed low, seed high), as documented in rng.hpp.
  const std::uint32_t expected0[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  RngStream zero(0, StreamId{0, 0, 0});
  for (const std::uint32_t w : expected0) EXPECT_EQ(zero.next_u32(), w);

  const std::uint32_t expected1[4] = {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd};
  RngStream ones(~std::uint64_t{0}, StreamId{0xffffffff, 0xffffffff, 0xffffffff}, 4 * std::uint64_t{0xffffffff});
  for (const std::uint32_t w : expected1) EXPECT_EQ(ones.next_u32(), w);

  const std::uint32_t expected2[4] = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
  const StreamId pi_id{0x85a308d3, 0x13198a2e, 0x03707344};
  RngStream pi(0x299f31d0a4093822ULL, pi_id, 4 * std::uint64_t{0x243f6a88});
  for (const std::uint32_t w : expected2) EXPECT_EQ(pi.next_u32(), w);
  const auto block = RngStream(0x299f31d0a4093822ULL, pi_id).block(0x243f6a88);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(block.v[i], expected2[i]);
}

TEST(RngStream, StreamIdFrom64SplitsTheWords) {
  const StreamId id = StreamId::from64(0x1234567890abcdefULL, 7);
  EXPECT_EQ(id.a, 0x90abcdefU);
  EXPECT_EQ(id.b, 0x12345678U);
  EXPECT_EQ(id.c, 7U);
}

TEST(RngStream, SameSeedStreamAndDrawGiveTheSameValues) {
  const std::uint64_t seed = announce_seed("RngStream.Reproducible", 11);
  const StreamId id{3, 5, 7};
  RngStream a(seed, id), b(seed, id);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u32(), b.next_u32()) << "draw " << i;
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u64(), b.next_u64());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(simkit::pmath::bits_of(a.uniform()), simkit::pmath::bits_of(b.uniform()));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(simkit::pmath::bits_of(a.normal()), simkit::pmath::bits_of(b.normal()));
}

TEST(RngStream, SkipToEqualsDrawingThenContinuing) {
  const std::uint64_t seed = announce_seed("RngStream.SkipTo", 12);
  const StreamId id{11, 0, 1};
  RngStream sequential(seed, id);
  std::vector<std::uint32_t> words(4100);
  for (auto& w : words) w = sequential.next_u32();
  for (const std::uint64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 1001, 1002, 1003, 1004, 4095}) {
    RngStream started(seed, id, n);
    RngStream skipped(seed, id);
    for (int i = 0; i < 13; ++i) skipped.next_u32();  // skip_to works from any position, forward or back
    skipped.skip_to(n);
    for (std::uint64_t i = n; i < n + 5; ++i) {
      ASSERT_EQ(started.next_u32(), words[i]) << "first_draw " << n;
      ASSERT_EQ(skipped.next_u32(), words[i]) << "skip_to " << n;
    }
  }
  // Far draws: skip_to(n) gives word n % 4 of block n / 4 (the block index is 32 bits: n < 2^34).
  std::mt19937_64 gen(seed);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t n = gen() >> 30;
    RngStream far(seed, id, n);
    const auto block = far.block(static_cast<std::uint32_t>(n / 4));
    for (std::uint64_t j = n % 4; j < 4; ++j) ASSERT_EQ(far.next_u32(), block.v[j]) << "draw " << n;
    ASSERT_EQ(far.next_u32(), far.block(static_cast<std::uint32_t>(n / 4 + 1)).v[0]);
  }
}

TEST(RngStream, U64AndUniformAreBuiltFromConsecutiveWords) {
  const std::uint64_t seed = announce_seed("RngStream.Words", 13);
  RngStream words(seed, StreamId{1, 2, 3}), wide(seed, StreamId{1, 2, 3}), unit(seed, StreamId{1, 2, 3});
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t lo = words.next_u32();
    const std::uint64_t hi = words.next_u32();
    const std::uint64_t v = wide.next_u64();
    ASSERT_EQ(v, lo | (hi << 32));
    ASSERT_EQ(unit.uniform(), RngStream::uniform_from_bits(v));
  }
}

TEST(RngStream, DifferentSeedsAndStreamIdsGiveDifferentStreams) {
  const std::uint64_t seed = announce_seed("RngStream.Distinct", 14);
  // The first 128-bit block of every (seed, id) below must be distinct; a collision among a few
  // thousand Philox outputs has probability ~1e-32 unless the key or counter ignores some input.
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>> seen;
  std::size_t made = 0;
  auto add = [&](std::uint64_t s, StreamId id) {
    const auto b = RngStream(s, id).block(0);
    seen.insert({b.v[0], b.v[1], b.v[2], b.v[3]});
    ++made;
  };
  for (std::uint32_t i = 0; i < 512; ++i) {
    add(seed + i, StreamId{0, 0, 0});                             // low seed word
    add(seed + (std::uint64_t{i + 1} << 32), StreamId{0, 0, 0});  // high seed word
    add(seed, StreamId{i + 1, 0, 0});
    add(seed, StreamId{0, i + 1, 0});
    add(seed, StreamId{0, 0, i + 1});
    add(seed, StreamId::from64((std::uint64_t{i + 1} << 32) | 0x80000000U, 1));
  }
  EXPECT_EQ(seen.size(), made);

  // And whole sequences differ, not just their first words.
  RngStream a(seed, StreamId{1, 0, 0}), b(seed, StreamId{2, 0, 0}), c(seed + 1, StreamId{1, 0, 0});
  int equal_ab = 0, equal_ac = 0;
  for (int i = 0; i < 4096; ++i) {
    const std::uint32_t wa = a.next_u32(), wb = b.next_u32(), wc = c.next_u32();
    equal_ab += wa == wb;
    equal_ac += wa == wc;
  }
  EXPECT_LE(equal_ab, 1);  // expected 4096 / 2^32 ~ 1e-6 coincidences
  EXPECT_LE(equal_ac, 1);
}

// ---- Uniform and normal ----------------------------------------------------------------------------

TEST(RngStream, UniformIsStrictlyInsideTheUnitIntervalWithExactComplement) {
  const std::uint64_t seed = announce_seed("RngStream.UniformRange", 21);
  // Extremes of the 52-bit grid: 2^-53 and 1 - 2^-53, both with exact complements.
  const double lowest = RngStream::uniform_from_bits(0);
  const double highest = RngStream::uniform_from_bits(~std::uint64_t{0});
  EXPECT_EQ(lowest, 1.0 / kTwoPow53);
  EXPECT_EQ(highest, 1.0 - 1.0 / kTwoPow53);
  EXPECT_EQ(1.0 - highest, 1.0 / kTwoPow53);
  EXPECT_EQ(RngStream::uniform_from_bits(0xfff), lowest);  // the low 12 bits are not used

  RngStream rng(seed, StreamId{21, 0, 0});
  for (int i = 0; i < (1 << 20); ++i) {
    const double u = rng.uniform();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    // u = (2k + 1) 2^-53: an odd multiple of 2^-53, so 1 - u is representable and exact.
    const double scaled = u * kTwoPow53;
    ASSERT_EQ(scaled, std::floor(scaled)) << u;
    ASSERT_EQ(std::fmod(scaled, 2.0), 1.0) << u;
    const double complement = 1.0 - u;
    ASSERT_EQ(1.0 - complement, u);
    ASSERT_EQ(complement * kTwoPow53 + scaled, kTwoPow53);
  }
}

TEST(RngStream, UniformMomentsAndKs) {
  const std::uint64_t seed = announce_seed("RngStream.Uniform", 22);
  const std::size_t n = std::size_t{1} << 21;
  const auto xs = draw(n, seed, StreamId{22, 0, 0}, [](RngStream& r) { return r.uniform(); });
  // U(0,1): mean 1/2, variance 1/12, fourth central moment 1/80.
  expect_moments(xs, 0.5, 1.0 / 12.0, 1.0 / 80.0, "uniform");
  expect_ks(
      std::vector<double>(xs.begin(), xs.begin() + kKsSamples), [](double x) { return x; }, "uniform");
  // Lag-1 correlation within a stream: zero, standard error 1/sqrt(n) (scaled by the variance).
  long double c = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) c += (xs[i] - 0.5) * (xs[i + 1] - 0.5);
  const double corr = static_cast<double>(c / static_cast<long double>(n - 1)) * 12.0;
  EXPECT_NEAR(corr, 0.0, kMomentSigmas / std::sqrt(static_cast<double>(n)));
}

TEST(RngStream, UniformAcrossStreamsAndSeeds) {
  // How the engines use it: one stream per entity and a few draws each. Draw 0 of consecutive stream
  // ids (and of consecutive seeds) must itself be a uniform sample, and adjacent ids uncorrelated.
  const std::uint64_t seed = announce_seed("RngStream.AcrossStreams", 23);
  std::vector<double> by_stream(kKsSamples), by_seed(kKsSamples), neighbour(kKsSamples);
  for (std::size_t i = 0; i < kKsSamples; ++i) {
    by_stream[i] = RngStream(seed, StreamId::from64(i)).uniform();
    neighbour[i] = RngStream(seed, StreamId::from64(i + 1)).uniform();
    by_seed[i] = RngStream(seed + i, StreamId{0, 0, 0}).uniform();
  }
  expect_ks(
      by_stream, [](double x) { return x; }, "uniform, draw 0 of stream ids 0..n-1");
  expect_ks(
      by_seed, [](double x) { return x; }, "uniform, draw 0 of seeds s..s+n-1");
  long double c = 0;
  for (std::size_t i = 0; i < kKsSamples; ++i) c += (by_stream[i] - 0.5) * (neighbour[i] - 0.5);
  const double corr = static_cast<double>(c / static_cast<long double>(kKsSamples)) * 12.0;
  EXPECT_NEAR(corr, 0.0, kMomentSigmas / std::sqrt(static_cast<double>(kKsSamples)));
}

TEST(RngStream, NormalMomentsAndKs) {
  const std::uint64_t seed = announce_seed("RngStream.Normal", 24);
  const std::size_t n = std::size_t{1} << 20;
  const auto xs = draw(n, seed, StreamId{24, 0, 0}, [](RngStream& r) { return r.normal(); });
  // N(0,1): mean 0, variance 1, fourth central moment 3.
  expect_moments(xs, 0.0, 1.0, 3.0, "normal");
  // Third raw moment 0 (variance of x^3 is E x^6 = 15) and fourth 3 (variance E x^8 - 9 = 96).
  long double s3 = 0, s4 = 0;
  for (const double x : xs) {
    s3 += static_cast<long double>(x) * x * x;
    s4 += static_cast<long double>(x) * x * x * x;
  }
  const double dn = static_cast<double>(n);
  EXPECT_NEAR(static_cast<double>(s3 / n), 0.0, kMomentSigmas * std::sqrt(15.0 / dn)) << "third moment";
  EXPECT_NEAR(static_cast<double>(s4 / n), 3.0, kMomentSigmas * std::sqrt(96.0 / dn)) << "fourth moment";
  expect_ks(std::vector<double>(xs.begin(), xs.begin() + kKsSamples), normal_lower, "normal");
  for (const double x : xs) ASSERT_TRUE(std::isfinite(x));
}

// ---- TruncatedNormal -------------------------------------------------------------------------------

struct TruncatedCase {
  double mu, sigma, lower;
  const char* why;
};

const TruncatedCase kTruncatedCases[] = {
    {63.7, 28.9, 0.0, "ProCell division time, mu/sigma = 2.2"},
    {2.0, 10.0, 0.0, "mu/sigma = 0.2: truncation removes 42% of the mass"},
    {0.0, 1.0, 0.0, "half-normal"},
    {-3.0, 1.0, 0.0, "a = 3: only the far tail remains"},
    {-20.0, 1.0, 0.0, "a = 20: mass above 3e-89, needs the upper-tail complement"},
    {10.0, 2.0, 9.0, "non-zero lower bound"},
    {5.0, 1.0, -2.0, "negative lower bound, truncation negligible (a = -7)"},
};

std::string describe(const TruncatedCase& c) {
  return "TruncatedNormal(mu " + std::to_string(c.mu) + ", sigma " + std::to_string(c.sigma) + ", lower " +
         std::to_string(c.lower) + "; " + c.why + ")";
}

TEST(TruncatedNormal, KsAgainstTheExactCdf) {
  const std::uint64_t seed = announce_seed("TruncatedNormal.Ks", 31);
  std::uint32_t index = 0;
  for (const auto& c : kTruncatedCases) {
    const auto dist = simkit::make_truncated_normal(c.mu, c.sigma, c.lower);
    const double a = (c.lower - c.mu) / c.sigma;
    const double mass_above = normal_upper(a);
    const auto xs = draw(kKsSamples, seed, StreamId{31, index++, 0}, [&](RngStream& r) { return dist.sample(r); });
    for (const double x : xs) ASSERT_GT(x, c.lower) << describe(c);
    // F(x) = (Phi(z) - Phi(a)) / (1 - Phi(a)), written with upper tails so that a = 20 keeps its digits.
    expect_ks(
        xs,
        [&](double x) { return x <= c.lower ? 0.0 : (mass_above - normal_upper((x - c.mu) / c.sigma)) / mass_above; },
        describe(c));
  }
}

TEST(TruncatedNormal, ExactMeanAndVariance) {
  const std::uint64_t seed = announce_seed("TruncatedNormal.Moments", 32);
  std::uint32_t index = 0;
  for (const auto& c : kTruncatedCases) {
    const auto dist = simkit::make_truncated_normal(c.mu, c.sigma, c.lower);
    const auto xs =
        draw(std::size_t{1} << 19, seed, StreamId{32, index++, 0}, [&](RngStream& r) { return dist.sample(r); });
    // Raw moments of Z | Z > a (Z standard normal), lambda = phi(a) / (1 - Phi(a)), by parts:
    // m1 = lambda, m2 = 1 + a lambda, m3 = (a^2 + 2) lambda, m4 = a^3 lambda + 3 m2.
    const double a = (c.lower - c.mu) / c.sigma;
    const double lambda = normal_pdf(a) / normal_upper(a);
    const double m1 = lambda, m2 = 1.0 + a * lambda, m3 = (a * a + 2.0) * lambda, m4 = a * a * a * lambda + 3.0 * m2;
    const double var_z = m2 - m1 * m1;
    const double fourth_z = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1 * m1 * m1 * m1;
    const double s = c.sigma;
    expect_moments(xs, c.mu + s * lambda, s * s * var_z, s * s * s * s * fourth_z, describe(c));
  }
}

TEST(TruncatedNormal, ExtremeUniformsStayInsideTheSupport) {
  for (const auto& c : kTruncatedCases) {
    const auto dist = simkit::make_truncated_normal(c.mu, c.sigma, c.lower);
    for (const double u : {1.0 / kTwoPow53, 3.0 / kTwoPow53, 0.5, 1.0 - 3.0 / kTwoPow53, 1.0 - 1.0 / kTwoPow53}) {
      const double x = dist.from_uniform(u);
      EXPECT_TRUE(std::isfinite(x)) << describe(c) << " u = " << u;
      EXPECT_GT(x, c.lower) << describe(c) << " u = " << u;
    }
    // Monotone in u.
    double previous = c.lower;
    for (int i = 1; i < 1000; ++i) {
      const double x = dist.from_uniform(i / 1000.0);
      EXPECT_GE(x, previous) << describe(c);
      previous = x;
    }
  }
}

TEST(TruncatedNormal, ZeroSigmaGivesExactlyMu) {
  const std::uint64_t seed = announce_seed("TruncatedNormal.ZeroSigma", 33);
  for (const double mu : {63.7, 1.0, 1e-3}) {
    const auto dist = simkit::make_truncated_normal(mu, 0.0);
    RngStream rng(seed, StreamId{33, 0, 0});
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(dist.sample(rng), mu);
    EXPECT_EQ(dist.from_uniform(1.0 / kTwoPow53), mu);
  }
}

TEST(TruncatedNormal, ConstructorComputesTheMasses) {
  const auto d = simkit::make_truncated_normal(63.7, 28.9);
  const double a = -63.7 / 28.9;
  EXPECT_NEAR(d.mass_below, normal_lower(a), 1e-16);
  EXPECT_NEAR(d.mass_above, normal_upper(a), 1e-15);
  const auto far = simkit::make_truncated_normal(-20.0, 1.0);
  EXPECT_NEAR(far.mass_above / normal_upper(20.0), 1.0, 1e-14);  // not 1 - Phi(20) = 0
  EXPECT_NEAR(simkit::normal_cdf(-1.959963984540054), 0.025, 1e-16);
  EXPECT_NEAR(simkit::normal_cdf(-37.0) / 5.725571222524e-300, 1.0, 1e-10);
}

// ---- Gamma -----------------------------------------------------------------------------------------

struct MeanSd {
  double mean, sd;
};

const MeanSd kGammaCases[] = {
    {20.0, 5.0},   // shape 16
    {63.7, 28.9},  // shape 4.86 (ProCell's division time as a gamma)
    {10.0, 8.0},   // shape 1.5625
    {3.0, 3.0},    // shape 1: exponential
    {1.0, 2.0},    // shape 0.25
    {2.0, 6.0},    // shape 1/9: most of the mass near 0
};

std::string describe_gamma(const MeanSd& c, const simkit::Gamma& g) {
  return "Gamma(mean " + std::to_string(c.mean) + ", sd " + std::to_string(c.sd) + "; shape " +
         std::to_string(g.shape) + ")";
}

TEST(Gamma, IncompleteGammaHelperIsRight) {
  // Checks the test's own reference CDF against closed forms: P(1, x) = 1 - e^-x, P(1/2, x) = erf(sqrt x).
  for (const double x : {1e-6, 0.1, 0.5, 1.0, 1.5, 2.0, 5.0, 20.0, 60.0}) {
    EXPECT_NEAR(gamma_p(1.0, x), -std::expm1(-x), 1e-14) << x;
    EXPECT_NEAR(gamma_p(0.5, x), std::erf(std::sqrt(x)), 1e-14) << x;
    EXPECT_NEAR(gamma_p(3.0, x), 1.0 - std::exp(-x) * (1.0 + x + 0.5 * x * x), 1e-14) << x;
  }
}

TEST(Gamma, ConstructorMatchesMeanAndSd) {
  for (const auto& c : kGammaCases) {
    const auto g = simkit::make_gamma(c.mean, c.sd);
    EXPECT_NEAR(g.shape * g.scale, c.mean, 1e-13 * c.mean);
    EXPECT_NEAR(std::sqrt(g.shape) * g.scale, c.sd, 1e-13 * c.sd);
  }
}

TEST(Gamma, KsAgainstTheExactCdf) {
  const std::uint64_t seed = announce_seed("Gamma.Ks", 41);
  std::uint32_t index = 0;
  for (const auto& c : kGammaCases) {
    const auto g = simkit::make_gamma(c.mean, c.sd);
    const auto xs = draw(kKsSamples, seed, StreamId{41, index++, 0}, [&](RngStream& r) { return g.sample(r); });
    for (const double x : xs) ASSERT_TRUE(x > 0.0 && std::isfinite(x)) << describe_gamma(c, g) << ": " << x;
    const double shape = (c.mean / c.sd) * (c.mean / c.sd), scale = c.sd * c.sd / c.mean;
    expect_ks(
        xs, [&](double x) { return gamma_p(shape, x / scale); }, describe_gamma(c, g));
  }
}

TEST(Gamma, ExactMeanAndVariance) {
  const std::uint64_t seed = announce_seed("Gamma.Moments", 42);
  std::uint32_t index = 0;
  for (const auto& c : kGammaCases) {
    const auto g = simkit::make_gamma(c.mean, c.sd);
    const auto xs =
        draw(std::size_t{1} << 19, seed, StreamId{42, index++, 0}, [&](RngStream& r) { return g.sample(r); });
    // Gamma(k, theta): variance k theta^2, fourth central moment 3 k (k + 2) theta^4.
    const double k = (c.mean / c.sd) * (c.mean / c.sd), theta = c.sd * c.sd / c.mean;
    const double theta4 = theta * theta * theta * theta;
    expect_moments(xs, c.mean, c.sd * c.sd, 3.0 * k * (k + 2.0) * theta4, describe_gamma(c, g));
  }
}

// ---- LogNormal -------------------------------------------------------------------------------------

const MeanSd kLogNormalCases[] = {
    {63.7, 28.9},  // ProCell's division time as a log-normal
    {1.0, 0.1},    // narrow
    {10.0, 30.0},  // heavy tail (log sigma 1.52)
};

TEST(LogNormal, ConstructorMatchesMeanAndSd) {
  for (const auto& c : kLogNormalCases) {
    const auto l = simkit::make_lognormal(c.mean, c.sd);
    const double s2 = l.log_sigma * l.log_sigma;
    EXPECT_NEAR(std::exp(l.log_mu + 0.5 * s2), c.mean, 1e-13 * c.mean);
    EXPECT_NEAR(std::sqrt(std::expm1(s2)) * std::exp(l.log_mu + 0.5 * s2), c.sd, 1e-13 * c.sd);
  }
}

TEST(LogNormal, KsAndMoments) {
  const std::uint64_t seed = announce_seed("LogNormal", 51);
  std::uint32_t index = 0;
  for (const auto& c : kLogNormalCases) {
    const auto l = simkit::make_lognormal(c.mean, c.sd);
    const std::string what = "LogNormal(mean " + std::to_string(c.mean) + ", sd " + std::to_string(c.sd) + ")";
    const double s2 = std::log1p((c.sd / c.mean) * (c.sd / c.mean));
    const double log_sigma = std::sqrt(s2), log_mu = std::log(c.mean) - 0.5 * s2;
    const auto xs =
        draw(std::size_t{1} << 19, seed, StreamId{51, index++, 0}, [&](RngStream& r) { return l.sample(r); });
    for (const double x : xs) ASSERT_TRUE(x > 0.0 && std::isfinite(x)) << what << ": " << x;
    expect_ks(
        std::vector<double>(xs.begin(), xs.begin() + kKsSamples),
        [&](double x) { return normal_lower((std::log(x) - log_mu) / log_sigma); }, what);
    // Moments only where the fourth moment is moderate (coefficient of variation <= 1/2): for the
    // heavy tail the sample variance is far from normal and a 5-sigma band means little.
    if (c.sd <= 0.5 * c.mean) {
      // Raw moments E[X^j] = exp(j mu + j^2 s^2 / 2).
      auto raw = [&](double j) { return std::exp(j * log_mu + 0.5 * j * j * s2); };
      const double m1 = raw(1), m2 = raw(2), m3 = raw(3), m4 = raw(4);
      const double fourth = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1 * m1 * m1 * m1;
      expect_moments(xs, c.mean, c.sd * c.sd, fourth, what);
    }
  }
}

}  // namespace
