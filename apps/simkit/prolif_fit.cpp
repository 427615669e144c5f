// `simkit prolif fit`: calibrate a model's free parameters to one or more measured histograms.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>

#include "common.hpp"
#include "prolif_common.hpp"
#include "core/output.hpp"
#include "core/report.hpp"
#include "core/svg.hpp"
#include "core/text.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "simkit/prolif/fit_report.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prc.hpp"

namespace simkit::cli {

namespace {

namespace fs = std::filesystem;
using namespace simkit::prolif;

struct FitArgs {
  CommonRunOptions common;
  FcsArgs fcs;
  std::string histogram, config, project, out, start, optimizer = "fst-pso";
  std::vector<std::string> configs, projects;  // several: fit each and compare them
  std::vector<std::string> targets, validations, frees, fixes;
  double phi_min = std::nan("");
  std::uint64_t seed = 1;
  bool seed_given = false;
  int particles = 0, iterations = -1, replicates = 1, bins = 0, check_runs = 10, bootstrap = 0, restarts = 1;
  double level = 0.95;
  std::int64_t budget = 0;
  bool crn = false, log_init = false;
  std::vector<double> range;
};

// "FILE@HOURS" (the last '@' splits, so that a file name may hold one).
std::pair<std::string, double> parse_timed(const std::string& text, const std::string& flag) {
  const std::size_t at = text.rfind('@');
  if (at == std::string::npos || at == 0)
    throw UserError(fmt::format("{} {}: a histogram needs its time: write FILE@HOURS (e.g. target.txt@240)", flag, text));
  const std::string time_text = text.substr(at + 1);
  const auto t = text::parse<double>(time_text);
  if (!t || !std::isfinite(*t) || *t <= 0)
    throw UserError(fmt::format("{} {}: the time '{}' is not a number of hours > 0", flag, text, time_text));
  return {text.substr(0, at), *t};
}

// A file named in a .prc: as written, else its file name next to the project (ProCell writes
// absolute paths, often Windows ones).
std::string project_file(const std::string& project, const std::string& stored, const std::string& field,
                         const std::string& flag) {
  if (fs::exists(stored)) return stored;
  const fs::path beside = fs::path(project).parent_path() / portable_file_name(stored);
  if (fs::exists(beside)) return beside.string();
  throw input_error(project, 0, field,
                    fmt::format("'{}' does not exist, nor '{}' next to the project; give the file with {}", stored,
                                beside.string(), flag));
}

// The parameter `name` ("fast.mean", "phi_min", "slow.proportion") of the spec: its freedom slot.
std::optional<Range>* freedom_slot(FitSpec& spec, const std::string& name, const std::string& flag) {
  if (name == "phi_min") return &spec.phi_min;
  const std::size_t dot = name.rfind('.');
  if (dot != std::string::npos) {
    const std::string pop = name.substr(0, dot), field = name.substr(dot + 1);
    for (std::size_t p = 0; p < spec.model.populations.size(); ++p) {
      if (spec.model.populations[p].name != pop) continue;
      if (field == "proportion") return &spec.free[p].proportion;
      if (spec.model.populations[p].quiescent) break;
      if (field == "mean") return &spec.free[p].mean;
      if (field == "sd") return &spec.free[p].sd;
    }
  }
  std::string known = "phi_min";
  for (const Population& p : spec.model.populations) {
    known += ", " + p.name + ".proportion";
    if (!p.quiescent) known += ", " + p.name + ".mean, " + p.name + ".sd";
  }
  throw UserError(fmt::format("{} {}: unknown parameter (the model has {})", flag, name, known));
}

double* value_slot(FitSpec& spec, const std::string& name) {
  if (name == "phi_min") return &spec.model.phi_min;
  const std::size_t dot = name.rfind('.');
  const std::string pop = name.substr(0, dot), field = name.substr(dot + 1);
  for (Population& p : spec.model.populations) {
    if (p.name != pop) continue;
    if (field == "proportion") return &p.proportion;
    if (field == "mean") return &p.mean;
    return &p.sd;
  }
  return nullptr;
}

FitReport fit_model(const FitArgs& a, bool quiet, const Stopwatch& clock);
int run_compare(const FitArgs& a, const Stopwatch& clock);

// Reads one model (TOML or .prc), applies the flags, fits it, checks the best model and, with
// --bootstrap, computes its intervals. `a.project` / `a.config` are ignored: the model is `config`
// or `project_path`.
FitReport fit_one(const FitArgs& a, const std::string& config, const std::string& project_path, bool quiet) {
  Stopwatch clock;
  FitArgs local = a;
  local.config = config;
  local.project = project_path;
  return fit_model(local, quiet, clock);
}

FitReport fit_model(const FitArgs& a, bool quiet, const Stopwatch& clock) {
  FitReport report;
  FitSpec& spec = report.spec;
  ProcellProject& project = report.project;
  std::string source;
  std::optional<std::uint64_t> file_seed;
  if (!a.project.empty()) {
    project = read_prc(a.project);
    spec = project.spec;
    source = a.project;
    project.project_name = project.project_name.empty() ? fs::path(a.project).stem().string() : project.project_name;
  } else {
    FitModelFile file = read_fit_model_toml(a.config);
    spec = file.spec;
    source = a.config;
    file_seed = file.file.seed;
    project.project_name = fs::path(a.config).stem().string();
    project.asynchronous = spec.model.start == StartMode::ProcellAsync;
  }

  // Flags override the file: fixed values, start mode, bounds.
  if (!std::isnan(a.phi_min)) {
    spec.model.phi_min = a.phi_min;
    spec.phi_min.reset();
  }
  if (!a.start.empty()) spec.model.start = parse_start_mode(a.start, "--start");
  std::set<std::string> settled;
  for (const std::string& f : a.frees) {
    const std::size_t eq = f.find('='), colon = f.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || colon == std::string::npos)
      throw UserError(fmt::format("--free {}: expected NAME=MIN:MAX (e.g. fast.mean=30:63)", f));
    const std::string name = f.substr(0, eq);
    const auto lo = text::parse<double>(f.substr(eq + 1, colon - eq - 1));
    const auto hi = text::parse<double>(f.substr(colon + 1));
    if (!lo || !hi) throw UserError(fmt::format("--free {}: MIN and MAX must be numbers", f));
    if (!std::isfinite(*lo) || !std::isfinite(*hi) || !(*lo < *hi))
      throw UserError(fmt::format("--free {}: empty or inverted bounds (MIN must be below MAX, both finite)", f));
    *freedom_slot(spec, name, "--free") = Range{*lo, *hi};
    settled.insert(name);
  }
  for (const std::string& f : a.fixes) {
    const std::size_t eq = f.find('=');
    const std::string name = f.substr(0, eq);
    freedom_slot(spec, name, "--fix")->reset();
    if (eq != std::string::npos) {
      const auto v = text::parse<double>(f.substr(eq + 1));
      if (!v || !std::isfinite(*v)) throw UserError(fmt::format("--fix {}: the value must be a finite number", f));
      *value_slot(spec, name) = *v;
    }
    settled.insert(name);
  }
  for (const std::string& name : project.unset_bounds) {
    if (settled.count(name) == 0)
      throw input_error(a.project, 0, name,
                        fmt::format("bounds not set in the project (ProCell leaves them 0); give them with --free "
                                    "{}=MIN:MAX, or keep the value with --fix {}",
                                    name, name));
  }

