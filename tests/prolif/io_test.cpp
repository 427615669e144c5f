// Readers and validation for prolif inputs: good files parse to exact values, and every bad input
// gives one UserError naming the file, the line and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "simkit/core/error.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

using simkit::test::TempDir;

// Checks that the message names "FILE:LINE:" and "field 'FIELD'" and contains `fragment`.
void expect_error(const std::string& message, const std::string& file, int line, const std::string& field,
                  const std::string& fragment) {
  EXPECT_NE(message.find(file + ":" + std::to_string(line) + ":"), std::string::npos) << message;
  EXPECT_NE(message.find("field '" + field + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

std::string histogram_error(const std::string& name, const std::string& content) {
  TempDir dir;
  const auto path = dir.write(name, content);
  return simkit::test::user_error([&] { (void)read_histogram(path); });
}

std::string toml_error(const std::string& content) {
  TempDir dir;
  const auto path = dir.write("model.toml", content);
  return simkit::test::user_error([&] { (void)read_model_toml(path); });
}

std::string types_error(const std::string& content) {
  TempDir dir;
  const auto path = dir.write("types.txt", content);
  return simkit::test::user_error([&] { (void)read_types_file(path); });
}

// ----------------------------------------------------------------------------------------------
// Histograms

TEST(ReadHistogram, TextWithCrlfCommentsAndZeroRows) {
  TempDir dir;
  const auto path = dir.write("h0.txt",
                              "# ProCell H(0)\r\n"
                              "\r\n"
                              "1000.5 3\r\n"
                              "  2000\t0\r\n"
                              "  # indented comment\r\n"
                              "3e3   7\r\n"
                              "4000 12.0");  // no final newline
  const auto h = read_histogram(path);
  EXPECT_EQ(h.values, (std::vector<double>{1000.5, 3000.0, 4000.0}));
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{3, 7, 12}));
  EXPECT_EQ(h.total_cells(), 22u);
  EXPECT_EQ(h.source, path.string());
}

TEST(ReadHistogram, CsvWithHeader) {
  TempDir dir;
  const auto path = dir.write("h0.csv", "fluorescence,count\n10.5, 4\n20,0\n40 ,1e3\n");
  const auto h = read_histogram(path);
  EXPECT_EQ(h.values, (std::vector<double>{10.5, 40.0}));
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{4, 1000}));
}

// Columns named value and count are found by name, in any order and any case; a byte-order mark
// (spreadsheet exports) does not hide the header; more than two unnamed columns are refused, and a
// row must have the header's columns.
TEST(ReadHistogram, CsvColumnsByNameAndByteOrderMark) {
  TempDir dir;
  auto h = read_histogram(dir.write("a.csv", "\xEF\xBB\xBF" "Count,note,Value\n4,x,10\n6,y,20\n"));
  EXPECT_EQ(h.values, (std::vector<double>{10.0, 20.0}));
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{4, 6}));
  h = read_histogram(dir.write("b.csv", "\xEF\xBB\xBFvalue,count\n10,5\n"));
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{5}));
  std::string m = simkit::test::user_error([&] { (void)read_histogram(dir.write("c.csv", "mfi,events,fraction\n100,5,0.5\n")); });
  EXPECT_NE(m.find("c.csv:1"), std::string::npos) << m;
  EXPECT_NE(m.find("'value' and 'count'"), std::string::npos) << m;
  m = simkit::test::user_error([&] { (void)read_histogram(dir.write("d.csv", "value,note,count\n100,x\n")); });
  EXPECT_NE(m.find("d.csv:2"), std::string::npos) << m;
}

TEST(ReadHistogram, CommaInFirstLineMeansCsvEvenWithoutCsvExtension) {
  TempDir dir;
  const auto path = dir.write("h0.dat", "value,count,note\r\n5,2,a\r\n6,3,b\r\n");
  const auto h = read_histogram(path);
  EXPECT_EQ(h.values, (std::vector<double>{5.0, 6.0}));
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{2, 3}));
}

