#include "simkit/prolif/fit_report.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "core/output.hpp"
#include "core/svg.hpp"
#include "simkit/prolif/io.hpp"

namespace simkit::prolif {

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// A TOML string literal (basic string with escapes).
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Shortest text that reads back as the same double.
std::string num(double v) { return fmt::format("{}", v); }

}  // namespace

std::string model_toml(const Model& m) {
  std::string out = "# written by simkit prolif fit\n";
  out += fmt::format("phi_min = {}\n", num(m.phi_min));
  out += "times = [";
  for (std::size_t t = 0; t < m.times.size(); ++t) out += (t ? ", " : "") + num(m.times[t]);
  out += "]\n";
  out += fmt::format("start = \"{}\"\n", to_string(m.start));
  for (const Population& p : m.populations) {
    out += "\n[[population]]\n";
    out += fmt::format("name = {}\n", toml_string(p.name));
    out += fmt::format("proportion = {}\n", num(p.proportion));
    if (p.quiescent) {
      out += "quiescent = true\n";
    } else {
      out += fmt::format("mean = {}\nsd = {}\n", num(p.mean), num(p.sd));
      if (p.distribution != Distribution::TruncatedNormal)
        out += fmt::format("distribution = \"{}\"\n", to_string(p.distribution));
    }
  }
  return out;
}

void check_fit(FitReport& report, int runs) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<FitTarget> all = report.targets;
  all.insert(all.end(), report.validations.begin(), report.validations.end());
  Objective objective(report.initial, all, report.options.binning, 1, report.options.run, report.options.comm);
  std::vector<Model> models(static_cast<std::size_t>(runs), report.result.best);
  for (Model& m : models) m.times = objective.times();
  // Seeds of their own: the fit's seeds are mixes of (seed, evaluation, replicate); these add a tag.
  std::vector<std::uint64_t> seeds;
  for (int r = 0; r < runs; ++r)
    seeds.push_back(report.options.seed * 0x9e3779b97f4a7c15ULL + 0x636865636bULL + static_cast<std::uint64_t>(r));
  RunOptions options = report.options.run;
  options.progress = nullptr;
  // Across ranks (options.comm): the check runs split over them, every rank getting every result.
  const std::vector<Result> results =
      report.options.comm != nullptr
          ? simulate_batch_distributed(report.initial, models, seeds, options, *report.options.comm, true)
          : simulate_batch(report.initial, models, seeds, options);
  report.checks.clear();
  const double phi_min = report.result.best.phi_min;
  for (std::size_t t = 0; t < all.size(); ++t) {
    FitCheck c;
    c.time = all[t].time;
    c.validation = t >= report.targets.size();
    c.source = all[t].histogram.source;
    c.target = objective.binned_target(t, phi_min);
    for (const Result& r : results) {
      c.runs.push_back(objective.binned(r, t, phi_min));
      const auto h = hellinger(c.runs.back(), c.target);
      c.hellinger.push_back(h ? h->normalized : 1.0);
    }
    report.checks.push_back(std::move(c));
  }
  report.check_runs = runs;
  report.check_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<double> FitCheck::pooled() const {
  std::vector<double> out(target.size(), 0.0);
  for (const auto& run : runs)
    for (std::size_t b = 0; b < run.size() && b < out.size(); ++b) out[b] += run[b];
  return out;
}

ModelScore score(const FitReport& r) {
  ModelScore s;
  s.parameters = static_cast<int>(r.result.parameters.size());
  for (const FitCheck& c : r.checks) {
    if (c.validation) continue;
    std::vector<double> pooled = c.pooled();
    double floor_total = 0;
    for (double& v : pooled) {
      if (v == 0) v = 0.5;
      floor_total += v;
    }
    for (std::size_t b = 0; b < c.target.size(); ++b) {
      if (c.target[b] == 0) continue;
      s.log_likelihood += c.target[b] * std::log(pooled[b] / floor_total);
      s.cells += c.target[b];
    }
  }
  const double k = s.parameters;
  s.aic = 2 * k - 2 * s.log_likelihood;
  s.bic = k * std::log(std::max(s.cells, 1.0)) - 2 * s.log_likelihood;
  return s;
}

