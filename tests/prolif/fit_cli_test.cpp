// `simkit prolif fit` end to end: the real binary (run_simkit) on files in a TempDir. A tiny fit
// writes every output, its best model is a model `simkit prolif simulate` reads, its history and
// result.json agree, and it is reproducible; ProCell projects run with their files found next to
// them; bad input exits 2 with one line on stderr and leaves nothing in --out.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prc.hpp"
#include "simkit/prolif/prolif.hpp"
#include "prolif/problems.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace simkit::test;  // run_simkit, TempDir, slurp, describe, lines_of, empty_or_absent

// H(0): 300 cells, fluorescence 1500..6000 (every daughter stays inside the default bins).
constexpr const char* kH0 = "# value count\n1500 100\n3000 150\n6000 50\n";

using test_problems::kFitToml;  // fast's proportion, mean and sd free; a quiescent population

const std::vector<std::string> kOutputs{"best.toml",   "best.prc", "history.csv",
                                        "result.json", "fit.svg",  "convergence.svg"};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

// A target as the data would be: one library simulation of fast (0.7, 20 h, 4 h) + rest 0.3,
// written as `value count` lines.
std::string synthetic_target(const fs::path& h0, double time, std::uint64_t seed) {
  const InitialHistogram initial = read_histogram(h0);
  Model m;
  Population fast;
  fast.name = "fast";
  fast.proportion = 0.7;
  fast.mean = 20;
  fast.sd = 4;
  Population rest;
  rest.name = "rest";
  rest.proportion = 0.3;
  rest.quiescent = true;
  m.populations = {fast, rest};
  m.phi_min = 1;
  m.times = {time};
  RunOptions o;
  o.backend = Backend::Reference;
  o.seed = seed;
  std::string text;
  for (const auto& [value, count] : exact_histogram(simulate(initial, m, o), initial, 0))
    text += fmt::format("{} {}\n", value, count);
  return text;
}

struct Files {
  TempDir dir;
  fs::path h0, target, validation, config;
  Files() {
    h0 = dir.write("h0.txt", kH0);
    target = dir.write("target.txt", synthetic_target(h0, 72, 11));
    validation = dir.write("validation.txt", synthetic_target(h0, 48, 12));
    config = dir.write("fit.toml", kFitToml);
  }
  std::vector<std::string> fit_args(const fs::path& out) const {
    return {"prolif",       "fit",        "--config",    config.string(),
            "--histogram",  h0.string(),  "--target",    target.string() + "@72",
            "--backend",    "cpu",        "--particles", "6",
            "--iterations", "2",          "--seed",      "3",
            "--out",        out.string(), "-q"};
  }
};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// ----------------------------------------------------------------------------------------------
// 1. A tiny fit end to end

