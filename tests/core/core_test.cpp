// The rest of src/core: atomic output, error messages, backend choice and the SVG plot writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/error.hpp"
#include "core/input.hpp"
#include "core/output.hpp"
#include "core/svg.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using simkit::Backend;
using simkit::UserError;
using simkit::test::slurp;
using simkit::test::user_error;

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// ---- Atomic output ---------------------------------------------------------------------------------

TEST(AtomicFile, CommitWritesTheContentAndLeavesNoTemporary) {
  simkit::test::TempDir dir;
  const fs::path target = dir / "result.csv";
  {
    simkit::AtomicFile file(target);
    file.stream() << "a,b\n1,2\n";
    EXPECT_FALSE(fs::exists(target)) << "the target must not appear before commit()";
    file.commit();
  }
  EXPECT_EQ(slurp(target), "a,b\n1,2\n");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"result.csv"});
}

TEST(AtomicFile, CommitReplacesAnExistingFile) {
  simkit::test::TempDir dir;
  const fs::path target = dir.write("out.txt", "old content that is longer than the new one\n");
  simkit::write_file_atomic(target, "new\n");
  EXPECT_EQ(slurp(target), "new\n");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, UncommittedFileLeavesNothingBehind) {
  simkit::test::TempDir dir;
  {
    simkit::AtomicFile file(dir / "never.csv");
    file.stream() << "partial";
    EXPECT_EQ(entries(dir.path()).size(), 1U) << "a temporary is being written";
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(AtomicFile, UncommittedFileKeepsAnExistingTarget) {
  // An interrupted run must not destroy the previous result either.
  simkit::test::TempDir dir;
  const fs::path target = dir.write("keep.csv", "previous\n");
  try {
    simkit::AtomicFile file(target);
    file.stream() << "half-written";
    throw std::runtime_error("simulated failure while writing");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(slurp(target), "previous\n");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"keep.csv"});
}

TEST(AtomicFile, MissingDirectoryIsAUserErrorNamingThePath) {
  simkit::test::TempDir dir;
  const fs::path target = dir / "no-such-dir" / "out.csv";
  const std::string message = user_error([&] { simkit::write_file_atomic(target, "x"); });
  EXPECT_NE(message.find(target.string()), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "no-such-dir"));
  const std::string direct = user_error([&] { simkit::AtomicFile file(target); });
  EXPECT_NE(direct.find(target.string()), std::string::npos) << direct;
}

TEST(OutputDirectory, CreatesNestedDirectories) {
  simkit::test::TempDir dir;
  const fs::path nested = dir / "a" / "b" / "c";
  simkit::ensure_output_directory(nested);
  EXPECT_TRUE(fs::is_directory(nested));
  simkit::ensure_output_directory(nested);  // existing: fine
  simkit::write_file_atomic(nested / "x.txt", "ok");
  EXPECT_EQ(slurp(nested / "x.txt"), "ok");
}

