// simkit angio run: the continuous Anderson-Chaplain model and its hybrid tip-cell model (docs/angio.md).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "simkit/angio/config.hpp"
#include "simkit/angio/hybrid.hpp"
#include "simkit/angio/hybrid_io.hpp"
#include "simkit/angio/io.hpp"
#include "simkit/angio/run.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "core/output.hpp"
#include "core/report.hpp"

namespace simkit::cli {
namespace {

using namespace simkit::angio;

struct AngioArgs {
  CommonRunOptions common;
  std::string config, out, model, precision, form, initial, initial_file, restart;
  std::vector<int> grid;
  std::optional<double> h, dt, t_max;
  std::optional<std::int64_t> steps, output_every, series_every, checkpoint_every;
  std::optional<std::uint64_t> seed;
  bool force = false, no_quicklook = false, no_snapshots = false;
  bool hybrid_command = false;  // `simkit angio hybrid` (not `angio run`)
  std::vector<std::string> given_physics;  // flags that fix the problem (refused with --restart)
  // hybrid model
  int replicates = 1;
  bool replicates_given = false;
  std::optional<double> psi, reach_x, branch_density;
  std::optional<int> sprouts, max_tips;
  std::string sensitivity, anastomosis, fork, uptake, daughter, branch_probability, sprouts_at, weights;
  std::optional<std::string> metrics_files;  // --metrics-files: "all" or N
  bool back_steps = false;
};

template <class E>
E parse_choice(std::optional<E> value, std::string_view flag, std::string_view text, std::string_view expected) {
  if (!value) throw UserError(fmt::format("{} {}: expected {}", flag, text, expected));
  return *value;
}

// simkit angio run --model hybrid: an ensemble of tip-cell realisations.
int run_hybrid(AngioArgs& a, const ConfigFile& cfg) {
  Stopwatch clock;
  for (const char* flag : {"--restart", "--initial-file", "--form", "--precision"}) {
    const bool given = (std::string_view(flag) == "--restart" && !a.restart.empty()) ||
                       (std::string_view(flag) == "--initial-file" && !a.initial_file.empty()) ||
                       (std::string_view(flag) == "--form" && !a.form.empty()) ||
                       (std::string_view(flag) == "--precision" && !a.precision.empty());
    if (given) throw UserError(fmt::format("{}: not available with --model hybrid", flag));
  }
  if (cfg.form || cfg.precision || cfg.initial_file || cfg.steps || cfg.output_every || cfg.series_every ||
      cfg.checkpoint_every) {
    throw UserError(fmt::format(
        "{}: form, precision, initial.file, time.steps and output.every/series_every/checkpoint_every belong to "
        "the continuous model, not to model = \"hybrid\"",
        cfg.source));
  }
  if (a.steps) throw UserError("--steps: the hybrid model runs to --t-max or until a sprout reaches --reach-x");
  if (a.output_every || a.series_every || a.checkpoint_every) {
    throw UserError("--output-every, --series-every and --checkpoint-every belong to the continuous model");
  }
  HybridProblem p;
  p.model = cfg.parameters;
  p.initial = cfg.initial;
  if (cfg.taf) p.initial.taf = *cfg.taf;
  p.hybrid = cfg.hybrid;
  p.grid = cfg.nx ? Grid{*cfg.nx, *cfg.ny, *cfg.nz, 0} : Grid{201, 201, 1, 0};
  if (!a.grid.empty()) {
    if (a.grid.size() != 3) throw UserError("--grid: expected NX,NY,NZ");
    p.grid = Grid{a.grid[0], a.grid[1], a.grid[2], 0};
  }
  if (p.grid.nx < 3 || p.grid.ny < 2 || p.grid.nz < 1) {
    throw UserError(fmt::format("--grid {},{},{}: the hybrid model needs NX >= 3, NY >= 2, NZ >= 1", p.grid.nx,
                                p.grid.ny, p.grid.nz));
  }
  p.grid.h = a.h.value_or(cfg.h.value_or(1.0 / (p.grid.nx - 1)));
  if (!a.initial.empty())
    p.initial.taf = parse_choice(parse_taf(a.initial), "--initial", a.initial, names_text(kTafNames));
  if (!a.sensitivity.empty()) {
    p.model.sensitivity =
        parse_choice(parse_sensitivity(a.sensitivity), "--sensitivity", a.sensitivity, names_text(kSensitivityNames));
  }
  HybridParams& h = p.hybrid;
  if (a.psi) h.psi = *a.psi;
  if (a.reach_x) h.reach_x = *a.reach_x;
  if (a.max_tips) h.max_tips = *a.max_tips;
  if (a.branch_density) h.branch_density = *a.branch_density;
  if (!a.anastomosis.empty()) {
    const AnastomosisChoice c = parse_choice(parse_anastomosis(a.anastomosis), "--anastomosis", a.anastomosis,
                                             "other, other-active, any or window:N (N >= 1)");
    h.anastomosis = c.rule;
    h.anastomosis_window = c.window;
  }
  if (!a.fork.empty()) {
    if (a.fork != "fuse" && a.fork != "pass") throw UserError(fmt::format("--fork {}: expected fuse or pass", a.fork));
    h.fork_passes = a.fork == "pass";
  }
  if (!a.uptake.empty()) h.uptake = parse_choice(parse_uptake(a.uptake), "--uptake", a.uptake, names_text(kUptakeNames));
  if (!a.daughter.empty()) {
    h.daughter = parse_choice(parse_daughter(a.daughter), "--daughter", a.daughter, names_text(kDaughterNames));
  }
  if (!a.branch_probability.empty()) {
    h.branch_always = parse_choice(parse_branch_always(a.branch_probability), "--branch-probability",
                                   a.branch_probability, names_text(kBranchProbabilityNames));
  }
  if (a.back_steps) h.back_steps = true;
  if (!a.weights.empty()) {
    h.weights = parse_choice(parse_weights(a.weights), "--weights", a.weights, names_text(kWeightsNames));
  }
  // --sprouts and --sprouts-at replace each other (and the config file's sprouts / sprouts_at).
  if (a.sprouts && !a.sprouts_at.empty()) throw UserError("--sprouts and --sprouts-at: give one of them");
  if (a.sprouts) {
    h.sprouts = *a.sprouts;
    h.sprouts_at.clear();
  }
  if (!a.sprouts_at.empty()) {
    h.sprouts_at = parse_choice(parse_sprouts_at(a.sprouts_at), "--sprouts-at", a.sprouts_at,
                                "comma-separated y values (box fractions), or y:z pairs in 3D");
    h.sprouts = 0;
  }
  if (cfg.t_max) p.hybrid.t_max = *cfg.t_max;
  if (a.t_max) p.hybrid.t_max = *a.t_max;
  if (!a.replicates_given && cfg.replicates) a.replicates = *cfg.replicates;
  if (cfg.seed && !a.seed) a.seed = cfg.seed;
  if (cfg.quicklook && !*cfg.quicklook) a.no_quicklook = true;
  std::uint64_t metrics_files = cfg.metrics_files.value_or(std::numeric_limits<std::uint64_t>::max());
  if (a.metrics_files) {
    metrics_files = parse_choice(parse_metrics_files(*a.metrics_files), "--metrics-files", *a.metrics_files,
                                 "all or a count N >= 0 (the first N realisations' files)");
  }
  choose_hybrid_step(p, a.dt ? a.dt : cfg.dt, a.force);
  validate(p);
  // The options, then the output directory: bad options leave no directory behind, and a bad
  // --out fails before any work.
  a.common.seed = a.seed.value_or(1);
  RunOptions options = to_run_options(a.common);
  const std::filesystem::path out = a.out;
  check_output_directory(out);  // written at the end (staged): an unwritable place fails now
  const Backend backend = options.backend;
  if (backend == Backend::Cuda) initialize_cuda_device(options.device);
  // Under mpirun the realisations are split among the ranks and gathered on rank 0, which writes
  // the outputs and reports (docs/scale-out.md).
  const dist::Comm& world = dist::Comm::world();
  Progress progress("angio hybrid", "realisations", a.common.quiet || !world.root());
  world.barrier();  // the ranks start together: the time is the job's, not one rank's start-up skew
  Stopwatch compute;
  options.progress = [&](double done, double total) { progress.update(done, total); };
  // Each rank keeps the metrics of its own realisations and writes their files itself; rank 0
  // receives the rest of every realisation (ensemble.csv, the summary) and writes the other files.
  HybridShare share;
  const HybridEnsemble run = run_hybrid_ensemble_ranks(p, a.replicates, options, false, share);
  const std::vector<Realisation>& ensemble = run.realisations;
  const double seconds = compute.seconds();
  progress.finish();
  const nlohmann::json result = write_hybrid_outputs_ranks(
      out, p, ensemble, share,
      HybridRunInfo{options.seed, backend, seconds, !a.no_quicklook, options.threads, options.stop, metrics_files});
  if (!world.root()) return 0;

  RunSummary summary;
  summary.command = a.hybrid_command ? "simkit angio hybrid" : "simkit angio run --model hybrid";
  summary.backend = std::string(to_string(backend));
  summary.device = world.distributed() ? fmt::format("{} ranks, rank 0 on {}", world.size(), run.device) : run.device;
  summary.wall_seconds = clock.seconds();
  summary.throughput = seconds > 0 ? static_cast<double>(a.replicates) / seconds : 0;
  summary.throughput_unit = "realisations";
  summary.extra = {{"replicates", a.replicates}, {"ranks", world.size()}, {"compute_seconds", seconds}, {"dt", p.dt},
                   {"out", a.out}, {"summary", result}};
  if (a.common.json) {
    summary.print(true);
  } else {
    std::int64_t reached = 0;
    for (const Realisation& r : ensemble) reached += r.reached ? 1 : 0;
    fmt::print("{}; {} of {} realisations reached x = {:g}\n", summary.text(), reached, a.replicates, p.hybrid.reach_x);
  }
  return 0;
}

int run_angio(AngioArgs& a) {
  Stopwatch clock;
  RunSettings s;
  s.out = a.out;
  // A run rewrites --out: inputs inside it would be lost (a checkpoint there is fine: --restart
  // reads it whole before the run writes the next one).
  refuse_input_as_output(a.out, true, "--config", a.config, "--out");
  refuse_input_as_output(a.out, true, "--initial-file", a.initial_file, "--out");
  ConfigFile cfg;
  if (!a.config.empty() && a.restart.empty()) cfg = read_config(a.config);
  if (a.hybrid_command) {
    if (cfg.model && *cfg.model != "hybrid") {
      throw UserError(fmt::format("{}: model = \"{}\"; `simkit angio hybrid` runs the hybrid model (the continuous "
                                  "one is `simkit angio run`)",
                                  cfg.source, *cfg.model));
    }
    return run_hybrid(a, cfg);
  }
  const std::string model = a.model.empty() ? cfg.model.value_or("continuous") : a.model;
  if (model == "hybrid") {
    // The note is for the flag only: a config file with model = "hybrid" is as good a way as any.
    if (a.model == "hybrid" && !a.common.quiet && !a.common.json)
      fmt::print(stderr, "simkit: note: `simkit angio hybrid` runs the hybrid model (`angio run --model hybrid` is the same)\n");
    return run_hybrid(a, cfg);
  }
  if (model != "continuous") throw UserError(fmt::format("--model {}: expected continuous or hybrid", model));
  if (a.replicates_given || a.psi || a.reach_x || a.sprouts || a.max_tips || a.branch_density ||
      !a.anastomosis.empty() || !a.fork.empty() || !a.uptake.empty() || !a.daughter.empty() ||
      !a.branch_probability.empty() || !a.sprouts_at.empty() || !a.weights.empty() || a.back_steps || a.metrics_files) {
    throw UserError(
        "--replicates, --psi, --reach-x, --sprouts, --sprouts-at, --max-tips, --anastomosis, --fork, --uptake, "
        "--daughter, --branch-probability, --branch-density, --weights, --back-steps and --metrics-files belong to "
        "--model hybrid");
  }
  if (cfg.hybrid_given) throw UserError(fmt::format("{}: [hybrid] belongs to model = \"hybrid\"", cfg.source));
  if (cfg.metrics_files) {
    throw input_error(cfg.source, cfg.metrics_files_line, "output.metrics_files",
                      "belongs to model = \"hybrid\" (the metrics files of a hybrid ensemble)");
  }
  if (!a.restart.empty()) {
    if (!a.given_physics.empty()) {
      throw UserError(fmt::format("{} cannot be combined with --restart: the checkpoint fixes the problem",
                                  a.given_physics.front()));
    }
    if (!a.config.empty())
      throw UserError("--config cannot be combined with --restart: the checkpoint fixes the problem");
    if (!a.steps && !a.t_max) throw UserError("--restart needs --steps or --t-max: where the resumed run ends");
    // Under mpirun -n K each rank reads its own checkpoint (checkpoint.rank<r>of<K>.ckpt next to
    // the one given), written by a run on K ranks (docs/scale-out.md).
    const dist::Comm& comm = dist::Comm::world();
    const std::filesystem::path mine = angio::rank_checkpoint(a.restart, comm.rank(), comm.size());
    if (comm.distributed() && !std::filesystem::exists(mine)) {
      throw UserError("--restart", fmt::format(" {}: no checkpoint {} for rank {} of {}: restart on as many ranks as the "
                                               "run that wrote the checkpoints",
                                               a.restart, mine.string(), comm.rank(), comm.size()));
    }
    s.restart = read_checkpoint(mine);
    s.restart_source = mine.string();
    s.problem = s.restart->problem;
    const nlohmann::json slab = s.restart->run.value("slab", nlohmann::json());
    const int written_on = slab.is_object() ? slab.value("ranks", 1) : 1;
    if (written_on != comm.size() || (slab.is_object() && slab.value("rank", -1) != comm.rank())) {
      throw UserError("--restart", fmt::format(" {}: written by rank {} of a run on {} rank(s); this run has {}: restart "
                                               "with mpirun -n {}{}",
                                               mine.string(), slab.is_object() ? slab.value("rank", 0) : 0, written_on,
                                               comm.size(), written_on, written_on == 1 ? " (or without mpirun)" : ""));
    }
    if (slab.is_object()) s.problem.grid.nz = slab.value("nz", s.problem.grid.nz);  // the whole grid's planes
    // The interrupted run's output cadence and --force carry over (flags below may change them).
    const nlohmann::json& run = s.restart->run;
    s.series_every = run.value("series_every", s.series_every);
    s.output_every = run.value("output_every", s.output_every);
    s.checkpoint_every = run.value("checkpoint_every", s.checkpoint_every);
    s.quicklook = run.value("quicklook", s.quicklook);
    a.force = a.force || run.value("force", false);
  } else {
    Problem& p = s.problem;
    p.model = cfg.parameters;
    if (!a.sensitivity.empty()) {
      p.model.sensitivity =
          parse_choice(parse_sensitivity(a.sensitivity), "--sensitivity", a.sensitivity, names_text(kSensitivityNames));
    }
    p.initial = cfg.initial;
    if (cfg.taf) p.initial.taf = *cfg.taf;
    if (!a.initial.empty())
      p.initial.taf = parse_choice(parse_taf(a.initial), "--initial", a.initial, names_text(kTafNames));
    p.form = a.form.empty() ? cfg.form.value_or(Form::Expanded)
                            : parse_choice(parse_form(a.form), "--form", a.form, names_text(kFormNames));
    p.precision = a.precision.empty()
                      ? cfg.precision.value_or(Precision::Fp32)
                      : parse_choice(parse_precision(a.precision), "--precision", a.precision, names_text(kPrecisionNames));
    std::optional<std::filesystem::path> initial_file = cfg.initial_file;
    if (!a.initial_file.empty()) initial_file = a.initial_file;
    if (initial_file) refuse_input_as_output(a.out, true, "initial_file", *initial_file, "--out");
    bool grid_given = false;
    if (cfg.nx) {
      p.grid = Grid{*cfg.nx, *cfg.ny, *cfg.nz, 0};
      grid_given = true;
    }
    if (!a.grid.empty()) {
      grid_given = true;
      if (a.grid.size() != 3) throw UserError("--grid: expected NX,NY,NZ");
      p.grid = Grid{a.grid[0], a.grid[1], a.grid[2], 0};
    }
    if (initial_file) {
      if (a.h || cfg.h) throw UserError("--h: the spacing comes from --initial-file; leave --h (and grid.h) out");
      if (!a.initial.empty() || cfg.taf) {
        throw UserError("--initial: the fields come from --initial-file; leave --initial (and initial.taf) out");
      }
      s.initial = read_vti(*initial_file);
      p.initial_file = initial_file->string();
      const Grid& fg = s.initial->grid;
      if (grid_given && (p.grid.nx != fg.nx || p.grid.ny != fg.ny || p.grid.nz != fg.nz)) {
        throw UserError(fmt::format("{}: its grid {},{},{} differs from --grid {},{},{}", initial_file->string(), fg.nx,
                                    fg.ny, fg.nz, p.grid.nx, p.grid.ny, p.grid.nz));
      }
      p.grid = fg;
    }
    if (!grid_given && !initial_file) p.grid = Grid{201, 201, 1, 0};
    if (p.grid.nx < 2 || p.grid.ny < 2 || p.grid.nz < 1) {
      throw UserError(fmt::format("--grid {},{},{}: need NX >= 2, NY >= 2, NZ >= 1 (NZ = 1 is the 2D model)", p.grid.nx,
                                  p.grid.ny, p.grid.nz));
    }
    if (a.h) {
      p.grid.h = *a.h;
    } else if (cfg.h) {
      p.grid.h = *cfg.h;
    } else if (p.grid.h <= 0) {
      p.grid.h = 1.0 / (p.grid.nx - 1);
    }
    if (a.dt) {
      p.dt = *a.dt;
    } else if (cfg.dt) {
      p.dt = *cfg.dt;
    } else {
      s.auto_dt = true;
    }
    if (!a.steps && !a.t_max) {
      if (cfg.steps) s.steps = *cfg.steps;
      if (cfg.t_max) s.t_max = cfg.t_max;
    }
    if (cfg.output_every) s.output_every = *cfg.output_every;
    if (cfg.series_every) s.series_every = *cfg.series_every;
    if (cfg.checkpoint_every) s.checkpoint_every = *cfg.checkpoint_every;
    if (cfg.quicklook) s.quicklook = *cfg.quicklook;
    if (cfg.seed && !a.seed) a.seed = cfg.seed;
  }
  if (a.steps && a.t_max) throw UserError("--steps and --t-max: give one of them");
  if (a.steps) s.steps = *a.steps;
  if (a.t_max) {
    if (!(*a.t_max > 0)) throw UserError(fmt::format("--t-max {}: must be positive", *a.t_max));
    s.t_max = a.t_max;
  }
  if (a.output_every) s.output_every = *a.output_every;
  if (a.series_every) s.series_every = *a.series_every;
  if (a.checkpoint_every) s.checkpoint_every = *a.checkpoint_every;
  if (a.no_quicklook) s.quicklook = false;
  if (a.no_snapshots) s.snapshots = false;
  s.force = a.force;

  a.common.seed = a.seed.value_or(s.restart ? s.restart->seed : 1);
  const dist::Comm& world = dist::Comm::world();
  if (!world.root()) a.common.quiet = true;  // rank 0 reports for the job
  RunOptions options = to_run_options(a.common);
  Progress progress("angio", "steps", a.common.quiet);
  options.progress = [&](double done, double total) { progress.update(done, total); };
  const double device_init_seconds = options.backend == Backend::Cuda ? initialize_cuda_device(options.device) : 0.0;
  const RunReport report = angio::run(std::move(s), options);
  progress.finish();
  if (!world.root()) return kExitOk;

  const double steps = static_cast<double>(report.end_step - report.start_step);
  const double rate = report.compute_seconds > 0 ? steps / report.compute_seconds : 0;
  const double nodes = static_cast<double>(report.nodes);
  const double gbs = rate * nodes * bytes_per_node_step(report.precision) / 1e9;
  if (!a.common.quiet && report.form == Form::Expanded && report.stability.negative_weight_fraction > 0) {
    fmt::print(stderr,
               "simkit: note: at {:.3g} % of the nodes some of P1..P6 is negative (mesh Peclet number > 2, no step "
               "fixes it): the expanded form can make n negative there; --form flux keeps n >= 0\n",
               100 * report.stability.negative_weight_fraction);
  }
  if (!a.common.quiet && a.force && a.restart.empty() && report.dt > report.stability.largest_stable_k) {
    fmt::print(stderr, "simkit: note: --force: k = {:.6g} exceeds the {} limit {:.6g}\n", report.dt,
               report.stability.binding_limit, report.stability.largest_stable_k);
  }
  RunSummary summary;
  summary.command = "simkit angio run";
  summary.backend = std::string(to_string(report.backend));
  summary.device = report.ranks > 1 ? fmt::format("{} ranks (z-slabs), rank 0 on {}", report.ranks, report.device)
                                    : report.device;
  summary.wall_seconds = clock.seconds();
  summary.throughput = rate;
  summary.throughput_unit = "steps";
  summary.extra = {{"ranks", report.ranks},
                   {"compute_seconds", report.compute_seconds},
                   {"device_init_seconds", device_init_seconds},
                   {"nodes", report.nodes},
                   {"steps", report.end_step - report.start_step},
                   {"end_step", report.end_step},
                   {"dt", report.dt},
                   {"t_end", static_cast<double>(report.end_step) * report.dt},
                   {"gnode_updates_per_second", rate * nodes / 1e9},
                   {"effective_gb_per_second", gbs},
                   {"int_n", report.final_state.integral[0]},
                   {"min_n", report.final_state.min[0]},
                   {"max_n", report.final_state.max[0]},
                   {"out", a.out}};
  if (a.common.json) {
    summary.print(true);
  } else {
    fmt::print(
        "{}, {:.3g} Gnode-updates/s, {:.4g} GB/s effective; {} steps of k = {:.4g} to t = {:.4g}, int n = {:.6g}\n",
        summary.text(), rate * nodes / 1e9, gbs, report.end_step - report.start_step, report.dt,
        static_cast<double>(report.end_step) * report.dt, report.final_state.integral[0]);
  }
  return 0;
}

}  // namespace

namespace {

// Options of both models.
void add_shared_options(CLI::App& cmd, AngioArgs& a) {
  cmd.add_option("--config", a.config, "Run configuration (TOML; flags override it; keys in docs/angio.md)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--out", a.out, "Output directory")->required();
  cmd.add_option("--grid", a.grid, "Nodes NX,NY,NZ (NZ = 1: the 2D model; default 201,201,1)")
      ->delimiter(',')
      ->expected(3);
  cmd.add_option("--h", a.h, "Node spacing (default 1/(NX-1))")->check(kFinite);
  cmd.add_option("--dt", a.dt, "Time step k (default: 0.9 x the largest stable k, 2 digits)")->check(kFinite);
  cmd.add_option("--t-max", a.t_max, "Run until this time (steps = ceil(t_max / k))")->check(kFinite);
  cmd.add_option("--initial", a.initial, "Initial TAF: linear (source at x = 1, default) or tumour");
  cmd.add_option("--sensitivity", a.sensitivity,
                 "Chemotactic sensitivity: receptor (chi0 / (1 + alpha c), default) or constant (chi0)");
  cmd.add_flag("--force", a.force, "Run even when the stability check refuses the step");
  cmd.add_flag("--no-quicklook", a.no_quicklook, "Skip the quick-look images");
  cmd.add_flag("--no-snapshots", a.no_snapshots,
               "Write no snapshots (.vti/.pvti) and no angio.pvd: series, checkpoints and run.json only (large grids, "
               "benchmarks)");
  add_common_run_options(cmd, a.common);
}

// The hybrid model's options (docs/angio.md, "Hybrid model").
void add_hybrid_options(CLI::App& cmd, AngioArgs& a) {
  cmd.add_option("--replicates", a.replicates, "Realisations with seeds S, S+1, ...")->check(CLI::Range(1, 100000000));
  cmd.add_option("--seed", a.seed, "Random seed S (realisation r uses S + r; default 1)")->check(kSeed);
  cmd.add_option("--psi", a.psi, "A sprout may branch once older than this (default 0.5)")->check(kFinite);
  cmd.add_option("--sprouts", a.sprouts, "Initial tips on the parent vessel (default: one per n maximum)");
  cmd.add_option("--max-tips", a.max_tips, "Cap on active tips (default 100000)");
  cmd.add_option("--reach-x", a.reach_x, "Stop when a sprout reaches this fraction of the box (0.95)")->check(kFinite);
  cmd.add_option("--sprouts-at", a.sprouts_at, "Initial tips at these y (box fractions, comma-separated; y:z pairs in 3D)");
  cmd.add_option("--anastomosis", a.anastomosis,
                 "Fuse with other (default: another sprout or the vessel), other-active (Angio_TDA), any "
                 "(own trail too), window:N (own trail beyond the last N positions)");
  cmd.add_option("--fork", a.fork, "A tip meeting its parent's or daughter's sprout within psi of their branch: fuse or pass");
  cmd.add_option("--uptake", a.uptake, "c and f change on the whole trail (default) or at the tips only");
  cmd.add_option("--branch-probability", a.branch_probability,
                 "table (P_n(c), default) or one (always, once the other conditions hold)");
  cmd.add_option("--branch-density", a.branch_density,
                 "Branch only when occupied neighbours (Moore, tip included) > this / c (default 0: off)")
      ->check(kFinite);
  cmd.add_option("--daughter", a.daughter,
                 "A branch's new tip on a free neighbour drawn with the move weights (default) or uniformly");
  cmd.add_option("--weights", a.weights,
                 "Move probabilities from A&C's central differences (default) or Angio_TDA's one-sided ones");
  cmd.add_flag("--back-steps", a.back_steps, "Tips may step back onto the node they came from");
  cmd.add_option("--metrics-files", a.metrics_files,
                 "Write metrics/realisation_NNNNN.csv for the first N realisations only (all: every one, the default; "
                 "0: none; ensemble.csv and result.json always cover all)");
}

// The continuous model's options.
void add_continuous_options(CLI::App& cmd, AngioArgs& a) {
  cmd.add_option("--steps", a.steps, "Run until this step (counted from 0, also on restart; default 1000)");
  cmd.add_option("--output-every", a.output_every, "VTI snapshot every K steps (0: initial and final only)");
  cmd.add_option("--series-every", a.series_every, "series.csv row every K steps (default 10; 0: none)");
  cmd.add_option("--checkpoint-every", a.checkpoint_every, "Write out/checkpoint.ckpt every K steps (0: never)");
  cmd.add_option("--precision", a.precision, "fp32 (default) or fp64");
  cmd.add_option("--form", a.form, "n equation: expanded (the papers', default) or flux (conservative)");
  cmd.add_option("--initial-file", a.initial_file, "Initial n, f, c from a .vti file (grid from the file)");
  cmd.add_option("--restart", a.restart, "Resume from a checkpoint (bitwise equal to an uninterrupted run)");
}

}  // namespace

void add_angio_command(CLI::App& app, Action& action) {
  auto* angio = app.add_subcommand("angio", "Tumour-induced angiogenesis (Anderson & Chaplain 1998, in 3D)");
  angio->require_subcommand(1);
  auto a = std::make_shared<AngioArgs>();
  auto* run = angio->add_subcommand(
      "run", "Run the continuous model (n, f, c) on a 3D or 2D grid (--model hybrid: as `simkit angio hybrid`)");
  add_shared_options(*run, *a);
  add_continuous_options(*run, *a);
  // The hybrid model's options stay on `run` for `run --model hybrid`, which earlier versions had.
  add_hybrid_options(*run, *a);
  run->add_option("--model", a->model, "continuous (default), or hybrid (same as `simkit angio hybrid`)");
  run->callback([&action, a, run] {
    for (const char* flag : {"--grid", "--h", "--dt", "--precision", "--form", "--initial", "--initial-file",
                             "--sensitivity"})
      if (run->count(flag) > 0) a->given_physics.push_back(flag);
    a->replicates_given = run->count("--replicates") > 0;
    action = [a] { return run_angio(*a); };
  });
  auto* hybrid = angio->add_subcommand(
      "hybrid", "Run the hybrid model: ensembles of discrete tip cells growing vessel networks (docs/angio.md)");
  add_shared_options(*hybrid, *a);
  add_hybrid_options(*hybrid, *a);
  hybrid->callback([&action, a, hybrid] {
    a->replicates_given = hybrid->count("--replicates") > 0;
    a->hybrid_command = true;
    action = [a] { return run_angio(*a); };
  });
}

}  // namespace simkit::cli
