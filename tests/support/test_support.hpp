#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simkit/core/error.hpp"

// In a TEST body: skips the test, with the reason, when no CUDA device is usable.
#define SIMKIT_SKIP_WITHOUT_CUDA()                                                          \
  do {                                                                                      \
    std::string why;                                                                        \
    if (!simkit::test::cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why; \
  } while (0)

namespace simkit::test {

// ../shared/data (or $SIMKIT_DATA_DIR) when present, else nullopt: tests then GTEST_SKIP().
std::optional<std::filesystem::path> data_dir();

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  std::filesystem::path write(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

// The seed of a property test: $SIMKIT_TEST_SEED when set, else `fallback`; printed by the caller.
std::uint64_t test_seed(std::uint64_t fallback);

// test_seed(fallback), printed to stdout as "seed N".
std::uint64_t printed_seed(std::uint64_t fallback);

// The whole content of a file ("" when it cannot be read).
std::string slurp(const std::filesystem::path& p);

// Every file and directory under `root` with its content ("<directory>" for a directory), by path
// relative to `root`; empty when `root` does not exist. The state a failed run must leave as it found it.
std::map<std::string, std::string> snapshot(const std::filesystem::path& root);

// The lines of `text`, without their '\n'.
std::vector<std::string> lines_of(const std::string& text);

// True when `dir` does not exist or is an empty directory.
bool empty_or_absent(const std::filesystem::path& dir);

// Base64 of `bytes` (RFC 4648, with '=' padding), as VTK's binary DataArrays hold them.
inline std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<std::uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

template <class T>
std::string raw_bytes(const T& value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// The point data of a 2x2x2 image as VTK writes binary arrays: n and f (Float32) appended in base64,
// each as its UInt32 byte count and its data encoded separately; c (Float64) inline, count and data
// encoded together. `points` goes inside <PointData>, `appended` after </ImageData>.
struct Base64PointData {
  std::string points, appended;
};
inline Base64PointData base64_point_data(const std::vector<float>& n, const std::vector<float>& f,
                                         const std::vector<double>& c) {
  const std::string n_text = base64(raw_bytes(static_cast<std::uint32_t>(n.size() * sizeof(float)))) +
                             base64(raw_bytes(n));
  const std::string f_text = base64(raw_bytes(static_cast<std::uint32_t>(f.size() * sizeof(float)))) +
                             base64(raw_bytes(f));
  Base64PointData d;
  d.points = "        <DataArray type=\"Float32\" Name=\"n\" format=\"appended\" offset=\"0\"/>\n"
             "        <DataArray type=\"Float32\" Name=\"f\" format=\"appended\" offset=\"" +
             std::to_string(n_text.size()) +
             "\"/>\n"
             "        <DataArray type=\"Float64\" Name=\"c\" format=\"binary\">\n          " +
             base64(raw_bytes(static_cast<std::uint32_t>(c.size() * sizeof(double))) + raw_bytes(c)) +
             "\n        </DataArray>\n";
  d.appended = "  <AppendedData encoding=\"base64\">\n   _" + n_text + f_text + "\n  </AppendedData>\n";
  return d;
}

// The message of the UserError that `f` throws ("" and a test failure if it throws none, or
// throws another exception).
template <class F>
std::string user_error(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UserError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected a UserError, nothing was thrown";
  return {};
}

// Runs the simkit CLI ($SIMKIT_BIN, or bin/simkit next to the test's directory) with `args`;
// returns the exit code and captures stdout and stderr.
struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
CommandResult run_simkit(const std::vector<std::string>& args);
// The same after `shell_prefix`, shell commands run first in the same /bin/sh (for example
// "ulimit -f 8; trap '' XFSZ; " to make every write past 8 blocks fail as on a full disk).
CommandResult run_simkit_after(const std::string& shell_prefix, const std::vector<std::string>& args);
// The simkit binary the CLI tests run.
std::string simkit_binary();
// `mpirun -n RANKS --oversubscribe simkit ARGS...` (the launcher from $SIMKIT_MPIEXEC, which CTest sets
// for the `mpi` tests); mpi_launcher() is empty when there is none (the tests then skip).
std::string mpi_launcher();
CommandResult run_simkit_mpi(int ranks, const std::vector<std::string>& args);

// A Python interpreter that imports `module` (e.g. "flowio", or "" for any): $SIMKIT_TEST_PYTHON,
// else the venv scripts/setup.sh makes (build/venv/bin/python3), else python3 on PATH; empty when
// none does (the test then skips). Tests use it to write files with PyPI libraries at test time.
std::string test_python(const std::string& module);

// "exit N", stdout and stderr of a run, for failure messages.
std::string describe(const CommandResult& r);

// Two-sided Kolmogorov-Smirnov statistic of `sample` against `cdf`.
template <class Cdf>
double ks_statistic(std::vector<double> sample, Cdf cdf);

// Critical value of the KS statistic at significance alpha for n samples (asymptotic).
double ks_critical(std::size_t n, double alpha);

// True when a CUDA device is usable (for GPU tests to skip with a visible reason).
bool cuda_usable(std::string* reason = nullptr);

}  // namespace simkit::test

#include <algorithm>
#include <cmath>

template <class Cdf>
double simkit::test::ks_statistic(std::vector<double> sample, Cdf cdf) {
  std::sort(sample.begin(), sample.end());
  const double n = static_cast<double>(sample.size());
  double d = 0;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const double f = cdf(sample[i]);
    d = std::max(d, std::max(f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f));
  }
  return d;
}
