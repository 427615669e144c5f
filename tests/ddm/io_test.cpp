// ddm files and the workload generator: region CSV and binary round trips for every coordinate
// type, automatic type detection, every kind of bad input (the message names file:line:field),
// truncated binary files, pair and per-region writers, and the generator's counts, sides,
// bounds, determinism and expected number of pairs.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/generate.hpp"
#include "simkit/ddm/io.hpp"
#include "regions.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

namespace fs = std::filesystem;
using simkit::test::TempDir;
using simkit::test::user_error;
using testing::HasSubstr;
using testing::StartsWith;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void expect_same_set(const RegionSet<T>& a, const RegionSet<T>& b) {
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_TRUE(same_bits(a.lower, b.lower));
  EXPECT_TRUE(same_bits(a.upper, b.upper));
}

template <class T>
void expect_same(const Regions<T>& a, const AnyRegions& any) {
  ASSERT_TRUE(std::holds_alternative<Regions<T>>(any)) << "coords " << to_string(coords_of(any));
  const auto& b = std::get<Regions<T>>(any);
  expect_same_set(a.subscriptions, b.subscriptions);
  expect_same_set(a.updates, b.updates);
}

AnyRegions parse(const std::string& text, std::optional<Coords> coords = {}) {
  return parse_regions_csv(text, "regions.csv", coords);
}

std::string parse_error(const std::string& text, std::optional<Coords> coords = {}) {
  return user_error([&] { parse(text, coords); });
}

// ---- round trips ----

// Random sets with values near the top of T's range (above 2^53 for u64), ties and zero-length
// ranges; f64 values include negatives, fractions and huge magnitudes.
template <class T>
Regions<T> sample(std::uint64_t seed, int dims) {
  std::mt19937_64 gen(seed);
  Regions<T> r;
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    r.subscriptions = test::random_set<T>(gen, 40, dims, 4294967295u - 1000u, 1000, 5, 1);
    r.updates = test::random_set<T>(gen, 33, dims, 0, 1000, 5, 1);
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    r.subscriptions = test::random_set<T>(gen, 40, dims, std::numeric_limits<std::uint64_t>::max() - 1000u, 1000, 5, 1);
    r.updates = test::random_set<T>(gen, 33, dims, (std::uint64_t{1} << 53) - 10, 1000, 5, 1);
  } else {
    r.subscriptions = test::random_set<T>(gen, 40, dims, -1e3, 4000, 5, 1);
    r.updates = test::random_set<T>(gen, 33, dims, 0.0, 4000, 5, 1);
    // Values with long shortest representations and extremes.
    r.updates.lower[0] = 0.1;
    r.updates.upper[0] = 1.0 / 3.0;
    r.updates.lower[1] = -0.0;
    r.updates.upper[1] = 0.0;
    r.updates.lower[2] = 9007199254740993.0;  // rounds to 2^53: a double, not the integer
    r.updates.upper[2] = 1e300;
    r.updates.lower[3] = 1e-300;
    r.updates.upper[3] = 123456789.0;
  }
  r.updates.ids[0] = std::numeric_limits<std::uint64_t>::max();
  return r;
}

template <class T>
void round_trip(int dims) {
  SCOPED_TRACE(fmt::format("{} coordinates, {} dimensions", to_string(coords_for<T>()), dims));
  TempDir tmp;
  const Regions<T> r = sample<T>(42 + static_cast<std::uint64_t>(dims), dims);
  write_regions(tmp / "r.csv", AnyRegions(r));
  write_regions(tmp / "r.bin", AnyRegions(r));
  // Forced type: exactly the values written.
  expect_same(r, read_regions(tmp / "r.csv", coords_for<T>()));
  expect_same(r, read_regions(tmp / "r.bin", coords_for<T>()));
  // The binary file knows its type.
  expect_same(r, read_regions(tmp / "r.bin"));
  expect_same(r, read_regions_binary(tmp / "r.bin"));
  // Automatic detection: u64 for integer files (u32 values widen exactly), f64 otherwise.
  const AnyRegions detected = read_regions(tmp / "r.csv");
  if constexpr (std::is_same_v<T, double>) {
    expect_same(r, detected);
  } else {
    ASSERT_EQ(coords_of(detected), Coords::U64);
    const auto& wide = std::get<Regions<std::uint64_t>>(detected);
    EXPECT_EQ(wide.subscriptions.ids, r.subscriptions.ids);
    for (std::size_t k = 0; k < r.subscriptions.lower.size(); ++k)
      ASSERT_EQ(wide.subscriptions.lower[k], std::uint64_t{r.subscriptions.lower[k]});
  }
  // A second write of what was read is byte-identical.
  write_regions(tmp / "again.csv", read_regions(tmp / "r.csv", coords_for<T>()));
  EXPECT_EQ(simkit::test::slurp(tmp / "again.csv"), simkit::test::slurp(tmp / "r.csv"));
}

