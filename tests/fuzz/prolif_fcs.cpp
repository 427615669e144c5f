// read_fcs_histogram: FCS 3.0/3.1 files (H(0) and targets with --channel), gated on a second channel.
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

namespace {
simkit::prolif::FcsOptions fuzz_options() {
  simkit::prolif::FcsOptions o;
  o.channel = "FL1-A";
  o.gate = simkit::prolif::FcsOptions::Gate{"FSC-A", 1.0, 1e6};
  return o;
}
}  // namespace

SIMKIT_FUZZ_TARGET(prolif_fcs, ".fcs", (void)simkit::prolif::read_fcs_histogram(path, fuzz_options()))
