// simkit: one binary, one subcommand per engine (GROMACS-style). The CLI parses, calls the
// library and reports; errors become exit codes: 2 for bad input, 1 for internal failures.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "common.hpp"
#include "simkit/core/build_info.hpp"
#include "simkit/core/error.hpp"

int main(int argc, char** argv) {
  using namespace simkit;
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
    const int code = app.exit(e);  // prints help/version (code 0) or the parse error
    return code == 0 ? kExitOk : kExitUser;
  }
  try {
    return action ? action() : kExitOk;
  } catch (const Stopped&) {
    const int signal = cli::stop_signal();
    fmt::print(stderr, "simkit: stopped by {} before the end; nothing was written (outputs are as they were)\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
    return 128 + (signal != 0 ? signal : SIGINT);
  } catch (const UserError& e) {
    fmt::print(stderr, "simkit: error: {}\n", printable_line(simkit::cli::cli_message(e)));
    return kExitUser;
  } catch (const std::exception& e) {
    fmt::print(stderr, "simkit: internal error: {}\n", printable_line(e.what()));
    return kExitInternal;
  }
}
