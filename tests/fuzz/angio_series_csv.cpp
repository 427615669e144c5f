// read_series_csv: series.csv of an angio run.
#include "fuzz_input.hpp"
#include "simkit/angio/io.hpp"

SIMKIT_FUZZ_TARGET(angio_series_csv, ".csv", (void)simkit::angio::read_series_csv(path))
