// `mpirun -n K simkit angio run` (z-slabs, docs/scale-out.md) against the same command on one
// process: series.csv byte for byte, every snapshot's fields node for node (the pieces of the .pvti
// put together against the single .vti), the quick-look images byte for byte, and a restart from the
// per-rank checkpoints equal to the uninterrupted run. The cpu and reference backends run under
// mpirun -n 2 and -n 3 (CI); cuda when a device is usable (the ranks share it, or take one each).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "core/vtk.hpp"
#include "support/test_support.hpp"

namespace simkit::test {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> run_args(const fs::path& out, const std::string& backend, std::vector<std::string> extra) {
  std::vector<std::string> a = {"angio", "run", "--out", out.string(), "-q", "--backend", backend};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

struct FieldsRead {
  std::vector<double> n, f, c;
};

FieldsRead read_image(const fs::path& vti) {
  const vtk::ImageDataReader reader(vti);
  FieldsRead out;
  out.n = reader.read_doubles(*reader.find("n"));
  out.f = reader.read_doubles(*reader.find("f"));
  out.c = reader.read_doubles(*reader.find("c"));
  return out;
}

// The pieces named by a .pvti, put together (each piece's planes at its extent; where two pieces
// share a plane, the later one must agree with the earlier).
FieldsRead read_pieces(const fs::path& pvti, int nx, int ny, int nz) {
  const std::string text = slurp(pvti);
  const std::size_t plane = static_cast<std::size_t>(nx) * ny;
  FieldsRead whole{std::vector<double>(plane * nz, -1.0), std::vector<double>(plane * nz, -1.0),
                   std::vector<double>(plane * nz, -1.0)};
  std::size_t at = 0;
  int pieces = 0;
  while ((at = text.find("<Piece Extent=\"", at)) != std::string::npos) {
    int e[6];
    const char* p = text.c_str() + at + 15;
    for (int& v : e) v = static_cast<int>(std::strtol(p, const_cast<char**>(&p), 10));
    const std::size_t s = text.find("Source=\"", at) + 8;
    const std::string source = text.substr(s, text.find('"', s) - s);
    const FieldsRead piece = read_image(pvti.parent_path() / source);
    EXPECT_EQ(piece.n.size(), plane * static_cast<std::size_t>(e[5] - e[4] + 1)) << source;
    for (std::size_t k = 0; k < piece.n.size(); ++k) {
      const std::size_t g = static_cast<std::size_t>(e[4]) * plane + k;
      for (auto [w, v] : {std::pair{&whole.n, &piece.n}, {&whole.f, &piece.f}, {&whole.c, &piece.c}}) {
        if ((*w)[g] != -1.0) {
          EXPECT_EQ((*w)[g], (*v)[k]) << "pieces disagree on a shared plane, " << source;
        }
        (*w)[g] = (*v)[k];
      }
    }
    ++pieces;
    at = s;
  }
  EXPECT_GT(pieces, 1) << pvti;
  return whole;
}

void expect_same_fields(const FieldsRead& a, const FieldsRead& b, const std::string& what) {
  ASSERT_EQ(a.n.size(), b.n.size()) << what;
  std::size_t differ = 0;
  for (std::size_t k = 0; k < a.n.size(); ++k) differ += (a.n[k] != b.n[k]) + (a.f[k] != b.f[k]) + (a.c[k] != b.c[k]);
  EXPECT_EQ(differ, 0u) << what << ": values that differ from the single-process run";
}

struct Case {
  std::string backend, precision, form;
  int nz;
  int nx = 14;       // cuda: 16 allows the TMA-staged kernel in fp32 (whole 16-byte rows), 14 not (marching)
  bool tma = false;  // cuda: SIMKIT_ANGIO_KERNEL=tma (these grids are below its size rule)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " " << c.precision << " " << c.form << " nx=" << c.nx << " nz=" << c.nz << (c.tma ? " tma" : "");
}

class AngioSlabs : public ::testing::TestWithParam<Case> {};

TEST_P(AngioSlabs, EveryOutputEqualsTheSingleProcessRun) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  const Case c = GetParam();
  if (c.backend == "cuda") {
    std::string why;
    if (!cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  TempDir tmp;
  // Every run of the case (one rank and K) takes the same kernel; the environment reaches the ranks.
  struct KernelChoice {
    explicit KernelChoice(bool tma) { tma ? setenv("SIMKIT_ANGIO_KERNEL", "tma", 1) : unsetenv("SIMKIT_ANGIO_KERNEL"); }
    ~KernelChoice() { unsetenv("SIMKIT_ANGIO_KERNEL"); }
  } choice(c.tma);
  const std::string grid = std::to_string(c.nx) + ",12," + std::to_string(c.nz);
  const std::vector<std::string> extra = {"--grid",         grid, "--h", "0.05",
                                          "--steps",        "24", "--series-every", "4", "--output-every", "12",
                                          "--precision",    c.precision, "--form", c.form};
  const CommandResult one = run_simkit(run_args(tmp / "one", c.backend, extra));
  ASSERT_EQ(one.exit_code, 0) << describe(one);
  for (int ranks : {2, 3}) {
    const fs::path out = tmp / ("k" + std::to_string(ranks));
    const CommandResult k = run_simkit_mpi(ranks, run_args(out, c.backend, extra));
    ASSERT_EQ(k.exit_code, 0) << describe(k);
    EXPECT_TRUE(has(k.out, std::to_string(ranks) + " ranks (z-slabs)")) << k.out;
    EXPECT_EQ(slurp(out / "series.csv"), slurp(tmp / "one" / "series.csv")) << ranks << " ranks: series.csv";
    for (const char* step : {"000000", "000012", "000024"}) {
      expect_same_fields(read_pieces(out / "snapshots" / (std::string("angio_") + step + ".pvti"), c.nx, 12, c.nz),
                         read_image(tmp / "one" / "snapshots" / (std::string("angio_") + step + ".vti")),
                         std::to_string(ranks) + " ranks, step " + step);
    }
    for (const char* image : {"slice.png", "mip_n.png", "slice.svg"})
      EXPECT_EQ(slurp(out / image), slurp(tmp / "one" / image)) << ranks << " ranks: " << image;
    const auto run = nlohmann::json::parse(slurp(out / "run.json"));
    EXPECT_EQ(run["ranks"], ranks);
    EXPECT_EQ(run["final"], nlohmann::json::parse(slurp(tmp / "one" / "run.json"))["final"]);
  }
}

std::vector<Case> cases() {
  return {{"cpu", "fp32", "expanded", 13},  {"cpu", "fp64", "flux", 9},      {"reference", "fp64", "expanded", 7},
          {"reference", "fp32", "flux", 8}, {"cuda", "fp32", "expanded", 110}, {"cuda", "fp64", "flux", 110},
          {"cuda", "fp32", "expanded", 110, 16, true}, {"cuda", "fp32", "flux", 110, 16, true},
          {"cuda", "fp64", "flux", 110, 14, true}, {"cuda", "fp64", "expanded", 110, 13, true},
          // The expanded form with TMA takes two steps per pass on slabs of two ghost planes (fp64 too);
          // 106 planes on 3 ranks leave the last slab one plane, so every slab takes single steps.
          {"cuda", "fp64", "expanded", 110, 14, true}, {"cuda", "fp32", "expanded", 106, 16, true}};
}
INSTANTIATE_TEST_SUITE_P(, AngioSlabs, ::testing::ValuesIn(cases()), [](const ::testing::TestParamInfo<Case>& p) {
  return p.param.backend + "_" + p.param.precision + "_" + p.param.form + "_nx" + std::to_string(p.param.nx) + "_nz" + std::to_string(p.param.nz) +
         (p.param.tma ? "_tma" : "");
});

TEST(AngioSlabsRestart, FromTheRanksCheckpointsEqualsTheUninterruptedRun) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  TempDir tmp;
  const std::vector<std::string> grid = {"--grid", "12,10,11", "--h", "0.05", "--series-every", "5",
                                         "--output-every", "10", "--checkpoint-every", "10"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = grid;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const CommandResult whole = run_simkit_mpi(2, run_args(tmp / "whole", "cpu", with({"--steps", "30"})));
  ASSERT_EQ(whole.exit_code, 0) << describe(whole);
  const CommandResult first = run_simkit_mpi(2, run_args(tmp / "split", "cpu", with({"--steps", "20"})));
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  ASSERT_TRUE(fs::exists(tmp / "split" / "checkpoint.rank0of2.ckpt"));
  ASSERT_TRUE(fs::exists(tmp / "split" / "checkpoint.rank1of2.ckpt"));
  EXPECT_FALSE(fs::exists(tmp / "split" / "checkpoint.ckpt"));
  const CommandResult rest = run_simkit_mpi(
      2, {"angio", "run", "--restart", (tmp / "split" / "checkpoint.rank0of2.ckpt").string(), "--steps", "30", "--out",
          (tmp / "split").string(), "-q", "--backend", "cpu"});
  ASSERT_EQ(rest.exit_code, 0) << describe(rest);
  EXPECT_EQ(slurp(tmp / "split" / "series.csv"), slurp(tmp / "whole" / "series.csv"));
  for (const char* piece : {"piece_0.vti", "piece_1.vti"})
    EXPECT_EQ(slurp(tmp / "split" / "snapshots" / "angio_000030" / piece),
              slurp(tmp / "whole" / "snapshots" / "angio_000030" / piece));
  // On another number of ranks, or without mpirun: one message naming the checkpoint, exit 2.
  const CommandResult three = run_simkit_mpi(
      3, {"angio", "run", "--restart", (tmp / "split" / "checkpoint.rank0of2.ckpt").string(), "--steps", "40", "--out",
          (tmp / "three").string(), "-q", "--backend", "cpu"});
  EXPECT_EQ(three.exit_code, 2) << describe(three);
  EXPECT_TRUE(has(three.err, "restart on as many ranks")) << three.err;
  const CommandResult single = run_simkit({"angio", "run", "--restart",
                                           (tmp / "split" / "checkpoint.rank1of2.ckpt").string(), "--steps", "40",
                                           "--out", (tmp / "single").string(), "-q"});
  EXPECT_EQ(single.exit_code, 2) << describe(single);
  EXPECT_TRUE(has(single.err, "restart with mpirun -n 2")) << single.err;
  EXPECT_FALSE(fs::exists(tmp / "three"));
  EXPECT_FALSE(fs::exists(tmp / "single"));
}

std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// A distributed run that died leaves its staging directory with every rank's checkpoint and its
// .pvti snapshots with their piece directories; a restart on as many ranks takes them over and
// ends with the uninterrupted run's files (tests/hostile/faults_test.cpp for one rank).
TEST(AngioSlabsRestart, TakesOverTheStagingOfARunThatDied) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  TempDir tmp;
  auto with = [&](const fs::path& out, std::vector<std::string> more) {
    std::vector<std::string> args = {"angio",          "run", "-q",           "--backend", "cpu",  "--grid",
                                      "10,9,12",        "--h", "0.05",         "--output-every", "10", "--series-every",
                                      "5",              "--checkpoint-every", "20", "--no-quicklook", "--out",
                                      out.string()};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const fs::path full = tmp / "full", died = tmp / "died", out = tmp / "out";
  CommandResult r = run_simkit_mpi(2, with(full, {"--steps", "40"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = run_simkit_mpi(2, with(died, {"--steps", "20"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  fs::create_directories(out);
  const fs::path staging = out / ".simkit-staging-999999-0";
  fs::rename(died, staging);  // what a job killed at step 20 leaves
  fs::remove(staging / "run.json");
  r = run_simkit_mpi(2, {"angio", "run", "-q", "--backend", "cpu", "--restart",
                         (staging / "checkpoint.rank0of2.ckpt").string(), "--steps", "40", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_FALSE(fs::exists(staging)) << "the dead run's staging directory stayed";
  ASSERT_EQ(files_under(out / "snapshots"), files_under(full / "snapshots"));
  for (const std::string& name : files_under(full / "snapshots"))
    EXPECT_EQ(slurp(out / "snapshots" / name), slurp(full / "snapshots" / name)) << name;
  EXPECT_EQ(slurp(out / "series.csv"), slurp(full / "series.csv"));
  EXPECT_EQ(slurp(out / "angio.pvd"), slurp(full / "angio.pvd"));
  for (const char* ckpt : {"checkpoint.rank0of2.ckpt", "checkpoint.rank1of2.ckpt"})
    EXPECT_EQ(slurp(out / ckpt), slurp(full / ckpt)) << ckpt;
}

// The hybrid model's realisations split by range among the ranks and gathered: every file the
// single-process run writes, byte for byte (result.json but for its timing).
std::string without_seconds(const std::string& json_text) {
  auto j = nlohmann::json::parse(json_text);
  j.erase("seconds");
  if (j.contains("run")) j["run"].erase("seconds");
  return j.dump();
}

TEST(AngioHybridRanks, TheGatheredEnsembleIsTheSingleProcessOne) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  std::vector<std::string> backends = {"cpu", "reference"};
  std::string why;
  if (cuda_usable(&why)) backends.push_back("cuda");
  for (const std::string& backend : backends) {
    // 7 realisations on 2 and 3 ranks, and 2 on 3 ranks (one rank has none); every rank writes the
    // metrics files of its own realisations. With --metrics-files 4 only the first four have files:
    // on 2 ranks (0-3 and 4-6) rank 1 writes none, on 3 ranks (0-2, 3-4, 5-6) rank 1 one of its two.
    struct Variant {
      std::string replicates, metrics_files;
    };
    for (const Variant& v : {Variant{"7", ""}, Variant{"2", ""}, Variant{"7", "4"}}) {
      const std::string& replicates = v.replicates;
      TempDir tmp;
      std::vector<std::string> args = {"--grid", "24,24,24", "--replicates", replicates, "--seed", "9"};
      if (!v.metrics_files.empty()) args.insert(args.end(), {"--metrics-files", v.metrics_files});
      std::vector<std::string> one = {"angio", "hybrid", "--out", (tmp / "one").string(), "-q", "--backend", backend};
      one.insert(one.end(), args.begin(), args.end());
      const CommandResult single = run_simkit(one);
      ASSERT_EQ(single.exit_code, 0) << describe(single);
      for (int ranks : {2, 3}) {
        if (replicates == "2" && ranks == 2) continue;
        const fs::path out = tmp / ("k" + std::to_string(ranks));
        std::vector<std::string> many = {"angio", "hybrid", "--out", out.string(), "-q", "--backend", backend};
        many.insert(many.end(), args.begin(), args.end());
        const CommandResult k = run_simkit_mpi(ranks, many);
        ASSERT_EQ(k.exit_code, 0) << describe(k);
        std::size_t files = 0;
        for (const auto& e : fs::recursive_directory_iterator(tmp / "one")) {
          if (!e.is_regular_file()) continue;
          const fs::path rel = fs::relative(e.path(), tmp / "one");
          ++files;
          if (rel == "result.json") {
            EXPECT_EQ(without_seconds(slurp(out / rel)), without_seconds(slurp(e.path()))) << backend << " " << ranks;
          } else {
            EXPECT_EQ(slurp(out / rel), slurp(e.path())) << backend << ", " << ranks << " ranks: " << rel;
          }
        }
        const std::size_t metrics = v.metrics_files.empty() ? std::stoul(replicates) : std::stoul(v.metrics_files);
        EXPECT_GE(files, metrics + 2) << "metrics of every realisation (or the first N), ensemble.csv, network.vtp...";
        if (replicates == "7") {
          EXPECT_EQ(fs::exists(out / "metrics" / "realisation_00004.csv"), v.metrics_files.empty()) << backend;
        }
        // and nothing else: the staging directory went at the commit
        std::size_t written = 0;
        for (const auto& e : fs::recursive_directory_iterator(out)) written += e.is_directory() ? 0 : 1;
        EXPECT_EQ(written, files) << backend << ", " << ranks << " ranks";
      }
    }
  }
}

// A write that fails on a rank other than 0 (its metrics files, past a file size limit as on a full
// disk) fails the whole job with exit 2 and rank 0's message naming the file, and leaves --out as
// it was: rank 0 removes its staging directory, the others' files in it included. The shared-memory
// transport is left out, since its segment would meet the size limit first.
TEST(AngioHybridRanks, AWriteThatFailsOnAnotherRankLeavesTheOutputAsItWas) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  TempDir tmp;
  const fs::path out = tmp / "out";
  std::vector<std::string> args = {"angio", "hybrid", "--backend", "cpu", "--grid", "24,24,24", "--replicates", "7",
                                   "-q", "--no-quicklook", "--out", out.string(), "--seed", "9"};
  const CommandResult first = run_simkit(args);
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  const auto before = snapshot(tmp.path());
  args.back() = "7";
  auto quoted = [](const std::string& s) { return "'" + s + "'"; };  // the arguments hold no quote
  std::string rank0 = quoted(simkit_binary());
  for (const std::string& a : args) rank0 += " " + quoted(a);
  // mpirun -n 1 simkit ARGS : -n 1 sh -c 'ulimit -f 2; ...; exec "$0" "$@"' simkit ARGS (the last part
  // by run_simkit_after); dash counts ulimit -f in 512-byte blocks, less than a metrics file.
  const std::string prefix = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp "
                             "OMPI_MCA_pml=ob1 " + quoted(mpi_launcher()) + " --oversubscribe -n 1 " + rank0 +
                             " : -n 1 sh -c 'ulimit -f 2; trap \"\" XFSZ; exec \"$0\" \"$@\"' ";
  const CommandResult r = run_simkit_after(prefix, args);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("metrics/realisation_0000"), std::string::npos) << r.err;  // rank 1 runs 4, 5 and 6
  EXPECT_NE(r.err.find("write failed"), std::string::npos) << r.err;
  EXPECT_EQ(snapshot(tmp.path()), before) << "the failed run changed its output directory";
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Commands without a distributed driver run on rank 0 alone (one summary, one output); a bad
// command line is reported once.
TEST(SimkitUnderMpirun, OneRankRunsWhatIsNotDistributedAndOneMessageReportsABadCommandLine) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  TempDir tmp;
  const CommandResult gen = run_simkit_mpi(
      3, {"ddm", "generate", "--n", "1000", "--alpha", "5", "--dims", "2", "--out", (tmp / "r.bin").string()});
  ASSERT_EQ(gen.exit_code, 0) << describe(gen);
  EXPECT_EQ(count_of(gen.out, "simkit ddm generate:"), 1u) << gen.out;
  EXPECT_TRUE(fs::exists(tmp / "r.bin"));
  const CommandResult bad = run_simkit_mpi(2, {"angio", "run", "--bogus"});
  EXPECT_EQ(bad.exit_code, 2) << describe(bad);
  EXPECT_EQ(count_of(bad.err, "simkit: error:"), 1u) << bad.err;
}

TEST(AngioSlabsInput, GridsThatCannotBeSplitAreRefusedWithOneMessage) {
  if (mpi_launcher().empty()) GTEST_SKIP() << "this build has no MPI launcher (SIMKIT_MPI)";
  TempDir tmp;
  const CommandResult flat =
      run_simkit_mpi(2, run_args(tmp / "flat", "cpu", {"--grid", "20,20,1", "--h", "0.05", "--steps", "2"}));
  EXPECT_EQ(flat.exit_code, 2) << describe(flat);
  EXPECT_TRUE(has(flat.err, "simkit: error: --grid 20,20,1: a 2D grid is not split")) << flat.err;
  const CommandResult thin =
      run_simkit_mpi(3, run_args(tmp / "thin", "cpu", {"--grid", "8,8,2", "--h", "0.05", "--steps", "2"}));
  EXPECT_EQ(thin.exit_code, 2) << describe(thin);
  EXPECT_TRUE(has(thin.err, "3 ranks need at least 3 planes")) << thin.err;
  EXPECT_FALSE(fs::exists(tmp / "flat"));
  EXPECT_FALSE(fs::exists(tmp / "thin"));
}

}  // namespace
}  // namespace simkit::test