TEST(DdmIo, RoundTripU32) {
  for (int dims : {1, 3, 8}) round_trip<std::uint32_t>(dims);
}
TEST(DdmIo, RoundTripU64AboveTwoTo53) {
  for (int dims : {1, 2}) round_trip<std::uint64_t>(dims);
}
TEST(DdmIo, RoundTripF64) {
  for (int dims : {1, 4}) round_trip<double>(dims);
}

TEST(DdmIo, EmptySetsRoundTrip) {
  TempDir tmp;
  Regions<double> r;
  r.subscriptions.dims = r.updates.dims = 2;
  r.subscriptions.ids = {5};
  r.subscriptions.lower = {1.5, 2.5};
  r.subscriptions.upper = {3.5, 4.5};
  write_regions(tmp / "r.csv", AnyRegions(r));
  write_regions(tmp / "r.bin", AnyRegions(r));
  expect_same(r, read_regions(tmp / "r.csv"));
  expect_same(r, read_regions(tmp / "r.bin"));
}

TEST(DdmIo, CsvLayoutIsTheDocumentedOne) {
  TempDir tmp;
  Regions<double> r;
  r.subscriptions.dims = r.updates.dims = 2;
  r.subscriptions.ids = {7};
  r.subscriptions.lower = {1, 2};  // dimension-major: lower0, lower1
  r.subscriptions.upper = {3, 4.25};
  r.updates.ids = {9};
  r.updates.lower = {0.5, 1e6};
  r.updates.upper = {2, 1e20};
  write_regions(tmp / "r.csv", AnyRegions(r));
  EXPECT_EQ(simkit::test::slurp(tmp / "r.csv"),
            "set,id,lower0,upper0,lower1,upper1\n"
            "S,7,1.0,3.0,2.0,4.25\n"
            "U,9,0.5,2.0,1000000.0,1e+20\n");
}

// ---- the CSV reader ----

TEST(DdmIo, CommentsBlankLinesSpacesAndCrlf) {
  const AnyRegions r = parse(
      "# a comment before the header\n\n"
      " set , id , lower0 , upper0\r\n"
      "   # indented comment\r\n"
      "S, 3, 1, 2\r\n"
      "\n"
      "U,3,2,5\n"
      "U,4,0,0");  // no final newline
  ASSERT_EQ(coords_of(r), Coords::U64);
  const auto& u = std::get<Regions<std::uint64_t>>(r);
  EXPECT_EQ(u.subscriptions.ids, std::vector<std::uint64_t>{3});
  EXPECT_EQ(u.updates.ids, (std::vector<std::uint64_t>{3, 4}));  // ids are per set
  EXPECT_EQ(u.updates.lower, (std::vector<std::uint64_t>{2, 0}));
  EXPECT_EQ(u.updates.upper, (std::vector<std::uint64_t>{5, 0}));
}