  // Histograms: flags, else the project's files.
  std::string h0 = a.histogram;
  if (h0.empty() && project.initial_file) h0 = project_file(a.project, *project.initial_file, "initial_file", "--histogram");
  if (h0.empty()) throw UserError("--histogram: required (H(0))");
  const FcsOptions fcs = to_fcs_options(a.fcs);
  report.initial = read_histogram(h0, fcs);
  std::vector<std::pair<std::string, double>> targets, validations;
  for (const auto& t : a.targets) targets.push_back(parse_timed(t, "--target"));
  for (const auto& v : a.validations) validations.push_back(parse_timed(v, "--validate"));
  if (targets.empty() && project.target_file && project.simulation_time > 0)
    targets.emplace_back(project_file(a.project, *project.target_file, "target_file", "--target"),
                         project.simulation_time);
  if (targets.empty()) throw UserError("--target: at least one target histogram is needed (FILE@HOURS)");
  if (validations.empty() && project.validation_file && project.validation_time > 0 && a.targets.empty()) {
    // The validation is optional: a project whose validation file is not here is fitted without it.
    try {
      validations.emplace_back(project_file(a.project, *project.validation_file, "validation_file", "--validate"),
                               project.validation_time);
    } catch (const UserError& e) {
      if (!quiet) fmt::print(stderr, "simkit: note: no validation: {}\n", printable_line(e.what()));
    }
  }
  for (const auto& [file, time] : targets) {
    refuse_input_as_output(a.out, true, "--target", file, "--out");
    report.targets.push_back({read_histogram(file, fcs), time});
  }
  for (const auto& [file, time] : validations) {
    refuse_input_as_output(a.out, true, "--validate", file, "--out");
    report.validations.push_back({read_histogram(file, fcs), time});
  }
  // The simulations run to the last target; the model's own times are replaced.
  spec.model.times = {targets.back().second};
  settle_placeholders(spec);
  validate(spec.model, source);
  validate(spec, source);

