// The hostile-input suite (docs/reliability.md): each row runs the real CLI on a bad input and
// asserts exit code 2, exactly one line on stderr that names the flag or file and the field, and
// an output directory left as it was before the run (here: never created). Rows are grouped by the
// class of failure they guard against; a new class adds rows, not code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/test_support.hpp"

namespace simkit {
namespace {

namespace fs = std::filesystem;
using namespace simkit::test;  // run_simkit, TempDir, describe

const fs::path kExamples = fs::path(SIMKIT_SOURCE_DIR) / "examples";

struct HostileCase {
  std::string name;               // the test's name
  std::vector<std::string> args;  // `simkit` arguments; "OUT" and "TMP" prefixes are replaced (below)
  std::vector<std::string> says;  // each must appear in the one line of stderr
  // Files made before the run: path under the work directory -> file copied there.
  std::vector<std::pair<std::string, fs::path>> files = {};
  // ... and path under the work directory -> content written there.
  std::vector<std::pair<std::string, std::string>> contents = {};
};

std::ostream& operator<<(std::ostream& os, const HostileCase& c) { return os << c.name; }

// The examples' inputs (README's first command uses them).
std::vector<std::string> prolif_simulate() {
  return {"prolif", "simulate", "--histogram", (kExamples / "prolif" / "h0.txt").string(), "--config",
          (kExamples / "prolif" / "model.toml").string(), "--out", "OUT", "-q"};
}
std::vector<std::string> angio_run() { return {"angio", "run", "--grid", "21,21,1", "--steps", "5", "--out", "OUT", "-q"}; }
std::vector<std::string> angio_hybrid() {
  return {"angio", "hybrid", "--grid", "41,41,1", "--t-max", "0.1", "--dt", "0.01", "--out", "OUT", "-q"};
}
std::vector<std::string> ddm_match() {
  return {"ddm", "match", "--input", (kExamples / "ddm" / "regions.csv").string(), "--per-region", "OUT/per.csv", "-q"};
}
std::vector<std::string> ddm_generate() {
  return {"ddm", "generate", "--n", "100", "--alpha", "2", "--dims", "2", "--out", "OUT/regions.csv", "-q"};
}
std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

std::vector<HostileCase> cases() {
  std::vector<HostileCase> out;
  // Thread counts the OpenMP runtime cannot start (a SIGSEGV in libgomp before the limit) or
  // that wrap: refused before any work, on every backend.
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"prolif", prolif_simulate()}, {"angio", angio_run()}, {"hybrid", angio_hybrid()}, {"ddm", ddm_match()}};
  for (const auto& [engine, base] : runs) {
    out.push_back({engine + "_threads_100000", with(base, {"--threads", "100000", "--backend", "cpu"}),
                   {"--threads", "100000", "at most"}});
    out.push_back({engine + "_threads_int_max", with(base, {"--threads", "2147483647"}), {"--threads", "at most"}});
  }
  // Silent nonsense: NaN and infinities (CLI11 reads them as numbers) in every real-valued flag,
  // and seeds that would wrap (negative, or above 2^64 - 1).
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::string, std::string>> numbers = {
      {"prolif_t_max_nan", prolif_simulate(), "--t-max", "nan"},
      {"prolif_phi_min_nan", prolif_simulate(), "--phi-min", "nan"},
      {"prolif_times_inf", prolif_simulate(), "--times", "30,inf"},
      {"angio_dt_inf", angio_run(), "--dt", "inf"},
      {"angio_h_nan", angio_run(), "--h", "nan"},
      {"angio_t_max_minus_inf", {"angio", "run", "--grid", "21,21,1", "--out", "OUT", "-q"}, "--t-max", "-inf"},
      {"hybrid_psi_nan", angio_hybrid(), "--psi", "nan"},
      {"hybrid_reach_x_inf", angio_hybrid(), "--reach-x", "inf"},
      {"hybrid_branch_density_nan", angio_hybrid(), "--branch-density", "nan"},
      {"ddm_alpha_nan", ddm_generate(), "--alpha", "nan"},
  };
  for (const auto& [name, base, flag, value] : numbers) {
    std::vector<std::string> args = base;
    const auto given = std::find(args.begin(), args.end(), flag);  // replace the base's own value
    if (given != args.end()) {
      *(given + 1) = value;
    } else {
      args.insert(args.end(), {flag, value});
    }
    out.push_back({name, args, {flag, "finite", value.substr(value.rfind(',') + 1)}});  // the bad element
  }
  out.push_back({"prolif_range_inf", with(prolif_simulate(), {"--range", "10", "inf"}), {"--range", "finite"}});
  for (const auto& [engine, base] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"prolif", prolif_simulate()},
                                                                    {"angio", angio_run()},
                                                                    {"hybrid", angio_hybrid()},
                                                                    {"ddm", ddm_generate()}}) {
    out.push_back({engine + "_seed_negative", with(base, {"--seed", "-1"}), {"--seed", "-1"}});
    out.push_back({engine + "_seed_above_2_64", with(base, {"--seed", "18446744073709551616"}),
                   {"--seed", "18446744073709551616"}});
  }
  // Data loss: an output that is an input (the same file, through a link too), or an input inside
  // the output directory the run rewrites.
  const fs::path regions = kExamples / "ddm" / "regions.csv", h0 = kExamples / "prolif" / "h0.txt";
  out.push_back({"ddm_pairs_is_input",
                 {"ddm", "match", "--input", "TMP/r.csv", "--pairs", "TMP/r.csv", "-q"},
                 {"--input", "--pairs", "same file"},
                 {{"r.csv", regions}}});
  out.push_back({"ddm_per_region_is_input",
                 {"ddm", "match", "--input", "TMP/r.csv", "--per-region", "TMP/r.csv", "-q"},
                 {"--per-region", "same file"},
                 {{"r.csv", regions}}});
  out.push_back({"prolif_histogram_inside_out",
                 {"prolif", "simulate", "--histogram", "OUT/histogram.tsv", "--config",
                  (kExamples / "prolif" / "model.toml").string(), "--out", "OUT", "-q"},
                 {"--histogram", "inside", "--out"},
                 {{"out/histogram.tsv", h0}}});
  out.push_back({"prolif_target_inside_out", with(prolif_simulate(), {"--target", "OUT/target.txt"}),
                 {"--target", "inside"},
                 {{"out/target.txt", kExamples / "prolif" / "target.txt"}}});
  out.push_back({"angio_config_inside_out",
                 {"angio", "run", "--config", "OUT/run.toml", "--steps", "2", "--out", "OUT", "-q"},
                 {"--config", "inside"},
                 {{"out/run.toml", kExamples / "angio" / "run.toml"}}});
  // Inputs that are not files: /dev/zero used to be read until memory ran out (bad_alloc, exit 1).
  out.push_back({"prolif_histogram_dev_zero",
                 {"prolif", "simulate", "--histogram", "/dev/zero", "--config",
                  (kExamples / "prolif" / "model.toml").string(), "--out", "OUT", "-q"},
                 {"/dev/zero", "not a regular file"}});
  out.push_back({"prolif_config_dev_zero",
                 {"prolif", "simulate", "--histogram", h0.string(), "--config", "/dev/zero", "--out", "OUT", "-q"},
                 {"/dev/zero", "not a regular file"}});
  out.push_back({"ddm_input_dev_zero", {"ddm", "match", "--input", "/dev/zero", "-q"}, {"/dev/zero", "not a regular file"}});
  out.push_back({"angio_config_dev_zero", {"angio", "run", "--config", "/dev/zero", "--out", "OUT", "-q"},
                 {"/dev/zero", "not a regular file"}});
  out.push_back({"angio_initial_file_directory",
                 {"angio", "run", "--initial-file", "TMP/dir", "--steps", "2", "--out", "OUT", "-q"},
                 {"dir", "is a directory"},
                 {{"dir/x", h0}}});
  // Messages that blamed the wrong source, printed a range as 300 digits, or echoed raw bytes.
  out.push_back({"prolif_times_empty", with(prolif_simulate(), {"--times", ""}), {"--times", "empty"}});
  out.push_back({"prolif_t_max_empty", with(prolif_simulate(), {"--t-max", " "}), {"--t-max", "empty"}});
  out.push_back({"prolif_phi_min_negative", with(prolif_simulate(), {"--phi-min", "-1e300"}),
                 {"--phi-min", ">= 0", "-1e300"}});  // not the model file's field, not DBL_MAX in full
  out.push_back({"prolif_times_negative", with(prolif_simulate(), {"--times", "5,-3"}), {"--times", ">= 0"}});
  out.push_back({"angio_threads_negative", with(angio_run(), {"--threads", "-5"}), {"--threads", ">= 0"}});
  out.push_back({"angio_h_leaves_no_step",
                 {"angio", "run", "--grid", "21,21,1", "--h", "1e-300", "--steps", "2", "--out", "OUT", "-q"},
                 {"--h 1e-300", "no automatic step"}});  // --dt was not given: it is not to blame
  out.push_back({"prolif_csv_columns_not_named",
                 {"prolif", "simulate", "--histogram", "TMP/h.csv", "--config", (kExamples / "prolif" / "model.toml").string(),
                  "--out", "OUT", "-q"},
                 {"h.csv:1", "'value' and 'count'"},
                 {},
                 {{"h.csv", "mfi,events,fraction\n100,5,0.5\n"}}});
  out.push_back({"ddm_bin_bad_magic",
                 {"ddm", "match", "--input", "TMP/r.bin", "-q"},
                 {"r.bin", "SKDDM1 magic"},
                 {},
                 {{"r.bin", std::string("SIMKITXX\0\x01\x02\x03garbage", 19)}}});
  out.push_back({"angio_vti_control_bytes",
                 {"angio", "run", "--initial-file", "TMP/g.vti", "--steps", "2", "--out", "OUT", "-q"},
                 {"g.vti:2", "WholeExtent", "\\x01\\x0A\\x1B"},
                 {},
                 {{"g.vti", "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\"><ImageData WholeExtent=\"0 1 \x01\n\x1b[31m 0 0\" "
                            "Spacing=\"1 1 1\" Origin=\"0 0 0\"></ImageData></VTKFile>\n"}}});
  // A bare key with a non-ASCII letter: toml++ reached an unreachable point on it (undefined
  // behaviour that UBSan reported; a release build printed a clean error by luck).
  out.push_back({"prolif_config_non_ascii_key",
                 {"prolif", "simulate", "--histogram", h0.string(), "--config", "TMP/m.toml", "--out", "OUT", "-q"},
                 {"m.toml:1"},
                 {},
                 {{"m.toml", "dur\xC3\xA9" "e = 5\n"}}});
  out.push_back({"angio_config_non_ascii_key",
                 {"angio", "run", "--config", "TMP/a.toml", "--out", "OUT", "-q"},
                 {"a.toml:2"},
                 {},
                 {{"a.toml", "[time]\ndur\xC3\xA9" "e = 5\n"}}});
  return out;
}

