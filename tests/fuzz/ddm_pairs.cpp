// read_pairs: pair files, CSV or binary (by the magic).
#include "fuzz_input.hpp"
#include "simkit/ddm/io.hpp"

SIMKIT_FUZZ_TARGET(ddm_pairs, ".csv", (void)simkit::ddm::read_pairs(path))