TEST(ReadHistogram, LargeCountsAre64Bit) {
  TempDir dir;
  const auto path = dir.write("big.txt", "1 1000000000\n2 1e9\n3 12345678901234567\n");
  const auto h = read_histogram(path);
  EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{1000000000ull, 1000000000ull, 12345678901234567ull}));
  EXPECT_EQ(h.total_cells(), 12345680901234567ull);
}

TEST(ReadHistogram, EmptyOrAllZeroIsAnError) {
  expect_error(histogram_error("empty.txt", ""), "empty.txt", 1, "count", "no cells");
  expect_error(histogram_error("zeros.txt", "# c\n1 0\n2 0\n"), "zeros.txt", 3, "count", "no cells");
  expect_error(histogram_error("header-only.csv", "value,count\n"), "header-only.csv", 1, "count", "no cells");
}

TEST(ReadHistogram, BadValues) {
  expect_error(histogram_error("h.txt", "1 2\n-3 4\n"), "h.txt", 2, "value", "must be > 0, got '-3'");
  expect_error(histogram_error("h.txt", "1 2\n0 4\n"), "h.txt", 2, "value", "must be > 0, got '0'");
  expect_error(histogram_error("h.txt", "nan 4\n"), "h.txt", 1, "value", "must be finite, got 'nan'");
  expect_error(histogram_error("h.txt", "inf 4\n"), "h.txt", 1, "value", "must be finite, got 'inf'");
  expect_error(histogram_error("h.txt", "\n\n1x 4\n"), "h.txt", 3, "value", "expected a number, got '1x'");
  expect_error(histogram_error("h.csv", "v,c\n2,3\n-1,2\n"), "h.csv", 3, "value", "must be > 0, got '-1'");
}

TEST(ReadHistogram, BadCounts) {
  expect_error(histogram_error("h0.txt", "1 2\n2 abc\n"), "h0.txt", 2, "count",
               "expected a non-negative integer, got 'abc'");
  expect_error(histogram_error("h0.txt", "1 -2\n"), "h0.txt", 1, "count", "expected a non-negative integer, got '-2'");
  expect_error(histogram_error("h0.txt", "1 nan\n"), "h0.txt", 1, "count", "got 'nan'");
  expect_error(histogram_error("h0.txt", "1 2.5\n"), "h0.txt", 1, "count", "got '2.5'");
  expect_error(histogram_error("h0.txt", "1 inf\n"), "h0.txt", 1, "count", "got 'inf'");
  expect_error(histogram_error("h0.txt", "1 99999999999999999999\n"), "h0.txt", 1, "count", "too large");
  expect_error(histogram_error("h0.txt", "1 1e30\n"), "h0.txt", 1, "count", "too large");
}

TEST(ReadHistogram, MissingColumnAndExtraText) {
  expect_error(histogram_error("h.txt", "1 2\n5\n"), "h.txt", 2, "count", "missing");
  expect_error(histogram_error("h.txt", "1 2 junk\n"), "h.txt", 1, "count", "unexpected text after the count: 'junk'");
  expect_error(histogram_error("h.csv", "value,count\n1\n"), "h.csv", 2, "count", "missing");
  expect_error(histogram_error("h.csv", "value,count\n1,\n"), "h.csv", 2, "count", "missing");
  expect_error(histogram_error("h.csv", "value,count\n,3\n"), "h.csv", 2, "value", "missing");
  expect_error(histogram_error("h.csv", "value,count\n1,2,3\n"), "h.csv", 2, "count",
               "unexpected text after the count: '3'");
}

