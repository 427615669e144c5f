// read_types_file: cuProCell types files (`proportion mean sd` per line; `simkit prolif --populations`).
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

SIMKIT_FUZZ_TARGET(prolif_types, ".txt", (void)simkit::prolif::read_types_file(path))
