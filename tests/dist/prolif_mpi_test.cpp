// prolif across ranks (docs/scale-out.md, "prolif across ranks"). The library: the parts of a run
// (Part{k, K}, K = 1, 2, 3, 7) merged equal the whole run bit for bit on every backend (the cuda
// instance skips without a usable device), for random problems and batches. The CLI: `prolif
// simulate` (one run: cells split; --replicates: runs split) and `prolif fit` under mpirun -n 2 and
// -n 3 write the files of one process, byte for byte (result.json without its timing and device
// fields); bad input under mpirun exits 2 with one message. The CLI tests skip without a launcher.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "prolif/problems.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

namespace fs = std::filesystem;
using namespace simkit::prolif::test_problems;
using namespace simkit::test;

// ---------------------------------------------------------------------------------------------
// The library: parts merged == the whole run.

class ProlifParts : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }
  RunOptions run_options(std::uint64_t seed) const {
    return options(GetParam(), seed, GetParam() == Backend::Cpu ? 2 : 1);
  }
};

// Every part of every run, merged in part order.
std::vector<Result> merged_parts(const InitialHistogram& h, const std::vector<Model>& models,
                                 const std::vector<std::uint64_t>& seeds, const RunOptions& o, std::uint64_t count) {
  std::vector<Result> merged;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::vector<Result> part = simulate_batch(h, models, seeds, o, Part{k, count});
    if (k == 0) {
      merged = part;
      continue;
    }
    for (std::size_t r = 0; r < part.size(); ++r) merge(merged[r], part[r]);
  }
  return merged;
}

TEST_P(ProlifParts, MergedPartsAreTheWholeRunOnRandomProblems) {
  std::mt19937_64 rng(printed_seed(20240618));
  for (int n = 0; n < 6; ++n) {
    const Problem p = random_problem(rng, 1e5);
    const RunOptions o = run_options(1000 + static_cast<std::uint64_t>(n));
    const Result whole = simulate(p.initial, p.model, o);
    for (std::uint64_t count : {1u, 2u, 3u, 7u}) {
      const std::vector<Result> merged = merged_parts(p.initial, {p.model}, {o.seed}, o, count);
      ASSERT_EQ(merged.size(), 1u);
      expect_same(whole, merged[0], p.description + ", " + std::to_string(count) + " parts");
    }
  }
}

TEST_P(ProlifParts, MergedPartsOfABatchAreItsRuns) {
  std::mt19937_64 rng(printed_seed(77));
  const Problem p = random_problem(rng, 5e4);
  // Runs that differ in phi_min differ in generations: each run is split on its own.
  std::vector<Model> models(3, p.model);
  models[1].phi_min = p.model.phi_min * 2;
  models[2].start = p.model.start == StartMode::Sync ? StartMode::ProcellAsync : StartMode::Sync;
  const std::vector<std::uint64_t> seeds = {5, 6, 7};
  const RunOptions o = run_options(5);
  const std::vector<Result> whole = simulate_batch(p.initial, models, seeds, o);
  for (std::uint64_t count : {2u, 3u, 7u}) {
    const std::vector<Result> merged = merged_parts(p.initial, models, seeds, o, count);
    ASSERT_EQ(merged.size(), whole.size());
    for (std::size_t r = 0; r < whole.size(); ++r)
      expect_same(whole[r], merged[r], "run " + std::to_string(r) + ", " + std::to_string(count) + " parts");
  }
}

TEST_P(ProlifParts, HostCountedCellsBelongToPartZeroAndTinyRunsSplit) {
  // A quiescent population (counted on the host) and 5 proliferating cells over 7 parts: some
  // parts walk nothing; part 0 alone holds the quiescent counts.
  const InitialHistogram h = histogram({4000, 1000}, {3, 4});
  const Model m = model_of({quiescent(0.4), proliferating("fast", 0.6, 15, 3)}, 1, {0, 30, 60});
  const RunOptions o = run_options(9);
  const Result whole = simulate(h, m, o);
  std::uint64_t quiescent_in_other_parts = 0;
  for (std::uint64_t k = 1; k < 7; ++k) {
    const Result part = simulate_batch(h, std::vector<Model>{m}, std::vector<std::uint64_t>{9}, o, Part{k, 7})[0];
    for (std::size_t t = 0; t < part.times; ++t)
      for (std::size_t i = 0; i < part.rows; ++i) quiescent_in_other_parts += part.at(t, i, 0, 0);
  }
  EXPECT_EQ(quiescent_in_other_parts, 0u);
  expect_same(whole, merged_parts(h, {m}, {9}, o, 7)[0], "7 parts");
  // t_max = 0: every cell is counted on the host, by part 0 only.
  const Model still = model_of({proliferating("fast", 1.0, 15, 3)}, 1, {0});
  expect_same(simulate(h, still, o), merged_parts(h, {still}, {9}, o, 3)[0], "t_max 0, 3 parts");
}

