// prolif for Python: models, readers, batched simulation, binning, the Hellinger distance, fit.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>
#include <tuple>

#include "common.hpp"
#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/fit.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prc.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::python {

namespace {

using namespace simkit::prolif;
using Values = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Counts = nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::string fmt_sizes(std::size_t a, std::size_t b) {
  return ": values and counts differ in length (" + std::to_string(a) + " and " + std::to_string(b) + ")";
}

InitialHistogram histogram_of(const Values& values, const Counts& counts, const std::string& source) {
  if (values.shape(0) != counts.shape(0))
    throw UserError(source, fmt_sizes(values.shape(0), counts.shape(0)));
  InitialHistogram h;
  h.source = source;
  for (std::size_t i = 0; i < values.shape(0); ++i) {
    // Every value is checked, as the file readers do, even where its count is 0.
    if (!(values(i) > 0) || !std::isfinite(values(i)))
      throw UserError(source, ": every value must be finite and > 0, got " + std::to_string(values(i)) + " at index " +
                                  std::to_string(i));
    if (counts(i) == 0) continue;
    h.values.push_back(values(i));
    h.counts.push_back(counts(i));
  }
  if (h.values.empty()) throw UserError(source, ": the histogram has no cells (every count is 0)");
  return h;
}

std::string distribution_name(Distribution d) { return to_string(d); }
Distribution distribution_from(const std::string& s) {
  if (s == "normal" || s == "truncated-normal") return Distribution::TruncatedNormal;
  if (s == "gamma") return Distribution::Gamma;
  if (s == "lognormal") return Distribution::LogNormal;
  throw UserError("distribution", ": expected 'normal', 'gamma' or 'lognormal', got '" + s + "'");
}

nb::tuple histogram_arrays(const InitialHistogram& h) {
  std::vector<double> v = h.values;
  std::vector<std::uint64_t> c = h.counts;
  const std::size_t n = v.size();
  return nb::make_tuple(owned_array(std::move(v), {n}), owned_array(std::move(c), {n}));
}

FcsOptions fcs_options(const std::string& channel, const std::optional<std::tuple<std::string, double, double>>& gate,
                       bool raw) {
  FcsOptions o;
  o.channel = channel;
  o.raw = raw;
  if (gate) o.gate = FcsOptions::Gate{std::get<0>(*gate), std::get<1>(*gate), std::get<2>(*gate)};
  return o;
}

}  // namespace