nlohmann::json fit_result_json(const FitReport& r) {
  nlohmann::json params = nlohmann::json::object();
  for (std::size_t n = 0; n < r.result.parameters.size(); ++n) {
    const FreeParameter& p = r.result.parameters[n];
    params[p.name] = {{"value", r.result.best_x[n]}, {"min", p.bounds.min}, {"max", p.bounds.max}};
  }
  nlohmann::json pops = nlohmann::json::array();
  for (const Population& p : r.result.best.populations) {
    nlohmann::json e = {{"name", p.name}, {"proportion", p.proportion}, {"quiescent", p.quiescent}};
    if (!p.quiescent) {
      e["mean"] = p.mean;
      e["sd"] = p.sd;
      e["distribution"] = to_string(p.distribution);
    }
    pops.push_back(e);
  }
  nlohmann::json targets = nlohmann::json::array();
  for (std::size_t t = 0; t < r.targets.size(); ++t) {
    targets.push_back({{"file", r.targets[t].histogram.source},
                       {"time", r.targets[t].time},
                       {"cells", r.targets[t].histogram.total_cells()},
                       {"hellinger_normalized_in_fit",
                        t < r.result.fitness_per_target.size() ? r.result.fitness_per_target[t] : 0.0}});
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const FitCheck& c : r.checks) {
    checks.push_back({{"file", c.source},
                      {"time", c.time},
                      {"kind", c.validation ? "validation" : "target"},
                      {"hellinger_normalized_mean", mean_of(c.hellinger)},
                      {"hellinger_normalized_sd", sd_of(c.hellinger)},
                      {"hellinger_normalized_runs", c.hellinger}});
  }
  const FitOptions& o = r.options;
  nlohmann::json uncertainty = nullptr;
  if (r.uncertainty) {
    const auto intervals = [](const std::vector<ParameterInterval>& v) {
      nlohmann::json j = nlohmann::json::object();
      for (const ParameterInterval& p : v)
        j[p.name] = {{"best", p.best}, {"low", p.low}, {"high", p.high}, {"mean", p.mean}, {"sd", p.sd}};
      return j;
    };
    uncertainty = {{"method", "parametric bootstrap"},
                   {"fits", r.uncertainty->fits},
                   {"level", r.uncertainty->level},
                   {"seconds", r.uncertainty->seconds},
                   {"parameters", intervals(r.uncertainty->parameters)},
                   {"proportions", intervals(r.uncertainty->proportions)},
                   {"refit_fitness", r.uncertainty->fitness}};
  }
  return {{"optimizer", to_string(o.optimizer)},
          {"particles", o.particles},
          {"iterations", static_cast<int>(r.result.history.empty() ? 0 : r.result.history.back().iteration)},
          {"budget", o.budget},
          {"replicates", o.replicates},
          {"restarts", o.restarts},
          {"restart_fitness", r.result.restart_fitness},
          {"restart_chosen", r.result.restart_chosen},
          {"common_random_numbers", o.common_random_numbers},
          {"seed", o.seed},
          {"backend", r.backend},
          {"device", r.device},
          {"wall_seconds", r.wall_seconds},
          {"fit_seconds", r.result.seconds},
          {"evaluations", r.result.evaluations},
          {"simulations", r.result.simulations},
          {"evaluations_per_second", r.result.seconds > 0 ? static_cast<double>(r.result.evaluations) / r.result.seconds : 0.0},
          {"fitness", r.result.fitness},
          {"fitness_definition", "sum over targets of the normalized Hellinger distance (ProCell's, on its log bins)"},
          {"parameters", params},
          {"best",
           {{"phi_min", r.result.best.phi_min},
            {"start", to_string(r.result.best.start)},
            {"populations", pops}}},
          {"targets", targets},
          {"uncertainty", uncertainty},
          {"information",
           [&] {
             const ModelScore m = score(r);
             return nlohmann::json{{"free_parameters", m.parameters},
                                   {"target_cells_in_bins", m.cells},
                                   {"log_likelihood", m.log_likelihood},
                                   {"aic", m.aic},
                                   {"bic", m.bic}};
           }()},
          {"check", {{"runs", r.check_runs}, {"seconds", r.check_seconds}, {"times", checks}}},
          {"initial", {{"file", r.initial.source}, {"cells", r.initial.total_cells()}}},
          {"bins", {{"count", o.binning.bins}, {"low", o.binning.low}, {"high", o.binning.high}}}};
}

