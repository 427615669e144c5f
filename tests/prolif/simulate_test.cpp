// prolif engine: reproducibility by seed, replicates, output times, hand-checked edge cases and the
// analysis helpers (binning, Hellinger, percentiles). The backends against each other:
// backends_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "problems.hpp"
#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

using namespace simkit::prolif::test_problems;

// (The backends against the reference, exact schedules on every backend and the generation limit:
// backends_test.cpp.)

// ----------------------------------------------------------------------------------------------
// 2. Seeds

Problem standard_problem() {
  Problem p;
  p.initial = histogram({800, 1500, 3000}, {40, 30, 30});
  p.model = model_of(
      {quiescent(0.1), proliferating("slow", 0.45, 30, 8, Distribution::Gamma), proliferating("fast", 0.45, 15, 4)}, 5,
      {30, 60}, StartMode::ProcellAsync);
  return p;
}

TEST(ProlifSimulate, SameSeedSameResultDifferentSeedDifferentCounts) {
  const Problem p = standard_problem();
  for (Backend b : {Backend::Reference, Backend::Cpu}) {
    SCOPED_TRACE(std::string(to_string(b)));
    const Result a = simulate(p.initial, p.model, options(b, 42, 2));
    const Result again = simulate(p.initial, p.model, options(b, 42, 2));
    expect_same(a, again, "same seed");
    const Result other = simulate(p.initial, p.model, options(b, 43, 2));
    EXPECT_EQ(other.seed, 43u);
    EXPECT_NE(other.counts, a.counts);
    EXPECT_GT(a.divisions, 100u);
  }
}

// ----------------------------------------------------------------------------------------------
// 3. Replicates

TEST(ProlifSimulate, BatchRunRIsSimulateWithSeedSPlusR) {
  const Problem p = standard_problem();
  constexpr std::uint64_t kSeed = 1000;
  constexpr std::size_t kRuns = 4;
  std::vector<Model> models(kRuns, p.model);
  std::vector<std::uint64_t> seeds;
  for (std::size_t r = 0; r < kRuns; ++r) seeds.push_back(kSeed + r);
  for (Backend b : {Backend::Reference, Backend::Cpu}) {
    SCOPED_TRACE(std::string(to_string(b)));
    const std::vector<Result> batch = simulate_batch(p.initial, models, seeds, options(b, 999, 3));
    ASSERT_EQ(batch.size(), kRuns);
    for (std::size_t r = 0; r < kRuns; ++r) {
      const Result single = simulate(p.initial, p.model, options(Backend::Reference, kSeed + r));
      expect_same(single, batch[r], "run " + std::to_string(r));
    }
    EXPECT_NE(batch[0].counts, batch[1].counts);
  }
}

TEST(ProlifSimulate, BatchRunsUseTheirOwnModels) {
  const Problem p = standard_problem();
  Model other = p.model;
  other.times = {10, 45};
  other.start = StartMode::Sync;
  const std::vector<Model> models{p.model, other};
  const std::vector<std::uint64_t> seeds{5, 5};
  const std::vector<Result> batch = simulate_batch(p.initial, models, seeds, options(Backend::Cpu, 1, 2));
  ASSERT_EQ(batch.size(), 2u);
  expect_same(simulate(p.initial, p.model, options(Backend::Reference, 5)), batch[0], "model 0");
  expect_same(simulate(p.initial, other, options(Backend::Reference, 5)), batch[1], "model 1");
}

// ----------------------------------------------------------------------------------------------
// 4. Output times

