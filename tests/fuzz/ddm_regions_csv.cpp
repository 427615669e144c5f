// read_regions_csv, with the automatic coordinate type and each forced one (`--coords`).
#include "ddm_coords.hpp"

SIMKIT_FUZZ_TARGET(ddm_regions_csv, ".csv", simkit::fuzz::read_with_every_coords(path, simkit::ddm::read_regions_csv))