nlohmann::json write_fit_outputs(const std::filesystem::path& out, const FitReport& r) {
  // history.csv: one row per iteration, the best point's parameters.
  std::string history = "restart,iteration,evaluations,best_fitness,mean_fitness";
  for (const FreeParameter& p : r.result.parameters) history += "," + p.name;
  history += "\n";
  for (const FitIteration& it : r.result.history) {
    history += fmt::format("{},{},{},{},{}", it.restart, it.iteration, it.evaluations, it.best, it.mean);
    for (double x : it.best_x) history += "," + num(x);
    history += "\n";
  }

  // best.prc: the project with the fitted values and the bounds that were used.
  ProcellProject prc = r.project;
  prc.spec = r.spec;
  prc.spec.model = r.result.best;
  prc.fluorescence_threshold = r.result.best.phi_min;
  prc.asynchronous = r.result.best.start == StartMode::ProcellAsync;
  if (!r.targets.empty()) prc.simulation_time = r.targets.front().time;
  if (!r.validations.empty()) prc.validation_time = r.validations.front().time;
  prc.bins = r.options.binning.bins;
  prc.lowest_bin = r.options.binning.low;
  prc.highest_bin = r.options.binning.high;
  prc.swarm_size = r.options.particles;
  prc.iterations = r.options.iterations;
  if (!prc.initial_file) prc.initial_file = r.initial.source;
  if (!prc.target_file && !r.targets.empty()) prc.target_file = r.targets.front().histogram.source;
  if (!prc.validation_file && !r.validations.empty()) prc.validation_file = r.validations.front().histogram.source;

  // fit.svg: per compared time, the best model's mean histogram with its 5-95 % band over the
  // check runs, and the measured histogram (dashed), as fractions per bin.
  const std::vector<double> edges = r.options.binning.edges();
  PlotSpec fit_plot;
  fit_plot.title = fmt::format("prolif fit: best model ({} check runs) vs data", r.check_runs);
  fit_plot.x_label = "fluorescence";
  fit_plot.y_label = "fraction of cells per bin";
  fit_plot.log_x = true;
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"};
  for (std::size_t c = 0; c < r.checks.size(); ++c) {
    const FitCheck& ch = r.checks[c];
    PlotSeries sim;
    sim.color = colors[c % 6];
    sim.label = fmt::format("simulated, t = {} h (Hellinger {:.3f})", ch.time, mean_of(ch.hellinger));
    std::vector<std::vector<double>> fractions;
    for (const auto& run : ch.runs) fractions.push_back(fraction_series(edges, run, "", "").y);
    for (std::size_t b = 0; b < edges.size(); ++b) {
      std::vector<double> v;
      for (const auto& f : fractions) v.push_back(f[b]);
      sim.x.push_back(edges[b]);
      sim.y.push_back(mean_of(v));
      sim.band_low.push_back(percentile(v, 5));
      sim.band_high.push_back(percentile(v, 95));
    }
    fit_plot.series.push_back(std::move(sim));
    fit_plot.series.push_back(fraction_series(
        edges, ch.target,
        fmt::format("{}, t = {} h{}", portable_file_name(ch.source), ch.time, ch.validation ? " (validation)" : ""),
        colors[c % 6], true));
  }

  // convergence.svg: best and mean fitness against evaluations.
  PlotSpec conv;
  conv.title = fmt::format("prolif fit: {} convergence", to_string(r.options.optimizer));
  conv.x_label = "fitness evaluations";
  conv.y_label = "fitness (sum of normalized Hellinger distances)";
  PlotSeries best, mean;
  best.label = "best so far";
  best.color = "#1f77b4";
  mean.label = "mean of the iteration";
  mean.color = "#7f7f7f";
  mean.dashed = true;
  for (const FitIteration& it : r.result.history) {
    if (it.restart != r.result.restart_chosen) continue;
    best.x.push_back(static_cast<double>(it.evaluations));
    best.y.push_back(it.best);
    mean.x.push_back(static_cast<double>(it.evaluations));
    mean.y.push_back(it.mean);
  }
  conv.series = {best, mean};

  nlohmann::json doc = fit_result_json(r);
  const std::string json = doc.dump(2) + "\n";
  const std::string toml = model_toml(r.result.best);
  const std::string prc_text = prc_bytes(prc);
  const std::string fit_svg = render_svg(fit_plot), conv_svg = render_svg(conv);
  StagedOutput staged(out);
  const std::filesystem::path& dir = staged.dir();
  write_file_atomic(dir / "best.toml", toml);
  write_file_atomic(dir / "best.prc", prc_text);
  write_file_atomic(dir / "history.csv", history);
  write_file_atomic(dir / "fit.svg", fit_svg);
  write_file_atomic(dir / "convergence.svg", conv_svg);
  write_file_atomic(dir / "result.json", json);
  staged.commit();
  return doc;
}

}  // namespace simkit::prolif