TEST(ReadHistogram, CsvFileNeedsHeader) {
  const auto message = histogram_error("h.csv", "1,2\n3,4\n");
  EXPECT_NE(message.find("h.csv:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("header"), std::string::npos) << message;
}

TEST(ReadHistogram, TotalOverflowIsAnError) {
  const auto message = histogram_error("huge.txt", "1 18446744073709551615\n2 1\n");
  EXPECT_NE(message.find("huge.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("field 'count'"), std::string::npos) << message;
  EXPECT_NE(message.find("exceeds"), std::string::npos) << message;
}

TEST(ReadHistogram, MissingFileIsAUserError) {
  TempDir dir;
  const auto message = simkit::test::user_error([&] { (void)read_histogram(dir / "nope.txt"); });
  EXPECT_NE(message.find("nope.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
}

// ----------------------------------------------------------------------------------------------
// TOML model

constexpr const char* kGoodToml = R"(# a model
phi_min = 11
times = [0, 24, 48.5, 72]
t_max = 72
start = "procell-async"
seed = 42

[[population]]
name = "fast"
proportion = 0.25
mean = 20
sd = 2
distribution = "gamma"

[[population]]
proportion = 0.5
mean = 30.5
sd = 0
distribution = "truncated-normal"

[[population]]
proportion = 0.25
quiescent = true
)";

TEST(ReadModelToml, GoodFileWithIntegersForNumbers) {
  TempDir dir;
  const auto m = read_model_toml(dir.write("model.toml", kGoodToml));
  ASSERT_TRUE(m.phi_min.has_value());
  EXPECT_EQ(*m.phi_min, 11.0);
  ASSERT_TRUE(m.times.has_value());
  EXPECT_EQ(*m.times, (std::vector<double>{0, 24, 48.5, 72}));
  ASSERT_TRUE(m.t_max.has_value());
  EXPECT_EQ(*m.t_max, 72.0);
  ASSERT_TRUE(m.start.has_value());
  EXPECT_EQ(*m.start, StartMode::ProcellAsync);
  ASSERT_TRUE(m.seed.has_value());
  EXPECT_EQ(*m.seed, 42u);

  EXPECT_EQ(m.model.phi_min, 11.0);
  EXPECT_EQ(m.model.times, (std::vector<double>{0, 24, 48.5, 72}));
  EXPECT_EQ(m.model.start, StartMode::ProcellAsync);
  ASSERT_EQ(m.model.populations.size(), 3u);
  const auto& p = m.model.populations;
  EXPECT_EQ(p[0].name, "fast");
  EXPECT_EQ(p[0].proportion, 0.25);
  EXPECT_FALSE(p[0].quiescent);
  EXPECT_EQ(p[0].mean, 20.0);
  EXPECT_EQ(p[0].sd, 2.0);
  EXPECT_EQ(p[0].distribution, Distribution::Gamma);
  EXPECT_EQ(p[1].name, "P2");  // second proliferating population
  EXPECT_EQ(p[1].mean, 30.5);
  EXPECT_EQ(p[1].sd, 0.0);
  EXPECT_EQ(p[1].distribution, Distribution::TruncatedNormal);
  EXPECT_EQ(p[2].name, "quiescent");
  EXPECT_TRUE(p[2].quiescent);
  EXPECT_EQ(p[2].proportion, 0.25);
  EXPECT_NO_THROW(validate(m.model, "model.toml"));
}

TEST(ReadModelToml, OnlyGivenFieldsAreSet) {
  TempDir dir;
  const auto m = read_model_toml(dir.write("model.toml", "[[population]]\nproportion = 1\nmean = 10\nsd = 1\n"));
  EXPECT_FALSE(m.phi_min.has_value());
  EXPECT_FALSE(m.t_max.has_value());
  EXPECT_FALSE(m.times.has_value());
  EXPECT_FALSE(m.start.has_value());
  EXPECT_FALSE(m.seed.has_value());
  ASSERT_EQ(m.model.populations.size(), 1u);
  EXPECT_EQ(m.model.populations[0].name, "P1");
  EXPECT_EQ(m.model.populations[0].distribution, Distribution::TruncatedNormal);
  EXPECT_TRUE(m.model.times.empty());
  EXPECT_EQ(m.model.phi_min, 0.0);
  EXPECT_EQ(m.model.start, StartMode::Sync);
}

TEST(ReadModelToml, TMaxAloneBecomesTheOnlyTime) {
  TempDir dir;
  const auto m = read_model_toml(dir.write(
      "model.toml", "t_max = 96\n[[population]]\nproportion = 1\nmean = 10\nsd = 1\ndistribution = \"lognormal\"\n"));
  ASSERT_TRUE(m.t_max.has_value());
  EXPECT_EQ(*m.t_max, 96.0);
  EXPECT_FALSE(m.times.has_value());
  EXPECT_EQ(m.model.times, (std::vector<double>{96}));
  EXPECT_EQ(m.model.populations[0].distribution, Distribution::LogNormal);
}

constexpr const char* kOnePopulation = "[[population]]\nproportion = 1\nmean = 10\nsd = 1\n";

TEST(ReadModelToml, TopLevelErrors) {
  expect_error(toml_error(std::string("phi_min = 1\nphi_mn = 2\n") + kOnePopulation), "model.toml", 2, "phi_mn",
               "unknown key");
  expect_error(toml_error(std::string("phi_min = \"x\"\n") + kOnePopulation), "model.toml", 1, "phi_min",
               "expected a number, got a string");
  expect_error(toml_error(std::string("phi_min = -1\n") + kOnePopulation), "model.toml", 1, "phi_min",
               "must be >= 0, got -1");
  expect_error(toml_error(std::string("phi_min = nan\n") + kOnePopulation), "model.toml", 1, "phi_min",
               "must be finite");
  expect_error(toml_error(std::string("t_max = -5\n") + kOnePopulation), "model.toml", 1, "t_max",
               "must be >= 0, got -5");
  expect_error(toml_error(std::string("\ntimes = [0, 10, 5]\n") + kOnePopulation), "model.toml", 2, "times",
               "strictly ascending, got 5 after 10");
  expect_error(toml_error(std::string("times = [0, -1]\n") + kOnePopulation), "model.toml", 1, "times", "must be >= 0");
  expect_error(toml_error(std::string("times = []\n") + kOnePopulation), "model.toml", 1, "times", "at least one");
  expect_error(toml_error(std::string("times = 5\n") + kOnePopulation), "model.toml", 1, "times", "expected an array");
  expect_error(toml_error(std::string("times = [1, \"a\"]\n") + kOnePopulation), "model.toml", 1, "times",
               "expected a number");
  expect_error(toml_error(std::string("start = \"later\"\n") + kOnePopulation), "model.toml", 1, "start",
               "expected 'sync' or 'procell-async', got 'later'");
  expect_error(toml_error(std::string("seed = -3\n") + kOnePopulation), "model.toml", 1, "seed",
               "must be >= 0, got -3");
  expect_error(toml_error(std::string("seed = 1.5\n") + kOnePopulation), "model.toml", 1, "seed",
               "expected a non-negative integer");
  expect_error(toml_error(std::string("times = [0, 24]\nt_max = 48\n") + kOnePopulation), "model.toml", 2, "t_max",
               "last of times");
}

TEST(ReadModelToml, SyntaxErrorNamesFileAndLine) {
  const auto message = toml_error("phi_min = 1\n\nt_max = \n");
  EXPECT_NE(message.find("model.toml:3:"), std::string::npos) << message;
}

TEST(ReadModelToml, NoPopulationIsAnError) {
  const auto message = toml_error("phi_min = 1\n");
  EXPECT_NE(message.find("model.toml"), std::string::npos) << message;
  EXPECT_NE(message.find("field 'population'"), std::string::npos) << message;
  expect_error(toml_error("[population]\nproportion = 1\n"), "model.toml", 1, "population", "[[population]]");
}

TEST(ReadModelToml, PopulationErrors) {
  // Line numbers: 1 [[population]], 2 proportion, 3 mean, 4 sd, 5 extra.
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = 10\nsd = -2\n"), "model.toml", 4, "sd",
               "must be >= 0, got -2");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = 0\nsd = 2\n"), "model.toml", 3, "mean",
               "must be > 0, got 0");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = -4.5\nsd = 2\n"), "model.toml", 3, "mean",
               "must be > 0, got -4.5");
  expect_error(toml_error("[[population]]\nproportion = 1.5\nmean = 10\nsd = 2\n"), "model.toml", 2, "proportion",
               "must be in [0, 1], got 1.5");
  expect_error(toml_error("[[population]]\nproportion = -0.1\nmean = 10\nsd = 2\n"), "model.toml", 2, "proportion",
               "must be in [0, 1], got -0.1");
  expect_error(toml_error("[[population]]\nmean = 10\nsd = 2\n"), "model.toml", 1, "proportion", "missing");
  expect_error(toml_error("[[population]]\nproportion = 1\nsd = 2\n"), "model.toml", 1, "mean", "missing");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = 2\n"), "model.toml", 1, "sd", "missing");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = 10\nsd = 2\ncolour = 3\n"), "model.toml", 5, "colour",
               "unknown key");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = 10\nsd = 2\ndistribution = \"weibull\"\n"),
               "model.toml", 5, "distribution", "got 'weibull'");
  expect_error(toml_error("[[population]]\nproportion = 1\nmean = \"ten\"\nsd = 2\n"), "model.toml", 3, "mean",
               "expected a number, got a string");
  expect_error(toml_error("[[population]]\nproportion = 1\nquiescent = \"yes\"\n"), "model.toml", 3, "quiescent",
               "expected true or false");
  expect_error(toml_error("[[population]]\nname = \"\"\nproportion = 1\nmean = 10\nsd = 2\n"), "model.toml", 2, "name",
               "must not be empty");
}

