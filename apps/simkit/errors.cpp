// How the CLI names the library's fields in error messages (docs/architecture.md, "Errors"): the
// library says "t_max 0: must be positive", the user typed --t-max, so the CLI prints
// "--t-max 0: must be positive". One table, field -> flag.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "common.hpp"

namespace simkit::cli {
namespace {

// Every field a library error may name that a flag sets, and the flag. A field missing here (a
// config-file key, say) is printed as the library names it.
constexpr std::array<std::pair<std::string_view, std::string_view>, 45> kFieldFlags{{
    // every engine
    {"backend", "--backend"},
    {"device", "--device"},
    {"threads", "--threads"},
    {"out", "--out"},
    // angio, continuous
    {"grid", "--grid"},
    {"h", "--h"},
    {"dt", "--dt"},
    {"force", "--force"},
    {"steps", "--steps"},
    {"t_max", "--t-max"},
    {"output_every", "--output-every"},
    {"series_every", "--series-every"},
    {"checkpoint_every", "--checkpoint-every"},
    // angio, hybrid
    {"psi", "--psi"},
    {"reach_x", "--reach-x"},
    {"max_tips", "--max-tips"},
    {"sprouts", "--sprouts"},
    {"sprouts_at", "--sprouts-at"},
    {"branch_density", "--branch-density"},
    {"anastomosis", "--anastomosis"},
    {"replicates", "--replicates"},
    // prolif
    {"times", "--times"},
    {"phi_min", "--phi-min"},
    {"start", "--start"},
    {"seed", "--seed"},
    // ddm
    {"rule", "--rule"},
    {"coords", "--coords"},
    {"algorithm", "--algorithm"},
    {"n", "--n"},
    {"dims", "--dims"},
    {"alpha", "--alpha"},
    {"side", "--side"},
    {"pairs", "--pairs"},
    {"per_region", "--per-region"},
    {"count", "--count"},
    {"input", "INPUT"},
    {"clustered", "--clustered"},
    {"integer", "--integer"},
    {"moving", "--moving"},
    {"interest", "--interest"},
    {"ticks", "--ticks"},
    {"move_fraction", "--move-fraction"},
    {"mobility", "--mobility"},
    {"step", "--step"},
    {"speed", "--speed"},
}};

}  // namespace

std::string flag_for(std::string_view field) {
  const auto* found =
      std::find_if(kFieldFlags.begin(), kFieldFlags.end(), [&](const auto& e) { return e.first == field; });
  return std::string(found != kFieldFlags.end() ? found->second : field);
}

std::string cli_message(const UserError& e) { return message_naming(e, flag_for); }

}  // namespace simkit::cli