TEST(ProlifSimulate, MoreOutputTimesNeverChangeTheCountsAtAnyTime) {
  const Problem p = standard_problem();
  Model one = p.model;
  one.times = {100};
  Model three = p.model;
  three.times = {20, 50, 100};
  for (StartMode start : {StartMode::Sync, StartMode::ProcellAsync}) {
    one.start = three.start = start;
    const Result a = simulate(p.initial, one, options(Backend::Reference, 77));
    const Result b = simulate(p.initial, three, options(Backend::Cpu, 77, 2));
    ASSERT_EQ(a.generations, b.generations);
    EXPECT_EQ(slice(b, 2), slice(a, 0));
    EXPECT_EQ(b.divisions, a.divisions);
    EXPECT_GT(a.total(0), p.initial.total_cells());
    // A time's counts do not depend on t_max either: cells existing at t are born by t.
    for (std::size_t j = 0; j < 2; ++j) {
      Model single = p.model;
      single.start = start;
      single.times = {three.times[j]};
      const Result s = simulate(p.initial, single, options(Backend::Reference, 77));
      ASSERT_EQ(s.generations, b.generations);
      EXPECT_EQ(slice(b, j), slice(s, 0)) << "t = " << three.times[j];
      EXPECT_LT(s.divisions, b.divisions);
    }
  }
}

// ----------------------------------------------------------------------------------------------
// 5. Edge cases

TEST(ProlifSimulate, TimeZeroCountsEveryInitialCellOnceAtGenerationZero) {
  const Problem p = standard_problem();
  for (StartMode start : {StartMode::Sync, StartMode::ProcellAsync}) {
    Model m = p.model;
    m.start = start;
    m.times = {0};
    const Result r = simulate(p.initial, m, options(Backend::Cpu, 3, 2));
    EXPECT_EQ(r.total(0), p.initial.total_cells());
    EXPECT_EQ(r.by_generation(0), std::vector<std::uint64_t>{p.initial.total_cells()});
    EXPECT_EQ(r.divisions, 0u);
    for (std::size_t i = 0; i < r.rows; ++i) {
      std::uint64_t row = 0;
      for (std::size_t q = 0; q < r.populations; ++q) row += r.at(0, i, 0, q);
      EXPECT_EQ(row, p.initial.counts[i]) << "row " << i;
    }
  }
}

TEST(ProlifSimulate, AllQuiescentCellsStayAtGenerationZero) {
  const InitialHistogram h = histogram({30, 700, 2500}, {5, 17, 9});
  const Model m = model_of({quiescent(1.0)}, 10, {0, 50, 100});
  for (Backend b : {Backend::Reference, Backend::Cpu}) {
    const Result r = simulate(h, m, options(b, 11, 2));
    EXPECT_EQ(r.divisions, 0u);
    for (std::size_t t = 0; t < 3; ++t) {
      EXPECT_EQ(r.total(t), 31u);
      EXPECT_EQ(r.by_generation(t), std::vector<std::uint64_t>{31});
      for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(r.at(t, i, 0, 0), h.counts[i]) << "t " << t << " row " << i;
    }
  }
}

TEST(ProlifSimulate, PhiMinAboveEveryInputKeepsInitialCellsUntilTheyDivide) {
  const InitialHistogram h = histogram({20, 30, 45}, {10, 20, 30});
  // No division before t_max: every initial cell is still there.
  {
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 100, {0, 9.5});
    const Result r = simulate(h, m, options(Backend::Reference, 1));
    EXPECT_EQ(r.generations, 1u);
    EXPECT_EQ(r.total(0), 60u);
    EXPECT_EQ(r.total(1), 60u);
    EXPECT_EQ(r.divisions, 0u);
  }
  {
    const Model m = model_of({proliferating("P1", 1.0, 50, 1)}, 100, {10});
    const Result r = simulate(h, m, options(Backend::Cpu, 1, 2));
    EXPECT_EQ(r.total(0), 60u);
    EXPECT_EQ(r.divisions, 0u);
  }
  // Every cell divides at t = 10 and its daughters fall to phi_min: nothing is left.
  {
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 100, {5, 10, 50});
    for (Backend b : {Backend::Reference, Backend::Cpu}) {
      const Result r = simulate(h, m, options(b, 1, 2));
      EXPECT_EQ(r.total(0), 60u);
      EXPECT_EQ(r.total(1), 0u);
      EXPECT_EQ(r.total(2), 0u);
      EXPECT_EQ(r.divisions, 60u);
    }
  }
}

