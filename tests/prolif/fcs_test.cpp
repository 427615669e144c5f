// FCS 3.0 / 3.1 input of `simkit prolif` (src/prolif/fcs.cpp): read_fcs_histogram, read_histogram's
// dispatch, and the --channel / --gate / --fcs-raw flags of `prolif simulate` and `prolif fit`.
//  1. files written at test time by the PyPI library flowio (FCS 3.1, 32-bit floats): the histogram
//     by $PnN and by $PnS, gates, and flowio reading the same file back;
//  2. files written byte by byte by this test (FCS 3.0 integers in both byte orders, log and linear
//     amplification, masking to the bits of $PnR, doubles, floats, logarithmic bins);
//  3. corrupt and inconsistent files: a UserError naming the file and the keyword, never a crash;
//  4. the CLI end to end.
// Every expected value below is exact unless a comment says otherwise: the files hold binary
// numbers that the reader widens to double (float -> double is exact) and divides by a power of two
// or raises 10 to with the same operations the format defines, which the test repeats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "simkit/core/error.hpp"
#include "simkit/prolif/io.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace simkit::test;  // TempDir, run_simkit, test_python, user_error, slurp, ...

using Histogram = std::map<double, std::uint64_t>;

Histogram as_map(const InitialHistogram& h) {
  Histogram m;
  EXPECT_EQ(h.values.size(), h.counts.size());
  for (std::size_t i = 0; i < h.values.size() && i < h.counts.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(h.values[i - 1], h.values[i]) << "values not strictly ascending at " << i;
    }
    EXPECT_GT(h.counts[i], 0u) << "a value with count 0: " << h.values[i];
    m[h.values[i]] += h.counts[i];
  }
  return m;
}

std::uint64_t total(const Histogram& m) {
  std::uint64_t n = 0;
  for (const auto& [v, c] : m) n += c;
  return n;
}

// The histogram the reader must give: every value > 0 (and finite), counted.
Histogram positive_counts(const std::vector<double>& values) {
  Histogram m;
  for (double v : values)
    if (v > 0 && std::isfinite(v)) ++m[v];
  return m;
}

FcsOptions channel(const std::string& name, bool raw = false) {
  FcsOptions o;
  o.channel = name;
  o.raw = raw;
  return o;
}

FcsOptions gated(const std::string& name, const std::string& gate, double lo, double hi, bool raw = false) {
  FcsOptions o = channel(name, raw);
  o.gate = FcsOptions::Gate{gate, lo, hi};
  return o;
}

// ---------------------------------------------------------------------------------------------
// An FCS writer of our own: HEADER (58 bytes), TEXT from byte 58 with '/' as delimiter, DATA right
// after it. $BEGINDATA / $ENDDATA are written (their own length moves DATA: computed to a fixed
// point); the header holds the DATA offsets too unless `data_offsets_in_header` is false (the
// large-file convention: 0 and 0 in the header, the keywords hold them).

using Keywords = std::vector<std::pair<std::string, std::string>>;

struct FcsSpec {
  std::string version = "FCS3.0";
  Keywords keywords;
  std::string data;
  bool data_offsets_in_header = true;
  bool data_keywords = true;  // write $BEGINDATA / $ENDDATA
};

std::string field8(std::uint64_t v) {
  std::string s = std::to_string(v);
  return std::string(8 - std::min<std::size_t>(8, s.size()), ' ') + s;
}

std::string fcs_bytes(const FcsSpec& s) {
  std::uint64_t begin = 0, end = 0;
  std::string text;
  for (int round = 0; round < 8; ++round) {
    text = "/";
    for (const auto& [k, v] : s.keywords) text += k + "/" + v + "/";
    if (s.data_keywords) text += "$BEGINDATA/" + std::to_string(begin) + "/$ENDDATA/" + std::to_string(end) + "/";
    const std::uint64_t next_begin = 58 + text.size();
    const std::uint64_t next_end = s.data.empty() ? 0 : next_begin + s.data.size() - 1;
    if (next_begin == begin && next_end == end) break;
    begin = next_begin;
    end = next_end;
  }
  const std::uint64_t text_end = 58 + text.size() - 1;
  std::string header = s.version + "    " + field8(58) + field8(text_end);
  header += s.data_offsets_in_header ? field8(begin) + field8(end) : field8(0) + field8(0);
  header += field8(0) + field8(0);
  EXPECT_EQ(header.size(), 58u);
  return header + text + s.data;
}

fs::path write_fcs(const TempDir& dir, const std::string& name, const FcsSpec& s) {
  return dir.write(name, fcs_bytes(s));
}

// Binary numbers in either byte order.
template <class T>
std::string bytes_of(T value, bool big_endian) {
  std::string b = raw_bytes(value);
  static_assert(std::endian::native == std::endian::little, "the writer assumes a little-endian host");
  if (big_endian) std::reverse(b.begin(), b.end());
  return b;
}

void set_keyword(Keywords& k, const std::string& key, const std::string& value) {
  for (auto& [name, v] : k)
    if (name == key) {
      v = value;
      return;
    }
  k.emplace_back(key, value);
}

void erase_keyword(Keywords& k, const std::string& key) {
  std::erase_if(k, [&](const auto& kv) { return kv.first == key; });
}

// ---------------------------------------------------------------------------------------------
// 1. Files written by flowio (PyPI) at test time.

// Runs `script` (a Python source file) with `args`; the exit status.
int run_python(const std::string& python, const fs::path& script, const std::vector<std::string>& args,
               const fs::path& log) {
  std::string cmd = "'" + python + "' '" + script.string() + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " >'" + log.string() + "' 2>&1";
  return std::system(cmd.c_str());
}

// 600 events of three channels: FL1-A (label CFSE) mixes a few values repeated many times, zeros,
// negatives and lognormal values (almost all distinct); FSC-A (label Size) is integral in [0, 1000]
// with events exactly on the gate's bounds 200 and 800 and the float32 neighbours just outside
// them; SSC-A (label Granularity). flowio writes float32: the script writes every value it gave,
// as the float32 it is, widened to a Python float and printed with repr() (which round-trips a
// double exactly), one event per line.
constexpr const char* kWriteScript = R"PY(
import sys
import numpy as np
import flowio

path, values_path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(20240611)
n = 600
few = np.array([1.0, 2.5, 100.0, 1e-3, 0.1, 12345.678, 3e5, 0.0, -3.5], dtype=np.float32)
fl1 = np.concatenate([rng.choice(few, size=300), rng.lognormal(6.0, 1.5, size=300).astype(np.float32)])
fl1[7] = np.float32(-1e-30)
fl1[8] = np.float32(1e-30)
fsc = rng.integers(0, 1001, size=n).astype(np.float32)
fsc[0:5] = 200.0
fsc[5:10] = 800.0
fsc[10] = np.nextafter(np.float32(200.0), np.float32(0.0))
fsc[11] = np.nextafter(np.float32(800.0), np.float32(1e9))
ssc = rng.normal(500.0, 100.0, size=n).astype(np.float32)
events = np.column_stack([fl1, fsc, ssc]).astype(np.float32)
with open(path, "wb") as fh:
    flowio.create_fcs(fh, events.flatten().tolist(), ["FL1-A", "FSC-A", "SSC-A"],
                      opt_channel_names=["CFSE", "Size", "Granularity"])
