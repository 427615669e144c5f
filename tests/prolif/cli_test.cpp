// `simkit prolif simulate` end to end: the real binary (run_simkit) on files in a TempDir. Good runs
// write every output file with contents that agree with the library; bad input exits 2 with one
// line on stderr naming the file and line, and leaves nothing in --out.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace simkit::test;  // run_simkit, TempDir, slurp, describe, ...

// H(0): values below 10^4 so that nothing overflows the default bins (no note on stderr).
constexpr const char* kHistogram = "# value count\n1000 50\n500 30\n\n200 20\n3000 0\n";
constexpr const char* kTypes = "0.1 -1 -1\n0.9 20 5\n";
constexpr const char* kTarget = "100 40\n250 60\n500 30\n1000 5\n";

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

// The library's own run of what the CLI was asked for (same files, flags and seed).
Result library_run(const fs::path& histogram, const fs::path& types, double phi_min, std::vector<double> times,
                   std::uint64_t seed, StartMode start = StartMode::Sync) {
  const InitialHistogram h = read_histogram(histogram);
  Model m = read_types_file(types).model;
  m.phi_min = phi_min;
  m.times = std::move(times);
  m.start = start;
  RunOptions o;
  o.backend = Backend::Reference;
  o.seed = seed;
  return simulate(h, m, o);
}

void expect_time_entry_keys(const json& entry) {
  for (const char* key :
       {"t", "total", "by_generation", "by_population", "overflow", "hellinger", "hellinger_normalized"})
    EXPECT_TRUE(entry.contains(key)) << "missing key " << key << " in " << entry.dump();
}

// ----------------------------------------------------------------------------------------------
// 9. Good runs

TEST(ProlifCli, GoodRunWritesEveryFileAndAgreesWithTheLibrary) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--phi-min", "10", "--times", "60,30", "--seed", "7", "--backend", "cpu",
                                      "--threads", "2", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(r.out.empty());
  for (const char* name : {"histogram.tsv", "exact.csv", "binned.csv", "result.json", "plot.svg"})
    EXPECT_TRUE(fs::is_regular_file(out / name)) << name;

  const Result lib = library_run(h, types, 10, {30, 60}, 7);
  const InitialHistogram initial = read_histogram(h);

  const json doc = json::parse(slurp(out / "result.json"));
  for (const char* key : {"seed", "backend", "device", "wall_seconds", "replicates", "times"})
    EXPECT_TRUE(doc.contains(key)) << "missing key " << key;
  EXPECT_EQ(doc["seed"].get<std::uint64_t>(), 7u);
  EXPECT_EQ(doc["backend"].get<std::string>(), "cpu");
  EXPECT_TRUE(doc["device"].is_string());
  EXPECT_TRUE(doc["wall_seconds"].is_number());
  EXPECT_GE(doc["wall_seconds"].get<double>(), 0.0);
  EXPECT_EQ(doc["replicates"].get<int>(), 1);
  ASSERT_TRUE(doc["times"].is_array());
  ASSERT_EQ(doc["times"].size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    const json& e = doc["times"][t];
    expect_time_entry_keys(e);
    EXPECT_EQ(e["t"].get<double>(), t == 0 ? 30.0 : 60.0);
    EXPECT_EQ(e["total"].get<std::uint64_t>(), lib.total(t));
    EXPECT_EQ(e["by_generation"].get<std::vector<std::uint64_t>>(), lib.by_generation(t));
    const auto pops = lib.by_population(t);
    EXPECT_EQ(e["by_population"]["quiescent"].get<std::uint64_t>(), pops[0]);
    EXPECT_EQ(e["by_population"]["P1"].get<std::uint64_t>(), pops[1]);
    EXPECT_EQ(e["overflow"].get<double>(), 0.0);
    EXPECT_TRUE(e["hellinger"].is_null());
    EXPECT_TRUE(e["hellinger_normalized"].is_null());
  }
  EXPECT_GT(lib.total(1), initial.total_cells());  // the run did divide

  // histogram.tsv: the exact histogram at t_max, ascending, value<TAB>count.
  const auto tsv = lines_of(slurp(out / "histogram.tsv"));
  const auto exact = exact_histogram(lib, initial, 1);
  ASSERT_EQ(tsv.size(), exact.size());
  std::uint64_t sum = 0;
  double previous = 0;
  for (std::size_t n = 0; n < tsv.size(); ++n) {
    const auto fields = split(tsv[n], '\t');
    ASSERT_EQ(fields.size(), 2u) << tsv[n];
    const double value = std::stod(fields[0]);
    const std::uint64_t count = std::stoull(fields[1]);
    EXPECT_GT(value, previous) << "line " << n + 1;
    previous = value;
    EXPECT_EQ(value, exact[n].first);
    EXPECT_EQ(count, exact[n].second);
    sum += count;
  }
  EXPECT_EQ(sum, doc["times"][1]["total"].get<std::uint64_t>());

  // exact.csv: every (t, value, generation, population) with its count.
  const auto exact_lines = lines_of(slurp(out / "exact.csv"));
  ASSERT_FALSE(exact_lines.empty());
  EXPECT_EQ(exact_lines[0], "t,value,generation,population,count");
  std::map<double, std::uint64_t> per_time;
  for (std::size_t n = 1; n < exact_lines.size(); ++n) {
    const auto f = split(exact_lines[n], ',');
    ASSERT_EQ(f.size(), 5u) << exact_lines[n];
    per_time[std::stod(f[0])] += std::stoull(f[4]);
  }
  EXPECT_EQ(per_time[30.0], lib.total(0));
  EXPECT_EQ(per_time[60.0], lib.total(1));

  // binned.csv: one line per (time, edge), the counts of bin_result.
  const auto binned = lines_of(slurp(out / "binned.csv"));
  ASSERT_EQ(binned.size(), 1u + 2u * 100u);
  EXPECT_EQ(binned[0], "t,edge,count");
  Binning binning;
  binning.phi_min = 10;
  for (std::size_t t = 0; t < 2; ++t) {
    const Binned b = bin_result(lib, initial, t, binning);
    for (std::size_t i = 0; i < 100; ++i) {
      const auto f = split(binned[1 + t * 100 + i], ',');
      ASSERT_EQ(f.size(), 3u);
      EXPECT_EQ(std::stod(f[2]), b.counts[i]) << binned[1 + t * 100 + i];
    }
  }
  EXPECT_NE(slurp(out / "plot.svg").find("<svg"), std::string::npos);
}

