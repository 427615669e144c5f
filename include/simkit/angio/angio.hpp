#pragma once
// angio: Anderson & Chaplain's continuous model of tumour-induced angiogenesis in 3D (n, f, c).
// Data flow: config/flags (apps) -> Problem -> stability check -> Solver (reference|cpu|cuda)
// -> Reductions per series step, Fields per snapshot/checkpoint -> writers (angio/io.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "simkit/angio/params.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio {

// Vertex-centred grid: node (i, j, l) at (i h, j h, l h); Nz = 1 is the 2D model.
struct Grid {
  int nx = 0, ny = 0, nz = 1;
  double h = 0;
  std::size_t nodes() const { return static_cast<std::size_t>(nx) * ny * nz; }
  std::size_t index(int i, int j, int l) const {
    return (static_cast<std::size_t>(l) * ny + static_cast<std::size_t>(j)) * nx + static_cast<std::size_t>(i);
  }
  int dims() const { return nz == 1 ? 2 : 3; }
  // The inverse of index(): the (i, j, l) of node number `node`.
  void coordinates(std::int64_t node, int& i, int& j, int& l) const {
    const std::int64_t plane = static_cast<std::int64_t>(nx) * ny;
    i = static_cast<int>(node % nx);
    j = static_cast<int>((node % plane) / nx);
    l = static_cast<int>(node / plane);
  }
};

template <class T>
struct Fields {
  std::vector<T> n, f, c;
};

enum class InitialTaf { Linear, Tumour };
enum class Form { Expanded, Flux };
enum class Precision { Fp32, Fp64 };

struct InitialParams {
  InitialTaf taf = InitialTaf::Linear;
  double eps1 = 0.45, eps2 = 0.45, eps3 = 0.001;
  int sine_frequency = 3;  // m
};

// The physics of one run: everything that decides the numbers (not where or how fast they are made).
struct Problem {
  Grid grid;
  ModelParams model;
  double dt = 0;  // k
  Form form = Form::Expanded;
  Precision precision = Precision::Fp32;
  InitialParams initial;
  std::string initial_file;  // .vti to load n, f, c from instead of the formulas ("" = formulas)
};

// Anderson & Chaplain's initial fields: c = exp(-(1-x)^2/eps1) (linear source at x = 1) or a
// spherical tumour on the x = 1 face (continuous version, docs/angio.md); f = 0.75 exp(-x^2/eps2);
// n = exp(-x^2/eps3) sin^2(m pi y) sin^2(m pi z) (sin^2(m pi y) in 2D). x, y, z in box units.
// Planes [l_begin, l_end) only (l_end < 0: to the last), as a z-slab of a distributed run needs them.
template <class T>
Fields<T> initial_fields(const Grid& g, const InitialParams& p, int l_begin = 0, int l_end = -1);

// One forward-Euler step of `form` (reference backend, serial), step k.
template <class T>
void step_reference(const Grid& g, const ModelParams& m, T k, const Fields<T>& in, Fields<T>& out,
                    Form form = Form::Expanded);

// Trapezoid-weighted integral (1/2 per boundary face a node lies on) times h^dims.
template <class T>
double integral(const Grid& g, const std::vector<T>& field);

// What the series reports after a step: trapezoid integrals (times h^dims) and extrema of n, f, c
// (index 0 = n, 1 = f, 2 = c). A NaN anywhere makes that field's min, max and integral NaN.
struct Reductions {
  double integral[3] = {0, 0, 0};
  double min[3] = {0, 0, 0};
  double max[3] = {0, 0, 0};
};

struct SeriesRow {
  std::int64_t step = 0;
  double t = 0;
  Reductions r;
};

// The explicit step's limits, from the fields it starts from (docs/angio.md, "Stability").
struct StabilityReport {
  double diffusion_limit = 0;           // h^2 / (2 dims max(D, D_c))
  double reaction_limit = 0;            // 1 / max(gamma n, eta n): f and c stay bounded/positive
  double expanded_limit = 0;            // largest k with P0 >= 0 at every node (expanded form)
  double advection_limit = 0;           // 2 D / max |u|^2: forward Euler with central taxis terms (expanded form)
  double flux_limit = 0;                // largest k keeping the upwinded flux update monotone (n >= 0)
  double largest_stable_k = 0;          // min of the limits that apply to the problem's form
  std::string binding_limit;            // name of the limit that gives largest_stable_k
  double negative_weight_fraction = 0;  // nodes where some P1..P6 < 0 whatever k (mesh Peclet > 2)
};

template <class T>
StabilityReport check_stability(const Problem& problem, const Fields<T>& fields);

// Throws a UserError naming the violated limit and the largest stable k unless `force`.
void enforce_stability(const Problem& problem, const StabilityReport& report, bool force);

// k rounded down to two significant digits, the way a person would type it (0.000153 -> 1.5e-04):
// the automatic step of both models. k must be finite and positive.
double round_step_down(double k);

// The time stepper of one backend. It owns the state (on the GPU for cuda) and the step counter.
template <class T>
class Solver {
 public:
  virtual ~Solver() = default;
  // Advances `steps` steps; with `reduce`, returns the reductions of the state after the last
  // step, computed in the same pass as that step (no extra sweep over memory).
  virtual Reductions advance(std::int64_t steps, bool reduce) = 0;
  // Reductions of the current state (one extra read pass; used for the initial row).
  virtual Reductions reduce() = 0;
  // Copies the current state to the host.
  virtual void read(Fields<T>& out) = 0;
  virtual std::string device() const = 0;
};

// A solver for `backend` (resolved: Reference, Cpu or Cuda) starting from `initial`.
template <class T>
std::unique_ptr<Solver<T>> make_solver(const Problem& problem, const Fields<T>& initial, Backend backend,
                                       const RunOptions& options);

// Bytes one step must move at least: read n, f, c once and write them once.
inline double bytes_per_node_step(Precision p) { return p == Precision::Fp32 ? 24.0 : 48.0; }

}  // namespace simkit::angio
