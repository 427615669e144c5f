#pragma once
// Options every run subcommand shares, with the same names everywhere.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "simkit/core/backend.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

namespace simkit::cli {

// CLI11 reads "nan", "inf" and "-inf" as doubles: every real-valued flag takes this check (each
// element of a comma-separated list too), so no NaN or infinity reaches a run.
inline const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      // An empty value ("--times ''", "--t-max ''") would convert to 0.
      if (text.find_first_not_of(" \t") == std::string::npos) return "must be a finite number, got an empty value";
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (end == text.c_str()) return {};  // not a number at all: the conversion says so
      return std::isfinite(value) ? std::string{} : "must be finite, got " + text;
    },
    "FINITE", "finite");

// Non-negative numbers. CLI::NonNegativeNumber says "not in range 0.000000 to 1797693...368.000000"
// (DBL_MAX printed in full, 300 digits); this says what is wrong in a few words.
inline const CLI::Validator kNonNegative(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (end == text.c_str()) return {};  // not a number at all: the conversion says so
      return value >= 0 ? std::string{} : "must be >= 0, got " + text;  // the words of core numbers.hpp
    },
    "NONNEGATIVE", "non-negative");

// Seeds are unsigned 64-bit integers, written in decimal: a sign, or a value above 2^64 - 1, would
// otherwise wrap silently.
inline const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
      const std::string_view largest = "18446744073709551615";
      const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
      std::string_view v(text);
      while (v.size() > 1 && v.front() == '0') v.remove_prefix(1);
      if (!digits || v.size() > largest.size() || (v.size() == largest.size() && v > largest)) {
        return "a seed is an integer from 0 to 18446744073709551615, got " + text;
      }
      return {};
    },
    "SEED", "seed");

struct CommonRunOptions {
  std::string backend = "auto";
  int device = 0;
  bool device_given = false;  // --device on the command line (else, under mpirun, rank_device())
  std::uint64_t seed = 1;
  int threads = 0;
  bool quiet = false;
  bool json = false;
};

inline void add_common_run_options(CLI::App& app, CommonRunOptions& o) {
  app.add_option("--backend", o.backend, "Backend: auto (CUDA when a device is usable, else cpu), reference, cpu, cuda")
      ->check(CLI::IsMember(names_of(kBackendNames)))
      ->capture_default_str();
  app.add_option("--device", o.device, "CUDA device index (under mpirun: default the local rank modulo the devices)")
      ->capture_default_str()
      ->check(kNonNegative)
      ->each([&o](const std::string&) { o.device_given = true; });
  app.add_option("--threads", o.threads,
                 "CPU threads for the cpu backend and the cuda backend's host work (0: all; at most 4 x the "
                 "hardware threads, never fewer than 256)")
      ->capture_default_str()
      ->check(kNonNegative);
  app.add_flag("--quiet,-q", o.quiet, "No progress display on stderr");
  app.add_flag("--json", o.json, "Print the end-of-run summary as one JSON object on one line of stdout");
}

// The flag that sets a library field ("t_max" -> "--t-max"; errors.cpp has the table).
std::string flag_for(std::string_view field);
// A library error as the CLI prints it: fields named by their flags.
std::string cli_message(const UserError& e);

// SIGINT and SIGTERM (signals.cpp): the first asks the running command to stop at its next safe
// point (RunOptions::stop; the run throws simkit::Stopped, its staged outputs are discarded, and
// main exits with 128 + the signal); a second one ends the process at once, as by default.
void install_stop_handlers();
// The signal that asked to stop (SIGINT or SIGTERM), or 0.
int stop_signal();
// Throws simkit::Stopped when a signal asked to stop (for the commands that take no RunOptions).
void throw_if_signalled();

// This process's rank among the ranks of its node (the launcher's OMPI_COMM_WORLD_LOCAL_RANK,
// SLURM_LOCALID, MPI_LOCALRANKID or PMI_LOCAL_RANK), else its world rank.
inline int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end == '\0' && n >= 0 && n < 1000000) return static_cast<int>(n);
    }
  }
  return dist::Comm::world().rank();
}

// The CUDA device of this process: --device when given (or a single process); under mpirun with
// the cuda or auto backend, the local rank modulo the node's devices, so that the ranks of a node
// share its GPUs (docs/scale-out.md).
inline int rank_device(const CommonRunOptions& o) {
  if (o.device_given || !dist::Comm::world().distributed()) return o.device;
  const Backend b = parse_backend(o.backend);
  if (b != Backend::Cuda && b != Backend::Auto) return o.device;
  const int count = static_cast<int>(cuda_status().devices.size());
  return count > 0 ? local_rank() % count : o.device;
}

// Resolves backend and device into RunOptions (seed is set by the subcommand, which owns --seed).
inline RunOptions to_run_options(const CommonRunOptions& o) {
  RunOptions r;
  r.device = rank_device(o);
  r.backend = resolve_backend(parse_backend(o.backend), r.device);
  r.seed = o.seed;
  r.threads = checked_threads(o.threads);
  r.stop = [] { return stop_signal() != 0; };
  return r;
}

// A subcommand registers itself and leaves the function to run after parsing.
using Action = std::function<int()>;

void add_info_command(CLI::App& app, Action& action);

}  // namespace simkit::cli