TEST(ProlifCli, ReplicatesGiveRunsAndBands) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--phi-min", "10", "--times", "30,60", "--seed", "7", "--replicates", "3",
                                      "--backend", "cpu", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json doc = json::parse(slurp(out / "result.json"));
  EXPECT_EQ(doc["replicates"].get<int>(), 3);
  ASSERT_EQ(doc["times"].size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    const json& e = doc["times"][t];
    expect_time_entry_keys(e);
    ASSERT_TRUE(e.contains("runs"));
    ASSERT_EQ(e["runs"].size(), 3u);
    double mean = 0;
    for (std::size_t run = 0; run < 3; ++run) {
      const Result lib = library_run(h, types, 10, {30, 60}, 7 + run);
      EXPECT_EQ(e["runs"][run]["seed"].get<std::uint64_t>(), 7 + run);
      EXPECT_EQ(e["runs"][run]["total"].get<std::uint64_t>(), lib.total(t));
      mean += static_cast<double>(lib.total(t)) / 3.0;
    }
    EXPECT_NEAR(e["total"].get<double>(), mean, 1e-9 * mean);
  }
  const auto binned = lines_of(slurp(out / "binned.csv"));
  ASSERT_EQ(binned.size(), 1u + 2u * 100u);
  EXPECT_EQ(binned[0], "t,edge,mean,p05,p95");
  for (std::size_t n = 1; n < binned.size(); ++n) {
    const auto f = split(binned[n], ',');
    ASSERT_EQ(f.size(), 5u) << binned[n];
    EXPECT_LE(std::stod(f[3]), std::stod(f[2]) + 1e-9) << binned[n];
    EXPECT_LE(std::stod(f[2]), std::stod(f[4]) + 1e-9) << binned[n];
  }
}

TEST(ProlifCli, TargetAddsAColumnAndAHellingerDistance) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path target = dir.write("target.txt", kTarget);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--phi-min", "10", "--times", "30,60", "--seed", "3", "--target", target.string(),
                                      "--backend", "reference", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const auto binned = lines_of(slurp(out / "binned.csv"));
  ASSERT_FALSE(binned.empty());
  EXPECT_EQ(binned[0], "t,edge,count,target");
  const json doc = json::parse(slurp(out / "result.json"));
  ASSERT_EQ(doc["times"].size(), 2u);
  EXPECT_TRUE(doc["times"][0]["hellinger"].is_null());  // the target is compared at t_max only
  const json& last = doc["times"][1];
  ASSERT_TRUE(last["hellinger"].is_number()) << last.dump();
  ASSERT_TRUE(last["hellinger_normalized"].is_number());

  const Result lib = library_run(h, types, 10, {30, 60}, 3);
  Binning binning;
  binning.phi_min = 10;
  const auto expected = hellinger(bin_result(lib, read_histogram(h), 1, binning).counts,
                                  bin_histogram(read_histogram(target), binning).counts);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(last["hellinger"].get<double>(), expected->distance);
  EXPECT_DOUBLE_EQ(last["hellinger_normalized"].get<double>(), expected->normalized);
  EXPECT_GT(expected->distance, 0.0);
}

