// read_regions (what `simkit ddm match --input` calls): binary when the file starts with the magic,
// else CSV; automatic coordinate type.
#include "fuzz_input.hpp"
#include "simkit/ddm/io.hpp"

SIMKIT_FUZZ_TARGET(ddm_regions, ".dat", (void)simkit::ddm::read_regions(path))