with open(values_path, "w") as out:
    for row in events:
        out.write(" ".join(repr(float(x)) for x in row) + "\n")
)PY";

// Reads the file back with flowio: event and channel counts, $PnN / $PnS, and every value as repr().
constexpr const char* kReadScript = R"PY(
import sys
import flowio

fd = flowio.FlowData(sys.argv[1])
with open(sys.argv[2], "w") as out:
    out.write("%d %d\n" % (fd.event_count, fd.channel_count))
    for c in sorted(fd.channels, key=int):
        out.write("%s %s\n" % (fd.channels[c]["pnn"], fd.channels[c].get("pns", "")))
    data = fd.as_array(preprocess=False)
    for row in data:
        out.write(" ".join(repr(float(x)) for x in row) + "\n")
)PY";

struct FlowioFile {
  fs::path path;
  std::vector<std::array<double, 3>> events;  // FL1-A, FSC-A, SSC-A
};

std::vector<std::array<double, 3>> parse_events(std::istream& in) {
  std::vector<std::array<double, 3>> events;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::array<double, 3> e{};
    std::string f;
    for (double& x : e) {
      fields >> f;
      x = std::strtod(f.c_str(), nullptr);  // repr() of a double: strtod gives it back exactly
    }
    events.push_back(e);
  }
  return events;
}

// Writes the flowio file into `dir`; an empty path (and a failure) when the script failed.
FlowioFile write_flowio_file(const std::string& python, const TempDir& dir) {
  FlowioFile f;
  const fs::path script = dir.write("write_fcs.py", kWriteScript);
  const fs::path values = dir / "values.txt";
  const fs::path fcs = dir / "flowio.fcs";
  const int rc = run_python(python, script, {fcs.string(), values.string()}, dir / "write.log");
  if (rc != 0) {
    ADD_FAILURE() << "the flowio script failed (" << rc << "): " << slurp(dir / "write.log");
    return f;
  }
  std::ifstream in(values);
  f.events = parse_events(in);
  EXPECT_EQ(f.events.size(), 600u);
  f.path = fcs;
  return f;
}

#define SIMKIT_FLOWIO_PYTHON(var)                                                                          \
  const std::string var = test_python("flowio");                                                           \
  if (var.empty())                                                                                         \
  GTEST_SKIP() << "no Python interpreter imports flowio (run scripts/setup.sh, or set SIMKIT_TEST_PYTHON " \
                  "to one that has flowio and numpy)"

std::vector<double> column(const std::vector<std::array<double, 3>>& events, std::size_t c) {
  std::vector<double> out;
  for (const auto& e : events) out.push_back(e[c]);
  return out;
}

TEST(ProlifFcs, FlowioFileByNameAndByLabelGivesEveryPositiveValueWithItsCount) {
  SIMKIT_FLOWIO_PYTHON(python);
  TempDir dir;
  const FlowioFile f = write_flowio_file(python, dir);
  ASSERT_FALSE(f.path.empty());
  EXPECT_TRUE(is_fcs_file(f.path));

  const Histogram expected = positive_counts(column(f.events, 0));
  // The data really hold what the test is about: repeated values, zeros, negatives, a tiny positive.
  std::size_t non_positive = 0;
  for (const auto& e : f.events) non_positive += e[0] <= 0 ? 1 : 0;
  ASSERT_GT(non_positive, 10u);
  ASSERT_EQ(expected.count(static_cast<double>(1e-30f)), 1u);
  ASSERT_GT(expected.at(static_cast<double>(2.5f)), 10u);
  ASSERT_GT(expected.size(), 250u);
  ASSERT_EQ(total(expected), 600u - non_positive);

  const InitialHistogram by_name = read_fcs_histogram(f.path, channel("FL1-A"));
  EXPECT_EQ(as_map(by_name), expected);
  EXPECT_EQ(by_name.total_cells(), 600u - non_positive);
  EXPECT_EQ(by_name.source, f.path.string() + "[FL1-A]");
  for (double v : by_name.values) EXPECT_GT(v, 0.0);

  const InitialHistogram by_label = read_fcs_histogram(f.path, channel("CFSE"));
  EXPECT_EQ(by_label.values, by_name.values);
  EXPECT_EQ(by_label.counts, by_name.counts);
  EXPECT_EQ(by_label.source, f.path.string() + "[FL1-A]");  // the source names the $PnN
  // No exact match: names are compared ignoring case.
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, channel("cfse"))), expected);
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, channel("fl1-a"))), expected);

  // read_histogram dispatches on the "FCS" magic; a text file beside it is still read as text.
  const InitialHistogram dispatched = read_histogram(f.path, channel("CFSE"));
  EXPECT_EQ(dispatched.values, by_name.values);
  EXPECT_EQ(dispatched.counts, by_name.counts);
  const fs::path text = dir.write("h.txt", "100 3\n200 4\n");
  EXPECT_FALSE(is_fcs_file(text));
  EXPECT_EQ(read_histogram(text, channel("CFSE")).total_cells(), 7u);

  // Another channel: FSC-A, where 0 is common (integers from 0 to 1000).
  const Histogram fsc = positive_counts(column(f.events, 1));
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, channel("Size"))), fsc);
  // Raw = decoded here: flowio writes $PnE 0,0 and $PnG 1.0 (dividing by 1 is exact).
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, channel("FL1-A", true))), expected);
}

TEST(ProlifFcs, FlowioFileGateKeepsExactlyTheEventsInsideTheBounds) {
  SIMKIT_FLOWIO_PYTHON(python);
  TempDir dir;
  const FlowioFile f = write_flowio_file(python, dir);
  ASSERT_FALSE(f.path.empty());
  // Events on the bounds (200 and 800 exactly) are inside; their float32 neighbours outside.
  Histogram expected;
  std::size_t on_bounds = 0, just_outside = 0;
  for (const auto& e : f.events) {
    if (e[1] == 200.0 || e[1] == 800.0) on_bounds += e[0] > 0 ? 1 : 0;
    if (e[1] == static_cast<double>(std::nextafter(200.0f, 0.0f)) ||
        e[1] == static_cast<double>(std::nextafter(800.0f, 1e9f)))
      just_outside += 1;
    if (e[1] >= 200.0 && e[1] <= 800.0 && e[0] > 0) ++expected[e[0]];
  }
  ASSERT_GT(on_bounds, 3u);
  ASSERT_EQ(just_outside, 2u);
  const Histogram all = positive_counts(column(f.events, 0));
  ASSERT_LT(total(expected), total(all));
  ASSERT_GT(total(expected), 100u);

  for (const char* gate : {"FSC-A", "Size", "size"}) {
    const InitialHistogram h = read_fcs_histogram(f.path, gated("FL1-A", gate, 200, 800));
    EXPECT_EQ(as_map(h), expected) << "gate on " << gate;
    EXPECT_EQ(h.total_cells(), total(expected)) << "gate on " << gate;
  }
  // A gate on the channel itself: FL1-A in [1, 1000] (both bounds are values of the data).
  Histogram self;
  for (const auto& [v, c] : all)
    if (v >= 1.0 && v <= 1000.0) self[v] = c;
  ASSERT_TRUE(self.count(1.0) && self.count(100.0));
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, gated("CFSE", "CFSE", 1, 1000))), self);
  // A gate that keeps every event changes nothing.
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, gated("CFSE", "FSC-A", 0, 1000))), all);
}