TEST(ProlifCli, JsonSummaryIsOneLineOnStdout) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const CommandResult r =
      run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(), "--phi-min", "10",
                  "--t-max", "50", "--backend", "cpu", "--out", (dir / "out").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(r.out.back(), '\n');
  const json summary = json::parse(r.out);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["backend"].get<std::string>(), "cpu");
  EXPECT_TRUE(summary["wall_seconds"].is_number());
  EXPECT_TRUE(summary["throughput"].is_number());
  EXPECT_GT(summary["throughput"].get<double>(), 0.0);
}

TEST(ProlifCli, TomlModelGivesPhiMinTimesStartAndSeed) {
  TempDir dir;
  const fs::path h = dir.write("h0.csv", "value,count\n1000,50\n500,30\n200,20\n");
  const fs::path config = dir.write("model.toml", R"(phi_min = 10
times = [24, 48]
start = "procell-async"
seed = 11

[[population]]
name = "resting"
proportion = 0.2
quiescent = true

[[population]]
name = "cycling"
proportion = 0.8
mean = 18
sd = 6
distribution = "gamma"
)");
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--config", config.string(),
                                      "--backend", "cpu", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json doc = json::parse(slurp(out / "result.json"));
  EXPECT_EQ(doc["seed"].get<std::uint64_t>(), 11u);
  EXPECT_EQ(doc["start"].get<std::string>(), "procell-async");
  EXPECT_EQ(doc["phi_min"].get<double>(), 10.0);
  ASSERT_EQ(doc["times"].size(), 2u);
  EXPECT_EQ(doc["times"][1]["t"].get<double>(), 48.0);

  const InitialHistogram initial = read_histogram(h);
  ModelFile file = read_model_toml(config);
  RunOptions o;
  o.backend = Backend::Reference;
  o.seed = 11;
  const Result lib = simulate(initial, file.model, o);
  EXPECT_EQ(doc["times"][1]["total"].get<std::uint64_t>(), lib.total(1));
  EXPECT_EQ(doc["times"][1]["by_population"]["resting"].get<std::uint64_t>(), lib.by_population(1)[0]);
  EXPECT_EQ(doc["times"][1]["by_population"]["cycling"].get<std::uint64_t>(), lib.by_population(1)[1]);
}

// ----------------------------------------------------------------------------------------------
// 10. Bad input

// Exit code 2, exactly one line on stderr that contains every fragment, and nothing in `out`.
void expect_user_error(const CommandResult& r, const fs::path& out, const std::vector<std::string>& fragments) {
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr must be one line: [" << r.err << "]";
  EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "expected '" << f << "' in: " << r.err;
  EXPECT_TRUE(empty_or_absent(out)) << out << " must be empty or absent";
}

struct BadCase {
  std::string name;
  std::string histogram = kHistogram;  // written to h0.txt
  std::string model = kTypes;          // written to types.txt, or model.toml when toml
  bool toml = false;
  std::vector<std::string> fragments;  // "FILE" is replaced by the file's path
  bool in_model = false;               // the fragment names the model file (else the histogram)
};

void run_bad_case(const BadCase& c) {
  SCOPED_TRACE(c.name);
  TempDir dir;
  const fs::path h = dir.write("h0.txt", c.histogram);
  const fs::path model = dir.write(c.toml ? "model.toml" : "types.txt", c.model);
  const fs::path out = dir / "out";
  const CommandResult r =
      run_simkit({"prolif", "simulate", "--histogram", h.string(), c.toml ? "--config" : "--populations",
                  model.string(), "--phi-min", "10", "--t-max", "50", "--backend", "cpu", "--out", out.string(), "-q"});
  std::vector<std::string> fragments;
  for (std::string f : c.fragments) {
    if (const auto pos = f.find("FILE"); pos != std::string::npos) f.replace(pos, 4, (c.in_model ? model : h).string());
    fragments.push_back(f);
  }
  expect_user_error(r, out, fragments);
}

