// ddm across ranks (docs/scale-out.md, "ddm across ranks"). The library: the parts of a match
// (Part{k, K}, K = 1, 2, 3, 7; the larger set split) find every pair of one process exactly once,
// with counts and per-region counts that add up, for every algorithm (gpu and bitmatrix when a
// device is usable), with either set the larger. The CLI: `ddm match` under mpirun -n 2 and -n 3
// gives the count, the per-region file and the pair file of one process (the pair file in the
// documented (subscription, update) order: byte for byte the single-process brute-force file),
// or with --pairs-per-rank one file per rank whose union is the pair set; bad input exits 2 with
// one message. The CLI tests skip without a launcher.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../ddm/regions.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/distributed.hpp"
#include "simkit/ddm/io.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

namespace fs = std::filesystem;
using namespace simkit::ddm::test;
using namespace simkit::test;
using PairList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

std::vector<Run> every_run() {
  std::vector<Run> runs = host_runs();
  runs.push_back({Algorithm::Gpu, Backend::Cuda});
  runs.push_back({Algorithm::BitMatrix, Backend::Cuda});
  return runs;
}

class DdmParts : public testing::TestWithParam<Run> {
 protected:
  void SetUp() override {
    if (GetParam().backend == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
  MatchOptions options(Rule rule) const {
    MatchOptions o;
    o.rule = rule;
    o.algorithm = GetParam().algorithm;
    o.backend = GetParam().backend;
    o.threads = 2;
    o.chunk_pairs = 37;  // many sink calls
    return o;
  }
};

template <class T>
void expect_parts_add_up(const RegionSet<T>& s, const RegionSet<T>& u, const MatchOptions& o, const std::string& what) {
  const PairList expected = brute_pairs(s, u, o.rule);
  std::vector<std::uint64_t> want_s(s.size(), 0), want_u(u.size(), 0);
  for (const auto& [i, j] : expected) ++want_s[i], ++want_u[j];
  for (std::uint64_t count : {1u, 2u, 3u, 7u}) {
    SCOPED_TRACE(what + ", " + std::to_string(count) + " parts");
    PairList got;
    std::uint64_t counted = 0, reported = 0;
    std::vector<std::uint64_t> sum_s(s.size(), 0), sum_u(u.size(), 0);
    for (std::uint64_t k = 0; k < count; ++k) {
      const Part part{k, count};
      const Share share = share_of(s.size(), u.size(), part);
      EXPECT_EQ(share.subscriptions, s.size() > u.size());
      const MatchReport r = match_pairs_part(view(s), view(u), o, part, [&](const Match* m, std::size_t n) {
        for (std::size_t q = 0; q < n; ++q) {
          got.push_back({m[q].s, m[q].u});
          // Every pair of a part has its split-set position inside the part's share.
          const std::uint64_t p = share.subscriptions ? m[q].s : m[q].u;
          EXPECT_TRUE(p >= share.begin && p < share.end) << p;
        }
      });
      reported += r.pairs;
      counted += count_pairs_part(view(s), view(u), o, part).pairs;
      std::vector<std::uint64_t> per_s, per_u;
      count_per_region_part(view(s), view(u), o, part, per_s, per_u);
      ASSERT_EQ(per_s.size(), s.size());
      ASSERT_EQ(per_u.size(), u.size());
      for (std::size_t i = 0; i < s.size(); ++i) sum_s[i] += per_s[i];
      for (std::size_t j = 0; j < u.size(); ++j) sum_u[j] += per_u[j];
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected) << "the parts' pairs are the whole match's, each once";
    EXPECT_EQ(reported, expected.size());
    EXPECT_EQ(counted, expected.size());
    EXPECT_EQ(sum_s, want_s);
    EXPECT_EQ(sum_u, want_u);
  }
}

TEST_P(DdmParts, PartsFindEveryPairOnceWithEitherSetLarger) {
  std::mt19937_64 gen(printed_seed(180));
  for (int n = 0; n < 4; ++n) {
    const Rule rule = static_cast<Rule>(n % 3);
    const int dims = 1 + n % 3;
    // More updates, then more subscriptions, then as many (the updates are split on a tie).
    const std::size_t ns = n == 0 ? 40 : (n == 1 ? 130 : 90), nu = n == 0 ? 150 : (n == 1 ? 35 : 90);
    const auto s = random_set<std::uint32_t>(gen, ns, dims, 0u, 40);
    const auto u = random_set<std::uint32_t>(gen, nu, dims, 0u, 40, 5, 2);
    expect_parts_add_up(s, u, options(rule), "u32 case " + std::to_string(n));
  }
  const auto s = random_set<double>(gen, 60, 2, -7.25, 40);
  const auto u = random_set<double>(gen, 25, 2, -7.25, 40, 5, 2);
  expect_parts_add_up(s, u, options(Rule::Closed), "f64");
  // Fewer regions than parts: some parts have an empty share.
  const auto few_s = random_set<std::uint64_t>(gen, 2, 1, std::uint64_t{1} << 60, 10);
  const auto few_u = random_set<std::uint64_t>(gen, 3, 1, std::uint64_t{1} << 60, 10, 5, 2);
  expect_parts_add_up(few_s, few_u, options(Rule::Ieee1516), "tiny");
}

std::string run_name(const testing::TestParamInfo<Run>& p) {
  std::string name(to_string(p.param.algorithm));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}
INSTANTIATE_TEST_SUITE_P(, DdmParts, testing::ValuesIn(every_run()), run_name);

TEST(DdmPart, EveryPartRefusesWhatOneProcessRefuses) {
  std::mt19937_64 gen(printed_seed(3));
  auto s = random_set<std::uint32_t>(gen, 10, 1, 0u, 40);
  auto u = random_set<std::uint32_t>(gen, 20, 1, 0u, 40, 5, 2);
  u.ids.back() = u.ids.front();  // a duplicate id in two different shares
  MatchOptions o;
  o.backend = Backend::Reference;
  for (std::uint64_t k = 0; k < 3; ++k) {
    const std::string message = user_error([&] { count_pairs_part(view(s), view(u), o, Part{k, 3}); });
    EXPECT_NE(message.find("duplicate id"), std::string::npos) << message;
  }
  const std::string bad = user_error([&] { share_of(3, 4, Part{2, 2}); });
  EXPECT_NE(bad.find("part"), std::string::npos) << bad;
}

TEST(DdmPart, OneRankDeliversThePairsInSubscriptionThenUpdateOrder) {
  const dist::Comm& world = dist::Comm::world();
  ASSERT_FALSE(world.distributed());
  std::mt19937_64 gen(printed_seed(11));
  const auto s = random_set<double>(gen, 70, 2, 0.0, 30);
  const auto u = random_set<double>(gen, 50, 2, 0.0, 30, 5, 2);
  MatchOptions o;
  o.backend = Backend::Cpu;
  o.threads = 2;
  o.chunk_pairs = 11;
  PairList got;
  const MatchReport r = match_pairs_distributed(view(s), view(u), o, world, [&](const Match* m, std::size_t n) {
    for (std::size_t q = 0; q < n; ++q) got.push_back({m[q].s, m[q].u});
  });
  EXPECT_EQ(got, brute_pairs(s, u, o.rule)) << "(s, u) ascending, as brute force finds them";
  EXPECT_EQ(r.pairs, got.size());
  EXPECT_EQ(count_pairs_distributed(view(s), view(u), o, world).pairs, got.size());
}

// ---------------------------------------------------------------------------------------------
// The CLI under mpirun.

#define SKIP_WITHOUT_LAUNCHER() \
  if (mpi_launcher().empty()) GTEST_SKIP() << "no MPI launcher (a build without MPI, or no mpirun found)"

// A region file with `ns` subscriptions and `nu` updates (ids not in order: the writers map
// positions to ids).
fs::path region_file(const TempDir& dir, const std::string& name, std::size_t ns, std::size_t nu, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Regions<std::uint64_t> r;
  r.subscriptions = random_set<std::uint64_t>(gen, ns, 2, 0, 300, 9);
  r.updates = random_set<std::uint64_t>(gen, nu, 2, 0, 300, 9, 2);
  const fs::path path = dir / name;
  write_regions_csv(path, r);
  return path;
}

std::vector<std::string> match_args(const fs::path& input, const std::string& backend, std::vector<std::string> more) {
  std::vector<std::string> args = {"ddm", "match", "--input", input.string(), "--backend", backend, "-q"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines = lines_of(text);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(DdmMpiCli, CountsPairsAndPerRegionAreThoseOfOneProcess) {
  SKIP_WITHOUT_LAUNCHER();
  const TempDir dir;
  // More updates (the updates are split), then more subscriptions (they are).
  for (const auto& [ns, nu] : {std::pair<std::size_t, std::size_t>{300, 700}, {800, 250}}) {
    const std::string tag = std::to_string(ns) + "x" + std::to_string(nu);
    const fs::path input = region_file(dir, "regions-" + tag + ".csv", ns, nu, ns + nu);
    // The documented order of the merged file: that of brute force in one process.
    const fs::path brute = dir / ("brute-" + tag + ".csv"), brute_bin = dir / ("brute-" + tag + ".bin");
    for (const fs::path& out : {brute, brute_bin}) {
      const CommandResult b =
          run_simkit(match_args(input, "reference", {"--algorithm", "brute-force", "--pairs", out.string()}));
      ASSERT_EQ(b.exit_code, 0) << describe(b);
    }
    for (const std::string backend : {"cpu", "reference"}) {
      SCOPED_TRACE(tag + ", " + backend);
      const fs::path single = dir / ("single-" + tag + backend + ".csv"),
                     per_region = dir / ("per-region-" + tag + backend + ".csv");
      const CommandResult one = run_simkit(match_args(input, backend, {"--pairs", single.string()}));
      ASSERT_EQ(one.exit_code, 0) << describe(one);
      ASSERT_EQ(run_simkit(match_args(input, backend, {"--per-region", per_region.string()})).exit_code, 0);
      const CommandResult count = run_simkit(match_args(input, backend, {"--json"}));
      ASSERT_EQ(count.exit_code, 0) << describe(count);
      const std::uint64_t pairs = nlohmann::json::parse(count.out)["pairs"].get<std::uint64_t>();
      ASSERT_GT(pairs, 100u);
      for (int ranks : {2, 3}) {
        SCOPED_TRACE(std::to_string(ranks) + " ranks");
        const std::string k = std::to_string(ranks);
        const fs::path merged = dir / ("merged-" + tag + backend + k + ".csv"),
                       merged_bin = dir / ("merged-" + tag + backend + k + ".bin"),
                       regions = dir / ("regions-" + tag + backend + k + ".csv");
        const CommandResult p = run_simkit_mpi(ranks, match_args(input, backend, {"--pairs", merged.string()}));
        ASSERT_EQ(p.exit_code, 0) << describe(p);
        EXPECT_NE(p.out.find(", " + k + " ranks"), std::string::npos) << p.out;
        EXPECT_EQ(lines_of(p.out).size(), 1u) << "only the root prints:\n" << p.out;
        EXPECT_TRUE(slurp(merged) == slurp(brute)) << "the merged file is brute force's, byte for byte";
        EXPECT_EQ(sorted_lines(slurp(merged)), sorted_lines(slurp(single)));
        ASSERT_EQ(run_simkit_mpi(ranks, match_args(input, backend, {"--pairs", merged_bin.string()})).exit_code, 0);
        EXPECT_TRUE(slurp(merged_bin) == slurp(brute_bin)) << "binary pair file";
        ASSERT_EQ(run_simkit_mpi(ranks, match_args(input, backend, {"--per-region", regions.string()})).exit_code, 0);
        EXPECT_TRUE(slurp(regions) == slurp(per_region)) << "per-region file";
        const CommandResult c = run_simkit_mpi(ranks, match_args(input, backend, {"--json"}));
        ASSERT_EQ(c.exit_code, 0) << describe(c);
        const nlohmann::json doc = nlohmann::json::parse(c.out);
        EXPECT_EQ(doc["pairs"].get<std::uint64_t>(), pairs);
        EXPECT_EQ(doc["ranks"].get<int>(), ranks);
      }
    }
  }
}

TEST(DdmMpiCli, PairsPerRankAreOneFileEachWhoseUnionIsThePairSet) {
  SKIP_WITHOUT_LAUNCHER();
  const TempDir dir;
  const fs::path input = region_file(dir, "regions.csv", 400, 500, 5);
  const fs::path single = dir / "single.csv";
  ASSERT_EQ(run_simkit(match_args(input, "cpu", {"--pairs", single.string()})).exit_code, 0);
  const std::vector<std::string> want = lines_of(slurp(single));
  ASSERT_GT(want.size(), 100u);
  for (int ranks : {2, 3}) {
    const fs::path out = dir / ("pairs" + std::to_string(ranks) + ".csv");
    const CommandResult r =
        run_simkit_mpi(ranks, match_args(input, "cpu", {"--pairs", out.string(), "--pairs-per-rank"}));
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_FALSE(fs::exists(out)) << "no merged file with --pairs-per-rank";
    std::vector<std::string> all;
    for (int q = 0; q < ranks; ++q) {
      const fs::path file = dir / ("pairs" + std::to_string(ranks) + ".rank" + std::to_string(q) + ".csv");
      const std::vector<std::string> lines = lines_of(slurp(file));
      ASSERT_FALSE(lines.empty()) << file;
      EXPECT_EQ(lines.front(), want.front()) << "each file has the header";
      all.insert(all.end(), lines.begin() + 1, lines.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::string> expected(want.begin() + 1, want.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(all, expected) << "every pair in exactly one rank's file";
    EXPECT_FALSE(fs::exists(dir / ("pairs" + std::to_string(ranks) + ".rank" + std::to_string(ranks) + ".csv")));
  }
}

TEST(DdmMpiCli, BadInputExitsTwoWithOneMessage) {
  SKIP_WITHOUT_LAUNCHER();
  const TempDir dir;
  const fs::path input = dir.write("dup.csv", "set,id,lower0,upper0\nS,1,0,4\nU,1,1,2\nU,2,3,9\nU,1,5,6\n");
  const fs::path out = dir / "pairs.csv";
  const CommandResult r = run_simkit_mpi(3, match_args(input, "cpu", {"--pairs", out.string()}));
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  std::size_t errors = 0;
  for (const std::string& line : lines_of(r.err)) errors += line.find("simkit: error:") != std::string::npos ? 1 : 0;
  EXPECT_EQ(errors, 1u) << r.err;
  EXPECT_NE(r.err.find("duplicate id"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace simkit::ddm
