// prolif's backends, one suite over every backend (docs/reproducibility.md): the cpu backend (at
// 1, 2, 3 and 7 threads) and the cuda backend against the reference, bit for bit, on random
// problems (every distribution, both start modes, several output times, sd = 0), batches of seeds
// and ProCell's AML9 data; and, on every backend including the reference, exact schedules, a
// 10^9-cell line and the generation limit. The cuda instances skip, with the reason, when no CUDA
// device is usable (or the build has none). Only the public API is used.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "problems.hpp"
#include "simkit/core/error.hpp"
#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

using namespace simkit::prolif::test_problems;

std::string backend_name(const testing::TestParamInfo<Backend>& info) { return std::string(to_string(info.param)); }

// The option sets a backend is tested with: every thread count that could change a cpu result's
// order of work; the cuda backend once.
std::vector<RunOptions> variants(Backend backend, std::uint64_t seed) {
  if (backend == Backend::Cpu) {
    std::vector<RunOptions> out;
    for (int threads : {1, 2, 3, 7}) out.push_back(options(Backend::Cpu, seed, threads));
    return out;
  }
  return {options(backend, seed)};
}
std::string label(const RunOptions& o) {
  return std::string(to_string(o.backend)) + (o.backend == Backend::Cpu ? ", " + std::to_string(o.threads) + " threads" : "");
}

// Makes sure the problems cover every distribution, both start modes, several times and sd = 0.
void steer(Problem& p, int n) {
  p.model.start = n % 2 == 0 ? StartMode::Sync : StartMode::ProcellAsync;
  std::vector<Population*> cycling;
  for (auto& pop : p.model.populations)
    if (!pop.quiescent) cycling.push_back(&pop);
  if (!cycling.empty()) {
    cycling[0]->distribution = static_cast<Distribution>(n % 3);
    if (cycling[0]->sd == 0) cycling[0]->sd = 7.5;
    if (n % 4 == 3) cycling.back()->sd = 0;
  }
  if (n % 3 == 2 && p.model.times.size() < 3) {
    const double t_max = p.model.t_max();
    p.model.times = {t_max / 4, t_max / 2, t_max};
    if (t_max == 0) p.model.times = {0, 40, 80};
  }
}

// ----------------------------------------------------------------------------------------------
// 1. Every non-reference backend equals the reference bit for bit

class ProlifBackendVsReference : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
};