TEST(DdmIo, AutoDetectsU64OnlyWhenEveryBoundIsAPlainInteger) {
  const std::string head = "set,id,lower0,upper0\nS,1,0,18446744073709551615\n";
  EXPECT_EQ(coords_of(parse(head)), Coords::U64);
  EXPECT_EQ(std::get<Regions<std::uint64_t>>(parse(head)).subscriptions.upper[0],
            std::numeric_limits<std::uint64_t>::max());
  for (const char* other : {"U,1,1.5,2", "U,1,-3,2", "U,1,1e3,2000", "U,1,+1,2", "U,1,1.,2"}) {
    SCOPED_TRACE(other);
    const AnyRegions r = parse("set,id,lower0,upper0\nS,1,0,10\n" + std::string(other) + "\n");
    ASSERT_EQ(coords_of(r), Coords::F64);
    const auto& f = std::get<Regions<double>>(r);
    EXPECT_EQ(f.subscriptions.upper[0], 10.0);
  }
  // An integer that f64 cannot hold exactly makes an f64 file an error, not a silent rounding...
  const std::string lossy = "set,id,lower0,upper0\nS,1,0,9007199254740993\nU,1,0.5,1\n";
  EXPECT_THAT(parse_error(lossy), HasSubstr("regions.csv:2: field 'upper0': integer '9007199254740993' is not "
                                            "exactly representable as f64"));
  // ... unless f64 is asked for.
  EXPECT_EQ(std::get<Regions<double>>(parse(lossy, Coords::F64)).subscriptions.upper[0], 9007199254740992.0);
  // 2^53 + 2 is a double: fine in an f64 file.
  EXPECT_EQ(std::get<Regions<double>>(parse("set,id,lower0,upper0\nS,1,0,9007199254740994\nU,1,0.5,1\n"))
                .subscriptions.upper[0],
            9007199254740994.0);
  // Above 2^64 - 1 in an otherwise integer file: f64 does not hold it exactly either.
  EXPECT_THAT(parse_error("set,id,lower0,upper0\nS,1,0,99999999999999999999\n"),
              HasSubstr("regions.csv:2: field 'upper0'"));
}

TEST(DdmIo, ForcedTypesTakeOnlyValuesTheyHold) {
  const std::string good = "set,id,lower0,upper0\nS,1,0,4294967295\n";
  EXPECT_EQ(std::get<Regions<std::uint32_t>>(parse(good, Coords::U32)).subscriptions.upper[0], 4294967295u);
  EXPECT_EQ(coords_of(parse(good, Coords::F64)), Coords::F64);
  EXPECT_THAT(parse_error("set,id,lower0,upper0\nS,1,0,4294967296\n", Coords::U32),
              HasSubstr("regions.csv:2: field 'upper0': '4294967296' does not fit in u32"));
  EXPECT_THAT(parse_error("set,id,lower0,upper0\nS,1,-1,5\n", Coords::U32),
              HasSubstr("regions.csv:2: field 'lower0': '-1' is not an unsigned integer"));
  EXPECT_THAT(parse_error("set,id,lower0,upper0\nS,1,1.5,5\n", Coords::U64),
              HasSubstr("regions.csv:2: field 'lower0': '1.5' is not an unsigned integer"));
  EXPECT_THAT(parse_error("set,id,lower0,upper0\nS,1,0,18446744073709551616\n", Coords::U64),
              HasSubstr("regions.csv:2: field 'upper0': '18446744073709551616' does not fit in u64"));
}

struct BadCase {
  std::string name, text, where;
  std::optional<Coords> coords;
};