TEST(ReadModelToml, QuiescentWithDivisionParametersIsAnError) {
  expect_error(toml_error("[[population]]\nproportion = 1\nquiescent = true\nmean = 10\n"), "model.toml", 4, "mean",
               "quiescent");
  expect_error(toml_error("[[population]]\nproportion = 1\nquiescent = true\nsd = 1\n"), "model.toml", 4, "sd",
               "quiescent");
}

TEST(ReadModelToml, ProportionsMustSumToOne) {
  const std::string text =
      "[[population]]\nproportion = 0.5\nmean = 10\nsd = 1\n"
      "\n"
      "[[population]]\nproportion = 0.4\nmean = 20\nsd = 1\n";
  expect_error(toml_error(text), "model.toml", 6, "proportion", "sum to 0.9,");
  // Within 1e-6 is accepted.
  TempDir dir;
  const auto m = read_model_toml(dir.write("ok.toml",
                                           "[[population]]\nproportion = 0.3333333\nmean = 10\nsd = 1\n"
                                           "[[population]]\nproportion = 0.6666667\nmean = 20\nsd = 1\n"));
  EXPECT_EQ(m.model.populations.size(), 2u);
}

TEST(ReadModelToml, MoreThanOneQuiescentIsAnError) {
  const std::string text =
      "[[population]]\nproportion = 0.5\nquiescent = true\n"
      "[[population]]\nproportion = 0.5\nquiescent = true\n";
  expect_error(toml_error(text), "model.toml", 6, "quiescent", "more than one quiescent");
}