TEST(ProlifFcs, FlowioReadsTheFileBackWithTheSameEvents) {
  SIMKIT_FLOWIO_PYTHON(python);
  TempDir dir;
  const FlowioFile f = write_flowio_file(python, dir);
  ASSERT_FALSE(f.path.empty());
  const fs::path script = dir.write("read_fcs.py", kReadScript);
  const fs::path back = dir / "back.txt";
  ASSERT_EQ(run_python(python, script, {f.path.string(), back.string()}, dir / "read.log"), 0)
      << slurp(dir / "read.log");
  std::ifstream in(back);
  std::size_t events = 0, channels = 0;
  in >> events >> channels;
  EXPECT_EQ(events, 600u);
  EXPECT_EQ(channels, 3u);
  const std::vector<std::pair<std::string, std::string>> names{
      {"FL1-A", "CFSE"}, {"FSC-A", "Size"}, {"SSC-A", "Granularity"}};
  for (const auto& [pnn, pns] : names) {
    std::string a, b;
    in >> a >> b;
    EXPECT_EQ(a, pnn);
    EXPECT_EQ(b, pns);
  }
  const auto read_back = parse_events(in);
  ASSERT_EQ(read_back.size(), f.events.size());
  for (std::size_t e = 0; e < read_back.size(); ++e)
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(read_back[e][c], f.events[e][c]) << "event " << e << " channel " << c;
  // And simkit's histogram is the one of flowio's values.
  EXPECT_EQ(as_map(read_fcs_histogram(f.path, channel("SSC-A"))), positive_counts(column(read_back, 2)));
}

// ---------------------------------------------------------------------------------------------
// 2. Hand-made files.

// FCS 3.0, $DATATYPE I, 16 bits, five channels:
//  LOG  $PnE 4,1   $PnR 1024: value = 1 * 10^(4 x / 1024)
//  LIN  $PnE 0,0   $PnG 2   $PnR 65536: value = x / 2 (the mask keeps all 16 bits)
//  MASK $PnR 1024 (no $PnE, no $PnG): x & 0x3FF (ceil(log2 1024) = 10 bits)
//  LOG0 $PnE 2,0   $PnR 256: f2 = 0 (old instruments) stands for 1: 10^(2 (x & 0xFF) / 256)
//  LOGH $PnE 3,0.5 $PnR 1024: 0.5 * 10^(3 x / 1024)
//  M1000 $PnR 1000: x & 0x3FF (ceil(log2 1000) = 10 bits, not 9)
// The stored values are chosen so that a wrong byte order changes them (0x0102 vs 0x0201).
constexpr std::size_t kIntEvents = 7;
constexpr std::array<std::uint16_t, kIntEvents> kLog{0, 1, 256, 512, 1000, 1023, 256};
constexpr std::array<std::uint16_t, kIntEvents> kLin{0, 3, 3, 0x0102, 0x0201, 65535, 7};
constexpr std::array<std::uint16_t, kIntEvents> kMask{0x0401, 0x0401, 0x0403, 0x03FF, 0x0400, 0xFC01, 5};
constexpr std::array<std::uint16_t, kIntEvents> kLog0{0x0100, 0x0180, 64, 255, 0, 128, 128};
constexpr std::array<std::uint16_t, kIntEvents> kLogH{512, 0, 1024 + 512, 100, 1023, 2, 3};
constexpr std::array<std::uint16_t, kIntEvents> kM1000{0x07E8, 1000, 1023, 1024, 0xFFFF, 1, 512};

FcsSpec int16_file(bool big_endian) {
  FcsSpec s;
  s.version = "FCS3.0";
  s.keywords = {{"$BYTEORD", big_endian ? "4,3,2,1" : "1,2,3,4"},
                {"$DATATYPE", "I"},
                {"$MODE", "L"},
                {"$NEXTDATA", "0"},
                {"$PAR", "6"},
                {"$TOT", std::to_string(kIntEvents)},
                {"$P1N", "LOG"},
                {"$P1B", "16"},
                {"$P1E", "4,1"},
                {"$P1R", "1024"},
                {"$P1S", "CFSE log"},
                {"$P2N", "LIN"},
                {"$P2B", "16"},
                {"$P2E", "0,0"},
                {"$P2G", "2"},
                {"$P2R", "65536"},
                {"$P3N", "MASK"},
                {"$P3B", "16"},
                {"$P3R", "1024"},
                {"$P4N", "LOG0"},
                {"$P4B", "16"},
                {"$P4E", "2,0"},
                {"$P4R", "256"},
                {"$P5N", "LOGH"},
                {"$P5B", "16"},
                {"$P5E", "3,0.5"},
                {"$P5R", "1024"},
                {"$P6N", "M1000"},
                {"$P6B", "16"},
                {"$P6R", "1000"}};
  for (std::size_t e = 0; e < kIntEvents; ++e)
    for (std::uint16_t v : {kLog[e], kLin[e], kMask[e], kLog0[e], kLogH[e], kM1000[e]})
      s.data += bytes_of(v, big_endian);
  return s;
}

// The decoded values, by the formulas of FCS 3.1 (section 3.3.40), in the reader's operation order.
std::vector<double> log_values(const std::array<std::uint16_t, kIntEvents>& stored, double f1, double f2, double range,
                               std::uint16_t mask) {
  std::vector<double> out;
  for (std::uint16_t x : stored) out.push_back(f2 * std::pow(10.0, f1 * static_cast<double>(x & mask) / range));
  return out;
}

std::vector<double> divided(const std::array<std::uint16_t, kIntEvents>& stored, double gain, std::uint16_t mask) {
  std::vector<double> out;
  for (std::uint16_t x : stored) out.push_back(static_cast<double>(x & mask) / gain);
  return out;
}

// The histogram of `values` over the events whose `gate` value lies in [lo, hi].
Histogram inside(const std::vector<double>& values, const std::vector<double>& gate, double lo, double hi) {
  std::vector<double> kept;
  for (std::size_t e = 0; e < values.size(); ++e)
    if (gate[e] >= lo && gate[e] <= hi) kept.push_back(values[e]);
  return positive_counts(kept);
}

std::vector<double> divided_by(const std::vector<double>& v, double gain) {
  std::vector<double> out;
  for (double x : v) out.push_back(x / gain);
  return out;
}

