// read_fit_model_toml: model TOML with { min, max } bounds, `simkit prolif fit --config`.
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

SIMKIT_FUZZ_TARGET(prolif_fit_toml, ".toml", (void)simkit::prolif::read_fit_model_toml(path))
