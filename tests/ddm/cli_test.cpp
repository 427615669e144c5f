// `simkit ddm generate` and `simkit ddm match` end to end: the real binary (run_simkit) in a
// TempDir. Pairs written by the CLI equal the brute-force oracle's; --json has the documented
// fields; bad input exits 2 with one line on stderr naming file, line and field, and leaves
// nothing at the output path.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "regions.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/io.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace simkit::test;  // run_simkit, TempDir, slurp, describe, lines_of
using testing::HasSubstr;

using IdPairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

CommandResult ddm(std::vector<std::string> args) {
  args.insert(args.begin(), "ddm");
  return run_simkit(args);
}

// The oracle: every intersecting pair by brute force (tests/ddm/regions.hpp), by id, sorted.
IdPairs oracle(const AnyRegions& any, Rule rule) {
  return std::visit(
      [&](const auto& r) {
        IdPairs out;
        for (const auto& [i, j] : test::brute_pairs(r.subscriptions, r.updates, rule))
          out.emplace_back(r.subscriptions.ids[i], r.updates.ids[j]);
        std::sort(out.begin(), out.end());
        return out;
      },
      any);
}

IdPairs sorted_pairs(const fs::path& path) {
  IdPairs p = read_pairs(path);
  std::sort(p.begin(), p.end());
  return p;
}

json one_json_line(const CommandResult& r) {
  const auto lines = lines_of(r.out);
  EXPECT_EQ(lines.size(), 1u) << r.out;
  return lines.empty() ? json() : json::parse(lines[0]);
}

// Expects exit 2 with exactly one line on stderr that contains `part`.
void expect_user_error(const CommandResult& r, const std::string& part) {
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr(part));
}

// ---- help ----

TEST(DdmCli, HelpListsTheFlags) {
  const CommandResult g = ddm({"generate", "--help"});
  ASSERT_EQ(g.exit_code, 0) << describe(g);
  for (const char* flag :
       {"--n", "--alpha", "--dims", "--side", "--integer", "--clustered", "--moving", "--interest", "--seed", "--out"})
    EXPECT_THAT(g.out, HasSubstr(flag));
  const CommandResult r = ddm({"replay", "--help"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const char* flag : {"--input", "--ticks", "--move-fraction", "--mobility", "--step", "--speed", "--verify"})
    EXPECT_THAT(r.out, HasSubstr(flag));
  const CommandResult m = ddm({"match", "--help"});
  ASSERT_EQ(m.exit_code, 0) << describe(m);
  for (const char* flag : {"--input", "--rule", "--count", "--pairs", "--per-region", "--algorithm", "--backend",
                           "--coords", "--json", "--threads", "--device"})
    EXPECT_THAT(m.out, HasSubstr(flag));
  const CommandResult top = ddm({"--help"});
  ASSERT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("generate"));
  EXPECT_THAT(top.out, HasSubstr("match"));
  EXPECT_EQ(ddm({}).exit_code, 2);  // a subcommand is required
}

// ---- generate, then match ----