TEST(ReadModelToml, DuplicateNamesAreAnError) {
  const std::string text =
      "[[population]]\nname = \"a\"\nproportion = 0.5\nmean = 10\nsd = 1\n"
      "[[population]]\nname = \"a\"\nproportion = 0.5\nmean = 10\nsd = 1\n";
  expect_error(toml_error(text), "model.toml", 7, "name", "duplicate population name 'a'");
  // An explicit name may collide with a default one.
  const std::string collide =
      "[[population]]\nproportion = 0.5\nmean = 10\nsd = 1\n"
      "[[population]]\nname = \"P1\"\nproportion = 0.5\nmean = 10\nsd = 1\n";
  expect_error(toml_error(collide), "model.toml", 6, "name", "duplicate population name 'P1'");
}

// ----------------------------------------------------------------------------------------------
// Types file

TEST(ReadTypesFile, GoodFile) {
  TempDir dir;
  const auto m = read_types_file(dir.write("types.txt",
                                           "# proportion mean sd\r\n"
                                           "0.2 -1 -1\r\n"
                                           "\r\n"
                                           "0.5 24 3.5\r\n"
                                           "0.3\t30\t0\r\n"));
  ASSERT_EQ(m.model.populations.size(), 3u);
  const auto& p = m.model.populations;
  EXPECT_EQ(p[0].name, "quiescent");
  EXPECT_TRUE(p[0].quiescent);
  EXPECT_EQ(p[0].proportion, 0.2);
  EXPECT_EQ(p[1].name, "P1");
  EXPECT_FALSE(p[1].quiescent);
  EXPECT_EQ(p[1].proportion, 0.5);
  EXPECT_EQ(p[1].mean, 24.0);
  EXPECT_EQ(p[1].sd, 3.5);
  EXPECT_EQ(p[1].distribution, Distribution::TruncatedNormal);
  EXPECT_EQ(p[2].name, "P2");
  EXPECT_EQ(p[2].mean, 30.0);
  EXPECT_EQ(p[2].sd, 0.0);
  EXPECT_FALSE(m.phi_min.has_value());
  EXPECT_FALSE(m.times.has_value());
  EXPECT_FALSE(m.t_max.has_value());
  EXPECT_FALSE(m.start.has_value());
  EXPECT_FALSE(m.seed.has_value());
}