TEST(ProlifFcs, Int16BothByteOrdersDecodeLogLinearAndMaskedChannels) {
  TempDir dir;
  const fs::path be = write_fcs(dir, "be.fcs", int16_file(true));
  const fs::path le = write_fcs(dir, "le.fcs", int16_file(false));

  // Decoded values, known points first: 10^(4*256/1024) = 10, 10^(4*512/1024) = 100, 10^0 = 1.
  const Histogram log = positive_counts(log_values(kLog, 4, 1, 1024, 0xFFFF));
  ASSERT_EQ(log.at(10.0), 2u);
  ASSERT_EQ(log.at(100.0), 1u);
  ASSERT_EQ(log.at(1.0), 1u);  // stored 0 is 10^0 = 1 > 0: kept
  const Histogram lin = positive_counts(divided(kLin, 2, 0xFFFF));
  ASSERT_EQ(lin, (Histogram{{1.5, 2}, {129, 1}, {256.5, 1}, {32767.5, 1}, {3.5, 1}}));
  // 0x0401, 0xFC01 & 0x3FF = 1; 0x0403 -> 3; 0x03FF -> 1023; 0x0400 -> 0 (left out); 5.
  const Histogram mask = positive_counts(divided(kMask, 1, 0x3FF));
  ASSERT_EQ(mask, (Histogram{{1, 3}, {3, 1}, {1023, 1}, {5, 1}}));
  // 0x0100 & 0xFF = 0 -> 10^0; 0x0180 -> 128 -> 10^1 = 10 (f2 = 0 means 1).
  const Histogram log0 = positive_counts(log_values(kLog0, 2, 1, 256, 0xFF));
  ASSERT_EQ(log0.at(1.0), 2u);
  ASSERT_EQ(log0.at(10.0), 3u);
  // 1024 + 512 masked to 10 bits is 512: 0.5 * 10^1.5 (as computed); 0 -> 0.5.
  const Histogram logh = positive_counts(log_values(kLogH, 3, 0.5, 1024, 0x3FF));
  ASSERT_EQ(logh.at(0.5 * std::pow(10.0, 1.5)), 2u);
  ASSERT_EQ(logh.at(0.5), 1u);

  for (const fs::path& p : {be, le}) {
    SCOPED_TRACE(p.filename().string());
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LOG"))), log);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("CFSE log"))), log);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LIN"))), lin);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("MASK"))), mask);
    // 0x07E8 & 0x3FF = 1000, 1024 -> 0 (left out), 0xFFFF -> 1023.
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("M1000"))), (Histogram{{1, 1}, {512, 1}, {1000, 2}, {1023, 2}}));
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LOG0"))), log0);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LOGH"))), logh);

    // raw: the stored integers (after the mask to $PnR's bits), no $PnE / $PnG.
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LOG", true))),
              (Histogram{{1, 1}, {256, 2}, {512, 1}, {1000, 1}, {1023, 1}}));
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LIN", true))),
              (Histogram{{3, 2}, {258, 1}, {513, 1}, {65535, 1}, {7, 1}}));
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("MASK", true))), mask);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("LOG0", true))), (Histogram{{128, 3}, {64, 1}, {255, 1}}));

    // Gate on LIN in decoded units [1.5, 129] (both bounds are values of the data): LIN decoded is
    // 0, 1.5, 1.5, 129, 256.5, 32767.5, 3.5, so events 1, 2, 3, 6 (0-based) stay: LOG stored 1, 256, 512, 256.
    const std::vector<double> log_all = log_values(kLog, 4, 1, 1024, 0xFFFF);
    const std::vector<double> lin_all = divided(kLin, 2, 0xFFFF);
    EXPECT_EQ(as_map(read_fcs_histogram(p, gated("LOG", "LIN", 1.5, 129))), inside(log_all, lin_all, 1.5, 129));
    EXPECT_EQ(inside(log_all, lin_all, 1.5, 129), (Histogram{{log_all[1], 1}, {10.0, 2}, {100.0, 1}}));
    // raw: the gate is in stored units too: LIN in [3, 258] keeps the same events.
    EXPECT_EQ(as_map(read_fcs_histogram(p, gated("LOG", "LIN", 3, 258, true))),
              (Histogram{{1, 1}, {256, 2}, {512, 1}}));
    // The same bounds in decoded units: events 3 (129), 4 (256.5), 6 (3.5).
    EXPECT_EQ(as_map(read_fcs_histogram(p, gated("LOG", "LIN", 3, 258))), inside(log_all, lin_all, 3, 258));
    EXPECT_EQ(total(inside(log_all, lin_all, 3, 258)), 3u);
  }
}

// Doubles ($DATATYPE D, 64 bits) and floats ($DATATYPE F, 32 bits), both byte orders; the big-endian
// files give their DATA offsets only in $BEGINDATA / $ENDDATA (the header holds 0, 0).
TEST(ProlifFcs, DoublesAndFloatsInBothByteOrders) {
  const std::vector<double> a{
      0.1,   1e-300, 12345.678, -1, 0, 2.5, 2.5, std::nan(""), std::numeric_limits<double>::infinity(),
      7e300, -0.0,   4.9e-324};
  const std::vector<double> b{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  TempDir dir;
  for (const bool big : {false, true}) {
    SCOPED_TRACE(big ? "big endian" : "little endian");
    FcsSpec s;
    s.version = "FCS3.1";
    s.keywords = {{"$BYTEORD", big ? "4,3,2,1" : "1,2,3,4"},
                  {"$DATATYPE", "D"},
                  {"$PAR", "2"},
                  {"$TOT", std::to_string(a.size())},
                  {"$P1N", "A"},
                  {"$P1B", "64"},
                  {"$P1E", "0,0"},
                  {"$P1R", "1024"},
                  {"$P2N", "B"},
                  {"$P2B", "64"},
                  {"$P2G", "4"}};
    for (std::size_t e = 0; e < a.size(); ++e) s.data += bytes_of(a[e], big) + bytes_of(b[e], big);
    s.data_offsets_in_header = !big;
    const fs::path p = write_fcs(dir, big ? "d_be.fcs" : "d_le.fcs", s);
    // NaN, infinities, 0, -0 and negatives are left out; the smallest subnormal is > 0 and kept.
    const Histogram expected_a{{4.9e-324, 1}, {1e-300, 1}, {0.1, 1}, {2.5, 2}, {12345.678, 1}, {7e300, 1}};
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("A"))), expected_a);
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("A", true))), expected_a);  // no $PnE, no gain: raw = decoded
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("B"))), positive_counts(divided_by(b, 4)));
    EXPECT_EQ(as_map(read_fcs_histogram(p, channel("B", true))), positive_counts(b));
    // Gate B/4 in [0.5, 1.75]: events 2..7 (1-based); A there: 1e-300, 12345.678, 2.5, 2.5 (-1, 0 out).
    EXPECT_EQ(as_map(read_fcs_histogram(p, gated("A", "B", 0.5, 1.75))),
              (Histogram{{1e-300, 1}, {12345.678, 1}, {2.5, 2}}));

    FcsSpec f;
    f.keywords = {{"$BYTEORD", big ? "4,3,2,1" : "1,2,3,4"},
                  {"$DATATYPE", "F"},
                  {"$PAR", "1"},
                  {"$TOT", "5"},
                  {"$P1N", "FL1"},
                  {"$P1B", "32"}};
    for (float v : {0.1f, 0.1f, 3.0e38f, -2.0f, 1.0e-45f}) f.data += bytes_of(v, big);
    f.data_offsets_in_header = !big;
    const fs::path pf = write_fcs(dir, big ? "f_be.fcs" : "f_le.fcs", f);
    EXPECT_EQ(as_map(read_fcs_histogram(pf, channel("FL1"))), (Histogram{{static_cast<double>(0.1f), 2},
                                                                         {static_cast<double>(3.0e38f), 1},
                                                                         {static_cast<double>(1.0e-45f), 1}}));
  }
}