TEST(ProlifFitCli, TinyFitWritesEveryOutputThatAgrees) {
  const Files f;
  const fs::path out = f.dir / "out";
  const CommandResult r = run_simkit(f.fit_args(out));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "");
  for (const std::string& name : kOutputs) EXPECT_TRUE(fs::is_regular_file(out / name)) << name;

  // history.csv: a header naming the parameters, one row per iteration (the initial swarm and 2).
  const std::vector<std::string> history = lines_of(slurp(out / "history.csv"));
  ASSERT_EQ(history.size(), 1u + 3u);
  EXPECT_EQ(history[0], "restart,iteration,evaluations,best_fitness,mean_fitness,fast.fraction,fast.mean,fast.sd");
  double min_best = 1e300, previous = 1e300;
  for (std::size_t n = 1; n < history.size(); ++n) {
    auto fields = split(history[n], ',');
    ASSERT_EQ(fields.size(), 8u) << history[n];
    EXPECT_EQ(fields[0], "0") << "one restart";
    fields.erase(fields.begin());
    EXPECT_EQ(std::stoi(fields[0]), static_cast<int>(n - 1));
    EXPECT_EQ(std::stoll(fields[1]), 6 * static_cast<long long>(n));
    const double best = std::stod(fields[2]);
    EXPECT_LE(best, previous) << "the best fitness never increases";
    EXPECT_LE(best, std::stod(fields[3]));
    previous = best;
    min_best = std::min(min_best, best);
    EXPECT_GE(std::stod(fields[5]), 10.0);
    EXPECT_LE(std::stod(fields[5]), 40.0);
  }

  // result.json: the fitness is the history's best; 6 particles x (2 + 1) evaluations.
  const json doc = json::parse(slurp(out / "result.json"));
  EXPECT_EQ(doc["fitness"].get<double>(), min_best);
  EXPECT_EQ(doc["evaluations"].get<std::int64_t>(), 18);
  EXPECT_EQ(doc["simulations"].get<std::int64_t>(), 18);
  EXPECT_EQ(doc["particles"].get<int>(), 6);
  EXPECT_EQ(doc["iterations"].get<int>(), 2);
  EXPECT_EQ(doc["optimizer"].get<std::string>(), "fst-pso");
  EXPECT_EQ(doc["backend"].get<std::string>(), "cpu");
  EXPECT_EQ(doc["seed"].get<std::uint64_t>(), 3u);
  for (const char* p : {"fast.fraction", "fast.mean", "fast.sd"}) EXPECT_TRUE(doc["parameters"].contains(p)) << p;
  EXPECT_EQ(doc["parameters"]["fast.mean"]["min"].get<double>(), 10.0);
  EXPECT_EQ(doc["parameters"]["fast.mean"]["max"].get<double>(), 40.0);
  ASSERT_EQ(doc["targets"].size(), 1u);
  EXPECT_EQ(doc["targets"][0]["time"].get<double>(), 72.0);
  ASSERT_EQ(doc["check"]["times"].size(), 1u);
  EXPECT_EQ(doc["check"]["times"][0]["kind"].get<std::string>(), "target");
  EXPECT_EQ(doc["check"]["times"][0]["hellinger_normalized_runs"].size(), 10u);  // --check-runs' default

  // best.toml: the best model, as simulate reads it, with result.json's values.
  const ModelFile best = read_model_toml(out / "best.toml");
  ASSERT_EQ(best.model.populations.size(), 2u);
  const json& pops = doc["best"]["populations"];
  ASSERT_EQ(pops.size(), 2u);
  EXPECT_EQ(best.model.populations[0].name, "fast");
  EXPECT_EQ(best.model.populations[0].mean, pops[0]["mean"].get<double>());
  EXPECT_EQ(best.model.populations[0].sd, pops[0]["sd"].get<double>());
  EXPECT_EQ(best.model.populations[0].proportion, pops[0]["proportion"].get<double>());
  EXPECT_EQ(best.model.populations[0].mean, doc["parameters"]["fast.mean"]["value"].get<double>());
  EXPECT_TRUE(best.model.populations[1].quiescent);
  EXPECT_EQ(best.model.times, std::vector<double>{72});
  const CommandResult sim = run_simkit({"prolif", "simulate", "--config", (out / "best.toml").string(), "--histogram",
                                        f.h0.string(), "--backend", "cpu", "--out", (f.dir / "sim").string(), "-q"});
  EXPECT_EQ(sim.exit_code, 0) << describe(sim);
  EXPECT_TRUE(fs::is_regular_file(f.dir / "sim" / "result.json"));

  // best.prc: a project with the same best model.
  const ProcellProject prc = read_prc(out / "best.prc");
  ASSERT_EQ(prc.spec.model.populations.size(), 2u);
  EXPECT_EQ(prc.spec.model.populations[0].mean, best.model.populations[0].mean);
  EXPECT_EQ(prc.spec.model.populations[0].proportion, best.model.populations[0].proportion);
  EXPECT_EQ(prc.simulation_time, 72.0);
  EXPECT_EQ(prc.swarm_size, 6);
  EXPECT_EQ(prc.iterations, 2);

  for (const char* svg : {"fit.svg", "convergence.svg"}) EXPECT_NE(slurp(out / svg).find("<svg"), std::string::npos);
}

