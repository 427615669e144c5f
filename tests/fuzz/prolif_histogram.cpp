// read_histogram on ProCell/cuProCell text (whitespace columns; CSV when the first line has a comma).
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

SIMKIT_FUZZ_TARGET(prolif_histogram, ".txt", (void)simkit::prolif::read_histogram(path))