TEST(DdmCli, GeneratedPairsEqualTheBruteForceOracle) {
  TempDir tmp;
  struct Case {
    std::vector<std::string> generate;
    std::string file;
  };
  const std::vector<Case> cases = {
      {{"--n", "3000", "--alpha", "20", "--dims", "2"}, "f2.csv"},
      {{"--n", "2001", "--alpha", "5", "--dims", "3", "--integer", "--clustered", "--seed", "7"}, "i3.bin"},
      {{"--n", "1e3", "--alpha", "50", "--dims", "1", "--integer"}, "i1.csv"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    std::vector<std::string> args = {"generate", "--out", (tmp / c.file).string()};
    args.insert(args.end(), c.generate.begin(), c.generate.end());
    const CommandResult g = ddm(args);
    ASSERT_EQ(g.exit_code, 0) << describe(g);
    const AnyRegions regions = read_regions(tmp / c.file);
    for (const char* rule : {"ieee1516", "half-open", "closed"}) {
      SCOPED_TRACE(rule);
      const IdPairs expected = oracle(regions, parse_rule(rule));
      ASSERT_GT(expected.size(), 0u);
      // Every CPU algorithm to CSV, and the default one to binary.
      const std::vector<std::pair<std::string, std::string>> runs = {
          {"auto", "p.csv"}, {"brute-force", "p.csv"}, {"parallel", "p.csv"}, {"auto", "p.bin"}};
      for (const auto& [algorithm, out] : runs) {
        SCOPED_TRACE(out + " " + algorithm);
        const CommandResult m = ddm({"match", "--input", (tmp / c.file).string(), "--rule", rule, "--algorithm",
                                     algorithm, "--pairs", (tmp / out).string(), "--backend", "auto"});
        ASSERT_EQ(m.exit_code, 0) << describe(m);
        EXPECT_EQ(sorted_pairs(tmp / out), expected);
        EXPECT_THAT(m.out, HasSubstr(fmt::format("{} pairs", expected.size())));
      }
    }
  }
}

TEST(DdmCli, JsonSummaryAndOutputModes) {
  TempDir tmp;
  const std::string regions = (tmp / "r.csv").string();
  const CommandResult g = ddm({"generate", "--n", "4001", "--alpha", "30", "--dims", "2", "--out", regions, "--json"});
  ASSERT_EQ(g.exit_code, 0) << describe(g);
  const json gj = one_json_line(g);
  EXPECT_EQ(gj.at("subscriptions").get<int>(), 2001);
  EXPECT_EQ(gj.at("updates").get<int>(), 2000);
  EXPECT_EQ(gj.at("coords").get<std::string>(), "f64");
  EXPECT_EQ(gj.at("side").get<std::string>(), "volume");

  const IdPairs expected = oracle(read_regions(regions), Rule::Ieee1516);
  const CommandResult c = ddm({"match", "--input", regions, "--json", "--backend", "cpu", "--threads", "2"});
  ASSERT_EQ(c.exit_code, 0) << describe(c);
  const json cj = one_json_line(c);
  EXPECT_EQ(cj.at("subscriptions").get<int>(), 2001);
  EXPECT_EQ(cj.at("updates").get<int>(), 2000);
  EXPECT_EQ(cj.at("pairs").get<std::uint64_t>(), expected.size());
  EXPECT_GE(cj.at("seconds").get<double>(), 0.0);
  EXPECT_EQ(cj.at("backend").get<std::string>(), "cpu");
  EXPECT_EQ(cj.at("algorithm").get<std::string>(), "parallel");
  EXPECT_EQ(cj.at("output").get<std::string>(), "count");
  EXPECT_EQ(cj.at("rule").get<std::string>(), "ieee1516");
  EXPECT_EQ(cj.at("coords").get<std::string>(), "f64");
  EXPECT_EQ(cj.at("dims").get<int>(), 2);
  EXPECT_TRUE(cj.contains("device"));
  EXPECT_TRUE(cj.contains("wall_seconds"));

  // --count is the default; the reference backend runs brute force.
  const CommandResult r = ddm({"match", "--input", regions, "--count", "--backend", "reference", "--json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json rj = one_json_line(r);
  EXPECT_EQ(rj.at("algorithm").get<std::string>(), "brute-force");
  EXPECT_EQ(rj.at("pairs").get<std::uint64_t>(), expected.size());

  // Per-region counts: each subscription's count is its number of oracle pairs, likewise updates.
  const CommandResult p = ddm({"match", "--input", regions, "--per-region", (tmp / "c.csv").string()});
  ASSERT_EQ(p.exit_code, 0) << describe(p);
  const auto lines = lines_of(slurp(tmp / "c.csv"));
  ASSERT_EQ(lines.size(), 1u + 4001u);
  EXPECT_EQ(lines[0], "set,id,count");
  std::vector<std::uint64_t> per_s(2001, 0), per_u(2000, 0);
  for (const auto& [s, u] : expected) {
    ++per_s[s];
    ++per_u[u];
  }
  for (std::size_t i = 0; i < 2001; ++i) ASSERT_EQ(lines[1 + i], fmt::format("S,{},{}", i, per_s[i]));
  for (std::size_t j = 0; j < 2000; ++j) ASSERT_EQ(lines[2002 + j], fmt::format("U,{},{}", j, per_u[j]));

  // Plain text: one summary line with the figures.
  const CommandResult t = ddm({"match", "--input", regions});
  ASSERT_EQ(t.exit_code, 0) << describe(t);
  ASSERT_EQ(lines_of(t.out).size(), 1u);
  EXPECT_THAT(t.out, HasSubstr("2001 subscriptions x 2000 updates"));
  EXPECT_THAT(t.out, HasSubstr(fmt::format("{} pairs", expected.size())));
  EXPECT_THAT(t.out, HasSubstr("pairs/s"));
}

TEST(DdmCli, TheShippedExampleGivesOneTwoAndFourPairs) {
  const fs::path example = fs::path(SIMKIT_SOURCE_DIR) / "examples" / "ddm" / "regions.csv";
  for (const auto& [rule, pairs] :
       std::vector<std::pair<std::string, int>>{{"half-open", 1}, {"ieee1516", 2}, {"closed", 4}}) {
    const CommandResult r = ddm({"match", "--input", example.string(), "--rule", rule, "--json"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(one_json_line(r).at("pairs").get<int>(), pairs) << rule;
  }
}

TEST(DdmCli, GenerateIsDeterministicAndBinaryMatchesCsv) {
  TempDir tmp;
  const std::vector<std::string> common = {"generate", "--n", "999", "--alpha", "4", "--dims", "3", "--seed", "11"};
  for (const char* name : {"a.csv", "b.csv", "a.bin"}) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--out", (tmp / name).string()});
    ASSERT_EQ(ddm(args).exit_code, 0);
  }
  EXPECT_EQ(slurp(tmp / "a.csv"), slurp(tmp / "b.csv"));
  EXPECT_EQ(slurp(tmp / "a.bin").substr(0, 8), std::string("SKDDM1\0\0", 8));
  const auto count = [&](const char* name) {
    const CommandResult r = ddm({"match", "--input", (tmp / name).string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    return one_json_line(r).at("pairs").get<std::uint64_t>();
  };
  EXPECT_EQ(count("a.csv"), count("a.bin"));
  // The same values as binary and as text.
  const auto a = std::get<Regions<double>>(read_regions(tmp / "a.csv"));
  const auto b = std::get<Regions<double>>(read_regions(tmp / "a.bin"));
  EXPECT_EQ(a.subscriptions.lower, b.subscriptions.lower);
  EXPECT_EQ(a.updates.upper, b.updates.upper);
}

// A pair file has the same bytes whatever the thread count (issue 14: with two or more threads the
// order used to change from run to run).
TEST(DdmCli, PairFilesAreTheSameBytesForEveryThreadCount) {
  TempDir tmp;
  ASSERT_EQ(ddm({"generate", "--n", "20000", "--alpha", "20", "--dims", "2", "--seed", "5", "--out",
                 (tmp / "r.bin").string()})
                .exit_code,
            0);
  std::string first;
  for (const char* threads : {"1", "2", "4", "4"}) {
    const fs::path out = tmp / (std::string("pairs_") + threads + ".csv");
    const CommandResult r = ddm({"match", "--input", (tmp / "r.bin").string(), "--backend", "cpu", "--threads", threads,
                                 "--pairs", out.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const std::string bytes = slurp(out);
    ASSERT_GT(bytes.size(), 100000u);
    if (first.empty()) first = bytes;
    EXPECT_TRUE(bytes == first) << threads << " threads wrote other bytes";
  }
}

// ---- bad input ----

TEST(DdmCli, BadInputExitsTwoWithOneLineAndNoOutput) {
  TempDir tmp;
  const fs::path bad = tmp.write("bad.csv", "set,id,lower0,upper0\nS,1,0,5\nU,2,7,abc\n");
  const fs::path out = tmp / "pairs.csv";
  const CommandResult r = ddm({"match", "--input", bad.string(), "--pairs", out.string()});
  expect_user_error(r, bad.string() + ":3: field 'upper0': 'abc' is not a number");
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(out));
  // Nothing else either (no temporary file).
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path())) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"bad.csv"});

  // An existing output is left as it was.
  tmp.write("pairs.csv", "keep me\n");
  expect_user_error(ddm({"match", "--input", bad.string(), "--pairs", out.string()}), "field 'upper0'");
  EXPECT_EQ(slurp(out), "keep me\n");

  const fs::path dup = tmp.write("dup.csv", "set,id,lower0,upper0\nS,1,0,5\nS,1,2,3\n");
  expect_user_error(ddm({"match", "--input", dup.string()}), dup.string() + ":3: field 'id': duplicate id 1");
  const fs::path order = tmp.write("order.csv", "set,id,lower0,upper0\nS,1,6,5\n");
  expect_user_error(ddm({"match", "--input", order.string()}), order.string() + ":2: field 'upper0'");
  const fs::path wide = tmp.write("wide.csv", "set,id,lower0,upper0\nS,1,0,4294967296\n");
  expect_user_error(ddm({"match", "--input", wide.string(), "--coords", "u32"}),
                    wide.string() + ":2: field 'upper0': '4294967296' does not fit in u32");
  expect_user_error(ddm({"match", "--input", (tmp / "missing.csv").string()}), "missing.csv: cannot open");
  const fs::path nan = tmp.write("nan.csv", "set,id,lower0,upper0\nS,1,0,5\nU,2,nan,3\n");
  expect_user_error(ddm({"match", "--input", nan.string()}), nan.string() + ":3: field 'lower0'");
  const fs::path dims = tmp.write("dims.csv", "set,id,lower0,upper0\nS,1,0,5\nU,2,0,3,0,3\n");
  expect_user_error(ddm({"match", "--input", dims.string()}), dims.string() + ":3");
  {  // a binary region file cut short
    const fs::path whole = tmp / "whole.bin";
    ASSERT_EQ(ddm({"generate", "--n", "100", "--alpha", "2", "--dims", "2", "--out", whole.string()}).exit_code, 0);
    const std::string bytes = slurp(whole);
    const fs::path cut = tmp.write("cut.bin", bytes.substr(0, bytes.size() - 8));
    expect_user_error(ddm({"match", "--input", cut.string()}), "truncated");
    fs::remove(whole);
    fs::remove(cut);
  }

  // Flags.
  const fs::path good = tmp.write("good.csv", "set,id,lower0,upper0\nS,1,0,5\nU,1,1,2\n");
  expect_user_error(ddm({"match", "--input", good.string(), "--rule", "open"}), "--rule open: expected ieee1516");
  expect_user_error(ddm({"match", "--input", good.string(), "--coords", "i8"}), "--coords i8");
  expect_user_error(ddm({"match", "--input", good.string(), "--algorithm", "quick"}), "--algorithm quick");
  expect_user_error(ddm({"match", "--input", good.string(), "--count", "--pairs", out.string()}), "excludes");
  expect_user_error(ddm({"match", "--input", good.string(), "--backend", "cpu", "--algorithm", "brute-force"}),
                    "--algorithm brute-force runs on the reference backend");
  expect_user_error(ddm({"match", "--input", good.string(), "--pairs", (tmp / "no/such/dir/p.csv").string()}),
                    "does not exist");
  expect_user_error(ddm({"generate", "--n", "10", "--alpha", "20", "--dims", "2", "--out", (tmp / "g.csv").string()}),
                    "--alpha 20: expected 0 < alpha <= N");
  expect_user_error(ddm({"generate", "--n", "ten", "--alpha", "1", "--dims", "2", "--out", (tmp / "g.csv").string()}),
                    "--n ten");
  expect_user_error(ddm({"generate", "--n", "10", "--alpha", "1", "--dims", "2", "--side", "area", "--out",
                         (tmp / "g.csv").string()}),
                    "--side area");
  EXPECT_FALSE(fs::exists(tmp / "g.csv"));
}

TEST(DdmCli, GpuAlgorithmWithoutCudaIsAClearError) {
  std::string why;
  if (cuda_usable(&why)) GTEST_SKIP() << "a CUDA device is usable here";
  TempDir tmp;
  const fs::path good = tmp.write("good.csv", "set,id,lower0,upper0\nS,1,0,5\nU,1,1,2\n");
  for (const char* algorithm : {"gpu", "bitmatrix"}) {
    const CommandResult r = ddm({"match", "--input", good.string(), "--algorithm", algorithm});
    expect_user_error(r, fmt::format("--algorithm {} runs on the cuda backend: ", algorithm));
  }
  expect_user_error(ddm({"match", "--input", good.string(), "--backend", "cuda"}), "--backend cuda");
}

}  // namespace
}  // namespace simkit::ddm

namespace simkit::ddm {
namespace {

// ---- replay ----

// `ddm replay` keeps an IncrementalMatcher over ticks of random-walk moves; --verify checks the
// final pairs against a full rematch (an internal error, exit 1, if they differ), for every rule
// and coordinate type; the same seed gives the same ticks.
TEST(DdmCliReplay, VerifiedAgainstAFullRematchForEveryRuleAndCoordinateType) {
  TempDir tmp;
  for (const bool integer : {false, true}) {
    const fs::path regions = tmp / (integer ? "u64.bin" : "f64.bin");
    std::vector<std::string> gen = {"generate", "--n", "2000",  "--alpha",        "8", "--dims", "2",
                                    "--seed",   "3",   "--out", regions.string(), "-q"};
    if (integer) gen.push_back("--integer");
    ASSERT_EQ(ddm(gen).exit_code, 0);
    for (const char* rule : {"ieee1516", "half-open", "closed"}) {
      SCOPED_TRACE(std::string(rule) + (integer ? " u64" : " f64"));
      const CommandResult r = ddm({"replay", "--input", regions.string(), "--ticks", "10", "--move-fraction", "0.05",
                                   "--rule", rule, "--backend", "cpu", "--threads", "2", "--verify", "--json"});
      ASSERT_EQ(r.exit_code, 0) << describe(r);
      const json j = one_json_line(r);
      EXPECT_EQ(j["verified"], true);
      EXPECT_EQ(j["ticks"], 10);
      EXPECT_EQ(j["moves_per_tick"], 100);
      EXPECT_GT(j["pairs_gained"].get<std::uint64_t>(), 0u);
      EXPECT_EQ(j["initial_pairs"].get<std::int64_t>() + j["pairs_gained"].get<std::int64_t>() -
                    j["pairs_lost"].get<std::int64_t>(),
                j["final_pairs"].get<std::int64_t>());
      const json& l = j["latency_seconds"];
      EXPECT_LE(l["p50"].get<double>(), l["p99"].get<double>());
      EXPECT_LE(l["p99"].get<double>(), l["max"].get<double>());
      EXPECT_GT(j["ticks_per_second"].get<double>(), 0.0);
    }
  }
  // Deterministic: the same seed gives the same final pairs, another seed other ones.
  const auto final_pairs = [&](const char* seed) {
    const CommandResult r = ddm({"replay", "--input", (tmp / "f64.bin").string(), "--ticks", "10", "--seed", seed,
                                 "--move-fraction", "0.02", "--backend", "reference", "--json"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    const json j = one_json_line(r);
    return std::make_pair(j["final_pairs"].get<std::uint64_t>(), j["pairs_gained"].get<std::uint64_t>());
  };
  EXPECT_EQ(final_pairs("5"), final_pairs("5"));
  EXPECT_NE(final_pairs("5"), final_pairs("6"));
}

// ---- entities: generate --moving, replay --mobility walk|waypoint ----

// generate --moving: floor(N/2) entities, subscription e and update e, centred on one point, the
// update with the side of --alpha and --side, the subscription --interest times it; inside [0, L]^d.
TEST(DdmCliGenerate, MovingWritesPairedEntitiesWithTheDocumentedSides) {
  TempDir tmp;
  struct Case {
    std::vector<std::string> flags;
    double interest;
  };
  const std::vector<Case> cases = {
      {{"--dims", "2"}, 2.0},
      {{"--dims", "3", "--integer", "--interest", "3", "--clustered"}, 3.0},
      {{"--dims", "1", "--integer", "--interest", "0.5", "--side", "per-dimension"}, 0.5},
      {{"--dims", "2", "--interest", "1.5", "--clustered"}, 1.5},
  };
  for (const Case& c : cases) {
    const std::string file = (tmp / "e.bin").string();
    std::vector<std::string> args = {"generate", "--n", "2001",  "--alpha", "6",     "--moving",
                                     "--seed",   "9",   "--out", file,      "--json"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    SCOPED_TRACE(fmt::format("{}", fmt::join(args, " ")));
    const CommandResult g = ddm(args);
    ASSERT_EQ(g.exit_code, 0) << describe(g);
    const json j = one_json_line(g);
    EXPECT_EQ(j.at("moving"), true);
    EXPECT_EQ(j.at("entities"), 1000);
    EXPECT_EQ(j.at("subscriptions"), 1000);
    EXPECT_EQ(j.at("updates"), 1000);
    EXPECT_EQ(j.at("interest").get<double>(), c.interest);
    const double side = j.at("side_length").get<double>(), length = j.at("space_length").get<double>();
    EXPECT_DOUBLE_EQ(j.at("subscription_side_length").get<double>(), c.interest * side);
    std::visit(
        [&](const auto& r) {
          using T = typename std::decay_t<decltype(r.updates.lower)>::value_type;
          constexpr bool integral = std::is_integral_v<T>;
          ASSERT_EQ(r.subscriptions.size(), 1000u);
          ASSERT_EQ(r.updates.size(), 1000u);
          for (std::size_t e = 0; e < 1000; ++e) {
            ASSERT_EQ(r.subscriptions.ids[e], e);
            ASSERT_EQ(r.updates.ids[e], e);
          }
          const double u_side = integral ? std::max(1.0, std::round(side)) : side;
          const double s_side = integral ? std::max(1.0, std::round(c.interest * side)) : c.interest * side;
          for (int d = 0; d < r.dims(); ++d)
            for (std::size_t e = 0; e < 1000; ++e) {
              const double ulo = static_cast<double>(r.updates.lo(e, d)), uhi = static_cast<double>(r.updates.hi(e, d));
              const double slo = static_cast<double>(r.subscriptions.lo(e, d));
              const double shi = static_cast<double>(r.subscriptions.hi(e, d));
              ASSERT_NEAR(uhi - ulo, u_side, 1e-6 * length);
              ASSERT_NEAR(shi - slo, s_side, 1e-6 * length);
              if constexpr (integral) {
                ASSERT_EQ(ulo - slo, std::floor((s_side - u_side) / 2)) << "entity " << e << " dimension " << d;
              } else {
                ASSERT_NEAR(ulo + uhi, slo + shi, 1e-6 * length) << "entity " << e << ": not centred";
              }
              ASSERT_GE(std::min(ulo, slo), 0.0);
              ASSERT_LE(std::max(uhi, shi), length);
            }
        },
        read_regions(file));
  }
  // The same flags give the same file.
  for (const char* name : {"a.csv", "b.csv"})
    ASSERT_EQ(ddm({"generate", "--n", "301", "--alpha", "3", "--dims", "2", "--moving", "--clustered", "--out",
                   (tmp / name).string(), "-q"})
                  .exit_code,
              0);
  EXPECT_EQ(slurp(tmp / "a.csv"), slurp(tmp / "b.csv"));
  // Bad combinations.
  const std::string out = (tmp / "x.csv").string();
  expect_user_error(ddm({"generate", "--n", "100", "--alpha", "2", "--dims", "2", "--interest", "3", "--out", out}),
                    "--interest requires --moving");
  expect_user_error(
      ddm({"generate", "--n", "100", "--alpha", "90", "--dims", "1", "--moving", "--interest", "3", "--out", out}),
      "--interest 3");
  expect_user_error(
      ddm({"generate", "--n", "100", "--alpha", "2", "--dims", "1", "--moving", "--interest", "0", "--out", out}),
      "--interest 0");
  expect_user_error(ddm({"generate", "--n", "1", "--alpha", "1", "--dims", "1", "--moving", "--out", out}), "--n 1");
  EXPECT_FALSE(fs::exists(out));
}

// The available backends for replay: reference and cpu, and cuda when a device is usable.
std::vector<std::string> replay_backends() {
  std::vector<std::string> out = {"reference", "cpu"};
  if (simkit::test::cuda_usable()) out.push_back("cuda");
  return out;
}

// walk and waypoint move both regions of chosen entities; --verify (a full rematch) passes for every
// rule, backend and coordinate type, and the moves are the same on every backend.
TEST(DdmCliReplay, EntityMobilityVerifiedOnEveryBackendRuleAndCoordinateType) {
  TempDir tmp;
  const fs::path f64 = tmp / "f64.bin", u64 = tmp / "u64.csv";
  ASSERT_EQ(ddm({"generate", "--n", "1200", "--alpha", "6", "--dims", "2", "--moving", "--seed", "4", "--out",
                 f64.string(), "-q"})
                .exit_code,
            0);
  ASSERT_EQ(ddm({"generate", "--n", "1200", "--alpha", "6", "--dims", "2", "--moving", "--integer", "--clustered",
                 "--seed", "4", "--out", u64.string(), "-q"})
                .exit_code,
            0);
  struct Input {
    fs::path file;
    std::string coords;
  };
  for (const Input& in : {Input{f64, "auto"}, Input{u64, "auto"}, Input{u64, "u32"}})
    for (const char* mobility : {"walk", "waypoint"})
      for (const char* rule : {"ieee1516", "half-open", "closed"}) {
        std::optional<std::uint64_t> first_final;
        for (const std::string& backend : replay_backends()) {
          SCOPED_TRACE(fmt::format("{} --coords {} --mobility {} --rule {} --backend {}", in.file.filename().string(),
                                   in.coords, mobility, rule, backend));
          std::vector<std::string> args = {
              "replay",  "--input",  in.file.string(),  "--coords", in.coords, "--mobility", mobility,
              "--ticks", "8",        "--move-fraction", "0.1",      "--rule",  rule,         "--backend",
              backend,   "--verify", "--json",          "-q"};
          // Fast enough that entities arrive and draw new destinations within the run.
          if (std::string(mobility) == "waypoint") args.insert(args.end(), {"--speed", "5"});
          const CommandResult r = ddm(args);
          ASSERT_EQ(r.exit_code, 0) << describe(r);
          const json j = one_json_line(r);
          EXPECT_EQ(j["verified"], true);
          EXPECT_EQ(j["mobility"], mobility);
          EXPECT_EQ(j["entities"], 600);
          EXPECT_EQ(j["entities_per_tick"], 60);
          EXPECT_EQ(j["moves_per_tick"], 120);
          EXPECT_GT(j["pairs_gained"].get<std::uint64_t>(), 0u);
          EXPECT_EQ(j["initial_pairs"].get<std::int64_t>() + j["pairs_gained"].get<std::int64_t>() -
                        j["pairs_lost"].get<std::int64_t>(),
                    j["final_pairs"].get<std::int64_t>());
          for (const char* key : {"p50", "p99", "max", "mean"}) EXPECT_TRUE(j["latency_seconds"].contains(key)) << key;
          EXPECT_GT(j["ticks_per_second"].get<double>(), 0.0);
          // Every backend makes the same moves, so it ends with the same pairs.
          const auto final_pairs = j["final_pairs"].get<std::uint64_t>();
          if (!first_final) first_final = final_pairs;
          EXPECT_EQ(final_pairs, *first_final);
        }
      }
}

// The same seed gives the same run (and another seed another one), whatever the thread count.
TEST(DdmCliReplay, EntityMobilityIsDeterministic) {
  TempDir tmp;
  const fs::path regions = tmp / "e.bin";
  ASSERT_EQ(ddm({"generate", "--n", "2000", "--alpha", "8", "--dims", "2", "--moving", "--out", regions.string(), "-q"})
                .exit_code,
            0);
  for (const char* mobility : {"walk", "waypoint"}) {
    SCOPED_TRACE(mobility);
    const auto run = [&](const char* seed, const char* threads) {
      const CommandResult r =
          ddm({"replay", "--input", regions.string(), "--mobility", mobility, "--ticks", "30", "--move-fraction", "0.2",
               "--seed", seed, "--backend", "cpu", "--threads", threads, "--json", "-q"});
      EXPECT_EQ(r.exit_code, 0) << describe(r);
      const json j = one_json_line(r);
      return std::make_pair(j["final_pairs"].get<std::uint64_t>(), j["pairs_gained"].get<std::uint64_t>());
    };
    const auto first = run("5", "1");
    EXPECT_EQ(run("5", "2"), first);
    EXPECT_EQ(run("5", "1"), first);
    EXPECT_NE(run("6", "1"), first);
  }
  // region-walk (the default) is the historical replay: naming it changes nothing.
  const auto region_walk = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"replay", "--input",   regions.string(), "--ticks", "10", "--move-fraction",
                                     "0.05",   "--backend", "reference",      "--json",  "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = ddm(args);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    const json j = one_json_line(r);
    EXPECT_EQ(j["mobility"], "region-walk");
    EXPECT_TRUE(j["entities"].is_null());
    return j["final_pairs"].get<std::uint64_t>();
  };
  EXPECT_EQ(region_walk({}), region_walk({"--mobility", "region-walk"}));
}

TEST(DdmCliReplay, EntityMobilityBadCombinationsExitTwo) {
  TempDir tmp;
  const fs::path entities = tmp / "e.csv", odd = tmp / "odd.csv", shifted = tmp / "shifted.csv",
                 extra = tmp / "extra.csv";
  ASSERT_EQ(ddm({"generate", "--n", "100", "--alpha", "2", "--dims", "2", "--moving", "--out", entities.string(), "-q"})
                .exit_code,
            0);
  // Plain regions with N odd: subscription 50 has no update 50.
  ASSERT_EQ(ddm({"generate", "--n", "101", "--alpha", "2", "--dims", "2", "--out", odd.string(), "-q"}).exit_code, 0);
  const auto write = [](const fs::path& path, const char* text) {
    std::FILE* f = std::fopen(path.string().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text, f);
    std::fclose(f);
  };
  // Same counts, but update ids shifted by one: subscription 0 has no update 0.
  write(shifted, "set,id,lower0,upper0\nS,0,0,5\nS,1,2,9\nU,1,1,4\nU,2,3,8\n");
  // Every subscription paired, one update more.
  write(extra, "set,id,lower0,upper0\nS,1,2,9\nU,1,1,4\nU,2,3,8\n");
  const std::string e = entities.string();
  expect_user_error(ddm({"replay", "--input", e, "--mobility", "fly"}), "--mobility fly");
  expect_user_error(ddm({"replay", "--input", e, "--mobility", "walk", "--speed", "1"}), "--speed");
  expect_user_error(ddm({"replay", "--input", e, "--speed", "1"}), "--speed");
  expect_user_error(ddm({"replay", "--input", e, "--mobility", "waypoint", "--step", "2"}), "--step");
  expect_user_error(ddm({"replay", "--input", e, "--mobility", "waypoint", "--speed", "0"}), "--speed 0");
  expect_user_error(ddm({"replay", "--input", e, "--mobility", "waypoint", "--speed", "-1"}), "--speed -1");
  for (const char* mobility : {"walk", "waypoint"}) {
    for (const fs::path& bad : {odd, shifted, extra}) {
      const CommandResult r = ddm({"replay", "--input", bad.string(), "--mobility", mobility, "-q"});
      expect_user_error(r, "--input " + bad.string());
      EXPECT_THAT(r.err, HasSubstr(std::string("--mobility ") + mobility));
    }
  }
  expect_user_error(ddm({"replay", "--input", odd.string(), "--mobility", "walk", "-q"}),
                    "subscription 50 has no update");
  expect_user_error(ddm({"replay", "--input", shifted.string(), "--mobility", "walk", "-q"}),
                    "subscription 0 has no update");
  expect_user_error(ddm({"replay", "--input", extra.string(), "--mobility", "waypoint", "-q"}),
                    "update 2 has no subscription");
  // region-walk moves any file.
  EXPECT_EQ(ddm({"replay", "--input", odd.string(), "--ticks", "2", "-q"}).exit_code, 0);
}

TEST(DdmCliReplay, BadInputExitsTwoWithOneLine) {
  TempDir tmp;
  const fs::path regions = tmp / "r.csv";
  ASSERT_EQ(ddm({"generate", "--n", "100", "--alpha", "2", "--dims", "1", "--out", regions.string()}).exit_code, 0);
  expect_user_error(ddm({"replay", "--input", regions.string(), "--ticks", "0"}), "--ticks 0");
  expect_user_error(ddm({"replay", "--input", regions.string(), "--move-fraction", "1.5"}), "--move-fraction 1.5");
  expect_user_error(ddm({"replay", "--input", regions.string(), "--step", "-1"}), "--step -1");
  expect_user_error(ddm({"replay", "--input", regions.string(), "--rule", "open"}), "open");
  expect_user_error(ddm({"replay", "--input", (tmp / "missing.csv").string()}), "missing.csv");
}

}  // namespace
}  // namespace simkit::ddm