std::string backend_name(const testing::TestParamInfo<Backend>& p) { return std::string(to_string(p.param)); }
INSTANTIATE_TEST_SUITE_P(, ProlifParts, testing::Values(Backend::Reference, Backend::Cpu, Backend::Cuda), backend_name);

TEST(ProlifPart, BadPartsAndMismatchedMergesAreUserErrors) {
  const InitialHistogram h = histogram({4000}, {10});
  const Model m = model_of({proliferating("fast", 1.0, 15, 3)}, 1, {30});
  const RunOptions o = options(Backend::Reference, 1);
  const std::vector<Model> models{m};
  const std::vector<std::uint64_t> seeds{1};
  for (const Part bad : {Part{0, 0}, Part{3, 3}, Part{5, 2}, Part{0, std::uint64_t{1} << 40}}) {
    try {
      simulate_batch(h, models, seeds, o, bad);
      ADD_FAILURE() << "part " << bad.index << " of " << bad.count << " was accepted";
    } catch (const UserError& e) {
      EXPECT_EQ(e.field(), "part") << e.what();
    }
  }
  Result a = simulate(h, m, o);
  Model other = m;
  other.times = {10, 30};
  const Result b = simulate(h, other, o);
  try {
    merge(a, b);
    ADD_FAILURE() << "results of different shapes were merged";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "result") << e.what();
  }
}

TEST(ProlifPart, OneRankIsTheWholeRun) {
  // Outside mpirun the world is rank 0 of 1: the distributed entry points are simulate's.
  const dist::Comm& world = dist::Comm::world();
  ASSERT_FALSE(world.distributed());
  std::mt19937_64 rng(printed_seed(5));
  const Problem p = random_problem(rng, 3e4);
  const RunOptions o = options(Backend::Cpu, 3, 2);
  expect_same(simulate(p.initial, p.model, o), simulate_distributed(p.initial, p.model, o, world), "distributed");
  const std::vector<Model> models(3, p.model);
  const std::vector<std::uint64_t> seeds{3, 4, 5};
  const std::vector<Result> batch = simulate_batch(p.initial, models, seeds, o);
  const std::vector<Result> spread = simulate_batch_distributed(p.initial, models, seeds, o, world);
  ASSERT_EQ(spread.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) expect_same(batch[r], spread[r], "batch run " + std::to_string(r));
}

// ---------------------------------------------------------------------------------------------
// The CLI under mpirun.

#define SKIP_WITHOUT_LAUNCHER() \
  if (mpi_launcher().empty()) GTEST_SKIP() << "no MPI launcher (a build without MPI, or no mpirun found)"

// A result.json without what may differ between runs of the same command: timings, the device.
nlohmann::json without_timings(nlohmann::json doc) {
  if (doc.is_object()) {
    for (auto it = doc.begin(); it != doc.end();) {
      const std::string& key = it.key();
      const bool timing = key == "backend" || key == "device" || key.find("seconds") != std::string::npos ||
                          key.find("per_second") != std::string::npos;
      if (timing) {
        it = doc.erase(it);
      } else {
        *it = without_timings(*it);
        ++it;
      }
    }
  } else if (doc.is_array()) {
    for (auto& e : doc) e = without_timings(e);
  }
  return doc;
}

// Every file of `expected` is in `got` with the same bytes (result.json: the same document
// without timings), and `got` has no other file.
void expect_same_outputs(const fs::path& expected, const fs::path& got, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<std::string> names, got_names;
  for (const auto& e : fs::directory_iterator(expected)) names.push_back(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(got)) got_names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::sort(got_names.begin(), got_names.end());
  EXPECT_EQ(names, got_names);
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    const std::string a = slurp(expected / name), b = slurp(got / name);
    if (name == "result.json") {
      EXPECT_EQ(without_timings(nlohmann::json::parse(a)).dump(1), without_timings(nlohmann::json::parse(b)).dump(1));
    } else {
      EXPECT_FALSE(a.empty()) << name;
      EXPECT_TRUE(a == b) << name << " differs";
    }
  }
}

