#pragma once
// The backend interface of angio's continuous solver (same shape in reference, cpu and cuda) and
// the host helpers the reference and cpu backends share.
#include <cmath>
#include <limits>
#include <memory>

#include "angio/model.hpp"
#include "simkit/angio/angio.hpp"

namespace simkit::angio::detail {

template <class T>
StepConstants<T> step_constants(const Problem& p) {
  StepConstants<T> sc;
  sc.k = static_cast<T>(p.dt);
  sc.inv_h2 = static_cast<T>(1.0 / (p.grid.h * p.grid.h));
  sc.a = sc.k / static_cast<T>(p.grid.h * p.grid.h);
  sc.dims = p.grid.dims();
  sc.flux = p.form == Form::Flux;
  return sc;
}

// Min/max that let a NaN through (once NaN, it stays NaN): a blown-up run must not look tidy.
inline double nan_min(double acc, double x) { return (x != x || x < acc) ? x : acc; }
inline double nan_max(double acc, double x) { return (x != x || x > acc) ? x : acc; }

inline Reductions empty_reductions() {
  Reductions r;
  for (int q = 0; q < 3; ++q) {
    r.min[q] = std::numeric_limits<double>::infinity();
    r.max[q] = -std::numeric_limits<double>::infinity();
  }
  return r;
}

// One row (fixed j, l) in i order: sum_i w_i x_i; min and max. Rows are then combined in (l, j)
// order with weight w_j w_l, the same order in reference and cpu whatever the thread count, so
// their series are bitwise equal; the h^dims factor is applied last.
inline void add_row(Reductions& total, const Reductions& row, double row_weight) {
  for (int q = 0; q < 3; ++q) {
    total.integral[q] += row_weight * row.integral[q];
    total.min[q] = nan_min(total.min[q], row.min[q]);
    total.max[q] = nan_max(total.max[q], row.max[q]);
  }
}
inline void add_node(Reductions& row, double weight, double n, double f, double c) {
  const double x[3] = {n, f, c};
  for (int q = 0; q < 3; ++q) {
    row.integral[q] += weight * x[q];
    row.min[q] = nan_min(row.min[q], x[q]);
    row.max[q] = nan_max(row.max[q], x[q]);
  }
}
inline void scale_integrals(Reductions& r, const Grid& g) {
  const double volume = std::pow(g.h, g.dims());
  for (double& v : r.integral) v *= volume;
}

// Indices of node (i, j, l) and its six neighbours in stencil order (centre, i+1, i-1, j+1, j-1,
// l+1, l-1), mirror ghosts applied.
inline void neighbour_indices(const Grid& g, int i, int j, int l, std::size_t nb[7]) {
  nb[0] = g.index(i, j, l);
  nb[1] = g.index(upper_neighbour(i, g.nx), j, l);
  nb[2] = g.index(lower_neighbour(i, g.nx), j, l);
  nb[3] = g.index(i, upper_neighbour(j, g.ny), l);
  nb[4] = g.index(i, lower_neighbour(j, g.ny), l);
  nb[5] = g.index(i, j, upper_neighbour(l, g.nz));
  nb[6] = g.index(i, j, lower_neighbour(l, g.nz));
}

// Node (i, j, l)'s update from n, f, c with the mirror lookups: the reference's per-node code.
template <class T>
void update_at(const Grid& g, const TypedModelParams<T>& m, const StepConstants<T>& sc, const T* n, const T* f,
               const T* c, int i, int j, int l, T& n_out, T& f_out, T& c_out) {
  std::size_t nb[7];
  neighbour_indices(g, i, j, l, nb);
  Stencil<T> s;
  T nn[7];
  for (int d = 0; d < 7; ++d) {
    s.c[d] = c[nb[d]];
    s.f[d] = f[nb[d]];
    nn[d] = n[nb[d]];
  }
  update_node(m, sc, nn, s, n_out, f_out, c_out);
}

// One row of the host backends: updates nodes i = 0..nx-1 of row (j, l) from `in` into `out` and,
// when `row` is not null, reduces the new values into it.
template <class T>
void step_row(const Grid& g, const TypedModelParams<T>& m, const StepConstants<T>& sc, const T* n, const T* f,
              const T* c, T* n_out, T* f_out, T* c_out, int j, int l, Reductions* row) {
  for (int i = 0; i < g.nx; ++i) {
    const std::size_t id = g.index(i, j, l);
    update_at(g, m, sc, n, f, c, i, j, l, n_out[id], f_out[id], c_out[id]);
    if (row) add_node(*row, trapezoid_weight(i, g.nx), n_out[id], f_out[id], c_out[id]);
  }
}

template <class T>
Reductions reduce_row(const Grid& g, const Fields<T>& u, int j, int l) {
  Reductions row = empty_reductions();
  for (int i = 0; i < g.nx; ++i) {
    const std::size_t id = g.index(i, j, l);
    add_node(row, trapezoid_weight(i, g.nx), u.n[id], u.f[id], u.c[id]);
  }
  return row;
}

inline double row_weight(const Grid& g, int j, int l) { return trapezoid_weight(j, g.ny) * trapezoid_weight(l, g.nz); }

// The backends, identical in namespaces reference, cpu and cuda (SIMKIT_DISPATCH): a solver holding
// the initial state. options: threads (cpu), device (cuda).
#define SIMKIT_ANGIO_BACKEND \
  template <class T>         \
  std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, const RunOptions& options)
namespace reference {
SIMKIT_ANGIO_BACKEND;
}
namespace cpu {
SIMKIT_ANGIO_BACKEND;
}
namespace cuda {
SIMKIT_ANGIO_BACKEND;
}  // namespace cuda
#undef SIMKIT_ANGIO_BACKEND

}  // namespace simkit::angio::detail