TEST(ReadTypesFile, BadLines) {
  expect_error(types_error("1 10 -2\n"), "types.txt", 1, "sd", "must be >= 0");
  expect_error(types_error("# c\n1 0 2\n"), "types.txt", 2, "mean", "must be > 0");
  expect_error(types_error("1 -1 2\n"), "types.txt", 1, "mean", "'proportion -1 -1'");
  expect_error(types_error("1.2 10 2\n"), "types.txt", 1, "proportion", "must be in [0, 1], got 1.2");
  expect_error(types_error("1 10\n"), "types.txt", 1, "sd", "missing");
  expect_error(types_error("1\n"), "types.txt", 1, "mean", "missing");
  expect_error(types_error("1 10 2 x\n"), "types.txt", 1, "sd", "unexpected text");
  expect_error(types_error("1 ten 2\n"), "types.txt", 1, "mean", "expected a number, got 'ten'");
  expect_error(types_error("0.5 10 2\n\n0.4 20 2\n"), "types.txt", 3, "proportion", "sum to 0.9,");
  expect_error(types_error("0.5 -1 -1\n0.5 -1 -1\n"), "types.txt", 2, "quiescent", "more than one quiescent");
  expect_error(types_error("# only a comment\n"), "types.txt", 1, "proportion", "no population");
}

// ----------------------------------------------------------------------------------------------
// Start mode and names

TEST(StartModeAndNames, ParseAndPrint) {
  EXPECT_EQ(parse_start_mode("sync", "--start"), StartMode::Sync);
  EXPECT_EQ(parse_start_mode("procell-async", "--start"), StartMode::ProcellAsync);
  const auto message = simkit::test::user_error([] { (void)parse_start_mode("async", "--start"); });
  EXPECT_NE(message.find("--start"), std::string::npos) << message;
  EXPECT_NE(message.find("'async'"), std::string::npos) << message;
  EXPECT_EQ(to_string(StartMode::Sync), "sync");
  EXPECT_EQ(to_string(StartMode::ProcellAsync), "procell-async");
  EXPECT_EQ(to_string(Distribution::TruncatedNormal), "normal");
  EXPECT_EQ(to_string(Distribution::Gamma), "gamma");
  EXPECT_EQ(to_string(Distribution::LogNormal), "lognormal");
}

// ----------------------------------------------------------------------------------------------
// validate()