// An input a run could overwrite is refused, naming both: the same file, through a symbolic or a
// hard link, or inside the output directory (existing or not yet); a sibling whose name starts like
// the directory's is not inside it.
TEST(OutputDirectory, InputsTheRunCouldOverwriteAreRefused) {
  simkit::test::TempDir dir;
  const fs::path input = dir.write("in.csv", "1,2\n");
  fs::create_symlink(input, dir / "soft.csv");
  fs::create_hard_link(input, dir / "hard.csv");
  auto refused = [&](const fs::path& output, bool directory, const fs::path& in) {
    try {
      simkit::refuse_input_as_output(output, directory, "--input", in, "--out");
    } catch (const simkit::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--input"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos) << e.what();
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(input, false, input));
  EXPECT_TRUE(refused(dir / "soft.csv", false, input));
  EXPECT_TRUE(refused(input, false, dir / "hard.csv"));
  EXPECT_FALSE(refused(dir / "other.csv", false, input));  // does not exist yet: no clash
  const fs::path out = dir / "out";
  fs::create_directories(out / "deep");
  const fs::path inside = dir.write("out/deep/h.txt", "x");
  EXPECT_TRUE(refused(out, true, inside));
  EXPECT_TRUE(refused(dir / "out" / "", true, inside));  // a trailing separator
  EXPECT_TRUE(refused(dir.path(), true, input));               // the output directory holds the input
  const fs::path sibling = dir.write("out2.txt", "y");  // "out2.txt" starts like "out"
  EXPECT_FALSE(refused(out, true, sibling));
  EXPECT_FALSE(refused(dir / "new", true, input));  // a directory not made yet holds nothing
  EXPECT_FALSE(refused(out, true, ""));             // no input given
}

// Inputs are checked before a byte is read: devices and directories are refused, and a file over
// its format's limit (a sparse 17 MiB "config") is refused by its size.
TEST(InputFile, DevicesDirectoriesAndOversizedFilesAreRefused) {
  simkit::test::TempDir dir;
  auto message = [](const fs::path& path, std::uintmax_t limit) {
    try {
      (void)simkit::read_whole_file(path, path.string(), limit);
    } catch (const simkit::UserError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_NE(message("/dev/zero", simkit::kAnySize).find("not a regular file"), std::string::npos);
  EXPECT_NE(message(dir.path(), simkit::kAnySize).find("is a directory"), std::string::npos);
  EXPECT_NE(message(dir / "none.toml", simkit::kAnySize).find("no such file"), std::string::npos);
  const fs::path big = dir.write("big.toml", "");
  fs::resize_file(big, simkit::kConfigFileBytes + 1);
  EXPECT_NE(message(big, simkit::kConfigFileBytes).find("at most 16 MiB"), std::string::npos) << message(big, simkit::kConfigFileBytes);
  const fs::path small = dir.write("small.toml", "a = 1\n");
  EXPECT_EQ(simkit::read_whole_file(small, "small.toml", simkit::kConfigFileBytes), "a = 1\n");
}

TEST(OutputDirectory, AFileOfThatNameIsAUserError) {
  simkit::test::TempDir dir;
  const fs::path file = dir.write("taken", "I am a file\n");
  const std::string message = user_error([&] { simkit::ensure_output_directory(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("cannot create"), std::string::npos) << message;
  // And a file in the middle of the path.
  const std::string below = user_error([&] { simkit::ensure_output_directory(file / "sub"); });
  EXPECT_NE(below.find((file / "sub").string()), std::string::npos) << below;
  EXPECT_EQ(slurp(file), "I am a file\n");
}

// A committed StagedOutput: this run's files in place (replacing same names), the stale files of an
// earlier run gone, the user's own files untouched, no staging directory left.
TEST(StagedOutput, CommitMovesTheRunsFilesAndRemovesStaleOnes) {
  simkit::test::TempDir dir;
  const fs::path out = dir / "out";
  fs::create_directories(out / "snapshots");
  for (const char* name : {"snapshots/angio_000000.vti", "snapshots/angio_000900.vti", "series.csv", "notes.txt",
                           "snapshots/mine.vti"}) {
    std::ofstream(out / name) << "old " << name;
  }
  {
    simkit::StagedOutput staged(out);
    EXPECT_EQ(staged.dir().parent_path(), out);
    fs::create_directories(staged.dir() / "snapshots");
    std::ofstream(staged.dir() / "snapshots" / "angio_000000.vti") << "new 0";
    std::ofstream(staged.dir() / "series.csv") << "new series";
    staged.commit([](const fs::path& rel) {
      return rel == "series.csv" || simkit::matches_output_pattern(rel, "snapshots", "angio_", ".vti");
    });
  }
  EXPECT_EQ(slurp(out / "snapshots" / "angio_000000.vti"), "new 0");
  EXPECT_EQ(slurp(out / "series.csv"), "new series");
  EXPECT_FALSE(fs::exists(out / "snapshots" / "angio_000900.vti")) << "an earlier run's snapshot stayed";
  EXPECT_EQ(slurp(out / "notes.txt"), "old notes.txt");  // not the run's: kept
  EXPECT_EQ(slurp(out / "snapshots" / "mine.vti"), "old snapshots/mine.vti");
  std::vector<std::string> names = entries(out);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"notes.txt", "series.csv", "snapshots"}));
}

// Without a commit (an error, a stop), the directory is as it was: an existing one keeps exactly
// its files; a new one, and the parents made for it, are gone.
TEST(StagedOutput, WithoutACommitNothingChanges) {
  simkit::test::TempDir dir;
  const fs::path used = dir / "used";
  fs::create_directories(used);
  std::ofstream(used / "result.json") << "old";
  {
    simkit::StagedOutput staged(used);
    std::ofstream(staged.dir() / "result.json") << "new";
  }
  EXPECT_EQ(entries(used), std::vector<std::string>{"result.json"});
  EXPECT_EQ(slurp(used / "result.json"), "old");
  {
    simkit::StagedOutput staged(dir / "a" / "b" / "out");
    EXPECT_TRUE(fs::is_directory(dir / "a" / "b" / "out"));
    std::ofstream(staged.dir() / "x") << "x";
  }
  EXPECT_FALSE(fs::exists(dir / "a")) << "the directories made for the failed run stayed";
}

// An unwritable place is refused when the staging starts, before any work, naming --out's field;
// check_output_directory says the same without creating anything.
TEST(StagedOutput, AnUnwritablePlaceIsRefusedBeforeAnyWork) {
  simkit::test::TempDir dir;
  const fs::path file = dir.write("taken", "I am a file\n");
  const std::string staged = user_error([&] { simkit::StagedOutput s(file / "out"); });
  EXPECT_NE(staged.find((file / "out").string()), std::string::npos) << staged;
  const std::string checked = user_error([&] { simkit::check_output_directory(file / "out"); });
  EXPECT_NE(checked.find("not a directory"), std::string::npos) << checked;
  EXPECT_NO_THROW(simkit::check_output_directory(dir / "new" / "deeper"));
  EXPECT_FALSE(fs::exists(dir / "new"));
  EXPECT_EQ(slurp(file), "I am a file\n");
}

// ---- Errors ----------------------------------------------------------------------------------------

TEST(InputError, FormatsFileLineFieldAndProblem) {
  EXPECT_STREQ(simkit::input_error("f.txt", 12, "sd", "must be >= 0").what(), "f.txt:12: field 'sd': must be >= 0");
  EXPECT_STREQ(simkit::input_error("f.txt", 0, "sd", "must be >= 0").what(), "f.txt: field 'sd': must be >= 0");
  EXPECT_STREQ(simkit::input_error("f.txt", 3, "", "expected 4 columns").what(), "f.txt:3: expected 4 columns");
  EXPECT_STREQ(simkit::input_error("f.txt", 0, "", "empty file").what(), "f.txt: empty file");
  // A UserError is what the CLI catches for exit code 2.
  const std::runtime_error& base = simkit::input_error("f.txt", 1, "x", "bad");
  EXPECT_NE(dynamic_cast<const UserError*>(&base), nullptr);
  EXPECT_EQ(simkit::kExitUser, 2);
  EXPECT_EQ(simkit::kExitInternal, 1);
}

// ---- Backend choice --------------------------------------------------------------------------------

TEST(Backend, ParsesTheFourNames) {
  EXPECT_EQ(simkit::parse_backend("auto"), Backend::Auto);
  EXPECT_EQ(simkit::parse_backend("reference"), Backend::Reference);
  EXPECT_EQ(simkit::parse_backend("cpu"), Backend::Cpu);
  EXPECT_EQ(simkit::parse_backend("cuda"), Backend::Cuda);
  for (const Backend b : {Backend::Auto, Backend::Reference, Backend::Cpu, Backend::Cuda}) {
    EXPECT_EQ(simkit::parse_backend(simkit::to_string(b)), b);
  }
}

TEST(Backend, RejectsOtherNamesWithAUserError) {
  for (const char* bad : {"", "gpu", "CUDA", "Cpu", "cpu ", "openmp", "ref"}) {
    const std::string message = user_error([&] { (void)simkit::parse_backend(bad); });
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("auto, reference, cpu or cuda"), std::string::npos) << message;
  }
}

TEST(Backend, ReferenceAndCpuResolveToThemselves) {
  EXPECT_EQ(simkit::resolve_backend(Backend::Reference, 0), Backend::Reference);
  EXPECT_EQ(simkit::resolve_backend(Backend::Cpu, 0), Backend::Cpu);
  EXPECT_EQ(simkit::resolve_backend(Backend::Cpu, 12345), Backend::Cpu);  // the device does not matter
}

TEST(Backend, CudaAndAutoFollowTheMachine) {
  const simkit::CudaStatus status = simkit::cuda_status();
  std::printf("[ info     ] CUDA built %d, usable %d (%s), %zu device(s)\n", status.built, status.usable,
              status.reason.c_str(), status.devices.size());
  if (status.usable) {
    EXPECT_EQ(simkit::resolve_backend(Backend::Cuda, 0), Backend::Cuda);
    EXPECT_EQ(simkit::resolve_backend(Backend::Auto, 0), Backend::Cuda);
  } else {
    const std::string message = user_error([] { (void)simkit::resolve_backend(Backend::Cuda, 0); });
    EXPECT_EQ(message.rfind("backend cuda", 0), 0u) << message;
    EXPECT_NE(message.find(status.reason), std::string::npos) << "the reason is given: " << message;
    EXPECT_EQ(simkit::resolve_backend(Backend::Auto, 0), Backend::Cpu);
  }
  // A device that does not exist: a UserError for Cuda on any machine, and Auto falls back to Cpu.
  const std::string missing = user_error([] { (void)simkit::resolve_backend(Backend::Cuda, 9999); });
  EXPECT_FALSE(missing.empty());
  EXPECT_EQ(simkit::resolve_backend(Backend::Auto, 9999), Backend::Cpu);
  EXPECT_EQ(simkit::resolve_backend(Backend::Auto, -1), Backend::Cpu);
}

TEST(Backend, DescriptionsAndThreads) {
  EXPECT_EQ(simkit::device_description(Backend::Reference, 0, 8), "CPU, 1 thread");
  EXPECT_EQ(simkit::device_description(Backend::Cpu, 0, 3), "CPU, 3 threads");
  EXPECT_EQ(simkit::effective_threads(5), 5);
  EXPECT_GE(simkit::effective_threads(0), 1);
}

// Thread counts the OpenMP runtime cannot start (100000 ended in a SIGSEGV inside libgomp, INT_MAX
// in its exit(1)) are refused as a UserError naming `threads`, before any work.
TEST(Backend, ThreadCountsAreLimited) {
  EXPECT_GE(simkit::max_threads(), 256);
  EXPECT_EQ(simkit::checked_threads(0), 0);
  EXPECT_EQ(simkit::checked_threads(simkit::max_threads()), simkit::max_threads());
  for (int bad : {-1, simkit::max_threads() + 1, 100000, std::numeric_limits<int>::max()}) {
    try {
      (void)simkit::effective_threads(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const simkit::UserError& e) {
      EXPECT_EQ(e.field(), "threads") << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
}

// ---- SVG -------------------------------------------------------------------------------------------

simkit::PlotSeries series(std::string label, std::vector<double> x, std::vector<double> y) {
  simkit::PlotSeries s;
  s.label = std::move(label);
  s.x = std::move(x);
  s.y = std::move(y);
  return s;
}

void expect_well_formed(const std::string& svg) {
  EXPECT_EQ(svg.rfind("<svg", 0), 0U) << svg.substr(0, 80);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << "a NaN coordinate was written";
  EXPECT_EQ(svg.find("inf"), std::string::npos) << "an infinite coordinate was written";
}

TEST(Svg, ContainsTheSeriesLabelsAndTitle) {
  simkit::PlotSpec spec;
  spec.title = "Cell counts";
  spec.x_label = "time (h)";
  spec.y_label = "cells";
  spec.series.push_back(series("simulated", {0, 1, 2, 3}, {1, 2, 4, 8}));
  auto measured = series("measured <data> & co", {0, 1.5, 3}, {1, 3, 7});
  measured.band_low = {0.5, 2, 6};
  measured.band_high = {1.5, 4, 8};
  measured.dashed = true;
  measured.color = "#ff7f0e";
  spec.series.push_back(measured);
  const std::string svg = simkit::render_svg(spec);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("Cell counts"), std::string::npos);
  EXPECT_NE(svg.find("time (h)"), std::string::npos);
  EXPECT_NE(svg.find("simulated"), std::string::npos);
  EXPECT_NE(svg.find("measured &lt;data&gt; &amp; co"), std::string::npos) << "labels are XML-escaped";
  EXPECT_NE(svg.find("<polygon"), std::string::npos) << "the band is drawn";
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
}

TEST(Svg, EmptyPlotsDoNotCrash) {
  simkit::PlotSpec nothing;
  expect_well_formed(simkit::render_svg(nothing));

  simkit::PlotSpec empty_series;
  empty_series.series.push_back(series("empty", {}, {}));
  const std::string svg = simkit::render_svg(empty_series);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("empty"), std::string::npos);

  simkit::PlotSpec one_point;
  one_point.series.push_back(series("single", {5}, {0}));
  expect_well_formed(simkit::render_svg(one_point));
}

TEST(Svg, LogAxisSkipsZerosAndNegatives) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  simkit::PlotSpec spec;
  spec.log_x = true;
  spec.series.push_back(series("with zeros", {0, -1, 1e-3, 1, 10, 1e4}, {5, 5, 1, 2, kNaN, 3}));
  spec.series.push_back(series("all zero", {0, 0}, {1, 2}));
  spec.series.push_back(series("non-finite", {kNaN, kInf, 100}, {1, 1, kInf}));
  const std::string svg = simkit::render_svg(spec);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("with zeros"), std::string::npos);
  EXPECT_NE(svg.find("1e-3"), std::string::npos) << "decade ticks on the log axis";
  EXPECT_NE(svg.find("1e4"), std::string::npos);

  simkit::PlotSpec only_zeros;
  only_zeros.log_x = true;
  only_zeros.series.push_back(series("zeros", {0, 0, 0}, {0, 0, 0}));
  expect_well_formed(simkit::render_svg(only_zeros));
}

}  // namespace