// H(0), a two-population model with a quiescent one, and a target: small enough for 3 ranks on 2 cores.
struct Files {
  TempDir dir;
  fs::path h0, model, target, fit;
  Files() {
    h0 = dir.write("h0.txt", "# value count\n1500 400\n3000 700\n6000 300\n12000 90\n");
    model = dir.write("model.toml", R"(phi_min = 1
t_max = 96
times = [24, 48, 96]
seed = 7

[[population]]
name = "fast"
proportion = 0.6
mean = 18
sd = 4

[[population]]
name = "slow"
proportion = 0.3
mean = 30
sd = 6
distribution = "gamma"

[[population]]
name = "rest"
proportion = 0.1
quiescent = true
)");
    target = dir.write("target.txt", "# value count\n200 100\n400 300\n800 500\n1600 400\n3000 200\n");
    fit = dir.write("fit.toml", test_problems::kFitToml);
  }
  std::vector<std::string> simulate(const fs::path& out, const std::string& backend,
                                    const std::vector<std::string>& more = {}) const {
    std::vector<std::string> args = {
        "prolif",    "simulate", "--histogram", h0.string(),  "--config", model.string(), "--target", target.string(),
        "--backend", backend,    "--out",       out.string(), "-q"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  std::vector<std::string> fit_args(const fs::path& out, const std::vector<std::string>& more = {}) const {
    std::vector<std::string> args = {"prolif",
                                     "fit",
                                     "--config",
                                     fit.string(),
                                     "--histogram",
                                     h0.string(),
                                     "--target",
                                     target.string() + "@72",
                                     "--backend",
                                     "cpu",
                                     "--particles",
                                     "5",
                                     "--iterations",
                                     "2",
                                     "--seed",
                                     "3",
                                     "--check-runs",
                                     "4",
                                     "--out",
                                     out.string(),
                                     "-q"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
};

// One process, then mpirun -n 2 and -n 3: the same outputs; the root's summary names the ranks.
void expect_ranks_agree(const Files& f, const std::function<std::vector<std::string>(const fs::path&)>& args,
                        const std::string& what) {
  const fs::path single = f.dir / ("single-" + what);
  const CommandResult one = run_simkit(args(single));
  ASSERT_EQ(one.exit_code, 0) << describe(one);
  for (int ranks : {2, 3}) {
    const fs::path out = f.dir / (what + "-" + std::to_string(ranks));
    const CommandResult r = run_simkit_mpi(ranks, args(out));
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_NE(r.out.find(", " + std::to_string(ranks) + " ranks"), std::string::npos) << r.out;
    EXPECT_EQ(lines_of(r.out).size(), lines_of(one.out).size()) << "only the root prints:\n" << r.out;
    expect_same_outputs(single, out, what + " on " + std::to_string(ranks) + " ranks");
  }
}

TEST(ProlifMpiCli, OneRunSplitByCellsWritesTheFilesOfOneProcess) {
  SKIP_WITHOUT_LAUNCHER();
  const Files f;
  for (const std::string backend : {"cpu", "reference"}) {
    expect_ranks_agree(
        f, [&](const fs::path& out) { return f.simulate(out, backend); }, "simulate-" + backend);
  }
}

TEST(ProlifMpiCli, ReplicatesSplitOverRanksInReplicateOrder) {
  SKIP_WITHOUT_LAUNCHER();
  const Files f;
  // 4 replicates on 3 ranks: 2, 1, 1; 2 replicates on 3 ranks: one rank has none.
  for (const std::string n : {"4", "2"}) {
    expect_ranks_agree(
        f,
        [&](const fs::path& out) {
          return f.simulate(out, "cpu", {"--replicates", n});
        },
        "replicates-" + n);
  }
  // --json: the summary says how many ranks ran.
  const CommandResult r = run_simkit_mpi(2, f.simulate(f.dir / "json", "cpu", {"--replicates", "3", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["ranks"].get<int>(), 2);
  EXPECT_EQ(doc["replicates"].get<int>(), 3);
}

TEST(ProlifMpiCli, FitSplitsEachIterationAndTakesTheSameSteps) {
  SKIP_WITHOUT_LAUNCHER();
  const Files f;
  expect_ranks_agree(
      f, [&](const fs::path& out) { return f.fit_args(out); }, "fit-pso");
  // CMA-ES with replicates per evaluation and a budget.
  expect_ranks_agree(
      f,
      [&](const fs::path& out) {
        return f.fit_args(out, {"--optimizer", "cma-es", "--budget", "14", "--replicates", "2"});
      },
      "fit-cmaes");
}

TEST(ProlifMpiCli, BadInputExitsTwoWithOneMessage) {
  SKIP_WITHOUT_LAUNCHER();
  const Files f;
  const fs::path bad = f.dir.write("bad.txt", "# value count\n1500 10\n3000 x\n");
  std::vector<std::string> args = f.simulate(f.dir / "out", "cpu");
  args[3] = bad.string();
  const CommandResult r = run_simkit_mpi(3, args);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  std::size_t errors = 0;
  for (const std::string& line : lines_of(r.err)) errors += line.find("simkit: error:") != std::string::npos ? 1 : 0;
  EXPECT_EQ(errors, 1u) << r.err;
  EXPECT_NE(r.err.find("bad.txt"), std::string::npos) << r.err;
  EXPECT_TRUE(empty_or_absent(f.dir / "out"));
}

}  // namespace
}  // namespace simkit::prolif
