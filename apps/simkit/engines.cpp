#include "commands.hpp"

namespace simkit::cli {

void add_prolif_command(CLI::App& app, Action& action);
void add_angio_command(CLI::App& app, Action& action);
void add_ddm_command(CLI::App& app, Action& action);

void add_engine_commands(CLI::App& app, Action& action) {
  add_prolif_command(app, action);
  add_angio_command(app, action);
  add_ddm_command(app, action);
}

}  // namespace simkit::cli
