#pragma once
#include "common.hpp"

namespace simkit::cli {

// Engine subcommands, registered by the engines' own files (docs/architecture.md).
void add_engine_commands(CLI::App& app, Action& action);

}  // namespace simkit::cli