  FitOptions& o = report.options;
  o.optimizer = parse_optimizer(a.optimizer, "--optimizer");
  o.particles = a.particles > 0 ? a.particles : (!a.project.empty() ? project.swarm_size : 50);
  o.iterations = a.iterations >= 0 ? a.iterations : (!a.project.empty() ? project.iterations : 100);
  o.budget = a.budget;
  o.replicates = a.replicates;
  o.common_random_numbers = a.crn;
  o.log_init = a.log_init;
  o.restarts = a.restarts;
  o.seed = a.seed_given ? a.seed : file_seed.value_or(1);
  o.binning.bins = a.bins > 0 ? a.bins : (!a.project.empty() ? project.bins : 100);
  if (a.range.size() == 2) {
    if (!(a.range[0] > 0 && a.range[1] > a.range[0])) throw UserError("--range: expected 0 < LO < HI");
    o.binning.low = a.range[0];
    o.binning.high = a.range[1];
  } else if (!a.project.empty()) {
    o.binning.low = project.lowest_bin;
    o.binning.high = project.highest_bin;
  }
  if (o.binning.bins < 2) throw input_error(a.project, 0, "bins", "must be >= 2");
  if (!(o.binning.low > 0 && o.binning.high > o.binning.low))
    throw input_error(a.project, 0, "lowest_bin", "the bin range must satisfy 0 < lowest_bin < highest_bin");
  o.run = to_run_options(a.common);
  // Under mpirun every rank runs the same fit, each iteration's evaluations split over the ranks
  // (docs/scale-out.md); only the root prints and writes.
  if (dist::Comm::world().distributed()) o.comm = &dist::Comm::world();

  const std::int64_t planned =
      o.budget > 0 ? o.budget : static_cast<std::int64_t>(o.particles) * (static_cast<std::int64_t>(o.iterations) + 1);
  const std::int64_t planned_all = planned * o.restarts;
  Progress progress(fmt::format("prolif fit {}", project.project_name), "evaluations", quiet);
  o.on_iteration = [&](const FitIteration& it) {
    progress.set_detail(fmt::format("best {:.4f}", it.best));
    progress.update(static_cast<double>(it.evaluations), static_cast<double>(planned_all));
  };
  report.device_init_seconds = o.run.backend == Backend::Cuda ? initialize_cuda_device(o.run.device) : 0.0;
  report.result = fit(report.initial, spec, report.targets, o);
  progress.finish();
  check_fit(report, a.check_runs);
  if (a.bootstrap > 0) {
    Progress boot(fmt::format("prolif fit {}: bootstrap", project.project_name), "refits", quiet);
    report.uncertainty = bootstrap(report.initial, spec, report.targets, o, report.result, a.bootstrap, a.level,
                                   [&](int done) { boot.update(done, a.bootstrap); });
  }

