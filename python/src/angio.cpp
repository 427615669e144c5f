// angio for Python: the continuous solver, stepped from Python, with the fields as NumPy arrays.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <variant>

#include "common.hpp"
#include "simkit/angio/angio.hpp"
#include "simkit/angio/config.hpp"
#include "simkit/angio/hybrid.hpp"
#include "simkit/angio/params.hpp"
#include "simkit/angio/run.hpp"

namespace simkit::python {

namespace {

using namespace simkit::angio;

template <class T>
T element_of(const Solver<T>&);  // the solver's precision, for decltype only

nb::dict reductions_dict(const Reductions& r) {
  nb::dict d;
  const char* names[3] = {"n", "f", "c"};
  for (int q = 0; q < 3; ++q) {
    nb::dict e;
    e["integral"] = r.integral[q];
    e["min"] = r.min[q];
    e["max"] = r.max[q];
    d[names[q]] = e;
  }
  return d;
}

// The continuous model stepped from Python. The state lives where the backend keeps it (on the
// GPU for cuda); fields() copies it to NumPy arrays of shape (nz, ny, nx).
class ContinuousSolver {
 public:
  ContinuousSolver(std::tuple<int, int, int> grid, double h, std::optional<double> dt,
                   const std::map<std::string, double>& parameters, const std::string& sensitivity,
                   const std::string& form, const std::string& precision, const std::string& initial_taf, bool force,
                   const std::string& backend, int device, int threads) {
    problem_.grid = Grid{std::get<0>(grid), std::get<1>(grid), std::get<2>(grid), h};
    for (const auto& [name, value] : parameters) {
      bool known = false;
      for (const ModelParamField& f : kModelParamFields) {
        if (name == f.name || name == f.symbol) {
          problem_.model.*(f.member) = value;
          known = true;
        }
      }
      if (!known) {
        std::string names;
        for (const ModelParamField& f : kModelParamFields) names += std::string(names.empty() ? "" : ", ") + f.name;
        throw UserError("parameters", ": unknown parameter '" + name + "' (known: " + names + ")");
      }
    }
    if (sensitivity == "receptor") {
      problem_.model.sensitivity = Sensitivity::Receptor;
    } else if (sensitivity == "constant") {
      problem_.model.sensitivity = Sensitivity::Constant;
    } else {
      throw UserError("sensitivity", ": expected 'receptor' or 'constant', got '" + sensitivity + "'");
    }
    if (form == "expanded") {
      problem_.form = Form::Expanded;
    } else if (form == "flux") {
      problem_.form = Form::Flux;
    } else {
      throw UserError("form", ": expected 'expanded' or 'flux', got '" + form + "'");
    }
    if (precision == "fp32") {
      problem_.precision = Precision::Fp32;
    } else if (precision == "fp64") {
      problem_.precision = Precision::Fp64;
    } else {
      throw UserError("precision", ": expected 'fp32' or 'fp64', got '" + precision + "'");
    }
    if (initial_taf == "linear") {
      problem_.initial.taf = InitialTaf::Linear;
    } else if (initial_taf == "tumour") {
      problem_.initial.taf = InitialTaf::Tumour;
    } else {
      throw UserError("initial_taf", ": expected 'linear' or 'tumour', got '" + initial_taf + "'");
    }
    options_ = run_options(backend, device, threads);
    if (problem_.precision == Precision::Fp32) {
      start<float>(dt, force);
    } else {
      start<double>(dt, force);
    }
  }

