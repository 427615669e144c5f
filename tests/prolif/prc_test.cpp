// ProCell projects (.prc) and the fit TOML: a hand-written Python 2 protocol-0 pickle read field by
// field, simkit's own files read back, read by Python (when python3 is here) and Python's
// re-pickles (protocols 0, 2, 3, 4) read by simkit; corrupt files are UserErrors naming the file;
// `{ min, max }` bounds in a model TOML. docs/prolif.md, "ProCell projects" and "Fitting".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "simkit/core/error.hpp"
#include "simkit/prolif/fit.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prc.hpp"
#include "simkit/prolif/prolif.hpp"
#include "support/test_support.hpp"

namespace simkit::prolif {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using simkit::test::slurp;
using simkit::test::TempDir;
using simkit::test::user_error;

// A project as Python 2's pickle (protocol 0) writes ProCell's `Project`: copy_reg._reconstructor,
// memo puts (p) and gets (g), S'...' strings with escaped backslashes, a "..." string, F floats,
// I01/I00 booleans, I and L..L integers, the first and last population names as PyQt4 QStrings
// (sip._unpickle_type, the second through memo gets) with a \u escape, a row with unset bounds (0L
// and 0) and a quiescent row of '-' (memoized once). Values are this test's own.
constexpr const char* kPython2Pickle = R"PKL(ccopy_reg
_reconstructor
p0
(cproject
Project
p1
c__builtin__
object
p2
Ntp3
Rp4
(dp5
S'project_name'
p6
S"unit test 'one'"
p7
sS'populations'
p8
(lp9
(lp10
csip
_unpickle_type
p11
(S'PyQt4.QtCore'
p12
S'QString'
p13
(Vfast \u03b1
p14
tp15
tp16
Rp17
aF0.55
aF18.5
aF3.25
aF10.0
aF40.0
aF0.5
aF8.0
aNaa(lp18
S'slow'
p19
aF0.25
aF30.0
aF5.0
aL0L
aL0L
aI0
aI0
aNaa(lp20
g11
(g12
g13
(Vresting
p21
tp22
tp23
Rp24
aF0.2
aS'-'
p25
ag25
ag25
ag25
ag25
ag25
aNaasS'initial_file'
p26
S'C:\\data\\h0.txt'
p27
sS'target_file'
p28
S'C:\\data\\target 96h.txt'
p29
sS'validation_file'
p30
NsS'simulation_time'
p31
F96.0
sS'simulation_validation_time'
p32
F0.0
sS'fluorescence_threshold'
p33
F4.5
sS'bins'
p34
I80
sS'lowest_bin'
p35
F20.0
sS'highest_bin'
p36
F20000.0
sS'normalize_to_target'
p37
I01
sS'asynchronous'
p38
I00
sS'swarm_size'
p39
I24
sS'iterations'
p40
L150L
sS'algorithm'
p41
S'Fuzzy Self-Tuning PSO'
p42
sb.)PKL";

const std::string kAlpha = "\xce\xb1";  // U+03B1 in UTF-8

ProcellProject read_string(const std::string& bytes, const std::string& name = "project.prc") {
  TempDir dir;
  return read_prc(dir.write(name, bytes));
}

void expect_same_range(const std::optional<Range>& a, const std::optional<Range>& b, const std::string& what) {
  ASSERT_EQ(a.has_value(), b.has_value()) << what;
  if (a) {
    EXPECT_EQ(a->min, b->min) << what;
    EXPECT_EQ(a->max, b->max) << what;
  }
}

void expect_same_project(const ProcellProject& a, const ProcellProject& b) {
  EXPECT_EQ(a.project_name, b.project_name);
  ASSERT_EQ(a.spec.model.populations.size(), b.spec.model.populations.size());
  ASSERT_EQ(a.spec.free.size(), b.spec.free.size());
  for (std::size_t p = 0; p < a.spec.model.populations.size(); ++p) {
    const Population &x = a.spec.model.populations[p], &y = b.spec.model.populations[p];
    SCOPED_TRACE(x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.proportion, y.proportion);
    EXPECT_EQ(x.quiescent, y.quiescent);
    EXPECT_EQ(x.mean, y.mean);
    EXPECT_EQ(x.sd, y.sd);
    expect_same_range(a.spec.free[p].proportion, b.spec.free[p].proportion, "proportion");
    expect_same_range(a.spec.free[p].mean, b.spec.free[p].mean, "mean");
    expect_same_range(a.spec.free[p].sd, b.spec.free[p].sd, "sd");
  }
  expect_same_range(a.spec.phi_min, b.spec.phi_min, "phi_min");
  EXPECT_EQ(a.spec.model.phi_min, b.spec.model.phi_min);
  EXPECT_EQ(a.spec.model.times, b.spec.model.times);
  EXPECT_EQ(a.spec.model.start, b.spec.model.start);
  EXPECT_EQ(a.unset_bounds, b.unset_bounds);
  EXPECT_EQ(a.initial_file, b.initial_file);
  EXPECT_EQ(a.target_file, b.target_file);
  EXPECT_EQ(a.validation_file, b.validation_file);
  EXPECT_EQ(a.simulation_time, b.simulation_time);
  EXPECT_EQ(a.validation_time, b.validation_time);
  EXPECT_EQ(a.fluorescence_threshold, b.fluorescence_threshold);
  EXPECT_EQ(a.swarm_size, b.swarm_size);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.bins, b.bins);
  EXPECT_EQ(a.lowest_bin, b.lowest_bin);
  EXPECT_EQ(a.highest_bin, b.highest_bin);
  EXPECT_EQ(a.normalize_to_target, b.normalize_to_target);
  EXPECT_EQ(a.asynchronous, b.asynchronous);
  EXPECT_EQ(a.algorithm, b.algorithm);
}

// A project built in code, with what the hand-written one lacks: an asynchronous start, a
// validation file, sd 0, a name with a backslash, a quote, a newline and a character outside the
// BMP, POSIX and Windows paths, and integers beyond one byte (bins, iterations) and two (swarm).
ProcellProject built_project() {
  ProcellProject p;
  p.project_name = "built \\ \"q\" 'x'\nline two \xF0\x9F\x98\x80";
  Population fast;
  fast.name = "fast " + kAlpha;
  fast.proportion = 0.375;
  fast.mean = 21.5;
  fast.sd = 0;
  Population rest;
  rest.name = "rest";
  rest.proportion = 0.125;
  rest.quiescent = true;
  Population slow;
  slow.name = "slow";
  slow.proportion = 0.5;
  slow.mean = 1e3 / 7.0;  // no short decimal: the writer must keep every digit
  slow.sd = 0.1;
  p.spec.model.populations = {fast, rest, slow};
  p.spec.free.resize(3);
  for (auto& f : p.spec.free) f.proportion = Range{0, 1};
  p.spec.free[0].mean = Range{5, 60};
  p.spec.free[0].sd = Range{0.25, 9.5};
  p.spec.free[2].mean = Range{100, 200};
  p.spec.free[2].sd = Range{0.01, 3};
  p.initial_file = "C:\\Users\\me\\h0 (day 0).txt";
  p.target_file = "/home/me/data/target.txt";
  p.validation_file = "D:\\val\\v.txt";
  p.simulation_time = 120;
  p.validation_time = 240.5;
  p.fluorescence_threshold = 7.25;
  p.spec.model.phi_min = 7.25;
  p.spec.model.times = {120};
  p.asynchronous = true;
  p.spec.model.start = StartMode::ProcellAsync;
  p.swarm_size = 70000;
  p.iterations = 1000;
  p.bins = 300;
  p.lowest_bin = 3.5;
  p.highest_bin = 123456.0;
  p.normalize_to_target = false;
  p.algorithm = "Fuzzy Self-Tuning PSO";
  return p;
}

// ----------------------------------------------------------------------------------------------
// 1. A Python 2 ProCell file

TEST(ReadPrc, Python2ProtocolZeroFieldByField) {
  const ProcellProject p = read_string(kPython2Pickle);
  EXPECT_EQ(p.project_name, "unit test 'one'");
  const auto& pops = p.spec.model.populations;
  ASSERT_EQ(pops.size(), 3u);
  ASSERT_EQ(p.spec.free.size(), 3u);

  EXPECT_EQ(pops[0].name, "fast " + kAlpha);
  EXPECT_EQ(pops[0].proportion, 0.55);
  EXPECT_FALSE(pops[0].quiescent);
  EXPECT_EQ(pops[0].mean, 18.5);
  EXPECT_EQ(pops[0].sd, 3.25);
  ASSERT_TRUE(p.spec.free[0].mean.has_value());
  EXPECT_EQ(p.spec.free[0].mean->min, 10.0);
  EXPECT_EQ(p.spec.free[0].mean->max, 40.0);
  ASSERT_TRUE(p.spec.free[0].sd.has_value());
  EXPECT_EQ(p.spec.free[0].sd->min, 0.5);
  EXPECT_EQ(p.spec.free[0].sd->max, 8.0);

  EXPECT_EQ(pops[1].name, "slow");
  EXPECT_EQ(pops[1].proportion, 0.25);
  EXPECT_EQ(pops[1].mean, 30.0);
  EXPECT_EQ(pops[1].sd, 5.0);
  EXPECT_FALSE(p.spec.free[1].mean.has_value());
  EXPECT_FALSE(p.spec.free[1].sd.has_value());

  EXPECT_EQ(pops[2].name, "resting");
  EXPECT_EQ(pops[2].proportion, 0.2);
  EXPECT_TRUE(pops[2].quiescent);
  EXPECT_FALSE(p.spec.free[2].mean.has_value());
  EXPECT_FALSE(p.spec.free[2].sd.has_value());

  // Two or more populations: every proportion free in [0, 1], as ProCell fits them.
  for (const auto& f : p.spec.free) {
    ASSERT_TRUE(f.proportion.has_value());
    EXPECT_EQ(f.proportion->min, 0.0);
    EXPECT_EQ(f.proportion->max, 1.0);
  }
  EXPECT_EQ(p.unset_bounds, (std::vector<std::string>{"slow.mean", "slow.sd"}));
  EXPECT_FALSE(p.spec.phi_min.has_value());
  EXPECT_EQ(p.spec.model.phi_min, 4.5);
  EXPECT_EQ(p.fluorescence_threshold, 4.5);
  EXPECT_EQ(p.spec.model.times, std::vector<double>{96});
  EXPECT_EQ(p.spec.model.start, StartMode::Sync);
  EXPECT_FALSE(p.asynchronous);
  EXPECT_EQ(p.simulation_time, 96.0);
  EXPECT_EQ(p.validation_time, 0.0);
  EXPECT_EQ(p.initial_file, std::optional<std::string>("C:\\data\\h0.txt"));
  EXPECT_EQ(p.target_file, std::optional<std::string>("C:\\data\\target 96h.txt"));
  EXPECT_FALSE(p.validation_file.has_value());
  EXPECT_EQ(p.bins, 80);
  EXPECT_EQ(p.lowest_bin, 20.0);
  EXPECT_EQ(p.highest_bin, 20000.0);
  EXPECT_EQ(p.swarm_size, 24);
  EXPECT_EQ(p.iterations, 150);
  EXPECT_TRUE(p.normalize_to_target);
  EXPECT_EQ(p.algorithm, "Fuzzy Self-Tuning PSO");

  // With bounds given for slow (as --free does), the project is a valid fit specification.
  FitSpec spec = p.spec;
  spec.free[1].mean = Range{20, 50};
  spec.free[1].sd = Range{1, 10};
  settle_placeholders(spec);
  EXPECT_NO_THROW(validate(spec, "project.prc"));
  EXPECT_NO_THROW(validate(spec.model, "project.prc"));
}

// CRLF line ends (a file copied through Windows) and the asynchronous flag.
TEST(ReadPrc, CrlfAndAsynchronous) {
  std::string text = kPython2Pickle;
  const std::string flag = "S'asynchronous'\np38\nI00\n";
  text.replace(text.find(flag), flag.size(), "S'asynchronous'\np38\nI01\n");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const ProcellProject p = read_string(crlf);
  EXPECT_TRUE(p.asynchronous);
  EXPECT_EQ(p.spec.model.start, StartMode::ProcellAsync);
  EXPECT_EQ(p.initial_file, std::optional<std::string>("C:\\data\\h0.txt"));
  EXPECT_EQ(p.spec.model.populations[0].name, "fast " + kAlpha);
}

// ----------------------------------------------------------------------------------------------
// 2. simkit's own files

TEST(PrcBytes, RoundTrips) {
  TempDir dir;
  for (const ProcellProject& original : {read_string(kPython2Pickle), built_project()}) {
    SCOPED_TRACE(original.project_name);
    const std::string bytes = prc_bytes(original);
    EXPECT_EQ(bytes.rfind("ccopy_reg\n_reconstructor\n", 0), 0u);
    EXPECT_EQ(bytes.back(), '.');
    const fs::path file = dir.write("round.prc", bytes);
    const ProcellProject back = read_prc(file);
    expect_same_project(original, back);
    // Written again, the same bytes.
    EXPECT_EQ(prc_bytes(back), bytes);
  }
}

// ----------------------------------------------------------------------------------------------
// 3. Python: reads what simkit writes; simkit reads what Python writes

bool have_python() { return std::system("python3 -c pass >/dev/null 2>&1") == 0; }

// Loads argv[2] with the fake `project` module on PYTHONPATH, prints its attributes (and their
// Python types) as JSON, and pickles the object again with protocols 0, 2, 3 and 4.
constexpr const char* kPythonScript = R"PY(import json, pickle, sys
with open(sys.argv[1], 'rb') as f:
    p = pickle.load(f)
d = dict(p.__dict__)
d['__class__'] = type(p).__module__ + '.' + type(p).__name__
d['__types__'] = {k: type(v).__name__ for k, v in p.__dict__.items()}
print(json.dumps(d))
for proto in (0, 2, 3, 4):
    with open(sys.argv[2] + '.p%d' % proto, 'wb') as f:
        pickle.dump(p, f, protocol=proto)
)PY";

TEST(PrcPython, PythonReadsSimkitAndSimkitReadsPython) {
  if (!have_python()) GTEST_SKIP() << "python3 not found";
  TempDir dir;
  fs::create_directory(dir / "mod");
  dir.write("mod/project.py", "class Project(object):\n    pass\n");
  const fs::path script = dir.write("dump.py", kPythonScript);
  for (const ProcellProject& original : {built_project(), read_string(kPython2Pickle)}) {
    SCOPED_TRACE(original.project_name);
    const fs::path prc = dir.write("simkit.prc", prc_bytes(original));
    const fs::path out = dir / "python.json";
    const std::string cmd = "PYTHONPATH='" + (dir / "mod").string() + "' python3 '" + script.string() + "' '" +
                            prc.string() + "' '" + (dir / "again").string() + "' > '" + out.string() + "' 2> '" +
                            (dir / "python.err").string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir / "python.err");
    const json d = json::parse(slurp(out));
    EXPECT_EQ(d["__class__"], "project.Project");
    EXPECT_EQ(d["project_name"], original.project_name);
    EXPECT_EQ(d["swarm_size"], original.swarm_size);
    EXPECT_EQ(d["iterations"], original.iterations);
    EXPECT_EQ(d["bins"], original.bins);
    EXPECT_EQ(d["__types__"]["swarm_size"], "int");
    EXPECT_EQ(d["__types__"]["iterations"], "int");
    EXPECT_EQ(d["__types__"]["bins"], "int");
    EXPECT_EQ(d["__types__"]["asynchronous"], "bool");
    EXPECT_EQ(d["__types__"]["normalize_to_target"], "bool");
    EXPECT_EQ(d["__types__"]["simulation_time"], "float");
    EXPECT_EQ(d["asynchronous"], original.asynchronous);
    EXPECT_EQ(d["normalize_to_target"], original.normalize_to_target);
    EXPECT_EQ(d["simulation_time"], original.simulation_time);
    EXPECT_EQ(d["simulation_validation_time"], original.validation_time);
    EXPECT_EQ(d["fluorescence_threshold"], original.fluorescence_threshold);
    EXPECT_EQ(d["lowest_bin"], original.lowest_bin);
    EXPECT_EQ(d["highest_bin"], original.highest_bin);
    EXPECT_EQ(d["algorithm"], original.algorithm);
    EXPECT_EQ(d["initial_file"], *original.initial_file);
    EXPECT_EQ(d["target_file"], *original.target_file);
    if (original.validation_file) {
      EXPECT_EQ(d["validation_file"], *original.validation_file);
    } else {
      EXPECT_TRUE(d["validation_file"].is_null());
    }
    const auto& pops = original.spec.model.populations;
    ASSERT_EQ(d["populations"].size(), pops.size());
    for (std::size_t i = 0; i < pops.size(); ++i) {
      const json& row = d["populations"][i];
      SCOPED_TRACE(row.dump());
      ASSERT_GE(row.size(), 8u);
      EXPECT_EQ(row[0], pops[i].name);
      EXPECT_EQ(row[1], pops[i].proportion);
      if (pops[i].quiescent) {
        for (std::size_t k = 2; k < 8; ++k) EXPECT_EQ(row[k], "-");
      } else {
        const PopulationFreedom& f = original.spec.free[i];
        EXPECT_EQ(row[2], pops[i].mean);
        EXPECT_EQ(row[3], pops[i].sd);
        EXPECT_EQ(row[4], f.mean ? f.mean->min : 0.0);
        EXPECT_EQ(row[5], f.mean ? f.mean->max : 0.0);
        EXPECT_EQ(row[6], f.sd ? f.sd->min : 0.0);
        EXPECT_EQ(row[7], f.sd ? f.sd->max : 0.0);
      }
    }
    for (int proto : {0, 2, 3, 4}) {
      SCOPED_TRACE("Python protocol " + std::to_string(proto));
      const fs::path again = dir / ("again.p" + std::to_string(proto));
      ASSERT_TRUE(fs::is_regular_file(again));
      ProcellProject back;
      ASSERT_NO_THROW(back = read_prc(again)) << user_error([&] { (void)read_prc(again); });
      expect_same_project(original, back);
    }
  }
}

// ----------------------------------------------------------------------------------------------
// 4. Corrupt files: a UserError naming the file, never a crash, another exception or a hang

std::string prc_error(const std::string& bytes) {
  TempDir dir;
  const fs::path file = dir.write("bad.prc", bytes);
  const std::string message = user_error([&] { (void)read_prc(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << "the message must name the file: " << message;
  return message;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// The reconstructor of a Project with `state` as its attribute dict (protocol 0).
std::string project_with(const std::string& state) {
  return "ccopy_reg\n_reconstructor\n(cproject\nProject\nc__builtin__\nobject\nNtR(d" + state + "b.";
}

TEST(ReadPrcCorrupt, EachIsAUserErrorNamingTheFile) {
  const std::string good = kPython2Pickle;
  struct Case {
    std::string what, bytes, fragment;
  };
  const std::vector<Case> cases{
      {"empty file", "", "STOP"},
      {"truncated in the middle", good.substr(0, good.size() / 2), "truncated"},
      {"truncated before STOP", good.substr(0, good.size() - 1), "STOP"},
      {"a plain list", "(lp0\nI1\naI2\na.", "not a ProCell project"},
      {"a dict", "(dp0\nS'populations'\np1\n(lp2\ns.", "not a ProCell project"},
      {"a Project without populations", project_with("S'project_name'\nS'x'\ns"), "populations"},
      {"a Project with an empty population list", project_with("S'populations'\n(ls"), "populations"},
      {"a non-numeric mean", replaced(good, "aF18.5\n", "aS'fast'\n"), "mean"},
      {"a negative mean", replaced(good, "aF18.5\n", "aF-1.0\n"), "mean"},
      {"a proportion above 1", replaced(good, "aF0.55\n", "aF1.5\n"), "proportion"},
      {"a NaN bound", replaced(good, "aF40.0\n", "aFnan\n"), "mean_max"},
      {"a short row", replaced(good, "aF0.5\naF8.0\n", ""), "populations[0]"},
      {"a number where a name is", replaced(good, "S'slow'\n", "F3.0\n"), "name"},
      {"a string for bins", replaced(good, "I80\n", "S'eighty'\n"), "bins"},
      {"a malformed float", replaced(good, "F96.0\n", "F9x6\n"), "FLOAT"},
      {"a malformed int", replaced(good, "I24\n", "I2_4z\n"), "INT"},
      {"an unquoted string", replaced(good, "S'slow'\n", "Sslow\n"), "STRING"},
      {"a memo get never put", replaced(good, "ag25\n", "ag99\n"), "memo"},
      {"an unknown binary opcode", std::string("\x80\x02\xff", 3), "opcode"},
      {"an unknown opcode after a valid start", good.substr(0, good.find("(dp5")) + "\x01", "opcode"},
      {"stack underflow", "a.", "stack"},
      {"STOP with two objects", "NN.", "STOP"},
      {"a bad \\x escape", replaced(good, "S\"unit test 'one'\"", "S'\\xzz'"), "STRING"},
      {"a \\x escape cut by the quote", replaced(good, "S\"unit test 'one'\"", "S'\\x4'"), "STRING"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string message = prc_error(c.bytes);
    EXPECT_NE(message.find(c.fragment), std::string::npos) << c.fragment << " in: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(ReadPrcCorrupt, RandomBytesAreUserErrors) {
  std::mt19937_64 rng(simkit::test::printed_seed(515));
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(std::uniform_int_distribution<std::size_t>(1, 600)(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    SCOPED_TRACE(trial);
    (void)prc_error(bytes);
  }
}

// Random changes to a good file: each reads or is a UserError (the reader sees every byte).
TEST(ReadPrcCorrupt, MutatedFilesReadOrAreUserErrors) {
  std::mt19937_64 rng(simkit::test::printed_seed(616));
  TempDir dir;
  const std::string good = kPython2Pickle;
  int errors = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string bytes = good;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < changes; ++k) {
      const std::size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng() & 0xff);
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 8);
          break;
        default:
          bytes.insert(at, 1, "()tlapgsbRN.\\'\n0123456789SVFIL"[rng() % 31]);
      }
      if (bytes.empty()) bytes = "x";
    }
    const fs::path file = dir.write("m.prc", bytes);
    try {
      (void)read_prc(file);
    } catch (const UserError& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << ": not a UserError: " << e.what() << "\nbytes:\n" << bytes;
    }
  }
  EXPECT_GT(errors, 0);
}

// A pickle nested deeper than any project (nested tuples, 2 bytes a level; 0.8 MB, well under the
// 16 MiB a project file may have): a UserError, and the reader overflows the stack neither
// building the objects nor freeing them. Run in a child process, so that a crash fails this test
// only.
TEST(ReadPrcCorruptDeathTest, DeepNestingDoesNotCrash) {
  TempDir dir;
  const std::size_t depth = 400000;
  const fs::path file = dir.write("deep.prc", std::string(depth, '(') + std::string(depth, 't') + ".");
  EXPECT_EXIT(
      {
        try {
          (void)read_prc(file);
        } catch (const UserError&) {
          std::_Exit(0);
        } catch (...) {
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      testing::ExitedWithCode(0), "");
}

// ----------------------------------------------------------------------------------------------
// 5. File names written on Windows or POSIX

TEST(PortableFileName, WindowsAndPosixPaths) {
  EXPECT_EQ(portable_file_name("C:\\data\\x.txt"), "x.txt");
  EXPECT_EQ(portable_file_name("C:/data/x.txt"), "x.txt");
  EXPECT_EQ(portable_file_name("D:\\my data\\run 1\\t 96h.txt"), "t 96h.txt");
  EXPECT_EQ(portable_file_name("\\\\server\\share\\h0.txt"), "h0.txt");
  EXPECT_EQ(portable_file_name("/home/me/h0.txt"), "h0.txt");
  EXPECT_EQ(portable_file_name("relative/dir\\mixed/h0.txt"), "h0.txt");
  EXPECT_EQ(portable_file_name("h0.txt"), "h0.txt");
  EXPECT_EQ(portable_file_name("C:h0.txt"), "C:h0.txt");  // a drive-relative path keeps its text
  EXPECT_EQ(portable_file_name(""), "");
}

// ----------------------------------------------------------------------------------------------
// 6. Bounds in the model TOML

void expect_error(const std::string& message, const std::string& file, int line, const std::string& field,
                  const std::string& fragment) {
  EXPECT_NE(message.find(file + ":" + std::to_string(line) + ":"), std::string::npos) << message;
  EXPECT_NE(message.find("field '" + field + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << fragment << " in: " << message;
}

TEST(FitModelToml, BoundsFillTheSpec) {
  TempDir dir;
  const fs::path file = dir.write("fit.toml", R"(phi_min = { min = 1, max = 20 }
times = [96]
start = "procell-async"

[[population]]
name = "fast"
proportion = { min = 0.1, max = 0.9 }
mean = { min = 30, max = 63 }
sd = { max = 9, min = 2 }

[[population]]
name = "slow"
proportion = { min = 0, max = 1 }
mean = 50
sd = 5
distribution = "gamma"

[[population]]
name = "rest"
proportion = 0.1
quiescent = true
)");
  const FitModelFile f = read_fit_model_toml(file);
  const FitSpec& s = f.spec;
  ASSERT_EQ(s.model.populations.size(), 3u);
  ASSERT_EQ(s.free.size(), 3u);
  ASSERT_TRUE(s.phi_min.has_value());
  EXPECT_EQ(s.phi_min->min, 1.0);
  EXPECT_EQ(s.phi_min->max, 20.0);
  ASSERT_TRUE(s.free[0].proportion && s.free[0].mean && s.free[0].sd);
  EXPECT_EQ(s.free[0].proportion->min, 0.1);
  EXPECT_EQ(s.free[0].proportion->max, 0.9);
  EXPECT_EQ(s.free[0].mean->min, 30.0);
  EXPECT_EQ(s.free[0].mean->max, 63.0);
  EXPECT_EQ(s.free[0].sd->min, 2.0);  // min and max in either order
  EXPECT_EQ(s.free[0].sd->max, 9.0);
  ASSERT_TRUE(s.free[1].proportion.has_value());
  EXPECT_EQ(s.free[1].proportion->max, 1.0);
  EXPECT_FALSE(s.free[1].mean.has_value());
  EXPECT_FALSE(s.free[1].sd.has_value());
  EXPECT_FALSE(s.free[2].proportion.has_value());
  // Fixed values as written, free ones at their midpoints (placeholders).
  EXPECT_EQ(s.model.populations[0].mean, 46.5);
  EXPECT_EQ(s.model.populations[0].sd, 5.5);
  EXPECT_EQ(s.model.populations[1].mean, 50.0);
  EXPECT_EQ(s.model.populations[1].distribution, Distribution::Gamma);
  EXPECT_EQ(s.model.populations[2].proportion, 0.1);
  EXPECT_TRUE(s.model.populations[2].quiescent);
  EXPECT_EQ(s.model.phi_min, 10.5);
  EXPECT_EQ(s.model.times, std::vector<double>{96});
  EXPECT_EQ(s.model.start, StartMode::ProcellAsync);
  EXPECT_NO_THROW(validate(s, file.string()));
  const std::vector<FreeParameter> params = free_parameters(s);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "fast.fraction");
  EXPECT_EQ(params[1].name, "fast.mean");
  EXPECT_EQ(params[2].name, "fast.sd");
  EXPECT_EQ(params[3].name, "phi_min");
  FitSpec settled = s;
  settle_placeholders(settled);
  EXPECT_NO_THROW(validate(settled.model, file.string()));

  // A model without any bounds reads the same as with read_model_toml: no freedom at all.
  const fs::path plain = dir.write("plain.toml", "t_max = 50\n[[population]]\nproportion = 1\nmean = 10\nsd = 2\n");
  const FitModelFile g = read_fit_model_toml(plain);
  ASSERT_EQ(g.spec.free.size(), 1u);
  EXPECT_FALSE(g.spec.free[0].mean || g.spec.free[0].sd || g.spec.free[0].proportion || g.spec.phi_min);
  EXPECT_EQ(g.spec.model.populations[0].mean, read_model_toml(plain).model.populations[0].mean);
}

std::string fit_toml_error(const std::string& content, bool fit = true) {
  TempDir dir;
  const fs::path file = dir.write("fit.toml", content);
  return user_error([&] {
    if (fit) {
      (void)read_fit_model_toml(file);
    } else {
      (void)read_model_toml(file);
    }
  });
}

TEST(FitModelToml, BadBoundsNameFileLineAndField) {
  const std::string head = "t_max = 50\n[[population]]\nname = \"a\"\nproportion = 1\n";  // lines 1-4
  {
    SCOPED_TRACE("inverted");
    expect_error(fit_toml_error(head + "mean = { min = 63, max = 30 }\nsd = 2\n"), "fit.toml", 5, "mean", "inverted");
  }
  {
    SCOPED_TRACE("empty");
    expect_error(fit_toml_error(head + "mean = 20\nsd = { min = 3, max = 3 }\n"), "fit.toml", 6, "sd", "not below");
  }
  {
    SCOPED_TRACE("missing max");
    expect_error(fit_toml_error(head + "mean = 20\nsd = { min = 2 }\n"), "fit.toml", 6, "sd", "max");
  }
  {
    SCOPED_TRACE("unknown key in the bounds");
    expect_error(fit_toml_error(head + "mean = { min = 1, max = 5, step = 1 }\nsd = 2\n"), "fit.toml", 5, "mean",
                 "step");
  }
  {
    SCOPED_TRACE("a string bound");
    expect_error(fit_toml_error(head + "mean = { min = \"1\", max = 5 }\nsd = 2\n"), "fit.toml", 5, "mean.min", "");
  }
  {
    SCOPED_TRACE("a mean lower bound of 0");
    expect_error(fit_toml_error(head + "mean = { min = 0, max = 5 }\nsd = 2\n"), "fit.toml", 5, "mean", "lower bound");
  }
  {
    SCOPED_TRACE("a proportion bound above 1");
    expect_error(fit_toml_error("t_max = 50\n[[population]]\nname = \"a\"\nproportion = { min = 0.5, max = 1.5 }\n"
                                "mean = 5\nsd = 1\n[[population]]\nname = \"b\"\nproportion = { min = 0, max = 1 }\n"
                                "mean = 5\nsd = 1\n"),
                 "fit.toml", 4, "proportion", "");
  }
  {
    SCOPED_TRACE("a negative phi_min lower bound");
    expect_error(fit_toml_error("phi_min = { min = -1, max = 5 }\n" + head.substr(11) + "mean = 5\nsd = 1\n"),
                 "fit.toml", 1, "phi_min", "lower bound");
  }
  {
    SCOPED_TRACE("bounds for a quiescent population's mean");
    expect_error(fit_toml_error("t_max = 50\n[[population]]\nname = \"q\"\nproportion = 0.5\nquiescent = true\n"
                                "mean = { min = 1, max = 5 }\n[[population]]\nname = \"a\"\nproportion = 0.5\n"
                                "mean = 5\nsd = 1\n"),
                 "fit.toml", 6, "mean", "quiescent");
  }
  {
    SCOPED_TRACE("bounds in a model for simkit prolif simulate");
    const std::string message = fit_toml_error(head + "mean = { min = 1, max = 5 }\nsd = 2\n", false);
    expect_error(message, "fit.toml", 5, "mean", "simkit prolif fit");
  }
  {
    SCOPED_TRACE("phi_min bounds in a model for simkit prolif simulate");
    const std::string message =
        fit_toml_error("phi_min = { min = 1, max = 5 }\n" + head.substr(11) + "mean = 5\nsd = 1\n", false);
    expect_error(message, "fit.toml", 1, "phi_min", "simkit prolif fit");
  }
}

}  // namespace
}  // namespace simkit::prolif