// A field error keeps the library's field apart from the text, so that front ends name it their
// own way; `field` references in the text are named the same way (docs/architecture.md, "Errors").
TEST(UserError, FieldErrorsAreRenamedByFrontEnds) {
  const simkit::UserError e("t_max", " 0: must be positive; or give `steps` (and `force`)");
  EXPECT_EQ(e.field(), "t_max");
  EXPECT_STREQ(e.what(), "t_max 0: must be positive; or give `steps` (and `force`)");
  const auto flag = [](std::string_view field) {
    std::string f = "--" + std::string(field);
    for (char& ch : f) ch = ch == '_' ? '-' : ch;
    return f;
  };
  EXPECT_EQ(simkit::message_naming(e, flag), "--t-max 0: must be positive; or give --steps (and --force)");
  const simkit::UserError plain("file.csv:3: give `coords` f64");
  EXPECT_TRUE(plain.field().empty());
  EXPECT_EQ(simkit::message_naming(plain, flag), "file.csv:3: give --coords f64");
  const simkit::UserError unmatched("a ` alone");
  EXPECT_EQ(simkit::message_naming(unmatched, flag), "a ` alone");
  const simkit::DeviceMemoryError memory("grid", " 9,9,9: needs 1 GiB");
  EXPECT_EQ(simkit::message_naming(memory, flag), "--grid 9,9,9: needs 1 GiB");
}