// 70000 distinct values over 7 decades (> 65536): logarithmic bins of 1/256 decade from the smallest
// value lo, each at its geometric centre lo 10^((b + 0.5) / 256). The values are doubles stored
// as such: the reader sees exactly the numbers written.
TEST(ProlifFcs, MoreThan65536DistinctValuesGiveLogarithmicBins) {
  const double lo = 2.5;
  std::vector<double> events;
  for (int k = 0; k < 70000; ++k) events.push_back(lo * std::pow(10.0, k / 10000.0));
  ASSERT_EQ(events[0], lo);
  for (int k = 0; k < 500; ++k) events.push_back(events[0]);            // repeats of the smallest value
  for (int k = 0; k < 200; ++k) events.push_back(events[69999]);        // and of the largest
  for (double v : {0.0, -1.0, -lo, std::nan("")}) events.push_back(v);  // left out
  const std::uint64_t kept = 70000 + 500 + 200;

  TempDir dir;
  FcsSpec s;
  s.keywords = {{"$BYTEORD", "1,2,3,4"}, {"$DATATYPE", "D"}, {"$PAR", "1"}, {"$TOT", std::to_string(events.size())},
                {"$P1N", "FL1"},         {"$P1B", "64"}};
  s.data = raw_bytes(events);
  const fs::path p = write_fcs(dir, "many.fcs", s);
  const InitialHistogram h = read_fcs_histogram(p, channel("FL1"));
  ASSERT_EQ(h.values.size(), h.counts.size());
  EXPECT_EQ(h.total_cells(), kept);

  // Each event's bin is floor(256 log10(v / lo)) (the definition); 7 decades give bins 0..1791,
  // every one of them holding values (about 39 each).
  auto edge = [&](long long b) { return lo * std::pow(10.0, static_cast<double>(b) / 256.0); };
  std::map<long long, std::uint64_t> expected;
  for (double v : events) {
    if (!(v > 0)) continue;
    const auto b = static_cast<long long>(std::floor(256.0 * std::log10(v / lo)));
    // The bin contains the event (its edges are computed in floating point: within 1e-12 relative).
    EXPECT_GE(v, edge(b) * (1 - 1e-12)) << v;
    EXPECT_LT(v, edge(b + 1) * (1 + 1e-12)) << v;
    ++expected[b];
  }
  ASSERT_EQ(expected.size(), 1792u);
  EXPECT_EQ(expected.begin()->first, 0);
  EXPECT_EQ(expected.rbegin()->first, 1791);
  EXPECT_EQ(expected[0], 501u + 39u);  // sanity of the test's own numbers: lo, its repeats, 38 more
  ASSERT_EQ(h.values.size(), expected.size());
  std::size_t i = 0;
  std::uint64_t sum = 0;
  for (const auto& [b, count] : expected) {
    // The value is the bin's geometric centre: exactly lo 10^((b + 0.5) / 256) as the reader
    // computes it, and sqrt(low edge * high edge) up to rounding.
    EXPECT_EQ(h.values[i], lo * std::pow(10.0, (static_cast<double>(b) + 0.5) / 256.0)) << "bin " << b;
    EXPECT_NEAR(h.values[i], std::sqrt(edge(b) * edge(b + 1)), 1e-12 * h.values[i]) << "bin " << b;
    EXPECT_GT(h.values[i], edge(b));
    EXPECT_LT(h.values[i], edge(b + 1));
    EXPECT_EQ(h.counts[i], count) << "bin " << b;
    sum += h.counts[i];
    ++i;
  }
  EXPECT_EQ(sum, kept);
}

// The switch itself: 65536 distinct values are kept exactly, 65537 are binned.
TEST(ProlifFcs, ExactUpTo65536DistinctValuesBinnedAbove) {
  TempDir dir;
  for (const std::uint32_t n : {65536u, 65537u}) {
    SCOPED_TRACE(n);
    std::vector<std::uint32_t> stored;
    for (std::uint32_t k = 1; k <= n; ++k) stored.push_back(k);
    for (std::uint32_t k = 1; k <= 10; ++k) stored.push_back(k);  // 1..10 twice
    FcsSpec s;
    s.keywords = {{"$BYTEORD", "1,2,3,4"}, {"$DATATYPE", "I"}, {"$PAR", "1"}, {"$TOT", std::to_string(stored.size())},
                  {"$P1N", "FL1"},         {"$P1B", "32"}};
    s.data = raw_bytes(stored);
    const InitialHistogram h = read_fcs_histogram(write_fcs(dir, "n.fcs", s), channel("FL1"));
    EXPECT_EQ(h.total_cells(), n + 10u);
    if (n == 65536) {
      ASSERT_EQ(h.values.size(), 65536u);
      for (std::size_t k = 0; k < h.values.size(); ++k) {
        EXPECT_EQ(h.values[k], static_cast<double>(k + 1));
        EXPECT_EQ(h.counts[k], k < 10 ? 2u : 1u);
      }
    } else {
      std::map<long long, std::uint64_t> bins;  // lo = 1
      for (std::uint32_t v : stored)
        ++bins[static_cast<long long>(std::floor(256.0 * std::log10(static_cast<double>(v))))];
      ASSERT_EQ(h.values.size(), bins.size());
      ASSERT_LT(bins.size(), 2000u);
      std::size_t i = 0;
      for (const auto& [b, c] : bins) {
        EXPECT_EQ(h.values[i], std::pow(10.0, (static_cast<double>(b) + 0.5) / 256.0));
        EXPECT_EQ(h.counts[i], c);
        ++i;
      }
    }
  }
}