  // Advances in chunks of about 2^24 node updates, checking for Ctrl-C between them: a stop leaves
  // the solver at a whole step that `step` reports (the KeyboardInterrupt says it stopped early).
  nb::dict advance(std::int64_t steps, bool reduce) {
    if (steps < 0) throw UserError("steps", ": must be >= 0");
    const std::int64_t chunk =
        std::max<std::int64_t>(1, (std::int64_t{1} << 24) / static_cast<std::int64_t>(problem_.grid.nodes()));
    const Reductions r = std::visit(
        [&](auto& solver) {
          return run_released(options_, [&] {
            Reductions last{};
            for (std::int64_t done = 0; done < steps;) {
              const std::int64_t n = std::min(chunk, steps - done);
              const bool final_chunk = done + n == steps;
              last = solver->advance(n, reduce && final_chunk);
              done += n;
              step_ += n;
              if (!final_chunk) throw_if_stopped(options_);
            }
            return last;
          });
        },
        solver_);
    return reduce ? reductions_dict(r) : nb::dict();
  }

  nb::dict reduce() {
    return reductions_dict(std::visit([&](auto& solver) { return solver->reduce(); }, solver_));
  }

  nb::dict fields() {
    nb::dict d;
    const Grid& g = problem_.grid;
    std::visit(
        [&](auto& solver) {
          using T = decltype(element_of(*solver));
          Fields<T> f;
          solver->read(f);
          const std::size_t shape[3] = {static_cast<std::size_t>(g.nz), static_cast<std::size_t>(g.ny),
                                        static_cast<std::size_t>(g.nx)};
          d["n"] = owned_array(std::move(f.n), {shape[0], shape[1], shape[2]});
          d["f"] = owned_array(std::move(f.f), {shape[0], shape[1], shape[2]});
          d["c"] = owned_array(std::move(f.c), {shape[0], shape[1], shape[2]});
        },
        solver_);
    return d;
  }

  std::int64_t step() const { return step_; }
  double t() const { return static_cast<double>(step_) * problem_.dt; }
  double dt() const { return problem_.dt; }
  std::string backend() const { return std::string(to_string(options_.backend)); }
  std::string device() const {
    return std::visit([](const auto& solver) { return solver->device(); }, solver_);
  }
  nb::dict stability() const {
    nb::dict d;
    d["largest_stable_k"] = stability_.largest_stable_k;
    d["binding_limit"] = stability_.binding_limit;
    d["diffusion_limit"] = stability_.diffusion_limit;
    d["reaction_limit"] = stability_.reaction_limit;
    d["expanded_limit"] = stability_.expanded_limit;
    d["advection_limit"] = stability_.advection_limit;
    d["flux_limit"] = stability_.flux_limit;
    d["negative_weight_fraction"] = stability_.negative_weight_fraction;
    return d;
  }

 private:
  template <class T>
  void start(std::optional<double> dt, bool force) {
    const Fields<T> initial = initial_fields<T>(problem_.grid, problem_.initial);
    problem_.dt = dt.value_or(1.0);
    validate(problem_);
    stability_ = check_stability(problem_, initial);
    if (!dt) {
      const double k = 0.9 * stability_.largest_stable_k;
      if (!std::isfinite(k) || !(k > 0)) throw UserError("h", ": no automatic step on this grid; give dt (and force)");
      problem_.dt = round_step_down(k);
      validate(problem_);
    } else {
      enforce_stability(problem_, stability_, force);
    }
    solver_ = make_solver<T>(problem_, initial, options_.backend, options_);
  }