void bind_prolif(nb::module_& m) {
  nb::class_<Population>(m, "Population", "One subpopulation: quiescent, or dividing with a division-time law.")
      .def(nb::init<>())
      .def_rw("name", &Population::name)
      .def_rw("proportion", &Population::proportion)
      .def_rw("quiescent", &Population::quiescent)
      .def_rw("mean", &Population::mean, "mean division time, hours")
      .def_rw("sd", &Population::sd, "standard deviation of the division time, hours")
      .def_prop_rw(
          "distribution", [](const Population& p) { return distribution_name(p.distribution); },
          [](Population& p, const std::string& s) { p.distribution = distribution_from(s); },
          "'normal' (truncated at 0), 'gamma' or 'lognormal'");
  nb::class_<Model>(m, "Model", "Populations, phi_min, output times and the start mode.")
      .def(nb::init<>())
      .def_rw("populations", &Model::populations)
      .def_rw("phi_min", &Model::phi_min)
      .def_rw("times", &Model::times)
      .def_prop_rw(
          "start", [](const Model& mo) { return to_string(mo.start); },
          [](Model& mo, const std::string& s) { mo.start = parse_start_mode(s, "start"); },
          "'sync' or 'procell-async'")
      .def("validate", [](const Model& mo) { validate(mo, "model"); }, "Raises ValueError if the model is invalid.");

  m.def(
      "read_histogram",
      [](const std::string& path, const std::string& channel,
         const std::optional<std::tuple<std::string, double, double>>& gate, bool raw) {
        return histogram_arrays(read_histogram(path, fcs_options(channel, gate, raw)));
      },
      nb::arg("path"), nb::arg("channel") = "", nb::arg("gate") = nb::none(), nb::arg("raw") = false,
      "(values, counts) of a ProCell text, CSV or FCS histogram file.");
  m.def(
      "read_model",
      [](const std::string& path) {
        const bool toml = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
        ModelFile f = toml ? read_model_toml(path) : read_types_file(path);
        return f.model;
      },
      nb::arg("path"), "A model from a TOML file or a cuProCell types file.");

  m.def(
      "simulate",
      [](const Values& values, const Counts& counts, const Model& model, const std::vector<std::uint64_t>& seeds,
         const std::string& backend, int device, int threads) {
        const InitialHistogram h = histogram_of(values, counts, "h0");
        RunOptions o = run_options(backend, device, threads);
        std::vector<Model> models(seeds.size(), model);
        const std::vector<Result> results =
            run_released(o, [&] { return simulate_batch(h, models, seeds, o); });
        nb::list arrays;
        std::vector<std::uint64_t> divisions;
        for (const Result& r : results) {
          std::vector<std::uint64_t> c = r.counts;
          arrays.append(owned_array(std::move(c), {r.times, r.rows, r.generations, r.populations}));
          divisions.push_back(r.divisions);
        }
        std::vector<double> kept = h.values;
        const std::size_t rows = kept.size();
        return nb::make_tuple(arrays, divisions, owned_array(std::move(kept), {rows}), std::string(to_string(o.backend)));
      },
      nb::arg("values"), nb::arg("counts"), nb::arg("model"), nb::arg("seeds"), nb::arg("backend") = "auto",
      nb::arg("device") = 0, nb::arg("threads") = 0,
      "One run per seed (one batch); per run the counts [time, row, generation, population], the divisions, "
      "the H(0) values kept (rows with count > 0) and the backend used.");

  m.def(
      "bin_edges",
      [](int bins, double low, double high) {
        Binning b;
        b.bins = bins;
        b.low = low;
        b.high = high;
        std::vector<double> e = b.edges();
        const std::size_t n = e.size();
        return owned_array(std::move(e), {n});
      },
      nb::arg("bins") = 100, nb::arg("low") = 10.0, nb::arg("high") = 1e4, "ProCell's logarithmic bin edges.");
  m.def(
      "bin_values",
      [](const Values& values, nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu> weights, int bins,
         double low, double high, double phi_min) {
        if (values.shape(0) != weights.shape(0)) throw UserError("weights", fmt_sizes(values.shape(0), weights.shape(0)));
        if (bins < 2) throw UserError("bins", ": must be >= 2");
        if (!(low > 0 && high > low)) throw UserError("range", ": expected 0 < low < high");
        Binning b;
        b.bins = bins;
        b.low = low;
        b.high = high;
        b.phi_min = phi_min;
        const Binned r = bin_values(std::vector<double>(values.data(), values.data() + values.shape(0)),
                                    std::vector<double>(weights.data(), weights.data() + weights.shape(0)), b);
        std::vector<double> c = r.counts;
        const std::size_t n = c.size();
        return nb::make_tuple(owned_array(std::move(c), {n}), r.overflow, r.skipped);
      },
      nb::arg("values"), nb::arg("weights"), nb::arg("bins") = 100, nb::arg("low") = 10.0, nb::arg("high") = 1e4,
      nb::arg("phi_min") = 0.0, "(counts per bin, overflow, skipped) as simkit and ProCell bin.");
  m.def(
      "hellinger",
      [](const std::vector<double>& simulated, const std::vector<double>& target) -> std::optional<nb::tuple> {
        if (simulated.size() != target.size())
          throw UserError("target", ": the two histograms have different numbers of bins");
        const auto h = hellinger(simulated, target);
        if (!h) return std::nullopt;
        return nb::make_tuple(h->distance, h->normalized);
      },
      nb::arg("simulated"), nb::arg("target"),
      "ProCell's Hellinger distance of two binned histograms: (H, H / sqrt(sum(target))), or None.");

  // --- fit
  m.def(
      "fit",
      [](const Values& values, const Counts& counts, const Model& model,
         const std::vector<std::tuple<std::string, double, double>>& free,
         const std::vector<std::tuple<Values, Counts, double>>& targets, const std::string& optimizer, int particles,
         int iterations, std::int64_t budget, int replicates, bool crn, int restarts, bool log_init,
         int bootstrap_fits, double level, std::uint64_t seed, int bins,
         double low, double high, const std::string& backend, int device, int threads) {
        const InitialHistogram h = histogram_of(values, counts, "h0");
        FitSpec spec;
        spec.model = model;
        spec.free.resize(model.populations.size());
        for (const auto& [name, lo, hi] : free) {
          const Range r{lo, hi};
          if (name == "phi_min") {
            spec.phi_min = r;
            continue;
          }
          const std::size_t dot = name.rfind('.');
          bool found = false;
          for (std::size_t p = 0; dot != std::string::npos && p < model.populations.size(); ++p) {
            if (model.populations[p].name != name.substr(0, dot)) continue;
            const std::string field = name.substr(dot + 1);
            if (field == "proportion") {
              spec.free[p].proportion = r;
            } else if (field == "mean") {
              spec.free[p].mean = r;
            } else if (field == "sd") {
              spec.free[p].sd = r;
            } else {
              break;
            }
            found = true;
          }
          if (!found)
            throw UserError("free", ": unknown parameter '" + name +
                                        "' (names: phi_min, POPULATION.proportion, POPULATION.mean, POPULATION.sd)");
        }
        std::vector<FitTarget> ts;
        for (std::size_t t = 0; t < targets.size(); ++t) {
          const auto& [tv, tc, time] = targets[t];
          ts.push_back({histogram_of(tv, tc, "target " + std::to_string(t)), time});
        }
        if (ts.empty()) throw UserError("targets", ": at least one target is needed");
        double last = 0;
        for (const FitTarget& t : ts) last = std::max(last, t.time);
        spec.model.times = {last};
        settle_placeholders(spec);
        validate(spec.model, "model");
        validate(spec, "model");
        FitOptions o;
        o.optimizer = parse_optimizer(optimizer, "optimizer");
        o.particles = particles;
        o.iterations = iterations;
        o.budget = budget;
        o.replicates = replicates;
        o.common_random_numbers = crn;
        o.restarts = restarts;
        o.log_init = log_init;
        o.seed = seed;
        o.binning.bins = bins;
        o.binning.low = low;
        o.binning.high = high;
        o.run = run_options(backend, device, threads);
        const FitResult r = run_released(o.run, [&] { return fit(h, spec, ts, o); });
        std::optional<Uncertainty> u;
        if (bootstrap_fits > 0) u = run_released(o.run, [&] { return bootstrap(h, spec, ts, o, r, bootstrap_fits, level); });
        nb::dict out;
        nb::list names, lows, highs;
        for (const FreeParameter& p : r.parameters) {
          names.append(p.name);
          lows.append(p.bounds.min);
          highs.append(p.bounds.max);
        }
        out["parameters"] = names;
        out["lower"] = lows;
        out["upper"] = highs;
        out["x"] = r.best_x;
        out["model"] = r.best;
        out["fitness"] = r.fitness;
        out["fitness_per_target"] = r.fitness_per_target;
        out["evaluations"] = r.evaluations;
        out["simulations"] = r.simulations;
        out["seconds"] = r.seconds;
        out["restart_fitness"] = r.restart_fitness;
        out["restart_chosen"] = r.restart_chosen;
        out["backend"] = std::string(to_string(o.run.backend));
        if (u) {
          nb::dict intervals;
          const auto add = [&](const std::vector<ParameterInterval>& v) {
            for (const ParameterInterval& p : v)
              intervals[p.name.c_str()] = nb::make_tuple(p.best, p.low, p.high, p.mean, p.sd);
          };
          add(u->parameters);
          add(u->proportions);
          out["intervals"] = intervals;
          out["bootstrap_fitness"] = u->fitness;
        } else {
          out["intervals"] = nb::none();
        }
        std::vector<double> best, mean;
        std::vector<std::int64_t> evaluations;
        std::vector<int> restart, iteration;
        for (const FitIteration& it : r.history) {
          restart.push_back(it.restart);
          iteration.push_back(it.iteration);
          evaluations.push_back(it.evaluations);
          best.push_back(it.best);
          mean.push_back(it.mean);
        }
        nb::dict history;
        const std::size_t n = best.size();
        history["restart"] = owned_array(std::move(restart), {n});
        history["iteration"] = owned_array(std::move(iteration), {n});
        history["evaluations"] = owned_array(std::move(evaluations), {n});
        history["best"] = owned_array(std::move(best), {n});
        history["mean"] = owned_array(std::move(mean), {n});
        out["history"] = history;
        return out;
      },
      nb::arg("values"), nb::arg("counts"), nb::arg("model"), nb::arg("free"), nb::arg("targets"),
      nb::arg("optimizer") = "fst-pso", nb::arg("particles") = 50, nb::arg("iterations") = 100, nb::arg("budget") = 0,
      nb::arg("replicates") = 1, nb::arg("crn") = false, nb::arg("restarts") = 1, nb::arg("log_init") = false,
      nb::arg("bootstrap") = 0, nb::arg("level") = 0.95, nb::arg("seed") = 1,
      nb::arg("bins") = 100, nb::arg("low") = 10.0, nb::arg("high") = 1e4, nb::arg("backend") = "auto",
      nb::arg("device") = 0, nb::arg("threads") = 0, "Calibrate the free values of a model (docs/prolif.md).");
}

}  // namespace simkit::python