TEST(ProlifFitCli, SameCommandSameBestModel) {
  const Files f;
  const CommandResult a = run_simkit(f.fit_args(f.dir / "a"));
  const CommandResult b = run_simkit(f.fit_args(f.dir / "b"));
  ASSERT_EQ(a.exit_code, 0) << describe(a);
  ASSERT_EQ(b.exit_code, 0) << describe(b);
  const std::string best = slurp(f.dir / "a" / "best.toml");
  EXPECT_FALSE(best.empty());
  EXPECT_EQ(best, slurp(f.dir / "b" / "best.toml"));
  EXPECT_EQ(slurp(f.dir / "a" / "history.csv"), slurp(f.dir / "b" / "history.csv"));
  EXPECT_EQ(slurp(f.dir / "a" / "best.prc"), slurp(f.dir / "b" / "best.prc"));
  // Another seed, another search.
  auto other = f.fit_args(f.dir / "c");
  *std::find(other.begin(), other.end(), "3") = "4";
  const CommandResult c = run_simkit(other);
  ASSERT_EQ(c.exit_code, 0) << describe(c);
  EXPECT_NE(slurp(f.dir / "a" / "history.csv"), slurp(f.dir / "c" / "history.csv"));
}

TEST(ProlifFitCli, JsonSummaryIsOneLine) {
  const Files f;
  auto args = f.fit_args(f.dir / "out");
  args.back() = "--json";  // instead of -q
  const CommandResult r = run_simkit(args);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(r.out.back(), '\n');
  const json summary = json::parse(r.out);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["backend"].get<std::string>(), "cpu");
  EXPECT_EQ(summary["evaluations"].get<std::int64_t>(), 18);
  const json doc = json::parse(slurp(f.dir / "out" / "result.json"));
  EXPECT_EQ(summary["fitness"].get<double>(), doc["fitness"].get<double>());
}

TEST(ProlifFitCli, ValidationIsCheckedNotFitted) {
  const Files f;
  const fs::path out = f.dir / "out";
  const CommandResult r = run_simkit(with(f.fit_args(out), {"--validate", f.validation.string() + "@48"}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json doc = json::parse(slurp(out / "result.json"));
  ASSERT_EQ(doc["check"]["times"].size(), 2u);
  const json& v = doc["check"]["times"][1];
  EXPECT_EQ(v["kind"].get<std::string>(), "validation");
  EXPECT_EQ(v["time"].get<double>(), 48.0);
  EXPECT_EQ(v["file"].get<std::string>(), f.validation.string());
  EXPECT_TRUE(v["hellinger_normalized_mean"].is_number());
  EXPECT_EQ(doc["check"]["times"][0]["kind"].get<std::string>(), "target");
  ASSERT_EQ(doc["targets"].size(), 1u);  // the validation is not a target
  // The fit itself is the one without --validate.
  const CommandResult plain = run_simkit(f.fit_args(f.dir / "plain"));
  ASSERT_EQ(plain.exit_code, 0) << describe(plain);
  EXPECT_EQ(slurp(out / "best.toml"), slurp(f.dir / "plain" / "best.toml"));
}

// ----------------------------------------------------------------------------------------------
// 2. ProCell projects

// A project as ProCell writes it: Windows paths to files that lie, by their bare names, next to
// the project; settings (swarm, iterations, time, threshold) from the project.
ProcellProject tiny_project(bool bounds_set) {
  ProcellProject p;
  p.project_name = "tiny";
  Population fast;
  fast.name = "fast";
  fast.proportion = 0.5;
  fast.mean = 25;
  fast.sd = 5;
  Population rest;
  rest.name = "rest";
  rest.proportion = 0.5;
  rest.quiescent = true;
  p.spec.model.populations = {fast, rest};
  p.spec.free.resize(2);
  if (bounds_set) {
    p.spec.free[0].mean = Range{10, 40};
    p.spec.free[0].sd = Range{1, 10};
  }
  p.initial_file = "C:\\Users\\someone\\data\\h0.txt";
  p.target_file = "C:\\Users\\someone\\data\\target.txt";
  p.simulation_time = 72;
  p.fluorescence_threshold = 1;
  p.swarm_size = 6;
  p.iterations = 2;
  return p;
}

TEST(ProlifFitCli, ProjectFindsItsFilesNextToIt) {
  const Files f;
  const fs::path prc = f.dir.write("tiny.prc", prc_bytes(tiny_project(true)));
  const fs::path out = f.dir / "out";
  const CommandResult r = run_simkit(
      {"prolif", "fit", "--project", prc.string(), "--backend", "cpu", "--seed", "3", "--out", out.string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const std::string& name : kOutputs) EXPECT_TRUE(fs::is_regular_file(out / name)) << name;
  const json doc = json::parse(slurp(out / "result.json"));
  EXPECT_EQ(doc["particles"].get<int>(), 6);  // the project's swarm size and iterations
  EXPECT_EQ(doc["iterations"].get<int>(), 2);
  EXPECT_EQ(doc["evaluations"].get<std::int64_t>(), 18);
  ASSERT_EQ(doc["targets"].size(), 1u);
  EXPECT_EQ(doc["targets"][0]["time"].get<double>(), 72.0);
  EXPECT_EQ(fs::path(doc["targets"][0]["file"].get<std::string>()).filename(), "target.txt");
  EXPECT_EQ(fs::path(doc["initial"]["file"].get<std::string>()).filename(), "h0.txt");
  EXPECT_EQ(doc["best"]["phi_min"].get<double>(), 1.0);
  for (const char* p : {"fast.fraction", "fast.mean", "fast.sd"}) EXPECT_TRUE(doc["parameters"].contains(p)) << p;
}

TEST(ProlifFitCli, ProjectWithUnsetBoundsAsksForThem) {
  const Files f;
  const fs::path prc = f.dir.write("tiny.prc", prc_bytes(tiny_project(false)));
  const std::vector<std::string> base{"prolif", "fit", "--project", prc.string(), "--backend", "cpu", "-q"};
  {
    const fs::path out = f.dir / "refused";
    const CommandResult r = run_simkit(with(base, {"--out", out.string()}));
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const char* fragment : {"fast.mean", "--free", prc.c_str()})
      EXPECT_NE(r.err.find(fragment), std::string::npos) << fragment << " in: " << r.err;
    EXPECT_TRUE(empty_or_absent(out));
  }
  {
    // One of the two given: still refused, naming the other.
    const fs::path out = f.dir / "half";
    const CommandResult r = run_simkit(with(base, {"--free", "fast.mean=10:40", "--out", out.string()}));
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_NE(r.err.find("fast.sd"), std::string::npos) << r.err;
    EXPECT_TRUE(empty_or_absent(out));
  }
  {
    const fs::path out = f.dir / "freed";
    const CommandResult r =
        run_simkit(with(base, {"--free", "fast.mean=10:40", "--free", "fast.sd=1:10", "--out", out.string()}));
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(out / "result.json"));
    EXPECT_EQ(doc["parameters"]["fast.mean"]["min"].get<double>(), 10.0);
    EXPECT_EQ(doc["parameters"]["fast.sd"]["max"].get<double>(), 10.0);
  }
  {
    // --fix keeps the project's value: only the proportions are fitted.
    const fs::path out = f.dir / "fixed";
    const CommandResult r =
        run_simkit(with(base, {"--free", "fast.mean=10:40", "--fix", "fast.sd", "--out", out.string()}));
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(out / "result.json"));
    EXPECT_FALSE(doc["parameters"].contains("fast.sd"));
    EXPECT_EQ(doc["best"]["populations"][0]["sd"].get<double>(), 5.0);
  }
}

