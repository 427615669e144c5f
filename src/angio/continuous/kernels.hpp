#pragma once
// The backend interface of angio's continuous solver (same shape in reference, cpu and cuda) and
// the host helpers the reference and cpu backends share.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

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

// ---- z-slabs of a distributed run (docs/scale-out.md) ----
// A solver of a slab holds planes [z0, z0 + held) of the global grid: its own planes and `ghosts`
// ghost planes on each side that has a neighbour (the problem's grid given to the backend is this
// local grid, nz = held). It updates only its own planes [own_begin, own_end) (local indices) and
// reduces them with the global trapezoid weights; after each step (or pass of two steps) the link
// refreshes the ghost planes. One ghost plane serves a single step; the cuda backend holds two, so
// that a slab can take two steps per pass (its pair kernel reads two planes beyond the ones it
// writes). At a face of the global grid the slab has no ghost there, and the local mirror is the
// global one, so every node sees exactly the inputs it sees in a single-rank run: the fields are
// bitwise equal.
struct Slab {
  int z0 = 0;         // global index of local plane 0
  int nz_global = 1;  // planes of the whole grid
  int own_begin = 0, own_end = 1;
  int ghosts = 1;  // ghost planes on a side with a neighbour (every slab of a run holds as many)
  bool ghost_below() const { return own_begin > 0; }
  bool ghost_above(int held) const { return own_end < held; }
};

// What a slab needs of the other ranks (implemented over MPI in slab_link.cpp).
class SlabLink {
 public:
  virtual ~SlabLink() = default;
  // Sends `bytes` from lo_send to the rank below and from hi_send to the rank above, and receives
  // the rank below's into lo_recv and the rank above's into hi_recv; null pointers where that
  // neighbour does not exist. Host memory, or device memory when device_pointers().
  virtual void exchange(const void* lo_send, const void* hi_send, void* lo_recv, void* hi_recv,
                        std::size_t bytes) = 0;
  virtual bool device_pointers() const = 0;
  // The series reductions, folded in global order across the ranks: carry_in() receives the fold
  // so far from the rank below (rank 0 keeps `data` as it is), carry_on() sends it to the rank
  // above, finish() gives every rank the last rank's result.
  virtual void carry_in(void* data, std::size_t bytes) = 0;
  virtual void carry_on(const void* data, std::size_t bytes) = 0;
  virtual void finish(void* data, std::size_t bytes) = 0;
  virtual bool last() const = 0;
  // For a same-node peer path (the cuda backend's CUDA IPC faces, docs/scale-out.md): whether every
  // neighbour runs on this rank's node and the user asks for it (SIMKIT_HALO=ipc); whether
  // `mine` holds on every rank (a collective); and one-byte notices to the neighbour below (dir -1)
  // or above (+1) under a tag, and the wait for one from it.
  virtual bool peers_on_node() const = 0;
  virtual bool all(bool mine) = 0;
  virtual void notify(int dir, int tag) = 0;
  virtual void await(int dir, int tag) = 0;
};

// Slabs start at multiples of this many planes with the cuda backend: its blocks march up chunks of
// 35 planes, and whole chunks per slab make a slab's blocks (and so its reduction partials) the
// single-rank run's. The host backends split anywhere (alignment 1).
inline constexpr int kSlabAlignment = 35;

// A backend's slab: the whole grid (link null) unless the run is distributed.
struct SlabSetup {
  Slab slab;
  SlabLink* link = nullptr;
  static SlabSetup whole(const Grid& g) {
    SlabSetup s;
    s.slab.nz_global = g.nz;
    s.slab.own_end = g.nz;
    return s;
  }
};

// Row weight with the global plane index of local plane l.
inline double row_weight(const Grid& g, const Slab& slab, int j, int l) {
  return trapezoid_weight(j, g.ny) * trapezoid_weight(l + slab.z0, slab.nz_global);
}