TEST_P(ProlifBackendVsReference, EqualsReferenceOnRandomProblems) {
  const std::uint64_t seed = simkit::test::test_seed(20240611);
  std::printf("%s seed: %llu (set SIMKIT_TEST_SEED to repeat)\n", std::string(to_string(GetParam())).c_str(),
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // Problems of up to 10^6 cells on the GPU; 3e5 on the host, which runs each at four thread counts.
  const double budget = GetParam() == Backend::Cuda ? 1e6 : 3e5;
  std::uint64_t total_divisions = 0;
  for (int n = 0; n < 12; ++n) {
    Problem p = random_problem(rng, budget);
    steer(p, n);
    const std::uint64_t run_seed = rng();
    SCOPED_TRACE("test seed " + std::to_string(seed) + ", problem " + std::to_string(n) + ": " + p.description);
    const Result ref = simulate(p.initial, p.model, options(Backend::Reference, run_seed));
    ASSERT_EQ(ref.times, p.model.times.size());
    ASSERT_EQ(ref.rows, p.initial.values.size());
    for (const RunOptions& o : variants(GetParam(), run_seed)) expect_same(ref, simulate(p.initial, p.model, o), label(o));
    total_divisions += ref.divisions;
  }
  // The problems must exercise divisions at all, or the comparison proves little.
  EXPECT_GT(total_divisions, 10000u);
}

TEST_P(ProlifBackendVsReference, EveryDistributionAndStartModeOnOneProblem) {
  const InitialHistogram h = histogram({150, 900, 2400, 4800}, {300, 250, 200, 150});
  for (Distribution d : {Distribution::TruncatedNormal, Distribution::Gamma, Distribution::LogNormal}) {
    for (StartMode start : {StartMode::Sync, StartMode::ProcellAsync}) {
      const Model m = model_of({quiescent(0.1), proliferating("a", 0.5, 18, 6, d), proliferating("b", 0.4, 30, 0, d)},
                               4, {0, 24, 60, 96}, start);
      SCOPED_TRACE(std::to_string(static_cast<int>(d)) + (start == StartMode::Sync ? " sync" : " async"));
      const Result ref = simulate(h, m, options(Backend::Reference, 31));
      for (const RunOptions& o : variants(GetParam(), 31)) expect_same(ref, simulate(h, m, o), label(o));
      EXPECT_GT(ref.divisions, 1000u);
    }
  }
}

TEST_P(ProlifBackendVsReference, BatchOfFiveSeedsEqualsReferencePerSeed) {
  const InitialHistogram h = histogram({300, 1200, 3500}, {400, 300, 200});
  const Model m = model_of({quiescent(0.05), proliferating("slow", 0.45, 35, 12, Distribution::Gamma),
                            proliferating("fast", 0.5, 20, 5, Distribution::LogNormal)},
                           6, {30, 72}, StartMode::ProcellAsync);
  const std::vector<Model> models(5, m);
  const std::vector<std::uint64_t> seeds{100, 101, 102, 103, 104};
  for (const RunOptions& o : variants(GetParam(), 0)) {
    const std::vector<Result> batch = simulate_batch(h, models, seeds, o);
    ASSERT_EQ(batch.size(), 5u);
    for (std::size_t r = 0; r < 5; ++r) {
      expect_same(simulate(h, m, options(Backend::Reference, seeds[r])), batch[r],
                  label(o) + ", run " + std::to_string(r));
    }
    EXPECT_NE(batch[0].counts, batch[1].counts);
  }
}

// A calibration's batch: runs that differ in everything a fit changes (phi_min, hence the number of
// generations and the counts' layout; means, sds, proportions; the start mode; the output times)
// go to the backend together, which the cuda backend runs in one launch.
TEST_P(ProlifBackendVsReference, BatchOfDifferentModelsEqualsReferencePerRun) {
  const InitialHistogram h = histogram({120, 700, 2600, 9000}, {350, 250, 200, 120});
  std::vector<Model> models;
  std::vector<std::uint64_t> seeds;
  for (int r = 0; r < 7; ++r) {
    const double phi_min = 2.0 + 9.0 * r;  // 2 .. 56: from about 12 generations down to a few
    const StartMode start = r % 2 == 0 ? StartMode::Sync : StartMode::ProcellAsync;
    std::vector<double> times = r % 3 == 0 ? std::vector<double>{48, 96} : std::vector<double>{96};
    models.push_back(model_of({quiescent(0.05 + 0.02 * r), proliferating("slow", 0.4, 30 + 3 * r, 2.0 * r),
                               proliferating("fast", 0.55 - 0.02 * r, 14 + r, 3)},
                              phi_min, times, start));
    seeds.push_back(500 + static_cast<std::uint64_t>(r));
  }
  for (const RunOptions& o : variants(GetParam(), 0)) {
    const std::vector<Result> batch = simulate_batch(h, models, seeds, o);
    ASSERT_EQ(batch.size(), models.size());
    std::size_t generations_min = 100, generations_max = 0;
    for (std::size_t r = 0; r < models.size(); ++r) {
      expect_same(simulate(h, models[r], options(Backend::Reference, seeds[r])), batch[r],
                  label(o) + ", run " + std::to_string(r));
      generations_min = std::min(generations_min, batch[r].generations);
      generations_max = std::max(generations_max, batch[r].generations);
    }
    // The runs' layouts must differ, or the test does not exercise per-run layouts.
    EXPECT_LT(generations_min, generations_max);
  }
}

TEST_P(ProlifBackendVsReference, RealDataEqualsReference) {
  const auto dir = simkit::test::data_dir();
  if (!dir) GTEST_SKIP() << "ProCell data not found (set SIMKIT_DATA_DIR)";
  const auto path = *dir / "procell" / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt";
  if (!std::filesystem::is_regular_file(path)) GTEST_SKIP() << path << " not found";
  const InitialHistogram h = read_histogram(path);
  for (StartMode start : {StartMode::ProcellAsync, StartMode::Sync}) {
    const Model m =
        model_of({quiescent(0.06), proliferating("slow", 0.47, 63.7, 28.9), proliferating("fast", 0.47, 41.1, 14.3)},
                 11, {72, 240}, start);
    const Result ref = simulate(h, m, options(Backend::Reference, 2024));
    RunOptions o = variants(GetParam(), 2024).back();
    expect_same(ref, simulate(h, m, o), label(o) + (start == StartMode::Sync ? ", sync" : ", procell-async"));
    EXPECT_GT(ref.total(1), 1000000u);
  }
}

INSTANTIATE_TEST_SUITE_P(, ProlifBackendVsReference, testing::Values(Backend::Cpu, Backend::Cuda), backend_name);

// ----------------------------------------------------------------------------------------------
// 2. Exact results on every backend

class ProlifEveryBackend : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
  RunOptions run(std::uint64_t seed) const { return options(GetParam(), seed, 2); }
};