// ----------------------------------------------------------------------------------------------
// 3. Bad input

// Exit code 2, exactly one line on stderr that contains every fragment, and nothing in `out`.
void expect_user_error(const CommandResult& r, const fs::path& out, const std::vector<std::string>& fragments) {
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr must be one line: [" << r.err << "]";
  EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "expected '" << f << "' in: " << r.err;
  EXPECT_TRUE(empty_or_absent(out)) << out << " must be empty or absent";
}

TEST(ProlifFitCli, BadInputExitsTwoWithOneLineAndWritesNothing) {
  const Files f;
  const fs::path corrupt = f.dir.write("corrupt.prc", "ccopy_reg\n_reconstructor\n(cproject\nPro");
  const fs::path missing = f.dir / "no-such-h0.txt";
  struct Case {
    std::string what;
    std::vector<std::string> args;  // replacing or added to the good command
    std::vector<std::string> fragments;
  };
  const auto good = [&](const fs::path& out) { return f.fit_args(out); };
  const auto replace_target = [&](const fs::path& out, const std::string& target) {
    auto a = good(out);
    *std::find(a.begin(), a.end(), f.target.string() + "@72") = target;
    return a;
  };
  int n = 0;
  const auto run_case = [&](const std::string& what, const std::vector<std::string>& args,
                            const std::vector<std::string>& fragments, const fs::path& out) {
    SCOPED_TRACE(what);
    expect_user_error(run_simkit(args), out, fragments);
    ++n;
  };
  {
    const fs::path out = f.dir / "o1";
    run_case("target without @time", replace_target(out, f.target.string()), {"--target", "FILE@HOURS"}, out);
  }
  {
    const fs::path out = f.dir / "o2";
    run_case("target at -5 h", replace_target(out, f.target.string() + "@-5"), {"--target", "-5"}, out);
  }
  {
    const fs::path out = f.dir / "o3";
    run_case("target at 0 h", replace_target(out, f.target.string() + "@0"), {"--target"}, out);
  }
  {
    const fs::path out = f.dir / "o4";
    run_case("--free with inverted bounds", with(good(out), {"--free", "fast.mean=40:10"}),
             {"--free", "fast.mean=40:10"}, out);
  }
  {
    const fs::path out = f.dir / "o5";
    run_case("--free of an unknown parameter", with(good(out), {"--free", "unknown.name=1:2"}),
             {"--free", "unknown.name", "fast.mean", "fast.sd", "rest.proportion", "phi_min"}, out);
  }
  {
    const fs::path out = f.dir / "o6";
    run_case("--free without bounds", with(good(out), {"--free", "fast.mean"}), {"--free", "NAME=MIN:MAX"}, out);
  }
  {
    const fs::path out = f.dir / "o7";
    run_case("--fix of an unknown parameter", with(good(out), {"--fix", "unknown"}), {"--fix", "unknown"}, out);
  }
  {
    const fs::path out = f.dir / "o8";
    run_case("--fix with a non-number", with(good(out), {"--fix", "fast.mean=abc"}), {"--fix", "fast.mean=abc"}, out);
  }
  {
    const fs::path out = f.dir / "o9";
    run_case("--optimizer foo", with(good(out), {"--optimizer", "foo"}), {"--optimizer", "foo"}, out);
  }
  {
    const fs::path out = f.dir / "o10";
    run_case("a corrupt .prc",
             {"prolif", "fit", "--project", corrupt.string(), "--histogram", f.h0.string(), "--target",
              f.target.string() + "@72", "--backend", "cpu", "--out", out.string(), "-q"},
             {corrupt.string()}, out);
  }
  {
    const fs::path out = f.dir / "o11";
    auto a = good(out);
    *std::find(a.begin(), a.end(), f.h0.string()) = missing.string();
    run_case("a missing histogram file", a, {missing.string()}, out);
  }
  {
    const fs::path out = f.dir / "o12";
    run_case("a missing target file", replace_target(out, (f.dir / "nope.txt").string() + "@72"),
             {(f.dir / "nope.txt").string()}, out);
  }
  {
    const fs::path out = f.dir / "o13";
    run_case("no target",
             {"prolif", "fit", "--config", f.config.string(), "--histogram", f.h0.string(), "--backend", "cpu", "--out",
              out.string(), "-q"},
             {"--target"}, out);
  }
  {
    // Bounds in the TOML that validate(FitSpec) refuses: a single free proportion.
    std::string toml = kFitToml;
    const std::string rest_bounds = "proportion = { min = 0, max = 1 }\nquiescent";
    ASSERT_NE(toml.find(rest_bounds), std::string::npos);
    toml.replace(toml.find(rest_bounds), rest_bounds.size(), "proportion = 0.3\nquiescent");
    const fs::path bad = f.dir.write("single.toml", toml);
    const fs::path out = f.dir / "o14";
    auto a = good(out);
    *std::find(a.begin(), a.end(), f.config.string()) = bad.string();
    run_case("a single free proportion", a, {bad.string(), "fast.proportion"}, out);
  }
  {
    // An existing empty --out stays empty.
    const fs::path out = f.dir / "o15";
    fs::create_directory(out);
    run_case("existing --out", with(good(out), {"--optimizer", "bar"}), {"--optimizer"}, out);
    EXPECT_TRUE(fs::is_directory(out));
  }
  EXPECT_EQ(n, 15);
}

TEST(ProlifFitCli, HelpListsTheFlags) {
  const CommandResult r = run_simkit({"prolif", "fit", "--help"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  for (const char* flag :
       {"--config", "--project", "--histogram", "--target", "--validate", "--free", "--fix", "--optimizer",
        "--particles", "--iterations", "--budget", "--replicates", "--crn", "--seed", "--out", "--backend", "--json"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

}  // namespace
}  // namespace simkit::prolif