// An exact $PnN or $PnS match wins over one that ignores case.
TEST(ProlifFcs, ExactNameWinsOverACaseInsensitiveOne) {
  TempDir dir;
  FcsSpec s;
  s.keywords = {{"$BYTEORD", "1,2,3,4"}, {"$DATATYPE", "I"}, {"$PAR", "2"},   {"$TOT", "2"},
                {"$P1N", "fl1"},         {"$P1B", "16"},     {"$P2N", "FL1"}, {"$P2B", "16"}};
  for (std::uint16_t v : std::initializer_list<std::uint16_t>{10, 20, 30, 40}) s.data += bytes_of(v, false);
  const fs::path p = write_fcs(dir, "case.fcs", s);
  EXPECT_EQ(as_map(read_fcs_histogram(p, channel("fl1"))), (Histogram{{10, 1}, {30, 1}}));
  EXPECT_EQ(as_map(read_fcs_histogram(p, channel("FL1"))), (Histogram{{20, 1}, {40, 1}}));
  const std::string e = user_error([&] { (void)read_fcs_histogram(p, channel("Fl1")); });
  EXPECT_NE(e.find("2 channels"), std::string::npos) << e;
  // The same between a $PnS label and another channel's $PnN.
  set_keyword(s.keywords, "$P1S", "CFSE");
  set_keyword(s.keywords, "$P2N", "cfse");
  const fs::path q = write_fcs(dir, "label.fcs", s);
  EXPECT_EQ(as_map(read_fcs_histogram(q, channel("CFSE"))), (Histogram{{10, 1}, {30, 1}}));
  EXPECT_EQ(as_map(read_fcs_histogram(q, channel("cfse"))), (Histogram{{20, 1}, {40, 1}}));
  EXPECT_NE(user_error([&] { (void)read_fcs_histogram(q, channel("Cfse")); }).find("2 channels"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// 3. Corrupt or unsupported files: a UserError naming the file and the keyword or field.

// Two 16-bit channels, four events: FL1 (label CFSE) 100, 200, 200, 0; FSC all 0.
FcsSpec base_file() {
  FcsSpec s;
  s.keywords = {{"$BYTEORD", "1,2,3,4"}, {"$DATATYPE", "I"}, {"$MODE", "L"},  {"$PAR", "2"},   {"$TOT", "4"},
                {"$P1N", "FL1"},         {"$P1S", "CFSE"},   {"$P1B", "16"},  {"$P1E", "0,0"}, {"$P1R", "1024"},
                {"$P2N", "FSC"},         {"$P2B", "16"},     {"$P2R", "1024"}};
  for (std::uint16_t v : std::initializer_list<std::uint16_t>{100, 0, 200, 0, 200, 0, 0, 0})
    s.data += bytes_of(v, false);
  return s;
}

FcsSpec with(const std::string& key, const std::string& value) {
  FcsSpec s = base_file();
  set_keyword(s.keywords, key, value);
  return s;
}

FcsSpec without(const std::string& key) {
  FcsSpec s = base_file();
  erase_keyword(s.keywords, key);
  return s;
}

std::string with_header_field(std::string bytes, std::size_t at, const std::string& field) {
  bytes.replace(at, 8, field);
  return bytes;
}

TEST(ProlifFcs, TheBaseFileOfTheErrorCasesIsGood) {
  TempDir dir;
  const fs::path p = write_fcs(dir, "base.fcs", base_file());
  EXPECT_EQ(as_map(read_fcs_histogram(p, channel("CFSE"))), (Histogram{{100, 1}, {200, 2}}));
  EXPECT_EQ(as_map(read_fcs_histogram(p, gated("FL1", "FSC", 0, 0))), (Histogram{{100, 1}, {200, 2}}));
  FcsSpec offsets_in_keywords = base_file();
  offsets_in_keywords.data_offsets_in_header = false;
  EXPECT_EQ(read_fcs_histogram(write_fcs(dir, "kw.fcs", offsets_in_keywords), channel("FL1")).total_cells(), 3u);
}

struct BadCase {
  std::string what;
  std::string bytes;
  FcsOptions options;
  std::vector<std::string> needles;  // besides the file's name
};

std::vector<BadCase> bad_cases() {
  const FcsOptions fl1 = channel("FL1");
  const std::string good = fcs_bytes(base_file());
  std::vector<BadCase> c;
  c.push_back({"not FCS", "# value count\n100 3\n" + std::string(80, ' '), fl1, {"HEADER", "not an FCS file"}});
  c.push_back({"shorter than a header", "FCS3.0    ", fl1, {"HEADER", "not an FCS file"}});
  c.push_back({"empty file", "", fl1, {"HEADER"}});
  {
    FcsSpec s = base_file();
    s.version = "FCS2.0";
    c.push_back({"version 2.0", fcs_bytes(s), fl1, {"HEADER", "FCS2.0"}});
    s.version = "FCS4.0";
    c.push_back({"version 4.0", fcs_bytes(s), fl1, {"HEADER", "FCS4.0"}});
  }
  c.push_back({"TEXT end past the file",
               with_header_field(good, 18, field8(good.size() + 100)),
               fl1,
               {"HEADER", "TEXT segment"}});
  c.push_back({"TEXT end at the file's size",
               with_header_field(good, 18, field8(good.size())),
               fl1,
               {"HEADER", "TEXT segment"}});
  c.push_back(
      {"TEXT begins inside the header", with_header_field(good, 10, field8(20)), fl1, {"HEADER", "TEXT segment"}});
  c.push_back({"TEXT ends before it begins", with_header_field(good, 18, field8(58)), fl1, {"HEADER", "TEXT"}});
  c.push_back({"header offset not a number", with_header_field(good, 10, "    abc "), fl1, {"HEADER", "abc"}});
  c.push_back({"DATA end past the file", with_header_field(good, 34, field8(good.size() + 8)), fl1, {"$TOT"}});
  c.push_back({"missing $PAR", fcs_bytes(without("$PAR")), fl1, {"$PAR"}});
  c.push_back({"missing $TOT", fcs_bytes(without("$TOT")), fl1, {"$TOT"}});
  c.push_back({"missing $DATATYPE", fcs_bytes(without("$DATATYPE")), fl1, {"$DATATYPE"}});
  c.push_back({"missing $BYTEORD", fcs_bytes(without("$BYTEORD")), fl1, {"$BYTEORD"}});
  c.push_back({"$PAR 0", fcs_bytes(with("$PAR", "0")), fl1, {"$PAR"}});
  c.push_back({"$PAR not a number", fcs_bytes(with("$PAR", "two")), fl1, {"$PAR", "two"}});
  c.push_back({"$PAR 2^32 + 1", fcs_bytes(with("$PAR", "4294967297")), fl1, {"$PAR"}});
  c.push_back({"$PAR more than the channels described", fcs_bytes(with("$PAR", "3")), fl1, {"$P3B"}});
  c.push_back({"$DATATYPE A", fcs_bytes(with("$DATATYPE", "A")), fl1, {"$DATATYPE", "'A'"}});
  c.push_back({"$BYTEORD 3,4,1,2", fcs_bytes(with("$BYTEORD", "3,4,1,2")), fl1, {"$BYTEORD", "3,4,1,2"}});
  c.push_back({"$P1B 12", fcs_bytes(with("$P1B", "12")), fl1, {"$P1B", "12"}});
  c.push_back({"$P2B 0", fcs_bytes(with("$P2B", "0")), fl1, {"$P2B"}});
  c.push_back({"$P1B 72", fcs_bytes(with("$P1B", "72")), fl1, {"$P1B", "72"}});
  c.push_back({"$P1B *", fcs_bytes(with("$P1B", "*")), fl1, {"$P1B"}});
  c.push_back({"F with 16 bits", fcs_bytes(with("$DATATYPE", "F")), fl1, {"$P1B", "16"}});
  c.push_back({"D with 16 bits", fcs_bytes(with("$DATATYPE", "D")), fl1, {"$P1B", "16"}});
  c.push_back({"truncated file", good.substr(0, good.size() - 3), fl1, {"$TOT", "truncated"}});
  c.push_back({"$TOT larger than DATA", fcs_bytes(with("$TOT", "1000")), fl1, {"$TOT", "1000"}});
  // events x bytes wraps around 2^64 (2^62 events of 4 bytes): must not pass the size check.
  c.push_back({"$TOT 2^62", fcs_bytes(with("$TOT", "4611686018427387904")), fl1, {"$TOT"}});
  c.push_back({"$TOT 2^63 + 1", fcs_bytes(with("$TOT", "9223372036854775809")), fl1, {"$TOT"}});
  c.push_back({"$TOT negative", fcs_bytes(with("$TOT", "-3")), fl1, {"$TOT", "-3"}});
  c.push_back({"$TOT too large a number", fcs_bytes(with("$TOT", "99999999999999999999999")), fl1, {"$TOT"}});
  c.push_back({"$MODE H", fcs_bytes(with("$MODE", "H")), fl1, {"$MODE", "'H'"}});
  c.push_back({"$MODE C", fcs_bytes(with("$MODE", "C")), fl1, {"$MODE", "'C'"}});
  {
    FcsSpec s = base_file();
    s.data_offsets_in_header = false;
    s.data_keywords = false;
    c.push_back({"no DATA offsets anywhere", fcs_bytes(s), fl1, {"$BEGINDATA"}});
  }
  c.push_back({"$PnE without a comma", fcs_bytes(with("$P1E", "4")), fl1, {"$P1E", "'4'"}});
  c.push_back({"$PnE negative", fcs_bytes(with("$P1E", "-4,1")), fl1, {"$P1E"}});
  c.push_back({"log without $PnR",
               fcs_bytes([] {
                 FcsSpec s = with("$P1E", "4,1");
                 erase_keyword(s.keywords, "$P1R");
                 return s;
               }()),
               fl1,
               {"$P1R"}});
  c.push_back({"$PnG 0", fcs_bytes(with("$P1G", "0")), fl1, {"$P1G"}});
  c.push_back({"$PnG not a number", fcs_bytes(with("$P1G", "x")), fl1, {"$P1G", "'x'"}});
  c.push_back({"no --channel", good, channel(""), {"channel", "--channel", "FL1, FSC"}});
  c.push_back({"unknown channel", good, channel("FL9"), {"channel", "'FL9'", "FL1 (CFSE), FSC"}});
  c.push_back({"ambiguous label",
               fcs_bytes(with("$P2S", "CFSE")),
               channel("CFSE"),
               {"channel", "'CFSE'", "2 channels", "$PnN"}});
  c.push_back(
      {"ambiguous ignoring case", fcs_bytes(with("$P2N", "fl1")), channel("Fl1"), {"channel", "'Fl1'", "2 channels"}});
  c.push_back({"gate on an unknown channel", good, gated("FL1", "SSC", 0, 10), {"gate", "'SSC'", "FSC"}});
  c.push_back({"no positive value", good, channel("FSC"), {"channel", "FSC", "no event with a value > 0"}});
  c.push_back({"nothing inside the gate",
               good,
               gated("FL1", "FSC", 1, 2),
               {"channel", "no event with a value > 0 inside the gate"}});
  c.push_back({"no event at all", fcs_bytes(with("$TOT", "0")), fl1, {"channel", "no event"}});
  return c;
}

TEST(ProlifFcs, CorruptOrUnsupportedFilesAreUserErrorsNamingFileAndKeyword) {
  TempDir dir;
  int n = 0;
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.what);
    const fs::path p = dir.write("bad" + std::to_string(n++) + ".fcs", c.bytes);
    const std::string e = user_error([&] { (void)read_fcs_histogram(p, c.options); });
    EXPECT_NE(e.find(p.string()), std::string::npos) << e;
    for (const std::string& needle : c.needles) EXPECT_NE(e.find(needle), std::string::npos) << needle << " in: " << e;
    // read_histogram goes the same way for anything starting with "FCS".
    if (c.bytes.compare(0, 3, "FCS") == 0) {
      EXPECT_EQ(user_error([&] { (void)read_histogram(p, c.options); }), e);
    }
  }
  // A file that does not exist.
  const fs::path missing = dir / "missing.fcs";
  const std::string e = user_error([&] { (void)read_fcs_histogram(missing, channel("FL1")); });
  EXPECT_NE(e.find(missing.string()), std::string::npos) << e;
}

// Every prefix of a good file, and the file with each byte replaced by a few others: each read
// either succeeds or throws a UserError (no crash, no hang, no other exception).
TEST(ProlifFcs, DamagedFilesNeverCrash) {
  TempDir dir;
  const std::string good = fcs_bytes(base_file());
  const fs::path p = dir / "damaged.fcs";
  std::size_t errors = 0, reads = 0, skipped = 0, prefix_errors = 0;
  auto attempt = [&](const std::string& bytes, const std::string& what) {
    { std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes; }
    ++reads;
    try {
      (void)read_fcs_histogram(p, gated("FL1", "FSC", 0, 1e9));
    } catch (const UserError&) {
      ++errors;
    } catch (const std::exception& ex) {
      ADD_FAILURE() << what << ": not a UserError: " << ex.what();
    }
  };
  for (std::size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n), "prefix of " + std::to_string(n));
  prefix_errors = errors;
  for (std::size_t at = 0; at < good.size(); ++at)
    for (const char c : {'\0', '/', '9', '\xff'}) {
      if (good[at] == c) {
        ++skipped;
        continue;
      }
      std::string bytes = good;
      bytes[at] = c;
      attempt(bytes, "byte " + std::to_string(at) + " = " + std::to_string(static_cast<unsigned char>(c)));
    }
  EXPECT_EQ(reads, good.size() * 5 - skipped);
  // Every prefix is an error: the DATA segment ends at the file's end, so any cut shortens it (or
  // the TEXT, or the header).
  EXPECT_EQ(prefix_errors, good.size());
  EXPECT_GT(errors, prefix_errors);  // and some single-byte damage is detected too
}