TEST(ProlifSimulate, DivisionExactlyAtTMaxHappens) {
  const InitialHistogram h = histogram({1000}, {1});
  {
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 1, {10});
    const Result r = simulate(h, m, options(Backend::Reference, 1));
    EXPECT_EQ(r.by_generation(0), (std::vector<std::uint64_t>{0, 2}));
    EXPECT_EQ(r.divisions, 1u);
  }
  {
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 1, {20});
    const Result r = simulate(h, m, options(Backend::Cpu, 1, 2));
    EXPECT_EQ(r.by_generation(0), (std::vector<std::uint64_t>{0, 0, 4}));
    EXPECT_EQ(r.divisions, 3u);
  }
  // phi allows generation 1 only (100 / 2 = 50 > 30, 25 <= 30): the generation-1 cells divide at
  // t = 20 and their daughters are discarded.
  {
    const InitialHistogram h100 = histogram({100}, {1});
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 30, {10, 20});
    const Result r = simulate(h100, m, options(Backend::Reference, 1));
    EXPECT_EQ(r.by_generation(0), (std::vector<std::uint64_t>{0, 2}));
    EXPECT_EQ(r.total(1), 0u);
    EXPECT_EQ(r.divisions, 3u);
  }
  // phi / 2 == phi_min: the daughters are discarded (strictly greater is required).
  {
    const InitialHistogram h100 = histogram({100}, {3});
    const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 50, {10});
    const Result r = simulate(h100, m, options(Backend::Reference, 1));
    EXPECT_EQ(r.total(0), 0u);
    EXPECT_EQ(r.divisions, 3u);
  }
}

TEST(ProlifSimulate, PhiMinZeroFollowsGenerationsWhileTheyFit) {
  const InitialHistogram h = histogram({100}, {2});
  const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 0, {30});
  const Result r = simulate(h, m, options(Backend::Reference, 1));
  EXPECT_EQ(r.by_generation(0), (std::vector<std::uint64_t>{0, 0, 0, 16}));
  EXPECT_EQ(r.divisions, 14u);
}

TEST(ProlifSimulate, BillionQuiescentCellsAtSeveralTimes) {
  const InitialHistogram h = histogram({500, 2000}, {1000000000, 7});
  const Model m = model_of({quiescent(1.0)}, 1, {0, 24, 96, 240});
  for (Backend b : {Backend::Reference, Backend::Cpu}) {
    const Result r = simulate(h, m, options(b, 1, 2));
    for (std::size_t t = 0; t < 4; ++t) {
      EXPECT_EQ(r.total(t), 1000000007u);
      EXPECT_EQ(r.at(t, 0, 0, 0), 1000000000u);
    }
    EXPECT_EQ(r.divisions, 0u);
  }
}

// ----------------------------------------------------------------------------------------------
// 6. Quiescent cells below phi_min

TEST(ProlifSimulate, QuiescentCellsAreCountedEvenBelowPhiMin) {
  const InitialHistogram h = histogram({5, 8, 400}, {3, 4, 6});
  {
    const Model m = model_of({quiescent(1.0)}, 50, {0, 100});
    const Result r = simulate(h, m, options(Backend::Reference, 1));
    for (std::size_t t = 0; t < 2; ++t) {
      const std::vector<std::pair<double, std::uint64_t>> expected{{5.0, 3}, {8.0, 4}, {400.0, 6}};
      EXPECT_EQ(exact_histogram(r, h, t), expected);
      EXPECT_EQ(r.by_generation(t), std::vector<std::uint64_t>{13});
    }
  }
  // Mixed with a proliferating population (sd = 0, divides at 10): at t = 15 only the quiescent
  // cells remain below phi_min and the dividing ones of row 400 are at 200.
  {
    const InitialHistogram one = histogram({5, 400}, {1000, 1000});
    const Model m = model_of({quiescent(0.3), proliferating("P1", 0.7, 10, 0)}, 50, {15});
    const Result r = simulate(one, m, options(Backend::Cpu, 4, 2));
    const auto pops = r.by_population(0);
    ASSERT_EQ(pops.size(), 2u);
    const std::uint64_t q5 = r.at(0, 0, 0, 0), q400 = r.at(0, 1, 0, 0);
    EXPECT_GT(q5, 200u);
    EXPECT_LT(q5, 400u);
    EXPECT_EQ(pops[0], q5 + q400);
    const std::uint64_t dividing400 = 1000 - q400;
    EXPECT_EQ(pops[1], 2 * dividing400);
    const std::vector<std::pair<double, std::uint64_t>> expected{{5.0, q5}, {200.0, 2 * dividing400}, {400.0, q400}};
    EXPECT_EQ(exact_histogram(r, one, 0), expected);
    EXPECT_EQ(r.divisions, 2000 - q5 - q400);
  }
}

