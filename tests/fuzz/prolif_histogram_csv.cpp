// read_histogram on a file named .csv (a header line required).
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

SIMKIT_FUZZ_TARGET(prolif_histogram_csv, ".csv", (void)simkit::prolif::read_histogram(path))