  Problem problem_;
  RunOptions options_;
  StabilityReport stability_;
  std::variant<std::unique_ptr<Solver<float>>, std::unique_ptr<Solver<double>>> solver_;
  std::int64_t step_ = 0;
};

// One realisation as NumPy arrays (what `simkit angio hybrid` writes as CSV, VTK and JSON).
nb::dict realisation_dict(const Realisation& r) {
  nb::dict d;
  d["seed"] = r.seed;
  d["steps"] = r.steps;
  d["reached"] = r.reached;
  d["reach_time"] = r.reached ? nb::cast(r.reach_time) : nb::none();
  d["branches"] = r.branches;
  d["anastomoses"] = r.anastomoses;
  d["sprouts"] = r.sprouts;
  d["passes"] = r.passes;
  d["moves"] = r.moves;
  d["clipped_draws"] = r.clipped_draws;
  nb::dict by_kind;
  for (int k = 0; k < kFusionKinds; ++k) by_kind[kFusionKindNames[k]] = r.anastomoses_by_kind[k];
  d["anastomoses_by_kind"] = by_kind;
  const std::size_t ns = r.segments.size();
  std::vector<std::int64_t> from(ns), to(ns);
  std::vector<std::int32_t> birth(ns), generation(ns), sprout(ns), kind(ns);
  for (std::size_t i = 0; i < ns; ++i) {
    from[i] = r.segments[i].from;
    to[i] = r.segments[i].to;
    birth[i] = r.segments[i].birth_step;
    generation[i] = r.segments[i].generation;
    sprout[i] = r.segments[i].sprout;
    kind[i] = static_cast<std::int32_t>(r.segments[i].kind);
  }
  nb::dict segments;
  segments["from"] = owned_array(std::move(from), {ns});
  segments["to"] = owned_array(std::move(to), {ns});
  segments["birth_step"] = owned_array(std::move(birth), {ns});
  segments["generation"] = owned_array(std::move(generation), {ns});
  segments["sprout"] = owned_array(std::move(sprout), {ns});
  segments["kind"] = owned_array(std::move(kind), {ns});
  d["segments"] = segments;
  const std::size_t nm = r.metrics.size();
  std::vector<std::int64_t> step(nm), tips(nm), sprouts(nm), branches(nm), anastomoses(nm);
  std::vector<double> t(nm), length(nm), front(nm);
  for (std::size_t i = 0; i < nm; ++i) {
    const MetricsRow& row = r.metrics[i];
    step[i] = row.step;
    t[i] = row.t;
    tips[i] = row.tips;
    sprouts[i] = row.sprouts;
    branches[i] = row.branches;
    anastomoses[i] = row.anastomoses;
    length[i] = row.length;
    front[i] = row.front;
  }
  nb::dict metrics;
  metrics["step"] = owned_array(std::move(step), {nm});
  metrics["t"] = owned_array(std::move(t), {nm});
  metrics["tips"] = owned_array(std::move(tips), {nm});
  metrics["sprouts"] = owned_array(std::move(sprouts), {nm});
  metrics["branches"] = owned_array(std::move(branches), {nm});
  metrics["anastomoses"] = owned_array(std::move(anastomoses), {nm});
  metrics["length"] = owned_array(std::move(length), {nm});
  metrics["front"] = owned_array(std::move(front), {nm});
  d["metrics"] = metrics;
  const auto vec = [](const std::vector<std::int64_t>& v) {
    std::vector<std::int64_t> c = v;
    const std::size_t n = c.size();
    return owned_array(std::move(c), {n});
  };
  d["occupied"] = vec(r.occupied);
  d["branch_points"] = vec(r.branch_points);
  d["anastomosis_points"] = vec(r.anastomosis_points);
  d["active_tip_nodes"] = vec(r.active_tip_nodes);
  return d;
}

nb::dict hybrid_ensemble(const std::optional<std::string>& config, const std::optional<std::tuple<int, int, int>>& grid,
                         std::optional<double> h, std::optional<double> t_max, std::optional<double> dt, bool force,
                         int replicates, std::uint64_t seed, const std::string& backend, int device, int threads) {
  HybridProblem p;
  p.grid = Grid{201, 201, 1, 0};
  std::optional<double> cfg_h, cfg_dt;
  if (config) {
    const ConfigFile cfg = read_config(*config);
    p.model = cfg.parameters;
    p.initial = cfg.initial;
    if (cfg.taf) p.initial.taf = *cfg.taf;
    p.hybrid = cfg.hybrid;
    if (cfg.nx) p.grid = Grid{*cfg.nx, *cfg.ny, *cfg.nz, 0};
    cfg_h = cfg.h;
    cfg_dt = cfg.dt;
    if (cfg.t_max) p.hybrid.t_max = *cfg.t_max;
  }
  if (grid) p.grid = Grid{std::get<0>(*grid), std::get<1>(*grid), std::get<2>(*grid), 0};
  if (p.grid.nx < 3 || p.grid.ny < 2 || p.grid.nz < 1)
    throw UserError("grid", ": the hybrid model needs nx >= 3, ny >= 2, nz >= 1");
  p.grid.h = h.value_or(cfg_h.value_or(1.0 / (p.grid.nx - 1)));
  if (t_max) p.hybrid.t_max = *t_max;
  if (replicates < 1) throw UserError("replicates", ": must be >= 1");
  choose_hybrid_step(p, dt ? dt : cfg_dt, force);
  validate(p);
  RunOptions o = run_options(backend, device, threads, seed);
  const HybridEnsemble e = run_released(o, [&] { return run_hybrid_ensemble(p, replicates, o); });
  nb::dict out;
  nb::list realisations;
  for (const Realisation& r : e.realisations) realisations.append(realisation_dict(r));
  out["realisations"] = realisations;
  out["backend"] = std::string(to_string(e.backend));
  out["device"] = e.device;
  out["dt"] = p.dt;
  out["grid"] = nb::make_tuple(p.grid.nx, p.grid.ny, p.grid.nz);
  out["h"] = p.grid.h;
  return out;
}

}  // namespace

void bind_angio(nb::module_& m) {
  m.def("hybrid_ensemble", &hybrid_ensemble, nb::arg("config") = nb::none(), nb::arg("grid") = nb::none(),
        nb::arg("h") = nb::none(), nb::arg("t_max") = nb::none(), nb::arg("dt") = nb::none(), nb::arg("force") = false,
        nb::arg("replicates") = 1, nb::arg("seed") = 1, nb::arg("backend") = "auto", nb::arg("device") = 0,
        nb::arg("threads") = 0,
        "Realisations of the hybrid tip-cell model (simkit angio hybrid): per realisation its counts, the "
        "network's segments (with birth steps), the metrics after every step and the special nodes, as arrays.");
  nb::class_<ContinuousSolver>(m, "ContinuousSolver",
                               "Anderson & Chaplain's continuous model (n, f, c) stepped from Python.")
      .def(nb::init<std::tuple<int, int, int>, double, std::optional<double>, const std::map<std::string, double>&,
                    const std::string&, const std::string&, const std::string&, const std::string&, bool,
                    const std::string&, int, int>(),
           nb::arg("grid"), nb::arg("h"), nb::arg("dt") = nb::none(),
           nb::arg("parameters") = std::map<std::string, double>{}, nb::arg("sensitivity") = "receptor",
           nb::arg("form") = "expanded", nb::arg("precision") = "fp32", nb::arg("initial_taf") = "linear",
           nb::arg("force") = false, nb::arg("backend") = "auto", nb::arg("device") = 0, nb::arg("threads") = 0)
      .def("advance", &ContinuousSolver::advance, nb::arg("steps"), nb::arg("reduce") = true,
           "Advance `steps` steps (GIL released); with reduce, the integrals and extrema of n, f, c after them.")
      .def("reduce", &ContinuousSolver::reduce, "Integrals and extrema of the current state.")
      .def("fields", &ContinuousSolver::fields,
           "Copies of n, f, c as arrays of shape (nz, ny, nx) (from the GPU with the cuda backend).")
      .def_prop_ro("step", &ContinuousSolver::step)
      .def_prop_ro("t", &ContinuousSolver::t)
      .def_prop_ro("dt", &ContinuousSolver::dt)
      .def_prop_ro("backend", &ContinuousSolver::backend)
      .def_prop_ro("device", &ContinuousSolver::device)
      .def_prop_ro("stability", &ContinuousSolver::stability);
}

}  // namespace simkit::python