TEST(ProlifCli, BadHistogramsExitTwoWithFileAndLine) {
  const std::vector<BadCase> cases{
      {"empty histogram", "", kTypes, false, {"FILE:1:", "no cells"}},
      {"only zero counts", "100 0\n200 0\n", kTypes, false, {"FILE:2:", "no cells"}},
      {"negative value", "100 5\n-3 4\n", kTypes, false, {"FILE:2:", "value"}},
      {"NaN value", "100 5\n200 3\nnan 4\n", kTypes, false, {"FILE:3:", "value"}},
      {"missing column", "100 5\n200\n", kTypes, false, {"FILE:2:", "count"}},
      {"fractional count", "100 5\n200 2.5\n", kTypes, false, {"FILE:2:", "count"}},
  };
  for (const auto& c : cases) run_bad_case(c);
}

TEST(ProlifCli, BadModelsExitTwoWithFileAndLine) {
  const std::string pop_a = "[[population]]\nname = \"a\"\nproportion = 0.5\nmean = 10\nsd = 2\n";
  std::vector<BadCase> cases{
      {"types: proportions sum to 0.9", kHistogram, "0.5 10 2\n0.4 20 3\n", false, {"FILE:2:", "proportion"}, true},
      {"types: mean 0", kHistogram, "0.5 10 2\n0.5 0 3\n", false, {"FILE:2:", "mean"}, true},
      {"types: mean < 0", kHistogram, "1.0 -5 3\n", false, {"FILE:1:", "mean"}, true},
      {"types: sd < 0", kHistogram, "1.0 10 -2\n", false, {"FILE:1:", "sd"}, true},
      // TOML: line 1-5 population a, line 6 blank, lines 7-11 population b.
      {"toml: proportions sum to 0.9",
       kHistogram,
       pop_a + "\n[[population]]\nname = \"b\"\nproportion = 0.4\nmean = 20\nsd = 3\n",
       true,
       {"FILE:7:", "proportion"},
       true},
      {"toml: mean 0",
       kHistogram,
       pop_a + "\n[[population]]\nname = \"b\"\nproportion = 0.5\nmean = 0\nsd = 3\n",
       true,
       {"FILE:10:", "mean"},
       true},
      {"toml: sd < 0",
       kHistogram,
       pop_a + "\n[[population]]\nname = \"b\"\nproportion = 0.5\nmean = 8\nsd = -1\n",
       true,
       {"FILE:11:", "sd"},
       true},
      {"toml: unknown key", kHistogram, "phi_min = 5\ncolour = \"red\"\n" + pop_a, true, {"FILE:2:", "colour"}, true},
      {"toml: unknown population key",
       kHistogram,
       "[[population]]\nname = \"a\"\nproportion = 1\nmean = 10\nsd = 2\nshape = 3\n",
       true,
       {"FILE:6:", "shape"},
       true},
  };
  for (const auto& c : cases) run_bad_case(c);
}

TEST(ProlifCli, BadTargetExitsTwoAndWritesNothing) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path target = dir.write("target.txt", "100 4\n200 x\n");
  const fs::path out = dir / "out";
  const CommandResult r =
      run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(), "--phi-min", "10",
                  "--t-max", "50", "--target", target.string(), "--out", out.string(), "--backend", "cpu", "-q"});
  expect_user_error(r, out, {target.string() + ":2:", "count"});
}

TEST(ProlifCli, ExistingEmptyOutputDirectoryStaysEmptyOnError) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", "100 5\n-1 3\n");
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path out = dir / "out";
  fs::create_directory(out);
  const CommandResult r =
      run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(), "--phi-min", "10",
                  "--t-max", "50", "--out", out.string(), "--backend", "cpu", "-q"});
  expect_user_error(r, out, {h.string() + ":2:"});
  EXPECT_TRUE(fs::is_directory(out));
}

TEST(ProlifCli, CudaBackendWithoutAGpuIsAUserError) {
  std::string why;
  if (simkit::test::cuda_usable(&why)) GTEST_SKIP() << "a CUDA device is usable here";
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--phi-min", "10", "--t-max", "50", "--out", out.string(), "--backend", "cuda"});
  expect_user_error(r, out, {"CUDA", "--backend"});
}

TEST(ProlifCli, MissingOutIsAUserError) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--phi-min", "10", "--t-max", "50", "--backend", "cpu"});
  expect_user_error(r, dir / "out", {"--out"});
  EXPECT_EQ(r.out, "");
}