class Hostile : public testing::TestWithParam<HostileCase> {};

TEST_P(Hostile, ExitsTwoWithOneLineAndLeavesEverythingAsItWas) {
  TempDir dir;
  const fs::path out = dir / "out";
  for (const auto& [name, source] : GetParam().files) {
    fs::create_directories((dir / name).parent_path());
    fs::copy_file(source, dir / name);
  }
  for (const auto& [name, content] : GetParam().contents) dir.write(name, content);
  std::vector<std::string> args = GetParam().args;
  for (std::string& a : args) {
    if (a == "OUT") a = out.string();
    if (a.rfind("OUT/", 0) == 0) a = (out / a.substr(4)).string();
    if (a.rfind("TMP/", 0) == 0) a = (dir / a.substr(4)).string();
  }
  const std::map<std::string, std::string> before = snapshot(dir.path());
  const CommandResult r = run_simkit(args);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  ASSERT_FALSE(r.err.empty()) << describe(r);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line on stderr:\n" << r.err;
  // A line a person can read: no control bytes (escape sequences, raw binary) and no flood.
  EXPECT_TRUE(std::none_of(r.err.begin(), r.err.end() - 1, [](char ch) { return static_cast<unsigned char>(ch) < 0x20; }))
      << r.err;
  EXPECT_LT(r.err.size(), 600u) << r.err;
  for (const std::string& s : GetParam().says) EXPECT_THAT(r.err, testing::HasSubstr(s));
  EXPECT_EQ(snapshot(dir.path()), before) << "the failed run changed the work directory";
}

std::string case_name(const testing::TestParamInfo<HostileCase>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(, Hostile, testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace simkit