// Host helpers of the reference and cpu backends: the folded sum of rows over the ranks (rank order,
// then row order: the order of one rank), and the ghost exchange of host fields.
inline Reductions fold_rows(const Grid& g, const SlabSetup& s, const std::vector<Reductions>& rows) {
  Reductions total = empty_reductions();
  if (s.link) s.link->carry_in(&total, sizeof total);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int j = static_cast<int>(r % g.ny), l = s.slab.own_begin + static_cast<int>(r / g.ny);
    add_row(total, rows[r], row_weight(g, s.slab, j, l));
  }
  if (s.link) {
    s.link->carry_on(&total, sizeof total);
    s.link->finish(&total, sizeof total);
  }
  Grid global = g;
  global.nz = s.slab.nz_global;
  scale_integrals(total, global);
  return total;
}

// The packed planes of a host exchange, kept by the solver (no allocation per step).
template <class T>
struct HostHalo {
  std::vector<T> lo_send, hi_send, lo_recv, hi_recv;
};

template <class T>
void exchange_ghosts(const Grid& g, const SlabSetup& s, Fields<T>& u, HostHalo<T>& halo) {
  if (!s.link) return;
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  const bool below = s.slab.ghost_below(), above = s.slab.ghost_above(g.nz);
  auto& [lo_send, hi_send, lo_recv, hi_recv] = halo;
  // The `ghosts` planes next to each face: my own ones out, the neighbour's into my ghosts.
  const std::size_t depth = static_cast<std::size_t>(s.slab.ghosts), block = depth * plane;
  const std::size_t own_begin = static_cast<std::size_t>(s.slab.own_begin),
                    own_end = static_cast<std::size_t>(s.slab.own_end);
  lo_send.resize(below ? 3 * block : 0);
  hi_send.resize(above ? 3 * block : 0);
  lo_recv.resize(lo_send.size());
  hi_recv.resize(hi_send.size());
  std::vector<T>* arrays[3] = {&u.n, &u.f, &u.c};
  for (int a = 0; a < 3; ++a) {
    if (below) std::copy_n(arrays[a]->data() + own_begin * plane, block, lo_send.data() + a * block);
    if (above) std::copy_n(arrays[a]->data() + (own_end - depth) * plane, block, hi_send.data() + a * block);
  }
  s.link->exchange(below ? lo_send.data() : nullptr, above ? hi_send.data() : nullptr,
                   below ? lo_recv.data() : nullptr, above ? hi_recv.data() : nullptr, 3 * block * sizeof(T));
  for (int a = 0; a < 3; ++a) {
    if (below) std::copy_n(lo_recv.data() + a * block, block, arrays[a]->data() + (own_begin - depth) * plane);
    if (above) std::copy_n(hi_recv.data() + a * block, block, arrays[a]->data() + own_end * plane);
  }
}

// The backends, identical in namespaces reference, cpu and cuda (SIMKIT_DISPATCH): a solver holding
// the initial state (of the local grid when `slab` is a slab). options: threads (cpu), device (cuda).
#define SIMKIT_ANGIO_BACKEND \
  template <class T>         \
  std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, const RunOptions& options, \
                                  const SlabSetup& slab)
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

// The stability check in two halves (stability.cpp): the worst values over planes [l_begin, l_end)
// of `u` (a slab's own planes; its ghosts give the neighbours), and the report from the worst values
// of every rank (maxima and a count: the same whatever the split).
struct StabilityParts {
  double worst_expanded = 0, worst_flux = 0, worst_speed2 = 0, max_n = 0;
  std::int64_t negative_nodes = 0;
};
template <class T>
StabilityParts stability_parts(const Problem& problem, const Fields<T>& u, int l_begin, int l_end);
StabilityReport stability_report(const Problem& global, const StabilityParts& parts);

// The backend's solver for `slab` (solver.cpp).
template <class T>
std::unique_ptr<Solver<T>> make_backend(Backend backend, const Problem& problem, const Fields<T>& initial,
                                        const RunOptions& options, const SlabSetup& slab);

}  // namespace simkit::angio::detail