// ----------------------------------------------------------------------------------------------
// 7. Generation limit

// ----------------------------------------------------------------------------------------------
// 8. Analysis

TEST(ProlifAnalysis, DefaultEdgesRunFromTenToTenThousand) {
  const Binning b;
  const std::vector<double> e = b.edges();
  ASSERT_EQ(e.size(), 100u);
  EXPECT_EQ(e.front(), 10.0);
  EXPECT_EQ(e.back(), 10000.0);
  EXPECT_DOUBLE_EQ(e[33], 100.0);
  EXPECT_DOUBLE_EQ(e[66], 1000.0);
  EXPECT_DOUBLE_EQ(e[1], std::pow(10.0, 1.0 + 3.0 / 99.0));
  for (std::size_t i = 1; i < e.size(); ++i) EXPECT_LT(e[i - 1], e[i]);
}

TEST(ProlifAnalysis, EdgesRoundTheRangeUpToPowersOfTen) {
  Binning b;
  b.bins = 3;
  b.low = 15;
  b.high = 900;
  const std::vector<double> e = b.edges();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], 100.0);
  EXPECT_DOUBLE_EQ(e[1], std::pow(10.0, 2.5));
  EXPECT_EQ(e[2], 1000.0);
}

TEST(ProlifAnalysis, BinValuesEdgesBelowAndAbove) {
  Binning b;
  b.bins = 4;  // edges 10, 100, 1000, 10000
  b.phi_min = 20;
  const std::vector<double> values{10, 15, 25, 100, 100.5, 5, 1000, 9999, 10000, 10000.5, 1e6, 19.99};
  const std::vector<double> weights{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  const Binned out = bin_values(values, weights, b);
  // 10, 15: below phi_min (20); 5: below LO; 19.99: below phi_min.
  EXPECT_EQ(out.skipped, 1.0 + 2.0 + 32.0 + 2048.0);
  // 25, 100 -> bin 1 (edge 100, a value equal to an edge goes into that bin); 100.5, 1000 ->
  // bin 2; 9999, 10000 -> bin 3; above 10000 -> overflow.
  EXPECT_EQ(out.counts, (std::vector<double>{0, 4 + 8, 16 + 64, 128 + 256}));
  EXPECT_EQ(out.overflow, 512.0 + 1024.0);

  b.phi_min = 0;
  const Binned low = bin_values({10, 9.999, 10.001}, {1, 2, 4}, b);
  EXPECT_EQ(low.counts, (std::vector<double>{1, 4, 0, 0}));
  EXPECT_EQ(low.skipped, 2.0);
  EXPECT_EQ(low.overflow, 0.0);
}

TEST(ProlifAnalysis, BinResultUsesHalvedValuesPerGeneration) {
  const InitialHistogram h = histogram({800}, {1});
  const Model m = model_of({proliferating("P1", 1.0, 10, 0)}, 1, {0, 20, 30, 40});
  const Result r = simulate(h, m, options(Backend::Reference, 1));
  Binning b;
  b.bins = 4;                                                                    // 10, 100, 1000, 10000
  EXPECT_EQ(bin_result(r, h, 0, b).counts, (std::vector<double>{0, 0, 1, 0}));   // 800
  EXPECT_EQ(bin_result(r, h, 1, b).counts, (std::vector<double>{0, 0, 4, 0}));   // 200
  EXPECT_EQ(bin_result(r, h, 2, b).counts, (std::vector<double>{0, 8, 0, 0}));   // 100: on the edge
  EXPECT_EQ(bin_result(r, h, 3, b).counts, (std::vector<double>{0, 16, 0, 0}));  // 50
  b.phi_min = 60;                                                                // binning skips values below phi_min
  const Binned skipped = bin_result(r, h, 3, b);
  EXPECT_EQ(skipped.counts, (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(skipped.skipped, 16.0);
}

TEST(ProlifAnalysis, HellingerOfIdenticalAndProportionalHistogramsIsZero) {
  const std::vector<double> target{0, 3, 10, 7, 0, 1};
  const auto same = hellinger(target, target);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->distance, 0.0);
  EXPECT_EQ(same->normalized, 0.0);
  std::vector<double> triple;
  for (double v : target) triple.push_back(3 * v);
  const auto prop = hellinger(triple, target);
  ASSERT_TRUE(prop.has_value());
  EXPECT_EQ(prop->distance, 0.0);
  EXPECT_EQ(prop->normalized, 0.0);
}

TEST(ProlifAnalysis, HellingerSmallCasesByHand) {
  // Disjoint: ||(1, 0) - (0, 1)|| / sqrt(2) = 1; normalized by sqrt(1).
  const auto disjoint = hellinger({1, 0}, {0, 1});
  ASSERT_TRUE(disjoint.has_value());
  EXPECT_DOUBLE_EQ(disjoint->distance, 1.0);
  EXPECT_DOUBLE_EQ(disjoint->normalized, 1.0);
  // sim (4, 0, 4), target (1, 1, 2): ratio 2, sqrt(sim / 2) = (sqrt2, 0, sqrt2), sqrt(target) =
  // (1, 1, sqrt2); squared distance (sqrt2 - 1)^2 + 1 = 4 - 2 sqrt2, so H = sqrt(2 - sqrt2).
  const auto h = hellinger({4, 0, 4}, {1, 1, 2});
  ASSERT_TRUE(h.has_value());
  EXPECT_NEAR(h->distance, std::sqrt(2.0 - std::sqrt(2.0)), 1e-14);
  EXPECT_NEAR(h->normalized, std::sqrt(2.0 - std::sqrt(2.0)) / 2.0, 1e-14);
  // No cell on one side: no distance.
  EXPECT_FALSE(hellinger({0, 0}, {1, 2}).has_value());
  EXPECT_FALSE(hellinger({1, 2}, {0, 0}).has_value());
}

TEST(ProlifAnalysis, PercentileMatchesNumpyLinearInterpolation) {
  EXPECT_NEAR(percentile({1, 2, 3, 4}, 5), 1.15, 1e-12);
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 95), 3.85, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 5), 7.0);
  // numpy.percentile([10, 0, 30, 20, 50], 5) = 0.2 * 10 = 2.0
  EXPECT_NEAR(percentile({10, 0, 30, 20, 50}, 5), 2.0, 1e-12);
}

TEST(ProlifAnalysis, ExactHistogramMergesEqualValuesAcrossRows) {
  // Row 100 at generation 1 and row 50 at generation 0 (quiescent) are both 50.
  const InitialHistogram h = histogram({100, 50}, {200, 500});
  const Model m = model_of({quiescent(0.5), proliferating("P1", 0.5, 10, 0)}, 1, {12});
  const Result r = simulate(h, m, options(Backend::Reference, 1));
  const std::uint64_t q100 = r.at(0, 0, 0, 0), q50 = r.at(0, 1, 0, 0);
  ASSERT_GT(q100, 0u);
  ASSERT_GT(q50, 0u);
  // Every proliferating cell divided once at t = 10.
  const std::vector<std::pair<double, std::uint64_t>> expected{
      {25.0, 2 * (500 - q50)}, {50.0, q50 + 2 * (200 - q100)}, {100.0, q100}};
  EXPECT_EQ(exact_histogram(r, h, 0), expected);
}

}  // namespace
}  // namespace simkit::prolif
