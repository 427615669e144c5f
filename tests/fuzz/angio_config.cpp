// read_config: `simkit angio run|hybrid --config` (continuous keys, [parameters], [initial] and the
// hybrid model's [hybrid] table: one reader for both models).
#include "fuzz_input.hpp"
#include "simkit/angio/config.hpp"

SIMKIT_FUZZ_TARGET(angio_config, ".toml", (void)simkit::angio::read_config(path))
