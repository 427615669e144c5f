// Host/device bit identity: the Philox words, uniforms, normals, the samplers of distributions.hpp and
// pmath::log/exp/normal_quantile must give the same bits on the GPU as on the CPU, so that a result
// depends on the seed and the entity, never on the backend. Same function, compiled twice, compared
// as 64-bit patterns (NaNs included). Needs a device; skips with the reason otherwise.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/distributions.hpp"
#include "core/pmath.hpp"
#include "core/rng.hpp"
#include "support/test_support.hpp"

namespace {

using simkit::RngStream;
using simkit::StreamId;
using simkit::pmath::bits_of;

constexpr int kTruncated = 6;
constexpr int kGammas = 5;
constexpr int kLogNormals = 2;

// Built on the host with the make_* constructors, passed to the kernel by value.
struct Samplers {
  simkit::TruncatedNormal truncated[kTruncated];
  simkit::Gamma gamma[kGammas];
  simkit::LogNormal lognormal[kLogNormals];
};

Samplers make_samplers() {
  Samplers s;
  s.truncated[0] = simkit::make_truncated_normal(63.7, 28.9);  // ProCell, mu/sigma = 2.2
  s.truncated[1] = simkit::make_truncated_normal(2.0, 10.0);   // mu/sigma = 0.2
  s.truncated[2] = simkit::make_truncated_normal(-20.0, 1.0);  // far upper tail
  s.truncated[3] = simkit::make_truncated_normal(10.0, 2.0, 9.0);
  s.truncated[4] = simkit::make_truncated_normal(5.0, 1.0, -2.0);
  s.truncated[5] = simkit::make_truncated_normal(42.0, 0.0);  // sigma 0: exactly mu
  s.gamma[0] = simkit::make_gamma(20.0, 5.0);                 // shape 16
  s.gamma[1] = simkit::make_gamma(63.7, 28.9);                // shape 4.86
  s.gamma[2] = simkit::make_gamma(3.0, 3.0);                  // shape 1
  s.gamma[3] = simkit::make_gamma(1.0, 2.0);                  // shape 0.25
  s.gamma[4] = simkit::make_gamma(2.0, 6.0);                  // shape 1/9
  s.lognormal[0] = simkit::make_lognormal(63.7, 28.9);
  s.lognormal[1] = simkit::make_lognormal(10.0, 30.0);
  return s;
}

struct Case {
  std::uint64_t seed = 0;
  std::uint64_t first_draw = 0;
  StreamId id;
};

constexpr int kWords = 9;  // more than two blocks, whatever the starting word
constexpr int kGammaDraws = 3;
// uniform, normal, each truncated normal, kGammaDraws per gamma, each log-normal, and a final
// uniform that checks both sides left the stream at the same position after the rejection loops.
constexpr int kValues = 2 + kTruncated + kGammas * kGammaDraws + kLogNormals + 1;

SIMKIT_HD void generate(const Case& c, const Samplers& s, std::uint32_t* words, double* values) {
  RngStream raw(c.seed, c.id, c.first_draw);
  for (int i = 0; i < kWords; ++i) words[i] = raw.next_u32();
  RngStream rng(c.seed, c.id, c.first_draw);
  int k = 0;
  values[k++] = rng.uniform();
  values[k++] = rng.normal();
  for (int t = 0; t < kTruncated; ++t) values[k++] = s.truncated[t].sample(rng);
  for (int g = 0; g < kGammas; ++g) {
    for (int j = 0; j < kGammaDraws; ++j) values[k++] = s.gamma[g].sample(rng);
  }
  for (int l = 0; l < kLogNormals; ++l) values[k++] = s.lognormal[l].sample(rng);
  values[k++] = rng.uniform();
}

__global__ void generate_kernel(const Case* cases, std::size_t n, Samplers s, std::uint32_t* words, double* values) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) generate(cases[i], s, words + i * kWords, values + i * kValues);
}

// log(x), exp(y), normal_quantile(p, q), then each truncated normal and log-normal at uniform p.
constexpr int kMath = 3 + kTruncated + kLogNormals;

SIMKIT_HD void evaluate(double x, double y, double p, double q, const Samplers& s, double* out) {
  int k = 0;
  out[k++] = simkit::pmath::log(x);
  out[k++] = simkit::pmath::exp(y);
  out[k++] = simkit::pmath::normal_quantile(p, q);
  for (int t = 0; t < kTruncated; ++t) out[k++] = s.truncated[t].from_uniform(p);
  for (int l = 0; l < kLogNormals; ++l) out[k++] = s.lognormal[l].from_uniform(p);
}

