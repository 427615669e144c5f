#include "support/test_support.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "simkit/core/cuda_info.hpp"

namespace simkit::test {

std::optional<std::filesystem::path> data_dir() {
  if (const char* env = std::getenv("SIMKIT_DATA_DIR")) {
    if (std::filesystem::is_directory(env)) return std::filesystem::path(env);
    return std::nullopt;
  }
  const std::filesystem::path dflt = SIMKIT_DEFAULT_DATA_DIR;
  if (std::filesystem::is_directory(dflt)) return dflt;
  return std::nullopt;
}

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = std::filesystem::temp_directory_path() / fmt::format("simkit-test-{:08x}", rd());
    std::error_code ec;
    if (std::filesystem::create_directory(candidate, ec)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& content) const {
  const auto p = path_ / name;
  std::ofstream out(p, std::ios::binary);
  out << content;
  return p;
}

std::uint64_t test_seed(std::uint64_t fallback) {
  if (const char* env = std::getenv("SIMKIT_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return fallback;
}

std::uint64_t printed_seed(std::uint64_t fallback) {
  const std::uint64_t seed = test_seed(fallback);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::string> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    files[std::filesystem::relative(entry.path(), root).string()] =
        entry.is_regular_file() ? slurp(entry.path()) : std::string("<directory>");
  }
  return files;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool empty_or_absent(const std::filesystem::path& dir) {
  return !std::filesystem::exists(dir) || (std::filesystem::is_directory(dir) && std::filesystem::is_empty(dir));
}

std::string simkit_binary() {
  if (const char* env = std::getenv("SIMKIT_BIN")) return env;
  // Bundle layout: the test binaries sit next to simkit.
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  const std::filesystem::path self(std::string(buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0));
  for (const auto& candidate : {self.parent_path() / "simkit", self.parent_path().parent_path() / "bin" / "simkit"}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return "simkit";
}

namespace {
std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

CommandResult run_simkit(const std::vector<std::string>& args) { return run_simkit_after("", args); }

CommandResult run_simkit_after(const std::string& shell_prefix, const std::vector<std::string>& args) {
  TempDir tmp;
  std::string cmd = shell_prefix + quote(simkit_binary());
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((tmp / "out").string()) + " 2>" + quote((tmp / "err").string()) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(tmp / "out");
  r.err = slurp(tmp / "err");
  return r;
}

std::string mpi_launcher() {
  if (const char* launcher = std::getenv("SIMKIT_MPIEXEC")) return launcher;
#ifdef SIMKIT_DEFAULT_MPIEXEC
  return SIMKIT_DEFAULT_MPIEXEC;
#else
  return {};
#endif
}

CommandResult run_simkit_mpi(int ranks, const std::vector<std::string>& args) {
  // CI runs as root (OpenMPI refuses root without the two variables); --oversubscribe: more ranks
  // than cores; the TCP and shared-memory transports only, no warnings about absent fabrics.
  const std::string prefix = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp "
                             "OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none " +
                             quote(mpi_launcher()) + " -n " + std::to_string(ranks) + " --oversubscribe ";
  return run_simkit_after(prefix, args);
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

double ks_critical(std::size_t n, double alpha) {
  // Asymptotic: c(alpha) / sqrt(n), c = sqrt(-ln(alpha/2) / 2).
  return std::sqrt(-0.5 * std::log(alpha / 2.0)) / std::sqrt(static_cast<double>(n));
}

bool cuda_usable(std::string* reason) {
  const CudaStatus s = cuda_status();
  if (reason) *reason = s.reason;
  return s.usable;
}

}  // namespace simkit::test

std::string simkit::test::test_python(const std::string& module) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("SIMKIT_TEST_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back(SIMKIT_DEFAULT_VENV_PYTHON);
  candidates.emplace_back("python3");
  for (const std::string& py : candidates) {
    if (py.find('/') != std::string::npos && !std::filesystem::exists(py)) continue;
    const std::string import = module.empty() ? "pass" : "import " + module;
    const std::string cmd = "'" + py + "' -c '" + import + "' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}
