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

}  // namespace

void bind_angio(nb::module_& m) {
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