TEST(ProlifCli, MissingPhiMinIsAUserError) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path types = dir.write("types.txt", kTypes);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit({"prolif", "simulate", "--histogram", h.string(), "--populations", types.string(),
                                      "--t-max", "50", "--out", out.string(), "--backend", "cpu"});
  expect_user_error(r, out, {"--phi-min", types.string()});
}

TEST(ProlifCli, MissingModelIsAUserError) {
  TempDir dir;
  const fs::path h = dir.write("h0.txt", kHistogram);
  const fs::path out = dir / "out";
  const CommandResult r = run_simkit(
      {"prolif", "simulate", "--histogram", h.string(), "--phi-min", "10", "--t-max", "50", "--out", out.string()});
  expect_user_error(r, out, {"--config", "--populations"});
}

// ----------------------------------------------------------------------------------------------
// 11. Help and version

TEST(ProlifCli, HelpAndVersion) {
  const CommandResult top = run_simkit({"--help"});
  EXPECT_EQ(top.exit_code, 0) << describe(top);
  EXPECT_NE(top.out.find("prolif"), std::string::npos) << top.out;  // subcommands are listed, their flags are not

  const CommandResult sim = run_simkit({"prolif", "simulate", "--help"});
  EXPECT_EQ(sim.exit_code, 0) << describe(sim);
  for (const char* flag : {"--histogram", "--config", "--populations", "--phi-min", "--t-max", "--out", "--replicates",
                           "--target", "--backend", "--json"})
    EXPECT_NE(sim.out.find(flag), std::string::npos) << flag << " not in:\n" << sim.out;

  const CommandResult version = run_simkit({"--version"});
  EXPECT_EQ(version.exit_code, 0) << describe(version);
  EXPECT_NE(version.out.find("simkit"), std::string::npos) << version.out;
}

// ----------------------------------------------------------------------------------------------
// 12. Real data: ProCell's AML9 experiment, model 3

struct RealData {
  fs::path initial, target;
};

std::optional<RealData> real_data() {
  const auto dir = simkit::test::data_dir();
  if (!dir) return std::nullopt;
  RealData d{*dir / "procell" / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt",
             *dir / "procell" / "AML9_Exp3_t10d_DOX3_BM_GFPpos.txt"};
  if (!fs::is_regular_file(d.initial) || !fs::is_regular_file(d.target)) return std::nullopt;
  return d;
}

constexpr const char* kModel3 = R"(phi_min = 11
t_max = 240

[[population]]
name = "quiescent"
proportion = 0.06
quiescent = true

[[population]]
name = "slow"
proportion = 0.47
mean = 63.7
sd = 28.9

[[population]]
name = "fast"
proportion = 0.47
mean = 41.1
sd = 14.3
)";

// ProCell's Python gives ~1.12e6 cells at 240 h with its asynchronous start (normalized Hellinger
// ~0.05 against the DOX3 sample) and ~1.53e6 with a synchronous start. The mean of 5 replicates
// of ~1e6 cells has a relative spread of ~0.2 %, so 3 % only fails on a model difference.
TEST(ProlifCli, RealDataMatchesProCell) {
  const auto data = real_data();
  if (!data) GTEST_SKIP() << "ProCell data not found (set SIMKIT_DATA_DIR to the shared data directory)";
  TempDir dir;
  const fs::path config = dir.write("model3.toml", kModel3);
  struct Case {
    const char* start;
    double expected_total;
  };
  for (const Case c : {Case{"procell-async", 1.12e6}, Case{"sync", 1.53e6}}) {
    SCOPED_TRACE(c.start);
    const fs::path out = dir / (std::string("out-") + c.start);
    const CommandResult r =
        run_simkit({"prolif", "simulate", "--histogram", data->initial.string(), "--config", config.string(),
                    "--target", data->target.string(), "--start", c.start, "--replicates", "5", "--seed", "2024",
                    "--backend", "cpu", "--out", out.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(out / "result.json"));
    EXPECT_EQ(doc["replicates"].get<int>(), 5);
    const json& last = doc["times"].back();
    EXPECT_EQ(last["t"].get<double>(), 240.0);
    ASSERT_EQ(last["runs"].size(), 5u);
    const double total = last["total"].get<double>();
    EXPECT_NEAR(total, c.expected_total, 0.03 * c.expected_total);
    ASSERT_TRUE(last["hellinger_normalized"].is_number());
    if (std::string(c.start) == "procell-async") {
      const double h = last["hellinger_normalized"].get<double>();
      EXPECT_GE(h, 0.03);
      EXPECT_LE(h, 0.08);
    }
  }
}

}  // namespace
}  // namespace simkit::prolif
