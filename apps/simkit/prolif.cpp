// `simkit prolif simulate`: parse flags, read files, simulate, write outputs, summarise.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "common.hpp"
#include "prolif_common.hpp"
#include "core/output.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "core/report.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/writers.hpp"

namespace simkit::cli {

namespace {

struct ProlifArgs {
  CommonRunOptions common;
  FcsArgs fcs;
  std::string histogram, config, populations, target, out, start;
  std::vector<double> times;
  double t_max = std::nan("");
  double phi_min = std::nan("");
  std::uint64_t seed = 0;
  bool seed_given = false;
  int replicates = 1;
  int bins = 100;
  std::vector<double> range;
};

int run_simulate(const ProlifArgs& a) {
  using namespace simkit::prolif;
  Stopwatch clock;
  // A run rewrites --out: an input inside it could be overwritten (histogram.tsv, for one).
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--histogram", a.histogram},
                                   {"--config", a.config},
                                   {"--populations", a.populations},
                                   {"--target", a.target}}) {
    refuse_input_as_output(a.out, true, flag, path, "--out");
  }
  check_output_directory(a.out);  // written at the end (staged): an unwritable place fails now
  const FcsOptions fcs = to_fcs_options(a.fcs);
  const InitialHistogram initial = read_histogram(a.histogram, fcs);
  ModelFile file = !a.config.empty() ? read_model_toml(a.config) : read_types_file(a.populations);
  Model model = file.model;
  const std::string model_source = !a.config.empty() ? a.config : a.populations;

  // Command-line flags override the file.
  if (!std::isnan(a.phi_min)) {
    model.phi_min = a.phi_min;
  } else if (!file.phi_min) {
    throw UserError(fmt::format("--phi-min: not given and {} has no phi_min", model_source));
  }
  if (!a.times.empty()) {
    std::vector<double> times = a.times;
    std::sort(times.begin(), times.end());
    if (std::adjacent_find(times.begin(), times.end()) != times.end())
      throw UserError("--times: a time is given twice");
    if (!std::isnan(a.t_max) && a.t_max != times.back()) {
      throw UserError(fmt::format("--t-max {} differs from the largest of --times ({})", a.t_max, times.back()));
    }
    model.times = times;
  } else if (!std::isnan(a.t_max)) {
    model.times = {a.t_max};
  } else if (model.times.empty()) {
    throw UserError(fmt::format("--t-max: not given and {} has neither t_max nor times", model_source));
  }
  if (!a.start.empty()) model.start = parse_start_mode(a.start, "--start");
  validate(model, model_source);

  RunOptions options = to_run_options(a.common);
  options.seed = a.seed_given ? a.seed : file.seed.value_or(1);

  Report report;
  report.initial = initial;
  report.model = model;
  report.binning.bins = a.bins;
  report.binning.phi_min = model.phi_min;
  if (a.range.size() == 2) {
    if (!(a.range[0] > 0 && a.range[1] > a.range[0])) throw UserError("--range: expected 0 < LO < HI");
    report.binning.low = a.range[0];
    report.binning.high = a.range[1];
  }
  if (!a.target.empty()) report.target = read_histogram(a.target, fcs);

  std::vector<Model> models(static_cast<std::size_t>(a.replicates), model);
  std::vector<std::uint64_t> seeds;
  for (int r = 0; r < a.replicates; ++r) seeds.push_back(options.seed + static_cast<std::uint64_t>(r));
  // Under mpirun (docs/scale-out.md): replicates are split over the ranks, a single run's cells
  // are; the root gathers the results, writes the outputs and prints. Progress shows the root's part.
  const dist::Comm& world = dist::Comm::world();
  Progress progress("prolif", "initial cells", a.common.quiet || !world.root());
  options.progress = [&](double done, double total) { progress.update(done, total); };
  // The one-time CUDA context creation is reported apart from the simulation time.
  const double device_init_seconds = options.backend == Backend::Cuda ? initialize_cuda_device(options.device) : 0.0;
  world.barrier();  // the ranks start together: the time is the job's, not one rank's start-up skew
  Stopwatch sim_clock;
  if (!world.distributed()) {
    report.runs = simulate_batch(initial, models, seeds, options);
  } else if (a.replicates == 1) {
    options.seed = seeds[0];
    report.runs = {simulate_distributed(initial, model, options, world)};
  } else {
    report.runs = simulate_batch_distributed(initial, models, seeds, options, world);
  }
  const double sim_seconds = sim_clock.seconds();
  progress.finish();
  if (!world.root()) return 0;

  report.backend = std::string(to_string(options.backend));
  report.device = device_description(options.backend, options.device, options.threads);
  report.wall_seconds = clock.seconds();
  const nlohmann::json doc = write_outputs(a.out, report);

