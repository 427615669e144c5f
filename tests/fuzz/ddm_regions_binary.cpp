// read_regions_binary, with the file's coordinate type and each forced one (`--coords`).
#include "ddm_coords.hpp"

SIMKIT_FUZZ_TARGET(ddm_regions_binary, ".bin",
                   simkit::fuzz::read_with_every_coords(path, simkit::ddm::read_regions_binary))
