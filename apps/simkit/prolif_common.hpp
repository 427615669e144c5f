#pragma once
// Flags shared by `prolif simulate` and `prolif fit`: reading FCS files.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "common.hpp"
#include "core/text.hpp"
#include "simkit/prolif/io.hpp"

namespace simkit::cli {

struct FcsArgs {
  std::string channel, gate;
  bool raw = false;
};

inline void add_fcs_options(CLI::App& app, FcsArgs& a) {
  app.add_option("--channel", a.channel, "FCS files: the channel to read, by its $PnN or $PnS name");
  app.add_option("--gate", a.gate, "FCS files: keep the events with CHANNEL in [MIN, MAX]: CHANNEL:MIN:MAX");
  app.add_flag("--fcs-raw", a.raw, "FCS files: channel values as stored (no $PnE / $PnG scaling)");
}

inline prolif::FcsOptions to_fcs_options(const FcsArgs& a) {
  prolif::FcsOptions o;
  o.channel = a.channel;
  o.raw = a.raw;
  if (!a.gate.empty()) {
    // The channel name may itself hold ':' (rare): MIN and MAX are the last two fields.
    const std::size_t last = a.gate.rfind(':');
    const std::size_t mid = last == std::string::npos || last == 0 ? std::string::npos : a.gate.rfind(':', last - 1);
    if (mid == std::string::npos || mid == 0)
      throw UserError(fmt::format("--gate {}: expected CHANNEL:MIN:MAX (e.g. FSC-A:20000:200000)", a.gate));
    const auto lo = text::parse<double>(a.gate.substr(mid + 1, last - mid - 1));
    const auto hi = text::parse<double>(a.gate.substr(last + 1));
    if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi) || !(*lo <= *hi))
      throw UserError(fmt::format("--gate {}: MIN and MAX must be numbers with MIN <= MAX", a.gate));
    o.gate = prolif::FcsOptions::Gate{a.gate.substr(0, mid), *lo, *hi};
  }
  return o;
}

}  // namespace simkit::cli
