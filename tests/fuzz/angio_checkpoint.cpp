// read_checkpoint: `simkit angio run --restart`.
#include "fuzz_input.hpp"
#include "simkit/angio/io.hpp"

SIMKIT_FUZZ_TARGET(angio_checkpoint, ".ckpt", (void)simkit::angio::read_checkpoint(path))
