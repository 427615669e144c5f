#pragma once
// A whole continuous-model run: initial state, stability check, time loop, and every output file
// (snapshots, series, checkpoints, quick-look images, run.json). The CLI only fills RunSettings.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simkit/angio/angio.hpp"
#include "simkit/angio/io.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio {

struct RunSettings {
  Problem problem;
  std::int64_t steps = 1000;          // the run ends at this step (counted from step 0, also on restart)
  std::optional<double> t_max;        // when set, steps = ceil(t_max / dt) instead
  bool auto_dt = false;               // dt = 0.9 x the largest stable k, rounded down to 2 digits
  std::int64_t output_every = 0;      // .vti snapshot every K steps (0: initial and final only)
  std::int64_t series_every = 10;     // series.csv row every K steps (0: none)
  std::int64_t checkpoint_every = 0;  // checkpoint every K steps (0: none)
  bool force = false;                 // run even if the stability check refuses the step
  bool quicklook = true;              // slice.png, mip_n.png, slice.svg at the end
  bool snapshots = true;              // false: no .vti/.pvti snapshots and no angio.pvd (benchmarks, huge grids)
  std::filesystem::path out;
  std::optional<LoadedFields> initial;  // from --initial-file (grid already in problem.grid)
  std::optional<Checkpoint> restart;    // from --restart (problem already taken from it)
  std::string restart_source;
};

struct RunReport {
  Backend backend = Backend::Reference;
  std::string device;   // this rank's (rank 0's in run.json)
  int ranks = 1;        // MPI ranks (z-slabs) of the run
  std::int64_t start_step = 0, end_step = 0;
  double dt = 0;  // the step used (chosen by the run when RunSettings::auto_dt)
  std::size_t nodes = 0;
  Precision precision = Precision::Fp32;
  Form form = Form::Expanded;
  double compute_seconds = 0;  // time inside the solver (steps and fused reductions)
  double wall_seconds = 0;     // everything, I/O included
  StabilityReport stability;
  Reductions final_state;
  std::vector<std::filesystem::path> files;
  nlohmann::json to_json(const RunSettings& settings) const;
};

// Checks sizes and values; a UserError names the field. Called by run() before any work.
void validate(const Problem& problem);

// Bytes the run needs on the host and (cuda) on the device; a UserError before any work when
// they are not available.
void check_capacity(const Problem& problem, Backend backend, int device);


// Under mpirun (simkit::dist, docs/scale-out.md) every rank calls run() with the same settings: each
// holds a z-slab of the grid, and the outputs are those of one rank (fields bitwise equal), except
// that snapshots are .pvti files with one piece per rank and each rank writes its own checkpoint,
// checkpoint_name(rank, ranks). Only rank 0's report lists the files.
RunReport run(RunSettings settings, const RunOptions& options);

// "checkpoint.ckpt" on one rank, "checkpoint.rank<r>of<K>.ckpt" on K ranks; rank_checkpoint() is the
// file rank `rank` restarts from when given `given` (any of the run's checkpoints: the same directory).
std::string checkpoint_name(int rank, int ranks);
std::filesystem::path rank_checkpoint(const std::filesystem::path& given, int rank, int ranks);

}  // namespace simkit::angio
