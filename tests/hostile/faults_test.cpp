// Faults during a run (docs/reliability.md): a signal, a full disk, a run into a used output
// directory, a run that died and is restarted. Each runs the real CLI and compares the work
// directory before and after: a run that does not finish leaves its --out as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <csignal>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace simkit {
namespace {

namespace fs = std::filesystem;
using namespace simkit::test;

const fs::path kExamples = fs::path(SIMKIT_SOURCE_DIR) / "examples";

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Starts simkit with `args` (stdout and stderr to files in `logs`); returns its pid.
pid_t spawn_simkit(const std::vector<std::string>& args, const fs::path& logs) {
  const std::string binary = simkit_binary();
  const std::string out = (logs / "stdout").string(), err = (logs / "stderr").string();
  std::vector<std::string> argv_store = {binary};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits at most `seconds` for `pid`; kills it (and reports -1) if it does not end: a hang.
int wait_exit_code(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

struct SignalCase {
  std::string name;
  std::vector<std::string> earlier;  // a short run that fills OUT first
  std::vector<std::string> longer;   // a run long enough to be stopped
  int signal;
};
std::ostream& operator<<(std::ostream& os, const SignalCase& c) { return os << c.name; }

std::vector<std::string> prolif(std::vector<std::string> more) {
  std::vector<std::string> args = {"prolif", "simulate", "--histogram", (kExamples / "prolif" / "h0.txt").string(),
                                   "--config", (kExamples / "prolif" / "model.toml").string(), "--out", "OUT", "-q"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
std::vector<std::string> angio(std::vector<std::string> more) {
  // A small k keeps the long run stable for as long as the test lets it run.
  std::vector<std::string> args = {"angio", "run", "--grid", "201,201,1", "--dt", "0.002", "--out", "OUT", "-q",
                                   "--backend", "cpu", "--threads", "1"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
std::vector<std::string> hybrid(std::vector<std::string> more) {
  std::vector<std::string> args = {"angio", "hybrid", "--grid", "41,41,1", "--t-max", "0.2", "--dt", "0.01",
                                   "--out", "OUT", "-q", "--backend", "cpu"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<SignalCase> signal_cases() {
  std::vector<SignalCase> out;
  for (const auto& [sig, name] : {std::pair<int, std::string>{SIGINT, "sigint"}, {SIGTERM, "sigterm"}}) {
    out.push_back({"prolif_" + name, prolif({}), prolif({"--replicates", "100000", "--backend", "reference"}), sig});
    out.push_back({"angio_" + name, angio({"--steps", "20", "--checkpoint-every", "10"}),
                   angio({"--steps", "100000000", "--output-every", "1000", "--checkpoint-every", "1000"}), sig});
    out.push_back({"hybrid_" + name, hybrid({}), hybrid({"--replicates", "1000000"}), sig});
  }
  return out;
}

std::vector<std::string> placed(std::vector<std::string> args, const fs::path& out) {
  for (std::string& a : args)
    if (a == "OUT") a = out.string();
  return args;
}

class Signals : public testing::TestWithParam<SignalCase> {};

// SIGINT and SIGTERM stop a run at its next safe point: exit 128 + signal, one line that says so,
// and the output directory of the earlier run exactly as it was (no staging directory, no
// temporary file, no mix of two runs).
TEST_P(Signals, StopTheRunAndLeaveItsOutputAsItWas) {
  const SignalCase& c = GetParam();
  TempDir dir, logs;
  const fs::path out = dir / "out";
  const CommandResult first = run_simkit(placed(c.earlier, out));
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  const auto before = snapshot(dir.path());
  ASSERT_FALSE(before.empty());

  const pid_t pid = spawn_simkit(placed(c.longer, out), logs.path());
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well into the run
  ASSERT_EQ(::kill(pid, c.signal), 0);
  const int code = wait_exit_code(pid, 60);
  const std::string err = slurp(logs / "stderr");
  EXPECT_EQ(code, 128 + c.signal) << "stderr: " << err;  // -1: it did not stop within 60 s
  EXPECT_EQ(lines_of(err).size(), 1u) << err;
  EXPECT_THAT(err, testing::HasSubstr(c.signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"));
  EXPECT_EQ(snapshot(dir.path()), before) << "the stopped run changed its output directory";
}

std::string signal_name(const testing::TestParamInfo<SignalCase>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(, Signals, testing::ValuesIn(signal_cases()), signal_name);

// Files in the metrics/ folder of the run's staging directory under `out` (0 while there is none).
std::size_t staged_metrics(const fs::path& out) {
  std::error_code ec;
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    if (e.path().filename().string().rfind(".simkit-staging-", 0) != 0) continue;
    for (auto it = fs::directory_iterator(e.path() / "metrics", ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      ++files;
  }
  return files;
}

class StopWhileWriting : public testing::TestWithParam<std::string> {};

// SIGINT while the hybrid ensemble writes its per-realisation metrics files (caught among the
// first 200 of them in the staging directory): the run stops there, exit 130, and the earlier
// run's output is as it was. cuda (GPU; skipped without one) and cpu.
TEST_P(StopWhileWriting, LeavesTheOutputAsItWas) {
  const std::string backend = GetParam();
  if (backend == "cuda") SIMKIT_SKIP_WITHOUT_CUDA();
  TempDir dir, logs;
  const fs::path out = dir / "out";
  const auto on = [&](std::vector<std::string> args) {  // (hybrid() runs on cpu)
    *(std::find(args.begin(), args.end(), "--backend") + 1) = backend;
    args.push_back("--no-quicklook");
    return args;
  };
  auto args = on(hybrid({"--replicates", "3"}));
  const CommandResult first = run_simkit(placed(args, out));
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  const auto before = snapshot(dir.path());

  args = on(hybrid({"--replicates", backend == "cuda" ? "100000" : "20000"}));
  const pid_t pid = spawn_simkit(placed(args, out), logs.path());
  ASSERT_GT(pid, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  bool ended = false;
  while (staged_metrics(out) < 200 && std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(ended) << "the run ended before it was stopped: " << slurp(logs / "stderr");
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const int code = wait_exit_code(pid, 60);
  const std::string err = slurp(logs / "stderr");
  EXPECT_EQ(code, 130) << "stderr: " << err;  // -1: it did not stop within 60 s
  EXPECT_EQ(lines_of(err).size(), 1u) << err;
  EXPECT_THAT(err, testing::HasSubstr("stopped by SIGINT"));
  EXPECT_EQ(snapshot(dir.path()), before) << "the stopped run changed its output directory";
}
INSTANTIATE_TEST_SUITE_P(, StopWhileWriting, testing::Values("cpu", "cuda"),
                         [](const testing::TestParamInfo<std::string>& backend) { return backend.param; });

// A full disk (here: a file size limit, with SIGXFSZ ignored, so every write past it fails as on a
// full disk): exit 2, one line naming the file, and the earlier run's output as it was.
TEST(Faults, AFullDiskLeavesTheOutputAsItWas) {
  for (const auto& [earlier, again] :
       {std::pair{prolif({}), prolif({"--seed", "7"})},
        std::pair{angio({"--steps", "4", "--no-quicklook"}), angio({"--steps", "6", "--no-quicklook"})},
        std::pair{hybrid({}), hybrid({"--seed", "7"})}}) {
    TempDir dir;
    const fs::path out = dir / "out";
    const CommandResult first = run_simkit(placed(earlier, out));
    ASSERT_EQ(first.exit_code, 0) << describe(first);
    const auto before = snapshot(dir.path());
    // dash counts ulimit -f in 512-byte blocks: 2 blocks are 1 KiB, less than any of the outputs.
    const CommandResult r = run_simkit_after("ulimit -f 2; trap '' XFSZ; ", placed(again, out));
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_THAT(r.err, testing::HasSubstr(out.string()));
    EXPECT_EQ(snapshot(dir.path()), before) << "the failed run changed its output directory: " << again[1];
  }
}

// A shorter run into a used --out replaces the longer run's files: no snapshot, checkpoint or
// metrics of the earlier run stays behind for --restart or a reader to pick up.
TEST(Faults, AShorterRunReplacesTheEarlierRunsFiles) {
  TempDir dir;
  const fs::path out = dir / "out";
  CommandResult r = run_simkit(placed(angio({"--steps", "20", "--output-every", "5", "--checkpoint-every", "10"}), out));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  ASSERT_TRUE(fs::exists(out / "checkpoint.ckpt"));
  fs::path notes = out / "notes.txt";
  std::ofstream(notes) << "the user's own file\n";
  r = run_simkit(placed(angio({"--steps", "6", "--output-every", "5", "--no-quicklook"}), out));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(names_in(out / "snapshots"),
            (std::vector<std::string>{"angio_000000.vti", "angio_000005.vti", "angio_000006.vti"}));
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"angio.pvd", "notes.txt", "run.json", "series.csv", "snapshots"}));
  EXPECT_EQ(slurp(notes), "the user's own file\n");
  const std::string pvd = slurp(out / "angio.pvd");
  EXPECT_THAT(pvd, testing::Not(testing::HasSubstr("angio_000010")));

  // The hybrid model: a smaller ensemble leaves no metrics of the larger one.
  const fs::path h = dir / "hybrid";
  r = run_simkit(placed(hybrid({"--replicates", "3"}), h));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = run_simkit(placed(hybrid({"--replicates", "1", "--no-quicklook"}), h));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(names_in(h / "metrics"), std::vector<std::string>{"realisation_00000.csv"});
  EXPECT_FALSE(fs::exists(h / "network.png"));
}

// A run that died (SIGKILL, a power cut) leaves its staging directory with its last checkpoint; a
// restart from that checkpoint takes over its series and snapshots, ends with the files of an
// uninterrupted run, and removes the dead run's staging directory.
TEST(Faults, ARestartTakesOverTheStagingOfARunThatDied) {
  TempDir dir;
  const std::vector<std::string> cadence = {"--output-every", "10", "--series-every", "5", "--checkpoint-every", "20",
                                            "--no-quicklook", "--grid", "41,41,1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"angio", "run", "-q", "--backend", "cpu"};
    args.insert(args.end(), cadence.begin(), cadence.end());
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const fs::path full = dir / "full", out = dir / "out", died = dir / "died";
  CommandResult r = run_simkit(with({"--steps", "40", "--out", full.string()}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = run_simkit(with({"--steps", "20", "--out", died.string()}));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  fs::create_directories(out);
  const fs::path staging = out / ".simkit-staging-999999-0";
  fs::rename(died, staging);  // what a run killed at step 20 leaves
  fs::remove(staging / "run.json");
  r = run_simkit({"angio", "run", "-q", "--backend", "cpu", "--restart", (staging / "checkpoint.ckpt").string(), "--steps", "40", "--out",
                  out.string()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_FALSE(fs::exists(staging)) << "the dead run's staging directory stayed";
  EXPECT_EQ(names_in(out / "snapshots"), names_in(full / "snapshots"));
  for (const std::string& name : names_in(full / "snapshots")) {
    EXPECT_EQ(slurp(out / "snapshots" / name), slurp(full / "snapshots" / name)) << name;
  }
  EXPECT_EQ(slurp(out / "series.csv"), slurp(full / "series.csv"));
  EXPECT_EQ(slurp(out / "angio.pvd"), slurp(full / "angio.pvd"));
}

}  // namespace
}  // namespace simkit
