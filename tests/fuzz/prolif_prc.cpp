// read_prc: ProCell project files (Python pickles) of `simkit prolif fit --project`.
#include "fuzz_input.hpp"
#include "simkit/prolif/prc.hpp"

SIMKIT_FUZZ_TARGET(prolif_prc, ".prc", (void)simkit::prolif::read_prc(path))