TEST(DdmIo, EveryBadInputNamesFileLineAndField) {
  const std::string h = "set,id,lower0,upper0,lower1,upper1\n";
  const std::vector<BadCase> cases = {
      {"no header", "# only a comment\n\n", "regions.csv: no header", {}},
      {"wrong header name",
       "set,id,lo0,upper0\nS,1,0,1\n",
       "regions.csv:1: field 'lower0': header column 3 is 'lo0'",
       {}},
      {"header out of order", "set,id,upper0,lower0\n", "regions.csv:1: field 'lower0'", {}},
      {"header odd columns", "set,id,lower0\n", "regions.csv:1: header has 3 columns", {}},
      {"header too many dims",
       "set,id,lower0,upper0,lower1,upper1,lower2,upper2,lower3,upper3,lower4,upper4,lower5,upper5,lower6,upper6,"
       "lower7,upper7,lower8,upper8\n",
       "regions.csv:1: header gives 9 dimensions",
       {}},
      {"too few columns", h + "S,1,0,1,0,1\nU,2,0,1\n", "regions.csv:3: 4 fields; the header gives 2 dimensions", {}},
      {"too many columns (other dims)", h + "S,1,0,1,0,1,0,1\n", "regions.csv:2: 8 fields", {}},
      {"unknown set", h + "S,1,0,1,0,1\nX,2,0,1,0,1\n", "regions.csv:3: field 'set': 'X'; expected S", {}},
      {"lowercase set", h + "s,1,0,1,0,1\n", "regions.csv:2: field 'set'", {}},
      {"bad id", h + "S,one,0,1,0,1\n", "regions.csv:2: field 'id': 'one' is not an unsigned 64-bit integer", {}},
      {"negative id", h + "S,-1,0,1,0,1\n", "regions.csv:2: field 'id'", {}},
      {"duplicate id",
       h + "S,1,0,1,0,1\nU,1,0,1,0,1\n# c\nS,1,2,3,2,3\n",
       "regions.csv:5: field 'id': duplicate id 1 in set S (first on line 2)",
       {}},
      {"bad number", h + "S,1,0,1,0,abc\n", "regions.csv:2: field 'upper1': 'abc' is not a number", {}},
      {"bad number forced u64", h + "S,1,0,1,x,1\n", "regions.csv:2: field 'lower1': 'x' is not an unsigned",
       Coords::U64},
      {"trailing junk", h + "S,1,0,1,0,1.5x\n", "regions.csv:2: field 'upper1': '1.5x' is not a number", {}},
      {"empty bound", h + "S,1,0,,0,1\n", "regions.csv:2: field 'upper0': empty", {}},
      {"lower above upper", h + "S,1,0,1,5,4\n", "regions.csv:2: field 'upper1': upper 4 is below lower1 5", {}},
      {"lower above upper f64", h + "U,1,0.5,0.25,0,1\n", "regions.csv:2: field 'upper0': upper 0.25 is below", {}},
      {"nan", h + "S,1,0,1,nan,1\n", "regions.csv:2: field 'lower1': 'nan': NaN and infinity", {}},
      {"inf", h + "S,1,0,inf,0,1\n", "regions.csv:2: field 'upper0': 'inf': NaN and infinity", {}},
      {"-infinity", h + "S,1,-infinity,1,0,1\n", "regions.csv:2: field 'lower0'", {}},
      {"out of f64 range", h + "S,1,0,1e400,0,1\n", "regions.csv:2: field 'upper0': '1e400' is out of the range", {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(parse_error(c.text, c.coords), HasSubstr(c.where));
  }
}

TEST(DdmIo, MissingFileAndDirectoryAreUserErrors) {
  TempDir tmp;
  EXPECT_THAT(user_error([&] { read_regions(tmp / "nope.csv"); }), HasSubstr("nope.csv: cannot open"));
  EXPECT_THAT(user_error([&] { read_regions(tmp.path()); }), HasSubstr("is a directory"));
}

// ---- the binary format ----

TEST(DdmIo, BinaryHeaderIsTheDocumentedOne) {
  TempDir tmp;
  Regions<std::uint32_t> r;
  r.subscriptions.dims = r.updates.dims = 3;
  r.subscriptions.ids = {11, 12};
  r.subscriptions.lower = {1, 2, 3, 4, 5, 6};
  r.subscriptions.upper = {7, 8, 9, 10, 11, 12};
  write_regions(tmp / "r.bin", AnyRegions(r));
  const std::string bytes = simkit::test::slurp(tmp / "r.bin");
  ASSERT_EQ(bytes.size(), 40u + 2 * (8 + 2 * 3 * 4));
  EXPECT_EQ(bytes.substr(0, 8), std::string("SKDDM1\0\0", 8));
  const auto u32_at = [&](std::size_t off) {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + off, 4);
    return v;
  };
  const auto u64_at = [&](std::size_t off) {
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + off, 8);
    return v;
  };
  EXPECT_EQ(u32_at(8), 1u);   // version
  EXPECT_EQ(u32_at(12), 0u);  // u32
  EXPECT_EQ(u32_at(16), 3u);  // dims
  EXPECT_EQ(u32_at(20), 0u);  // reserved
  EXPECT_EQ(u64_at(24), 2u);  // |S|
  EXPECT_EQ(u64_at(32), 0u);  // |U|
  EXPECT_EQ(u64_at(40), 11u);
  EXPECT_EQ(u64_at(48), 12u);
  EXPECT_EQ(u32_at(56), 1u);       // S lower, dimension 0, region 0
  EXPECT_EQ(u32_at(56 + 24), 7u);  // S upper starts after 6 lower values
}