  report.backend = std::string(to_string(o.run.backend));
  report.device = device_description(o.run.backend, o.run.device, o.run.threads);
  report.wall_seconds = clock.seconds();
  return report;
}

int run_fit(const FitArgs& a) {
  Stopwatch clock;
  for (const std::string& path : a.configs) refuse_input_as_output(a.out, true, "--config", path, "--out");
  for (const std::string& path : a.projects) refuse_input_as_output(a.out, true, "--project", path, "--out");
  refuse_input_as_output(a.out, true, "--histogram", a.histogram, "--out");
  check_output_directory(a.out);
  if (a.configs.size() + a.projects.size() > 1) return run_compare(a, clock);
  const bool root = dist::Comm::world().root();
  const FitReport report = fit_one(a, a.configs.empty() ? "" : a.configs[0], a.projects.empty() ? "" : a.projects[0],
                                   a.common.quiet || !root);
  if (!root) return 0;
  const nlohmann::json doc = write_fit_outputs(a.out, report);

  RunSummary summary;
  summary.command = "simkit prolif fit";
  summary.backend = report.backend;
  summary.device = report.device;
  summary.wall_seconds = clock.seconds();
  summary.throughput = doc["evaluations_per_second"].get<double>();
  summary.throughput_unit = "evaluations";
  std::vector<double> check_targets;
  for (const FitCheck& c : report.checks)
    if (!c.validation) {
      double s = 0;
      for (double h : c.hellinger) s += h;
      check_targets.push_back(s / static_cast<double>(c.hellinger.size()));
    }
  summary.extra = {{"fitness", report.result.fitness},
                   {"evaluations", report.result.evaluations},
                   {"fit_seconds", report.result.seconds},
                   {"device_init_seconds", report.device_init_seconds},
                   {"ranks", dist::Comm::world().size()},
                   {"parameters", doc["parameters"]},
                   {"check", doc["check"]["times"]},
                   {"out", a.out}};
  if (report.uncertainty) summary.extra["uncertainty"] = doc["uncertainty"];
  if (a.common.json) {
    summary.print(true);
  } else {
    // The fitted values (with their intervals when bootstrapped), then the one-line summary.
    const auto& u = report.uncertainty;
    for (std::size_t n = 0; n < report.result.parameters.size(); ++n) {
      std::string line = fmt::format("  {:<28} {:>12.6g}", report.result.parameters[n].name, report.result.best_x[n]);
      if (u) line += fmt::format("   {:.0f} % interval [{:.6g}, {:.6g}]", 100 * u->level, u->parameters[n].low, u->parameters[n].high);
      fmt::print("{}\n", line);
    }
    if (u)
      for (const ParameterInterval& p : u->proportions)
        fmt::print("  {:<28} {:>12.6g}   {:.0f} % interval [{:.6g}, {:.6g}]\n", p.name, p.best, 100 * u->level, p.low,
                   p.high);
    std::string text = summary.text();
    if (dist::Comm::world().distributed()) text += fmt::format(", {} ranks", dist::Comm::world().size());
    text += fmt::format(", {} evaluations in {:.3g} s, fitness {:.4f}", report.result.evaluations,
                        report.result.seconds, report.result.fitness);
    for (std::size_t c = 0; c < report.checks.size(); ++c) {
      double s = 0;
      for (double h : report.checks[c].hellinger) s += h;
      text += fmt::format(", {} h{}: Hellinger {:.4f}", report.checks[c].time,
                          report.checks[c].validation ? " (validation)" : "",
                          s / static_cast<double>(report.checks[c].hellinger.size()));
    }
    fmt::print("{}\n", text);
  }
  return 0;
}

int run_compare(const FitArgs& a, const Stopwatch& clock) {
  struct Entry {
    std::string name, source;
    FitReport report;
    ModelScore score;
    double check = 0, validation = -1;
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  const auto add = [&](const std::string& config, const std::string& project) {
    const std::string source = config.empty() ? project : config;
    FitReport r = fit_one(a, config, project, a.common.quiet || !dist::Comm::world().root());
    const std::string base = fs::path(source).stem().string();
    std::string name = base;
    for (int k = 2; names.count(name) > 0; ++k) name = fmt::format("{}-{}", base, k);
    names.insert(name);
    Entry e{name, source, std::move(r), {}, 0, -1};
    e.score = score(e.report);
    double vs = 0, vn = 0;
    for (const FitCheck& c : e.report.checks) {
      double m = 0;
      for (double h : c.hellinger) m += h / static_cast<double>(c.hellinger.size());
      if (c.validation) {
        vs += m;
        ++vn;
      } else {
        e.check += m;
      }
    }
    if (vn > 0) e.validation = vs;
    entries.push_back(std::move(e));
  };
  for (const std::string& c : a.configs) add(c, "");
  for (const std::string& p : a.projects) add("", p);
  // Models are compared on the same data only.
  const FitReport& first = entries.front().report;
  for (const Entry& e : entries) {
    bool same = e.report.initial.source == first.initial.source && e.report.targets.size() == first.targets.size();
    for (std::size_t t = 0; same && t < first.targets.size(); ++t)
      same = e.report.targets[t].histogram.source == first.targets[t].histogram.source &&
             e.report.targets[t].time == first.targets[t].time;
    if (!same)
      throw UserError(fmt::format("{}: fitted to other data than {} (H(0) or targets differ); compare models on the "
                                  "same data: give --histogram and --target",
                                  e.source, entries.front().source));
  }
  double best_aic = entries.front().score.aic, best_bic = entries.front().score.bic;
  for (const Entry& e : entries) {
    best_aic = std::min(best_aic, e.score.aic);
    best_bic = std::min(best_bic, e.score.bic);
  }
  double weight_sum = 0;
  for (const Entry& e : entries) weight_sum += std::exp(-0.5 * (e.score.aic - best_aic));

  std::string csv =
      "model,source,free_parameters,fitness,hellinger_check,hellinger_validation,log_likelihood,aic,delta_aic,"
      "akaike_weight,bic,delta_bic\n";
  nlohmann::json models = nlohmann::json::array();
  PlotSpec plot;
  plot.title = fmt::format("prolif fit: {} models at t = {} h", entries.size(), first.targets.front().time);
  plot.x_label = "fluorescence";
  plot.y_label = "fraction of cells per bin";
  plot.log_x = true;
  static const char* colors[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  const std::vector<double> edges = first.options.binning.edges();
  for (std::size_t m = 0; m < entries.size(); ++m) {
    const Entry& e = entries[m];
    const double weight = std::exp(-0.5 * (e.score.aic - best_aic)) / weight_sum;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", e.name, e.source, e.score.parameters,
                       e.report.result.fitness, e.check,
                       e.validation >= 0 ? fmt::format("{}", e.validation) : std::string(), e.score.log_likelihood,
                       e.score.aic, e.score.aic - best_aic, weight, e.score.bic, e.score.bic - best_bic);
    models.push_back({{"model", e.name},
                      {"source", e.source},
                      {"free_parameters", e.score.parameters},
                      {"fitness", e.report.result.fitness},
                      {"hellinger_check", e.check},
                      {"hellinger_validation", e.validation >= 0 ? nlohmann::json(e.validation) : nlohmann::json()},
                      {"log_likelihood", e.score.log_likelihood},
                      {"aic", e.score.aic},
                      {"delta_aic", e.score.aic - best_aic},
                      {"akaike_weight", weight},
                      {"bic", e.score.bic},
                      {"delta_bic", e.score.bic - best_bic},
                      {"directory", e.name}});
    // The first target: the model's pooled check runs against the data.
    plot.series.push_back(fraction_series(
        edges, e.report.checks.front().pooled(),
        fmt::format("{} (Hellinger {:.3f}, dAIC {:.0f})", e.name, e.check, e.score.aic - best_aic), colors[m % 7]));
  }
  plot.series.push_back(fraction_series(edges, first.checks.front().target,
                                        portable_file_name(first.checks.front().source), "#d62728", true));
  const nlohmann::json doc = {
      {"criterion",
       "AIC and BIC of the multinomial likelihood of the targets' binned cells (docs/prolif.md, Model comparison)"},
      {"models", models}};
  if (!dist::Comm::world().root()) return 0;  // under mpirun the root writes and prints
  {
    StagedOutput staged(a.out);
    for (const Entry& e : entries) write_fit_outputs(staged.dir() / e.name, e.report);
    write_file_atomic(staged.dir() / "comparison.csv", csv);
    write_file_atomic(staged.dir() / "comparison.json", doc.dump(2) + "\n");
    write_file_atomic(staged.dir() / "comparison.svg", render_svg(plot));
    staged.commit();
  }

  RunSummary summary;
  summary.command = "simkit prolif fit";
  summary.backend = first.backend;
  summary.device = first.device;
  summary.wall_seconds = clock.seconds();
  double evaluations = 0, fit_seconds = 0;
  for (const Entry& e : entries) {
    evaluations += static_cast<double>(e.report.result.evaluations);
    fit_seconds += e.report.result.seconds;
  }
  summary.throughput = fit_seconds > 0 ? evaluations / fit_seconds : 0.0;
  summary.throughput_unit = "evaluations";
  summary.extra = {{"models", models}, {"ranks", dist::Comm::world().size()}, {"out", a.out}};
  if (a.common.json) {
    summary.print(true);
  } else {
    fmt::print("  {:<20} {:>4} {:>10} {:>10} {:>12} {:>10} {:>10}\n", "model", "k", "fitness", "Hellinger", "log L",
               "dAIC", "dBIC");
    for (const Entry& e : entries)
      fmt::print("  {:<20} {:>4} {:>10.4f} {:>10.4f} {:>12.6g} {:>10.1f} {:>10.1f}\n", e.name, e.score.parameters,
                 e.report.result.fitness, e.check, e.score.log_likelihood, e.score.aic - best_aic,
                 e.score.bic - best_bic);
    fmt::print(
        "{}{}, {} models compared\n", summary.text(),
        dist::Comm::world().distributed() ? fmt::format(", {} ranks", dist::Comm::world().size()) : std::string(),
        entries.size());
  }
  return 0;
}

}  // namespace

void add_prolif_fit_command(CLI::App& prolif, Action& action) {
  auto* fit = prolif.add_subcommand(
      "fit", "Calibrate a model's free parameters to measured histograms (FST-PSO or CMA-ES, batched on the GPU)");
  auto a = std::make_shared<FitArgs>();
  fit->add_option("--histogram", a->histogram,
                  "H(0): ProCell text, CSV or FCS (--channel) (default: the project's initial file)");
  auto* cfg = fit->add_option("--config", a->configs,
                              "Model TOML; free values as bounds, e.g. mean = { min = 30, max = 63 }. Several "
                              "--config/--project: each is fitted and the models are compared");
  auto* prc = fit->add_option("--project", a->projects, "ProCell project (.prc): populations, bounds, files, settings");
  fit->add_option("--target", a->targets, "Target histogram and its time, FILE@HOURS; repeat for several times");
  fit->add_option("--validate", a->validations, "Validation histogram FILE@HOURS: compared with the best model only");
  fit->add_option("--free", a->frees, "Free a parameter within bounds: NAME=MIN:MAX (fast.mean=30:63, phi_min=5:20)");
  fit->add_option("--fix", a->fixes, "Fix a parameter: NAME or NAME=VALUE");
  fit->add_option("--phi-min", a->phi_min, "Fix the fluorescence threshold")->check(kFinite)->check(kNonNegative);
  fit->add_option("--start", a->start, "Clock start: sync or procell-async");
  fit->add_option("--optimizer", a->optimizer, "fst-pso (fuzzy self-tuning PSO, ProCell's) or cma-es")
      ->capture_default_str();
  fit->add_option("--particles", a->particles, "Swarm size / CMA-ES population (default: the project's, else 50)")
      ->check(CLI::Range(2, 100000));
  fit->add_option("--iterations", a->iterations, "Iterations after the initial swarm (default: the project's, else 100)")
      ->check(CLI::Range(0, 10000000));
  fit->add_option("--budget", a->budget, "Stop after this many evaluations (whole iterations; overrides --iterations)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  fit->add_option("--replicates", a->replicates, "Simulations per evaluation (their histograms summed)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  fit->add_option("--restarts", a->restarts,
                  "Independent optimizations; the one whose best model re-simulates best is kept")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  fit->add_flag("--crn", a->crn, "Common random numbers: every evaluation uses the same seeds");
  fit->add_flag("--log-init", a->log_init, "FST-PSO: initial positions log-uniform within the bounds");
  fit->add_option("--bootstrap", a->bootstrap,
                  "Confidence intervals by parametric bootstrap: refit this many synthetic data sets (0: none)")
      ->check(CLI::Range(0, 100000));
  fit->add_option("--level", a->level, "Confidence level of the bootstrap intervals")
      ->check(CLI::Range(0.5, 0.999))
      ->capture_default_str();
  fit->add_option("--check-runs", a->check_runs, "Re-simulations of the best model for the report and plot")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  fit->add_option("--bins", a->bins, "Number of logarithmic bin edges (default: the project's, else 100)")
      ->check(CLI::Range(2, 100000));
  fit->add_option("--range", a->range, "Binning range LO HI (default: the project's, else 10 10000)")
      ->expected(2)
      ->check(kFinite);
  fit->add_option("--seed", a->seed, "Random seed of the fit (default: the model's, else 1)")
      ->check(kSeed)
      ->each([a](const std::string&) { a->seed_given = true; });
  fit->add_option("--out", a->out,
                  "Output directory (best.toml, best.prc, history.csv, result.json, fit.svg, convergence.svg)")
      ->required();
  add_fcs_options(*fit, a->fcs);
  add_common_run_options(*fit, a->common);
  fit->callback([&action, a, cfg, prc] {
    if (cfg->count() == 0 && prc->count() == 0) throw CLI::RequiredError("--config or --project");
    action = [a] { return run_fit(*a); };
  });
}

}  // namespace simkit::cli