// ---------------------------------------------------------------------------------------------
// 4. The CLI.

// 53 events of two 16-bit channels: FL1 (label CFSE, $P1G 2): stored 200 + 37 e for e = 0..49, then
// three 0 (left out); FSC: 10 e, and 200 for the three zero events (inside the gate below).
constexpr int kCliEvents = 50;
FcsSpec cli_file() {
  FcsSpec s;
  s.keywords = {{"$BYTEORD", "4,3,2,1"},
                {"$DATATYPE", "I"},
                {"$MODE", "L"},
                {"$PAR", "2"},
                {"$TOT", std::to_string(kCliEvents + 3)},
                {"$P1N", "FL1"},
                {"$P1S", "CFSE"},
                {"$P1B", "16"},
                {"$P1E", "0,0"},
                {"$P1G", "2"},
                {"$P1R", "65536"},
                {"$P2N", "FSC"},
                {"$P2B", "16"},
                {"$P2R", "1024"}};
  for (int e = 0; e < kCliEvents; ++e)
    s.data +=
        bytes_of(static_cast<std::uint16_t>(200 + 37 * e), true) + bytes_of(static_cast<std::uint16_t>(10 * e), true);
  for (int e = 0; e < 3; ++e) s.data += bytes_of(std::uint16_t{0}, true) + bytes_of(std::uint16_t{200}, true);
  return s;
}

constexpr const char* kModel =
    "phi_min = 1\nt_max = 24\n[[population]]\nname = \"p\"\nproportion = 1\nmean = 20\nsd = 2\n";