TEST(DdmIo, TruncatedOrDamagedBinaryFilesAreUserErrors) {
  TempDir tmp;
  const Regions<std::uint64_t> r = sample<std::uint64_t>(7, 2);
  write_regions(tmp / "r.bin", AnyRegions(r));
  const std::string bytes = simkit::test::slurp(tmp / "r.bin");
  const std::size_t full = 40 + (40 + 33) * (8 + 2 * 2 * 8);
  ASSERT_EQ(bytes.size(), full);
  const auto write_bytes = [&](const std::string& name, const std::string& content) {
    std::ofstream(tmp / name, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
    return tmp / name;
  };
  const auto err = [&](const fs::path& p) { return user_error([&] { read_regions_binary(p); }); };

  const fs::path cut = write_bytes("cut.bin", bytes.substr(0, bytes.size() - 1));
  EXPECT_THAT(err(cut), HasSubstr(cut.string() +
                                  ": truncated: the header announces 40 subscriptions and 33 updates, "
                                  "u64, 2 dimensions, which take " +
                                  std::to_string(full) + " bytes; the file has " + std::to_string(full - 1)));
  // read_regions sees the magic and reads it as binary too.
  EXPECT_THAT(user_error([&] { read_regions(cut); }), HasSubstr("truncated"));
  const fs::path header_only = write_bytes("head.bin", bytes.substr(0, 20));
  EXPECT_THAT(err(header_only), HasSubstr(header_only.string() + ": truncated: expected a 40-byte header, found 20"));
  EXPECT_THAT(err(write_bytes("long.bin", bytes + "x")), HasSubstr("1 bytes after the last region"));

  std::string bad = bytes;
  bad[3] = 'X';
  EXPECT_THAT(err(write_bytes("magic.bin", bad)), HasSubstr("not a ddm binary region file"));
  bad = bytes;
  bad[8] = 2;
  EXPECT_THAT(err(write_bytes("version.bin", bad)), HasSubstr("field 'version': 2"));
  bad = bytes;
  bad[12] = 5;
  EXPECT_THAT(err(write_bytes("type.bin", bad)), HasSubstr("field 'coordinate type': 5"));
  bad = bytes;
  bad[16] = 9;
  EXPECT_THAT(err(write_bytes("dims.bin", bad)), HasSubstr("field 'dims': 9"));
  bad = bytes;
  bad[31] = 0x7f;  // |S| enormous: no overflow, a clear message
  EXPECT_THAT(err(write_bytes("huge.bin", bad)), HasSubstr("truncated"));

  // Content checks: lower > upper, duplicate ids, NaN.
  Regions<double> f = sample<double>(3, 2);
  f.updates.lower[5] = f.updates.upper[5] + 1;
  write_regions(tmp / "order.bin", AnyRegions(f));
  EXPECT_THAT(err(tmp / "order.bin"), HasSubstr("field 'upper0': set U region 5"));
  f = sample<double>(3, 2);
  f.subscriptions.lower[40 + 2] = std::nan("");
  write_regions(tmp / "nan.bin", AnyRegions(f));
  EXPECT_THAT(err(tmp / "nan.bin"), HasSubstr("field 'lower1': set S region 2"));
  f = sample<double>(3, 2);
  f.subscriptions.ids[4] = f.subscriptions.ids[1];
  write_regions(tmp / "dup.bin", AnyRegions(f));
  EXPECT_THAT(err(tmp / "dup.bin"), HasSubstr("field 'id': set S: regions 1 and 4 share the id"));
}

TEST(DdmIo, BinaryConvertsOnlyExactly) {
  TempDir tmp;
  Regions<std::uint64_t> r;
  r.subscriptions.dims = r.updates.dims = 1;
  r.subscriptions.ids = {1};
  r.subscriptions.lower = {5};
  r.subscriptions.upper = {4294967295u};
  write_regions(tmp / "r.bin", AnyRegions(r));
  const AnyRegions narrow = read_regions(tmp / "r.bin", Coords::U32);
  EXPECT_EQ(std::get<Regions<std::uint32_t>>(narrow).subscriptions.upper[0], 4294967295u);
  EXPECT_EQ(std::get<Regions<double>>(read_regions(tmp / "r.bin", Coords::F64)).subscriptions.upper[0], 4294967295.0);
  r.subscriptions.upper = {(std::uint64_t{1} << 53) + 1};
  write_regions(tmp / "big.bin", AnyRegions(r));
  EXPECT_THAT(user_error([&] { read_regions(tmp / "big.bin", Coords::U32); }),
              HasSubstr("field 'upper0': set S region 0 (id 1): 9007199254740993 (stored as u64) does not fit "
                        "exactly in u32"));
  EXPECT_THAT(user_error([&] { read_regions(tmp / "big.bin", Coords::F64); }), HasSubstr("exactly in f64"));
  Regions<double> f;
  f.subscriptions.dims = f.updates.dims = 1;
  f.updates.ids = {3};
  f.updates.lower = {1.5};
  f.updates.upper = {2};
  write_regions(tmp / "f.bin", AnyRegions(f));
  EXPECT_THAT(user_error([&] { read_regions(tmp / "f.bin", Coords::U64); }),
              HasSubstr("field 'lower0': set U region 0 (id 3): 1.5 (stored as f64)"));
}

// ---- pairs and per-region counts ----

TEST(DdmIo, PairWriterStreamsCsvAndBinary) {
  TempDir tmp;
  const std::vector<std::uint64_t> s_ids = {100, 200, 300}, u_ids = {7, std::numeric_limits<std::uint64_t>::max()};
  std::vector<Match> pairs;
  for (int k = 0; k < 300000; ++k)
    pairs.push_back({static_cast<std::uint64_t>(k % 3), static_cast<std::uint64_t>(k % 2)});
  for (const char* name : {"p.csv", "p.bin"}) {
    SCOPED_TRACE(name);
    const fs::path path = tmp / name;
    {
      PairWriter w(path, PairWriter::format_for(path), s_ids, u_ids);
      w.write(pairs.data(), 100000);
      w.write(pairs.data() + 100000, 200000);
      w.write(pairs.data(), 0);
      EXPECT_FALSE(fs::exists(path));  // nothing at the target before commit
      EXPECT_EQ(w.pairs(), 300000u);
      w.commit();
    }
    const auto back = read_pairs(path);
    ASSERT_EQ(back.size(), pairs.size());
    for (std::size_t k = 0; k < pairs.size(); k += 997) {
      EXPECT_EQ(back[k].first, s_ids[pairs[k].s]);
      EXPECT_EQ(back[k].second, u_ids[pairs[k].u]);
    }
  }
  EXPECT_EQ(simkit::test::lines_of(simkit::test::slurp(tmp / "p.csv"))[0], "subscription,update");
  EXPECT_EQ(simkit::test::lines_of(simkit::test::slurp(tmp / "p.csv"))[2], "200,18446744073709551615");
  const std::string bin = simkit::test::slurp(tmp / "p.bin");
  EXPECT_EQ(bin.substr(0, 8), std::string("SKDDMP1\0", 8));
  EXPECT_EQ(bin.size(), 16u + 16u * 300000u);

  // Without commit (an error during matching): no file, no temporary left behind.
  {
    PairWriter w(tmp / "gone.csv", PairWriter::Format::Csv, s_ids, u_ids);
    w.write(pairs.data(), 10);
  }
  EXPECT_FALSE(fs::exists(tmp / "gone.csv"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++files;
  EXPECT_EQ(files, 2u);
}

TEST(DdmIo, PerRegionCsv) {
  TempDir tmp;
  const std::vector<std::uint64_t> s_ids = {4, 2}, per_s = {3, 0}, u_ids = {9}, per_u = {3};
  write_per_region_csv(tmp / "c.csv", s_ids, per_s, u_ids, per_u);
  EXPECT_EQ(simkit::test::slurp(tmp / "c.csv"), "set,id,count\nS,4,3\nS,2,0\nU,9,3\n");
}

// ---- the generator ----

GenerateOptions options(std::uint64_t n, double alpha, int dims, bool integer = false, bool clustered = false,
                        std::uint64_t seed = 1) {
  GenerateOptions o;
  o.n = n;
  o.alpha = alpha;
  o.dims = dims;
  o.integer = integer;
  o.clustered = clustered;
  o.seed = seed;
  return o;
}

TEST(DdmGenerate, SideLengths) {
  GenerateOptions o = options(1000, 10, 1);
  EXPECT_DOUBLE_EQ(side_length(o), 10 * 1e6 / 1000);
  o.dims = 2;
  EXPECT_DOUBLE_EQ(side_length(o), 1e6 * std::sqrt(0.01));
  o.dims = 3;
  EXPECT_NEAR(side_length(o), 1e6 * std::cbrt(0.01), 1e-6);
  o.side = SideRule::PerDimension;
  EXPECT_DOUBLE_EQ(side_length(o), 10 * 1e6 / 1000);
  EXPECT_EQ(parse_side_rule("per-dimension"), SideRule::PerDimension);
  EXPECT_EQ(parse_side_rule("volume"), SideRule::Volume);
  EXPECT_THAT(user_error([] { parse_side_rule("area"); }), HasSubstr("side area: expected volume or per-dimension"));
}

template <class T>
void expect_well_formed(const Regions<T>& r, const GenerateOptions& o) {
  const double side = side_length(o);
  for (const RegionSet<T>* set : {&r.subscriptions, &r.updates}) {
    ASSERT_EQ(set->dims, o.dims);
    for (std::size_t i = 0; i < set->size(); ++i) {
      ASSERT_EQ(set->ids[i], i);
      for (int d = 0; d < o.dims; ++d) {
        const double lo = static_cast<double>(set->lo(i, d)), hi = static_cast<double>(set->hi(i, d));
        ASSERT_GE(lo, 0.0);
        ASSERT_LE(hi, o.length);
        if constexpr (std::is_integral_v<T>) {
          ASSERT_EQ(hi - lo, std::max(1.0, std::round(side)));
        } else {
          ASSERT_NEAR(hi - lo, side, 1e-9 * o.length);
        }
      }
    }
  }
}

TEST(DdmGenerate, CountsSidesAndBounds) {
  for (int dims : {1, 2, 3, 8})
    for (bool integer : {false, true})
      for (bool clustered : {false, true}) {
        SCOPED_TRACE(fmt::format("dims {}, integer {}, clustered {}", dims, integer, clustered));
        const GenerateOptions o = options(1001, 3, dims, integer, clustered);
        const AnyRegions any = generate(o);
        EXPECT_EQ(subscription_count(any), 501u);  // ceil(N / 2)
        EXPECT_EQ(update_count(any), 500u);
        EXPECT_EQ(dims_of(any), dims);
        if (integer) {
          ASSERT_EQ(coords_of(any), Coords::U64);
          expect_well_formed(std::get<Regions<std::uint64_t>>(any), o);
        } else {
          ASSERT_EQ(coords_of(any), Coords::F64);
          expect_well_formed(std::get<Regions<double>>(any), o);
        }
      }
  // alpha = N: regions as large as the space.
  const GenerateOptions full = options(10, 10, 2);
  const auto r = std::get<Regions<double>>(generate(full));
  EXPECT_EQ(r.subscriptions.lower[0], 0.0);
  EXPECT_EQ(r.subscriptions.upper[0], 1e6);
}

std::uint64_t count_generated(const GenerateOptions& o);

TEST(DdmGenerate, ClusteredWorkloadsHaveFarMorePairs) {
  // Around 8 hot spots with sd L/50, two lower bounds of the same spot differ by sd sqrt(2) L/50:
  // per dimension, their density of near coincidence is about 1/(sqrt(2 pi) 0.028 L) = 14/L, 14
  // times uniform's; in 2-D with a 1/8 chance of sharing a spot, about 25 times the pairs.
  const GenerateOptions uniform = options(20000, 1, 2, false, false, 5);
  const GenerateOptions clustered = options(20000, 1, 2, false, true, 5);
  const auto u = count_generated(uniform), c = count_generated(clustered);
  EXPECT_GT(c, 5 * u) << "uniform " << u << ", clustered " << c;
}

TEST(DdmGenerate, DependsOnlyOnTheSeed) {
  for (bool clustered : {false, true}) {
    const GenerateOptions o = options(5001, 20, 3, false, clustered, 99);
    omp_set_num_threads(1);
    const auto one = std::get<Regions<double>>(generate(o));
    omp_set_num_threads(2);
    const auto two = std::get<Regions<double>>(generate(o));
    omp_set_num_threads(omp_get_num_procs());
    expect_same(one, AnyRegions(two));
    GenerateOptions other = o;
    other.seed = 100;
    EXPECT_NE(std::get<Regions<double>>(generate(other)).subscriptions.lower, one.subscriptions.lower);
  }
  // S and U draw from different streams.
  const auto r = std::get<Regions<double>>(generate(options(100, 1, 1)));
  EXPECT_NE(r.subscriptions.lower[0], r.updates.lower[0]);
}

// Library errors name the field (the CLI turns it into the flag, tests/ddm/cli_test.cpp).
TEST(DdmGenerate, BadOptionsNameTheField) {
  EXPECT_THAT(user_error([] { generate(options(0, 1, 1)); }), StartsWith("n: "));
  EXPECT_THAT(user_error([] { generate(options(10, 11, 1)); }), StartsWith("alpha 11: expected 0 < alpha <= N"));
  EXPECT_THAT(user_error([] { generate(options(10, 0, 1)); }), StartsWith("alpha 0"));
  EXPECT_THAT(user_error([] { generate(options(10, std::nan(""), 1)); }), StartsWith("alpha nan"));
  EXPECT_THAT(user_error([] { generate(options(10, 1, 9)); }), StartsWith("dims 9"));
  EXPECT_THAT(user_error([] { generate(options(10, 1, 0)); }), StartsWith("dims 0"));
}

// The number of pairs. Per dimension, the lower bounds X (subscription) and Y (update) are
// independent and uniform on [0, W], W = L - side, and the ranges overlap when |X - Y| < side
// (ties have probability 0 with doubles). So p = P(overlap) = 1 - (1 - side/W)^2, and with
// g(x) = P(|x - Y| < side), r = E[g(X)^2]. For |S| x |U| pairs, with q = p^d and R = r^d (the
// dimensions are independent):
//   E[count]   = |S| |U| q
//   Var[count] = |S| |U| [q (1 - q) + (|U| - 1)(R - q^2) + (|S| - 1)(R - q^2)]
// (pairs sharing a subscription or an update are correlated; others are independent). The count
// is a U-statistic, close to normal; a 5-sd tolerance fails a correct generator with probability
// about 6e-7, and a 10 % error in the side (e.g. a wrong exponent) moves the mean by far more
// than 5 sd at these sizes. The seeds are fixed, so the test is deterministic anyway.
struct PairMoments {
  double mean = 0, sd = 0;
};

PairMoments expected_pairs(double side, double length, int dims, double n_s, double n_u) {
  const double w = length - side;
  const double p = side >= w ? 1.0 : 1.0 - (1.0 - side / w) * (1.0 - side / w);
  const int steps = 200000;  // midpoint rule on a piecewise linear g: error far below the tolerance
  double r = 0;
  for (int k = 0; k < steps; ++k) {
    const double x = (k + 0.5) * w / steps;
    const double g = (std::min(w, x + side) - std::max(0.0, x - side)) / w;
    r += g * g;
  }
  r /= steps;
  const double q = std::pow(p, dims), big_r = std::pow(r, dims);
  const double var = n_s * n_u * (q * (1 - q) + (n_u - 1 + n_s - 1) * (big_r - q * q));
  return {n_s * n_u * q, std::sqrt(var)};
}

std::uint64_t count_generated(const GenerateOptions& o) {
  MatchOptions m;
  m.backend = Backend::Cpu;
  m.algorithm = Algorithm::Parallel;
  return std::visit([&](const auto& r) { return count_pairs(view(r.subscriptions), view(r.updates), m).pairs; },
                    generate(o));
}

TEST(DdmGenerate, ExpectedPairCountInOneTwoAndThreeDimensions) {
  for (int dims : {1, 2, 3})
    for (SideRule side : {SideRule::Volume, SideRule::PerDimension}) {
      if (dims == 1 && side == SideRule::PerDimension) continue;  // the same as volume
      GenerateOptions o = options(20001, side == SideRule::Volume ? 10 : 200, dims, false, false, 1234 + dims);
      o.side = side;
      const double n_s = 10001, n_u = 10000;
      const PairMoments e = expected_pairs(side_length(o), o.length, dims, n_s, n_u);
      const double count = static_cast<double>(count_generated(o));
      SCOPED_TRACE(fmt::format("dims {}, side {}: {} pairs, expected {:.1f} +- {:.1f} (approx. 2^(d-2) alpha N = {})",
                               dims, to_string(side), count, e.mean, e.sd,
                               std::pow(2.0, dims - 2) * o.alpha * static_cast<double>(o.n)));
      fmt::print("dims {} side {}: {} pairs, expected {:.1f} +- {:.1f} (z = {:.2f})\n", dims, to_string(side), count,
                 e.mean, e.sd, (count - e.mean) / e.sd);
      EXPECT_LT(std::fabs(count - e.mean), 5 * e.sd);
      if (side == SideRule::Volume) {
        // The large-N approximation 2^(d-2) alpha N ignores the edges (W < L), which add pairs.
        const double approx = std::pow(2.0, dims - 2) * o.alpha * static_cast<double>(o.n);
        EXPECT_GT(e.mean, 0.999 * approx);
        EXPECT_LT(e.mean, 1.2 * approx);
      }
    }
}

}  // namespace
}  // namespace simkit::ddm