  std::uint64_t divisions = 0;
  for (const auto& r : report.runs) divisions += r.divisions;
  const nlohmann::json& last = doc["times"].back();
  if (last["overflow"].get<double>() > 0 && !a.common.quiet) {
    fmt::print(stderr, "simkit: note: {} cells above the last bin edge ({:g}) at t = {}: counted as overflow\n",
               last["overflow"].get<double>(), report.binning.edges().back(), model.t_max());
  }
  RunSummary summary;
  summary.command = "simkit prolif simulate";
  summary.backend = report.backend;
  summary.device = report.device;
  summary.wall_seconds = clock.seconds();
  summary.throughput = sim_seconds > 0 ? static_cast<double>(divisions) / sim_seconds : 0.0;
  summary.throughput_unit = "divisions";
  summary.extra = {{"simulate_seconds", sim_seconds},
                   {"device_init_seconds", device_init_seconds},
                   {"initial_cells", initial.total_cells()},
                   {"divisions", divisions},
                   {"replicates", a.replicates},
                   {"ranks", world.size()},
                   {"t_max", model.t_max()},
                   {"total", last["total"]},
                   {"hellinger_normalized", last["hellinger_normalized"]},
                   {"out", a.out}};
  if (a.common.json) {
    summary.print(true);
  } else {
    std::string text = summary.text();
    if (world.distributed()) text += fmt::format(", {} ranks", world.size());
    text += fmt::format(", {} cells at t = {} h", human_number(last["total"].get<double>()), model.t_max());
    if (!last["hellinger_normalized"].is_null()) {
      text += fmt::format(", normalized Hellinger {:.4f}", last["hellinger_normalized"].get<double>());
    }
    fmt::print("{}\n", text);
  }
  return 0;
}

}  // namespace

void add_prolif_fit_command(CLI::App& prolif, Action& action);  // prolif_fit.cpp

void add_prolif_command(CLI::App& app, Action& action) {
  auto* prolif = app.add_subcommand("prolif", "Cell proliferation (ProCell model): dye-dilution histograms");
  prolif->require_subcommand(1);
  auto* sim = prolif->add_subcommand("simulate", "Simulate H(t) from H(0) and a model of subpopulations");
  auto a = std::make_shared<ProlifArgs>();
  sim->add_option("--histogram", a->histogram,
                  "H(0): ProCell text (value count per line), CSV with header, or FCS 3.0/3.1 (with --channel)")
      ->required();
  auto* cfg =
      sim->add_option("--config", a->config, "Model as TOML ([[population]] tables, phi_min, t_max, start, seed)");
  auto* types =
      sim->add_option("--populations", a->populations, "Model as a cuProCell types file (proportion mean sd)");
  cfg->excludes(types);
  types->excludes(cfg);
  // Range checks here, so that a bad value is reported as the flag's (validate() would name the
  // model file the other fields come from).
  sim->add_option("--t-max", a->t_max, "Simulated time in hours (default: the model's)")
      ->check(kFinite)
      ->check(kNonNegative);
  sim->add_option("--times", a->times, "Output times in hours, comma-separated; t_max is the largest")
      ->delimiter(',')
      ->check(kFinite)
      ->check(kNonNegative);
  sim->add_option("--phi-min", a->phi_min,
                  "Fluorescence threshold: cells whose daughters would fall to it or below are discarded")
      ->check(kFinite)
      ->check(kNonNegative);
  sim->add_option("--start", a->start,
                  "Clock start: sync (every cell at t = 0) or procell-async (ProCell's asynchronous start)");
  sim->add_option("--seed", a->seed, "Random seed (default: the model's, else 1); replicate r uses seed + r")
      ->check(kSeed)
      ->each([a](const std::string&) { a->seed_given = true; });
  sim->add_option("--replicates", a->replicates,
                  "Independent runs with seeds S, S+1, ... (under mpirun split over the ranks; one run's cells are)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sim->add_option("--target", a->target, "Target histogram at t_max, for the Hellinger distance and the plot");
  sim->add_option("--bins", a->bins, "Number of logarithmic bin edges")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  sim->add_option("--range", a->range, "Binning range LO HI (default 10 10000)")->expected(2)->check(kFinite);
  sim->add_option("--out", a->out, "Output directory (histogram.tsv, exact.csv, binned.csv, result.json, plot.svg)")
      ->required();
  add_fcs_options(*sim, a->fcs);
  add_common_run_options(*sim, a->common);
  sim->callback([&action, a, cfg, types] {
    if (cfg->count() == 0 && types->count() == 0) throw CLI::RequiredError("--config or --populations");
    action = [a] { return run_simulate(*a); };
  });
  add_prolif_fit_command(*prolif, action);
}

}  // namespace simkit::cli