// histogram.tsv as a map (values printed shortest-round-trip: strtod gives them back exactly).
Histogram read_tsv(const fs::path& p) {
  Histogram m;
  for (const std::string& line : lines_of(slurp(p))) {
    const std::size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    if (tab == std::string::npos) continue;
    m[std::strtod(line.substr(0, tab).c_str(), nullptr)] += std::stoull(line.substr(tab + 1));
  }
  return m;
}

TEST(ProlifFcsCli, SimulateReadsTheChannelAndTheGate) {
  TempDir dir;
  const fs::path fcs = write_fcs(dir, "h0.fcs", cli_file());
  const fs::path model = dir.write("model.toml", kModel);
  auto simulate = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{"prolif",       "simulate",           "--histogram", fcs.string(), "--config",
                                  model.string(), "--backend",          "cpu",         "--seed",     "3",
                                  "--out",        (dir / out).string(), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_simkit(args);
  };
  {
    const CommandResult r = simulate("plain", {"--channel", "FL1"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(dir / "plain" / "result.json"));
    EXPECT_EQ(doc["initial_cells"].get<std::uint64_t>(), 50u);
  }
  {
    // FSC in [100, 300]: e = 10..30 (21 events); the three zero events are inside but left out.
    const CommandResult r = simulate("gated", {"--channel", "CFSE", "--gate", "FSC:100:300"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(dir / "gated" / "result.json"));
    EXPECT_EQ(doc["initial_cells"].get<std::uint64_t>(), 21u);
  }
  // At t = 0 histogram.tsv is H(0) itself: decoded (stored / 2) and, with --fcs-raw, as stored.
  Histogram decoded, raw;
  for (int e = 0; e < kCliEvents; ++e) {
    ++decoded[(200 + 37 * e) / 2.0];
    ++raw[200 + 37 * e];
  }
  {
    const CommandResult r = simulate("t0", {"--channel", "FL1", "--t-max", "0"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(read_tsv(dir / "t0" / "histogram.tsv"), decoded);
  }
  {
    const CommandResult r = simulate("t0raw", {"--channel", "FL1", "--t-max", "0", "--fcs-raw"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(read_tsv(dir / "t0raw" / "histogram.tsv"), raw);
  }
  {
    // The gate is in raw units with --fcs-raw as well (FSC has no gain: the same events).
    const CommandResult r =
        simulate("t0rawgate", {"--channel", "FL1", "--t-max", "0", "--fcs-raw", "--gate", "FSC:100:300"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    Histogram gated_raw;
    for (int e = 10; e <= 30; ++e) ++gated_raw[200 + 37 * e];
    EXPECT_EQ(read_tsv(dir / "t0rawgate" / "histogram.tsv"), gated_raw);
  }
}

TEST(ProlifFcsCli, BadChannelOrGateExitsTwoWithOneLineAndNoOutput) {
  TempDir dir;
  const fs::path fcs = write_fcs(dir, "h0.fcs", cli_file());
  const fs::path model = dir.write("model.toml", kModel);
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases{
      {{}, {fcs.string(), "--channel", "FL1, FSC"}},
      {{"--channel", "SSC"}, {fcs.string(), "'SSC'", "FL1 (CFSE), FSC"}},
      {{"--channel", "FL1", "--gate", "FL1:5"}, {"--gate", "FL1:5"}},
      {{"--channel", "FL1", "--gate", "FL1:a:b"}, {"--gate", "FL1:a:b"}},
      {{"--channel", "FL1", "--gate", "FL1:9:1"}, {"--gate", "FL1:9:1", "MIN <= MAX"}},
      {{"--channel", "FL1", "--gate", "FL1"}, {"--gate"}},
      {{"--channel", "FL1", "--gate", ":1:2"}, {"--gate"}},
      {{"--channel", "FL1", "--gate", "FL1:nan:2"}, {"--gate"}},
      {{"--channel", "FL1", "--gate", "SSC:1:2"}, {fcs.string(), "gate", "'SSC'"}},
      {{"--channel", "FL1", "--gate", "FSC:5000:6000"}, {fcs.string(), "inside the gate"}},
  };
  for (const Case& c : cases) {
    std::string label;
    for (const auto& f : c.flags) label += f + " ";
    SCOPED_TRACE(label);
    const fs::path out = dir / "out";
    std::vector<std::string> args{"prolif",    "simulate", "--histogram", fcs.string(), "--config", model.string(),
                                  "--backend", "cpu",      "--out",       out.string(), "-q"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const CommandResult r = run_simkit(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    for (const std::string& needle : c.needles)
      EXPECT_NE(r.err.find(needle), std::string::npos) << needle << " in: " << r.err;
    EXPECT_TRUE(empty_or_absent(out));
  }
}

// `prolif fit` reads FCS histograms with the same flags: H(0) and the target here.
TEST(ProlifFcsCli, FitAcceptsAnFcsTargetWithChannel) {
  TempDir dir;
  const fs::path fcs = write_fcs(dir, "h0.fcs", cli_file());
  const fs::path text_h0 = dir.write("h0.txt", "400 30\n800 20\n");
  const fs::path model = dir.write(
      "fit.toml", "phi_min = 1\n[[population]]\nname = \"p\"\nproportion = 1\nmean = { min = 10, max = 40 }\nsd = 2\n");
  auto fit = [&](const fs::path& h0, const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{
        "prolif",       "fit",       "--histogram", h0.string(),          "--target", fcs.string() + "@24", "--config",
        model.string(), "--backend", "cpu",         "--particles",        "4",        "--iterations",       "1",
        "--check-runs", "1",         "--out",       (dir / out).string(), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_simkit(args);
  };
  {
    const CommandResult r = fit(fcs, "both", {"--channel", "CFSE"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(dir / "both" / "result.json"));
    EXPECT_EQ(doc["initial"]["cells"].get<std::uint64_t>(), 50u);
    EXPECT_EQ(doc["initial"]["file"].get<std::string>(), fcs.string() + "[FL1]");
    ASSERT_EQ(doc["targets"].size(), 1u);
    EXPECT_EQ(doc["targets"][0]["cells"].get<std::uint64_t>(), 50u);
    EXPECT_EQ(doc["targets"][0]["file"].get<std::string>(), fcs.string() + "[FL1]");
    EXPECT_EQ(doc["targets"][0]["time"].get<double>(), 24.0);
    const double mean = doc["best"]["populations"][0]["mean"].get<double>();
    EXPECT_GE(mean, 10.0);
    EXPECT_LE(mean, 40.0);
  }
  {
    // A text H(0) and an FCS target with a gate: the gate applies to the FCS file only.
    const CommandResult r = fit(text_h0, "gated", {"--channel", "FL1", "--gate", "FSC:100:300"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const json doc = json::parse(slurp(dir / "gated" / "result.json"));
    EXPECT_EQ(doc["initial"]["cells"].get<std::uint64_t>(), 50u);
    EXPECT_EQ(doc["targets"][0]["cells"].get<std::uint64_t>(), 21u);
  }
  {
    // Without --channel: exit 2 naming the channels, nothing written.
    const CommandResult r = fit(text_h0, "nochannel", {});
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find("FL1, FSC"), std::string::npos) << r.err;
    EXPECT_TRUE(empty_or_absent(dir / "nochannel"));
  }
}

}  // namespace
}  // namespace simkit::prolif
