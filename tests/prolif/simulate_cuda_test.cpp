// prolif's CUDA backend against the reference, bit for bit: random problems (every distribution,
// both start modes, several output times, sd = 0), batches of seeds, a 10^9-cell line, the
// generation limit, and ProCell's AML9 data. Only the public API is used: no device code here.
// Every test skips, with the reason, when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "simkit/core/error.hpp"
#include "problems.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

using namespace simkit::prolif::test_problems;

// ----------------------------------------------------------------------------------------------

// Makes sure the problems cover what the brief asks of the device: gamma and lognormal
// populations, both start modes, several times and sd = 0 all occur among the 12 problems.
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

TEST(ProlifSimulateCuda, EqualsReferenceBitForBitOnRandomProblems) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = simkit::test::test_seed(20240612);
  std::printf("ProlifSimulateCuda seed: %llu (set SIMKIT_TEST_SEED to repeat)\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uint64_t total_divisions = 0;
  for (int n = 0; n < 12; ++n) {
    Problem p = random_problem(rng, 1e6);
    steer(p, n);
    const std::uint64_t run_seed = rng();
    SCOPED_TRACE("test seed " + std::to_string(seed) + ", problem " + std::to_string(n) + ": " + p.description);
    const Result ref = simulate(p.initial, p.model, options(Backend::Reference, run_seed));
    const Result gpu = simulate(p.initial, p.model, options(Backend::Cuda, run_seed));
    expect_same(ref, gpu, "cuda");
    total_divisions += ref.divisions;
    std::printf("  problem %d: %s -> %llu divisions\n", n, p.description.c_str(),
                static_cast<unsigned long long>(ref.divisions));
  }
  EXPECT_GT(total_divisions, 10000u);
}

TEST(ProlifSimulateCuda, EveryDistributionAndStartModeOnOneProblem) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const InitialHistogram h = histogram({150, 900, 2400, 4800}, {300, 250, 200, 150});
  for (Distribution d : {Distribution::TruncatedNormal, Distribution::Gamma, Distribution::LogNormal}) {
    for (StartMode start : {StartMode::Sync, StartMode::ProcellAsync}) {
      const Model m = model_of({quiescent(0.1), proliferating("a", 0.5, 18, 6, d), proliferating("b", 0.4, 30, 0, d)},
                               4, {0, 24, 60, 96}, start);
      SCOPED_TRACE(std::to_string(static_cast<int>(d)) + (start == StartMode::Sync ? " sync" : " async"));
      const Result ref = simulate(h, m, options(Backend::Reference, 31));
      expect_same(ref, simulate(h, m, options(Backend::Cuda, 31)), "cuda");
      EXPECT_GT(ref.divisions, 1000u);
    }
  }
}

TEST(ProlifSimulateCuda, BatchOfFiveSeedsEqualsReferencePerSeed) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const InitialHistogram h = histogram({300, 1200, 3500}, {400, 300, 200});
  const Model m = model_of({quiescent(0.05), proliferating("slow", 0.45, 35, 12, Distribution::Gamma),
                            proliferating("fast", 0.5, 20, 5, Distribution::LogNormal)},
                           6, {30, 72}, StartMode::ProcellAsync);
  const std::vector<Model> models(5, m);
  const std::vector<std::uint64_t> seeds{100, 101, 102, 103, 104};
  const std::vector<Result> batch = simulate_batch(h, models, seeds, options(Backend::Cuda, 0));
  ASSERT_EQ(batch.size(), 5u);
  for (std::size_t r = 0; r < 5; ++r) {
    expect_same(simulate(h, m, options(Backend::Reference, seeds[r])), batch[r], "run " + std::to_string(r));
  }
  EXPECT_NE(batch[0].counts, batch[1].counts);
}

TEST(ProlifSimulateCuda, FixedDivisionTimesDoubleOnSchedule) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const InitialHistogram h = histogram({1000}, {3});
  const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 1, {0, 10, 20, 30});
  const Result r = simulate(h, m, options(Backend::Cuda, 1));
  EXPECT_EQ(r.by_generation(0), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(r.by_generation(1), (std::vector<std::uint64_t>{0, 6}));
  EXPECT_EQ(r.by_generation(2), (std::vector<std::uint64_t>{0, 0, 12}));
  EXPECT_EQ(r.by_generation(3), (std::vector<std::uint64_t>{0, 0, 0, 24}));
  EXPECT_EQ(r.divisions, 21u);
}

TEST(ProlifSimulateCuda, BillionProliferatingCellsAtTimeZero) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const InitialHistogram h = histogram({500, 2000}, {1000000000, 3});
  const Model m = model_of({proliferating("P1", 1.0, 20, 5)}, 1, {0});
  const Result r = simulate(h, m, options(Backend::Cuda, 1));
  EXPECT_EQ(r.total(0), 1000000003u);
  EXPECT_EQ(r.at(0, 0, 0, 0), 1000000000u);
  EXPECT_EQ(r.divisions, 0u);
}

TEST(ProlifSimulateCuda, MoreThan62GenerationsIsAUserError) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  const InitialHistogram h = histogram({100}, {1});
  const Model m = model_of({proliferating("P1", 1.0, 1, 0)}, 1e-30, {70});
  try {
    (void)simulate(h, m, options(Backend::Cuda, 1));
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("generations"), std::string::npos) << e.what();
  }
}

TEST(ProlifSimulateCuda, RealDataEqualsReference) {
  SIMKIT_SKIP_WITHOUT_CUDA();
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
    const Result gpu = simulate(h, m, options(Backend::Cuda, 2024));
    expect_same(ref, gpu, start == StartMode::Sync ? "sync" : "procell-async");
    EXPECT_GT(ref.total(1), 1000000u);
  }
}

}  // namespace
}  // namespace simkit::prolif
