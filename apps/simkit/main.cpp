// simkit: one binary, one subcommand per engine (GROMACS-style). The CLI parses, calls the
// library and reports; errors become exit codes: 2 for bad input, 1 for internal failures.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <string>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "simkit/core/build_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {
// glibc's malloc gives the free top of a heap back to the system (heap shrinking, madvise) once
// 128 KB lie free there. Work that allocates and frees per item on every core, as the rebuild of a
// hybrid ensemble's realisations does, then faults the same pages in again and again, with a TLB
// shootdown across the process's threads each time: the D_c = 0 ensemble's host side ran 3x
// slower (docs/performance.md, 2026-11-28). The CLI keeps freed memory for reuse instead: it
// trims only above 1 GiB free and grows heaps 256 MiB at a time. A user's own malloc settings
// (MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, glibc.malloc.* in GLIBC_TUNABLES) are left as they are.
void keep_freed_memory() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_TOP_PAD_") ||
      (tunables && std::string(tunables).find("glibc.malloc.") != std::string::npos)) {
    return;
  }
  // (Setting these also fixes the mmap threshold at its 128 KiB start instead of letting glibc
  // raise it: blocks of 128 KiB or more are mapped and unmapped each time. The figures above were
  // measured so; a 32 MiB threshold as well changed nothing in the cpu backend's ensemble.)
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
#endif
}

// Under mpirun a failure on one rank must end the job, not leave the others in a collective: the
// message is printed once (rank 0 first; another rank only when rank 0 has not ended the job within
// 5 s, that is when the failure is its own), then every rank ends with the same exit code.
int fail(int code, const std::string& message) {
  const auto& world = simkit::dist::Comm::world();
  if (!world.distributed()) {
    fmt::print(stderr, "{}", message);
    return code;
  }
  if (!world.root()) {
    // mpirun ends the other ranks with SIGTERM when one aborts: the stop handler must not catch it.
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGINT, SIG_DFL);
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  fmt::print(stderr, "{}", world.root() ? message : fmt::format("rank {}: {}", world.rank(), message));
  std::fflush(stderr);
  simkit::dist::abort(code);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace simkit;
  keep_freed_memory();
  dist::init(argc, argv);  // MPI, when started by mpirun/srun (docs/scale-out.md)
  cli::install_stop_handlers();  // first: a signal during start-up stops the run at its first check
  CLI::App app{"simkit: GPU-accelerated scientific simulation engines (prolif, angio, ddm)", "simkit"};
  app.set_version_flag("--version", fmt::format("simkit {} ({})", build_info().version, build_info().commit));
  app.require_subcommand(1);
  app.fallthrough(false);
  // A bad command line is a user error like any other: one line on stderr, exit code 2.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("simkit: error: {} (run with --help for usage)\n", printable_line(e.what()));
  });

  cli::Action action;
  cli::add_info_command(app, action);
  cli::add_engine_commands(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank of an mpirun job parses the same command line: rank 0 alone prints help or the error.
    if (!dist::Comm::world().root()) return e.get_exit_code() == 0 ? kExitOk : kExitUser;
    const int code = app.exit(e);  // prints help/version (code 0) or the parse error
    return code == 0 ? kExitOk : kExitUser;
  }
  // Under mpirun the commands with a distributed driver run on every rank (docs/scale-out.md); the
  // others (info, ddm generate, ddm replay) run on rank 0 alone, and the other ranks leave at once.
  if (const auto& world = dist::Comm::world(); world.distributed()) {
    std::string command;
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      command += (command.empty() ? "" : " ") + sub->get_name();
    }
    static const char* const kDistributed[] = {"angio run", "angio hybrid", "prolif simulate", "prolif fit",
                                               "ddm match"};
    const bool distributed =
        std::find(std::begin(kDistributed), std::end(kDistributed), command) != std::end(kDistributed);
    if (!distributed && !world.root()) return kExitOk;
  }
  try {
    return action ? action() : kExitOk;
  } catch (const Stopped&) {
    const int signal = cli::stop_signal();
    return fail(128 + (signal != 0 ? signal : SIGINT),
                fmt::format("simkit: stopped by {} before the end; nothing was written (outputs are as they were)\n",
                            signal == SIGTERM ? "SIGTERM" : "SIGINT"));
  } catch (const UserError& e) {
    return fail(kExitUser, fmt::format("simkit: error: {}\n", printable_line(simkit::cli::cli_message(e))));
  } catch (const std::exception& e) {
    return fail(kExitInternal, fmt::format("simkit: internal error: {}\n", printable_line(e.what())));
  }
}