__global__ void math_kernel(const double* xs, const double* ys, const double* ps, const double* qs, std::size_t n,
                            Samplers s, double* out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) evaluate(xs[i], ys[i], ps[i], qs[i], s, out + i * kMath);
}

unsigned blocks_for(std::size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

std::uint64_t announce_seed(const char* what, std::uint64_t fallback) {
  const std::uint64_t seed = simkit::test::test_seed(fallback);
  std::printf("[ seed     ] %s: %llu (replay with SIMKIT_TEST_SEED=%llu)\n", what,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

TEST(RngCuda, WordsUniformsNormalsAndSamplersMatchTheHostBitForBit) {
  std::string why;
  if (!simkit::test::cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;

  std::mt19937_64 gen(announce_seed("RngCuda.Samplers", 901));
  const std::size_t n = std::size_t{1} << 15;
  std::vector<Case> cases(n);
  for (std::size_t i = 0; i < n; ++i) {
    Case& c = cases[i];
    c.seed = (i % 4 == 0) ? i : gen();  // small seeds too
    c.id = StreamId{static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen() % 3 == 0 ? 0 : gen()),
                    static_cast<std::uint32_t>(gen() % 8)};
    // Mostly near the start of a stream (each word offset in a block), sometimes far (block index < 2^32).
    c.first_draw = (i % 3 == 0) ? (gen() >> 30) : (gen() % 64);
  }
  const Samplers samplers = make_samplers();

  simkit::cuda::DeviceBuffer<Case> d_cases;
  d_cases.upload(cases);
  simkit::cuda::DeviceBuffer<std::uint32_t> d_words(n * kWords);
  simkit::cuda::DeviceBuffer<double> d_values(n * kValues);
  generate_kernel<<<blocks_for(n, 128), 128>>>(d_cases.data(), n, samplers, d_words.data(), d_values.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  const std::vector<std::uint32_t> device_words = d_words.to_host();
  const std::vector<double> device_values = d_values.to_host();

  std::vector<std::uint32_t> host_words(n * kWords);
  std::vector<double> host_values(n * kValues);
  for (std::size_t i = 0; i < n; ++i) generate(cases[i], samplers, &host_words[i * kWords], &host_values[i * kValues]);

  std::size_t word_mismatches = 0, value_mismatches = 0;
  for (std::size_t i = 0; i < n * kWords; ++i) {
    if (device_words[i] == host_words[i]) continue;
    if (++word_mismatches <= 5) {
      const Case& c = cases[i / kWords];
      ADD_FAILURE() << "word " << i % kWords << " of seed " << c.seed << ", stream (" << c.id.a << ", " << c.id.b
                    << ", " << c.id.c << "), first draw " << c.first_draw << ": device " << device_words[i] << ", host "
                    << host_words[i];
    }
  }
  for (std::size_t i = 0; i < n * kValues; ++i) {
    if (bits_of(device_values[i]) == bits_of(host_values[i])) continue;
    if (++value_mismatches <= 5) {
      const Case& c = cases[i / kValues];
      ADD_FAILURE() << "value " << i % kValues << " (see generate()) of seed " << c.seed << ", stream (" << c.id.a
                    << ", " << c.id.b << ", " << c.id.c << "), first draw " << c.first_draw << ": device "
                    << std::hexfloat << device_values[i] << ", host " << host_values[i] << std::defaultfloat;
    }
  }
  EXPECT_EQ(word_mismatches, 0U);
  EXPECT_EQ(value_mismatches, 0U);
  // The sigma = 0 truncated normal gives exactly mu on both sides.
  EXPECT_EQ(host_values[2 + 5], 42.0);
}

TEST(RngCuda, PmathAndInversionSamplersMatchTheHostBitForBit) {
  std::string why;
  if (!simkit::test::cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;

  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kDenormMin = std::numeric_limits<double>::denorm_min();
  std::mt19937_64 gen(announce_seed("RngCuda.Pmath", 902));
  std::uniform_real_distribution<double> exp_range(-750.0, 720.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_real_distribution<double> decades(0.0, 320.0);

  std::vector<double> xs, ys, ps, qs;
  // Special values first (p stays in (0, 1]: it is also fed to the inversion samplers as u).
  const double special_x[] = {0.0,        -0.0, -1.0, kInf, -kInf,  kNaN,
                              kDenormMin, 1.0,  2.0,  0.5,  1e-310, 1.7976931348623157e308};
  const double special_y[] = {0.0,    -0.0,   kInf,   -kInf, kNaN, 709.782712893384, 710.0, -745.1332191019412,
                              -746.0, 1e-300, -708.5, 1.0};
  const double special_p[] = {0.5,
                              0.075,
                              0.925,
                              1e-300,
                              kDenormMin,
                              1.0 / 9007199254740992.0,
                              1.0 - 1.0 / 9007199254740992.0,
                              1.3887943864964021e-11,
                              0.25,
                              0.999,
                              1e-16,
                              0.5};
  for (int i = 0; i < 12; ++i) {
    xs.push_back(special_x[i]);
    ys.push_back(special_y[i]);
    ps.push_back(special_p[i]);
    qs.push_back(1.0 - special_p[i]);
  }
  const std::size_t n = std::size_t{1} << 19;
  while (xs.size() < n) {
    // log: every positive binade including subnormals (uniform over bit patterns).
    xs.push_back(simkit::pmath::double_of(gen() & 0x7fffffffffffffffULL));
    ys.push_back(xs.size() % 2 ? exp_range(gen) : std::ldexp(unit(gen) - 0.5, -static_cast<int>(gen() % 1080)));
    double p = unit(gen);
    if (xs.size() % 3 == 0) p = std::pow(10.0, -decades(gen));  // lower tail, down to subnormals
    if (!(p > 0.0)) p = kDenormMin;
    double q = 1.0 - p;
    if (xs.size() % 3 == 1 && p > 0.5) {  // upper tail, given by its complement
      q = std::pow(10.0, -decades(gen));
      p = 1.0 - q;
    }
    ps.push_back(p);
    qs.push_back(q);
  }
  const Samplers samplers = make_samplers();

  simkit::cuda::DeviceBuffer<double> d_xs, d_ys, d_ps, d_qs;
  d_xs.upload(xs);
  d_ys.upload(ys);
  d_ps.upload(ps);
  d_qs.upload(qs);
  simkit::cuda::DeviceBuffer<double> d_out(n * kMath);
  math_kernel<<<blocks_for(n, 256), 256>>>(d_xs.data(), d_ys.data(), d_ps.data(), d_qs.data(), n, samplers,
                                           d_out.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  const std::vector<double> device_out = d_out.to_host();

  std::vector<double> host_out(n * kMath);
  for (std::size_t i = 0; i < n; ++i) evaluate(xs[i], ys[i], ps[i], qs[i], samplers, &host_out[i * kMath]);

  const char* names[kMath] = {"log(x)",          "exp(y)",          "normal_quantile(p, q)", "truncated[0](p)",
                              "truncated[1](p)", "truncated[2](p)", "truncated[3](p)",       "truncated[4](p)",
                              "truncated[5](p)", "lognormal[0](p)", "lognormal[1](p)"};
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n * kMath; ++i) {
    if (bits_of(device_out[i]) == bits_of(host_out[i])) continue;
    if (++mismatches <= 10) {
      const std::size_t j = i / kMath;
      ADD_FAILURE() << names[i % kMath] << " with x = " << std::hexfloat << xs[j] << ", y = " << ys[j]
                    << ", p = " << ps[j] << ", q = " << qs[j] << ": device " << device_out[i] << ", host "
                    << host_out[i] << std::defaultfloat;
    }
  }
  EXPECT_EQ(mismatches, 0U) << "of " << n * kMath << " values";
}

}  // namespace

// A device allocation that cannot succeed is a DeviceMemoryError (a UserError: the problem's size,
// exit code 2), for every engine, through the one CUDA error check; the device stays usable.
TEST(CudaCheck, FailedAllocationIsADeviceMemoryError) {
  std::string why;
  if (!simkit::test::cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  using Buffer = simkit::cuda::DeviceBuffer<char>;
  EXPECT_THROW(Buffer(std::size_t{1} << 52), simkit::DeviceMemoryError);  // 4 PiB
  Buffer small(1024);
  EXPECT_EQ(small.size(), 1024u);
}