TEST_P(ProlifEveryBackend, SingleCellWithFixedDivisionTimeDoublesOnSchedule) {
  const InitialHistogram h = histogram({1000}, {1});
  const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 1, {0, 5, 9.999, 10, 15, 20, 25, 30});
  const Result r = simulate(h, m, run(9));
  const std::vector<std::vector<std::uint64_t>> expected{{1},    {1},       {1},       {0, 2},
                                                         {0, 2}, {0, 0, 4}, {0, 0, 4}, {0, 0, 0, 8}};
  for (std::size_t t = 0; t < expected.size(); ++t) EXPECT_EQ(r.by_generation(t), expected[t]) << "t index " << t;
  EXPECT_EQ(r.divisions, 1u + 2u + 4u);  // at 10, 20 and 30 (t_max: a division at t_max counts)
  const auto exact = exact_histogram(r, h, 7);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact[0].first, 125.0);
  EXPECT_EQ(exact[0].second, 8u);
}

// 10^9 cells in one H(0) line at t = 0: all counted, exactly, split between a quiescent and a
// proliferating population by the multinomial draw (with t_max = 0 no cell can divide, so the
// counts are made on the host for every backend; this checks that every backend returns them).
TEST_P(ProlifEveryBackend, BillionCellLineAtTimeZero) {
  const InitialHistogram h = histogram({500, 2000}, {1000000000, 3});
  const Model m = model_of({quiescent(0.9), proliferating("P1", 0.1, 20, 0)}, 1, {0});
  const Result r = simulate(h, m, run(1));
  EXPECT_EQ(r.total(0), 1000000003u);
  EXPECT_EQ(r.by_generation(0), std::vector<std::uint64_t>{1000000003u});
  EXPECT_EQ(r.divisions, 0u);
  EXPECT_EQ(r.at(0, 0, 0, 0) + r.at(0, 0, 0, 1), 1000000000u);
  // 10^8 expected proliferating, sd sqrt(10^9 0.1 0.9) = 9487; 10 sd is never reached by chance.
  EXPECT_NEAR(static_cast<double>(r.at(0, 0, 0, 1)), 1e8, 10 * 9487.0);
}

INSTANTIATE_TEST_SUITE_P(, ProlifEveryBackend, testing::Values(Backend::Reference, Backend::Cpu, Backend::Cuda),
                         backend_name);

// A lineage that would pass 62 generations must be rejected with a UserError, and quickly: the
// check runs in a child process under an alarm so that a walk of 2^62 cells fails the test
// instead of hanging the suite.
using ProlifEveryBackendDeathTest = ProlifEveryBackend;

TEST_P(ProlifEveryBackendDeathTest, MoreThan62GenerationsIsAUserError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Backend backend = GetParam();
  const auto attempt = [backend](double phi_min) {
    alarm(20);
    const InitialHistogram h = histogram({100}, {1});
    const Model m = model_of({proliferating("P1", 1.0, 1, 0)}, phi_min, {70});
    try {
      (void)simulate(h, m, options(backend, 1, 2));
    } catch (const UserError& e) {
      std::fprintf(stderr, "message: %s\n", e.what());
      std::exit(std::string(e.what()).find("generations") != std::string::npos ? 0 : 3);
    } catch (...) {
      std::exit(4);
    }
    std::exit(5);
  };
  EXPECT_EXIT(attempt(1e-30), ::testing::ExitedWithCode(0), "message: .*generations");
  EXPECT_EXIT(attempt(0.0), ::testing::ExitedWithCode(0), "message: .*generations");
}

INSTANTIATE_TEST_SUITE_P(, ProlifEveryBackendDeathTest,
                         testing::Values(Backend::Reference, Backend::Cpu, Backend::Cuda), backend_name);

}  // namespace
}  // namespace simkit::prolif
