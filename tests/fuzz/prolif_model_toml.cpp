// read_model_toml: the TOML model file of `simkit prolif simulate --config`.
#include "fuzz_input.hpp"
#include "simkit/prolif/io.hpp"

SIMKIT_FUZZ_TARGET(prolif_model_toml, ".toml", (void)simkit::prolif::read_model_toml(path))