Model good_model() {
  Model m;
  m.populations = {Population{"P1", 0.7, false, 20, 2, Distribution::TruncatedNormal},
                   Population{"quiescent", 0.3, true, 0, 0, Distribution::TruncatedNormal}};
  m.phi_min = 5;
  m.times = {0, 24, 48};
  return m;
}

std::string validate_error(const Model& m) {
  return simkit::test::user_error([&] { validate(m, "cli"); });
}

void expect_validate_error(const Model& m, const std::string& field, const std::string& fragment) {
  const auto message = validate_error(m);
  EXPECT_EQ(message.rfind("cli: ", 0), 0u) << message;
  EXPECT_NE(message.find("field '" + field + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

TEST(Validate, GoodModelPasses) { EXPECT_NO_THROW(validate(good_model(), "cli")); }

TEST(Validate, Populations) {
  Model m = good_model();
  m.populations.clear();
  expect_validate_error(m, "population", "at least one");

  m = good_model();
  m.populations[0].quiescent = true;
  expect_validate_error(m, "quiescent", "more than one quiescent");

  m = good_model();
  m.populations[0].proportion = std::nan("");
  expect_validate_error(m, "proportion", "must be finite");

  m = good_model();
  m.populations[0].proportion = 1.2;
  expect_validate_error(m, "proportion", "must be in [0, 1], got 1.2");

  m = good_model();
  m.populations[0].proportion = 0.6;
  expect_validate_error(m, "proportion", "sum to 0.9,");

  m = good_model();
  m.populations[0].proportion = 0.7 + 5e-7;  // within tolerance
  EXPECT_NO_THROW(validate(m, "cli"));

  m = good_model();
  m.populations[0].mean = 0;
  expect_validate_error(m, "mean", "must be > 0, got 0");

  m = good_model();
  m.populations[0].mean = std::numeric_limits<double>::infinity();
  expect_validate_error(m, "mean", "must be finite");

  m = good_model();
  m.populations[0].sd = -2;
  expect_validate_error(m, "sd", "must be >= 0, got -2");

  m = good_model();
  m.populations[0].sd = std::nan("");
  expect_validate_error(m, "sd", "must be finite");

  m = good_model();
  m.populations[1].mean = -1;  // ignored for a quiescent population
  EXPECT_NO_THROW(validate(m, "cli"));

  m = good_model();
  m.populations[1].name = "P1";
  expect_validate_error(m, "name", "duplicate population name 'P1'");

  m = good_model();
  m.populations[0].name = "";
  expect_validate_error(m, "name", "must not be empty");
}

TEST(Validate, PhiMinAndTimes) {
  Model m = good_model();
  m.phi_min = -1;
  expect_validate_error(m, "phi_min", "must be >= 0, got -1");

  m = good_model();
  m.phi_min = std::numeric_limits<double>::infinity();
  expect_validate_error(m, "phi_min", "must be finite");

  m = good_model();
  m.times.clear();
  expect_validate_error(m, "times", "at least one");

  m = good_model();
  m.times = {0, 24, 24};
  expect_validate_error(m, "times", "strictly ascending, got 24 after 24");

  m = good_model();
  m.times = {-1, 24};
  expect_validate_error(m, "times", "must be >= 0, got -1");

  m = good_model();
  m.times = {0, std::nan("")};
  expect_validate_error(m, "times", "must be finite");
}

TEST(InitialHistogramTotal, SumsAndDetectsOverflow) {
  InitialHistogram h;
  h.source = "h0.txt";
  EXPECT_EQ(h.total_cells(), 0u);
  h.values = {1, 2};
  h.counts = {5, 7};
  EXPECT_EQ(h.total_cells(), 12u);
  h.counts = {std::numeric_limits<std::uint64_t>::max(), 1};
  const auto message = simkit::test::user_error([&] { (void)h.total_cells(); });
  EXPECT_NE(message.find("h0.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("field 'count'"), std::string::npos) << message;
}

}  // namespace
}  // namespace simkit::prolif
