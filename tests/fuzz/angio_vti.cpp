// read_vti: initial fields (`simkit angio run --initial-file`), VTK XML ImageData.
#include "fuzz_input.hpp"
#include "simkit/angio/io.hpp"

SIMKIT_FUZZ_TARGET(angio_vti, ".vti", (void)simkit::angio::read_vti(path))
