#pragma once
// The hybrid (discrete tip-cell) model's per-tip rules, shared by every backend (SIMKIT_HD):
// move weights from the continuous model's P0..P6, the branching probability table, and the
// closed forms of c and f at a node that endothelial cells have occupied for m steps.
#include "simkit/angio/hybrid_rules.hpp"
#include "angio/model.hpp"
#include "core/hd.hpp"

namespace simkit::angio {

// Directions of the stencil as moves: index d = 0 stay, 1 to i-1, 2 to i+1, 3 to j-1, 4 to j+1,
// 5 to l-1, 6 to l+1 (P_d's tip meaning, docs/angio.md). Offsets in (i, j, l):
SIMKIT_HD inline void move_offset(int d, int& di, int& dj, int& dl) {
  di = d == 1 ? -1 : (d == 2 ? 1 : 0);
  dj = d == 3 ? -1 : (d == 4 ? 1 : 0);
  dl = d == 5 ? -1 : (d == 6 ? 1 : 0);
}

// Move probabilities from P0..P6 at the tip's node: negative (and NaN) weights clipped to 0 (`clipped` says
// whether any was), moves out of the domain (`allowed[d]` false) and back onto the node the tip
// came from get 0. Returns the chosen direction for uniform u in (0, 1) by the cumulative sum in
// direction order; a tip whose weights are all 0 stays (direction 0).
template <class T>
SIMKIT_HD inline int choose_move(const T p[7], const bool allowed[7], double u, bool& clipped) {
  double w[7];
  double total = 0;
  clipped = false;
  for (int d = 0; d < 7; ++d) {
    double x = static_cast<double>(p[d]);
    if (!(x >= 0)) {  // negative, or NaN (only after a forced unstable step)
      clipped = true;
      x = 0;
    }
    w[d] = allowed[d] ? x : 0.0;
    total += w[d];
  }
  if (!(total > 0)) return 0;
  const double target = u * total;
  double sum = 0;
  int last = 0;
  for (int d = 0; d < 7; ++d) {
    if (w[d] <= 0) continue;
    last = d;
    sum += w[d];
    if (target < sum) return d;
  }
  return last;  // rounding at the top end
}

// Owners of occupied nodes: a tip id (the sprout whose tip last stepped onto the node), or the
// parent vessel.
constexpr int kVesselOwner = -1;
// occupied_move_outcome's answers when the tip passes over the node instead of fusing, and when
// it would pass onto a node where another active tip stands: it stays where it is this step.
constexpr int kPassOver = -1;
constexpr int kBlocked = -2;

// What a move onto an occupied node does (docs/angio.md, "Anastomosis"): kPassOver, kBlocked, or
// the FusionKind (as an int) of the anastomosis. `mover` is the moving tip, `owner` the node's
// owner (kVesselOwner for the parent vessel); `trail_gap` is how many positions back along the
// mover's path the node lies (its current position minus the node's, when owner == mover);
// `*_parent` and `*_birth` are the tips' parents (-1: an initial sprout) and the birth steps of
// their first segments; `owner_active` whether the owner's tip is still active and `owner_here`
// whether it stands on the node; `birth_now` the birth step of the segment this move makes (step + 1).
SIMKIT_HD inline int occupied_move_outcome(AnastomosisRule rule, int window, bool fork_passes, double dt, double psi,
                                           int mover,
                                           int mover_parent, long long mover_birth, long long trail_gap, int owner,
                                           int owner_parent, long long owner_birth, bool owner_active,
                                           bool owner_here, long long birth_now) {
  if (owner == kVesselOwner) {
    return rule == AnastomosisRule::OtherActive ? kPassOver : static_cast<int>(FusionKind::Vessel);
  }
  if (owner == mover) {
    if (rule == AnastomosisRule::Any) return static_cast<int>(FusionKind::Own);
    if (rule == AnastomosisRule::Window && trail_gap >= window) return static_cast<int>(FusionKind::Own);
    return kPassOver;
  }
  if (rule == AnastomosisRule::OtherActive && !owner_active) return kPassOver;
  // Parent and daughter: the daughter's birth is their branch.
  long long branch = -1;
  if (mover_parent == owner) branch = mover_birth;
  if (owner_parent == mover) branch = owner_birth;
  if (branch >= 0 && static_cast<double>(birth_now - branch) * dt <= psi) {
    // A young fork passes (unless every occupied node fuses), but not onto its partner's tip.
    if (!fork_passes || rule == AnastomosisRule::Any) return static_cast<int>(FusionKind::ParentDaughter);
    return owner_active && owner_here ? kBlocked : kPassOver;
  }
  return static_cast<int>(FusionKind::Sprout);
}

// The branching density condition: `occupied` (occupied nodes of the tip's Moore neighbourhood,
// itself included) must exceed threshold / c; a threshold of 0 switches the condition off. No
// TAF (c <= 0, or NaN after a forced unstable step) means no branching.
SIMKIT_HD inline bool dense_enough(double threshold, int occupied, double c) {
  if (threshold == 0) return true;
  if (!(c > 0)) return false;
  return static_cast<double>(occupied) > threshold / c;
}

// Occupied nodes of the Moore neighbourhood of (i, j, l) (3 x 3 in 2D, 3 x 3 x 3 in 3D, itself
// included; nodes outside the grid do not count), with `occupied(i, j, l)` telling each.
template <class Occupied>
SIMKIT_HD inline int moore_occupied(int nx, int ny, int nz, int i, int j, int l, Occupied occupied) {
  int count = 0;
  const int reach_l = nz > 1 ? 1 : 0;
  for (int dl = -reach_l; dl <= reach_l; ++dl)
    for (int dj = -1; dj <= 1; ++dj)
      for (int di = -1; di <= 1; ++di) {
        const int a = i + di, b = j + dj, e = l + dl;
        if (a >= 0 && a < nx && b >= 0 && b < ny && e >= 0 && e < nz && occupied(a, b, e)) ++count;
      }
  return count;
}

// Prepares the draw of a branch's new tip among the free neighbours (`free_inside`): with
// DaughterPlacement::Uniform each gets weight 1, with Weights they keep P1..P6. Returns whether
// there is a candidate (a free neighbour with a positive weight).
SIMKIT_HD inline bool place_daughter(DaughterPlacement placement, double w[7], const bool free_inside[7]) {
  bool any = false;
  for (int d = 1; d < 7; ++d) {
    if (placement == DaughterPlacement::Uniform) w[d] = 1.0;
    any = any || (free_inside[d] && w[d] > 0);
  }
  return any;
}

// x^m by binary powering: the same sequence of IEEE multiplications on host and device.
SIMKIT_HD inline double power(double x, long long m) {
  double result = 1, base = x;
  while (m > 0) {
    if (m & 1) result *= base;
    base *= base;
    m >>= 1;
  }
  return result;
}

// c and f at a node occupied for m steps (each step c <- c (1 - k eta), f <- f (1 - k gamma) + k beta):
// c0 (1 - k eta)^m and f* + (f0 - f*) (1 - k gamma)^m with f* = beta / gamma (f0 + m k beta if gamma = 0).
SIMKIT_HD inline double occupied_c(double c0, double k, double eta, long long m) {
  return m > 0 ? c0 * power(1 - k * eta, m) : c0;
}
SIMKIT_HD inline double occupied_f(double f0, double k, double beta, double gamma, long long m) {
  if (m <= 0) return f0;
  if (gamma == 0) return f0 + static_cast<double>(m) * k * beta;
  const double fstar = beta / gamma;
  return fstar + (f0 - fstar) * power(1 - k * gamma, m);
}

// P0..P6 at node (i, j, l) of an nx x ny x nz grid, from c and f read through `c_at(id)` and
// `f_at(id)` (node indices, mirror ghosts at the boundaries), and which moves stay in the domain:
// the one tip-weight routine of every backend.
template <class Index, class CAt, class FAt>
SIMKIT_HD inline void tip_weights(const ModelParams& m, double a, int nx, int ny, int nz, int i, int j, int l,
                                  Index index, CAt c_at, FAt f_at, double w[7], bool inside[7]) {
  const int at[7][3] = {{i, j, l},
                        {upper_neighbour(i, nx), j, l},
                        {lower_neighbour(i, nx), j, l},
                        {i, upper_neighbour(j, ny), l},
                        {i, lower_neighbour(j, ny), l},
                        {i, j, upper_neighbour(l, nz)},
                        {i, j, lower_neighbour(l, nz)}};
  Stencil<double> s;
  for (int d = 0; d < 7; ++d) {
    const auto id = index(at[d][0], at[d][1], at[d][2]);
    s.c[d] = c_at(id);
    s.f[d] = f_at(id);
  }
  if (nz > 1) {
    movement_coefficients_fixed<3>(m, a, s, w);
  } else {
    movement_coefficients_fixed<2>(m, a, s, w);
  }
  for (int d = 0; d < 7; ++d) {
    int di, dj, dl;
    move_offset(d, di, dj, dl);
    inside[d] = i + di >= 0 && i + di < nx && j + dj >= 0 && j + dj < ny && l + dl >= 0 && l + dl < nz;
  }
}

// Angio_TDA's move probabilities (Nardini et al. 2021, angio.py move_sprouts; docs/angio.md), per
// axis with one-sided differences: at node q of an axis of n nodes, dn = u(q) - u(q-1) and up =
// u(q+1) - u(q) (both u(1) - u(0) at q = 0 and u(n-1) - u(n-2) at q = n-1) and the central g =
// (u(q+1) - u(q-1)) / 2 (one-sided at the ends). Starting from P0 = 1 - 2 dims a D and P = a D each way:
//   chemotaxis, g_c > 0: P0 -= a chi dn_c, P(+) += a chi up_c;  g_c < 0: P0 += a chi up_c, P(-) -= a chi dn_c
//   haptotaxis, g_f > 0: P0 += a rho dn_f, P(-) -= a rho up_f;  g_f < 0: P0 -= a rho up_f, P(+) += a rho dn_f
// (chi at the node, or for P(+)/P(-) at the neighbour the forward difference points to, as there).
// Angio_TDA draws p ~ U(0, sum P) and takes the first of stay, +x, -x, +y, -y (+z, -z here) whose
// running sum exceeds p, staying when that move would leave the domain: a negative P removes its
// own interval and shortens the following ones. The equivalent weights are written to w (in the
// stencil's direction order), moves out of the domain added to staying; `inside` is all true but
// for those. Returns whether any P was negative (reported like a clipped draw).
template <class Index, class CAt, class FAt>
SIMKIT_HD inline bool tip_weights_one_sided(const ModelParams& m, double a, int nx, int ny, int nz, int i, int j,
                                            int l, Index index, CAt c_at, FAt f_at, double w[7], bool inside[7]) {
  const int dims = nz > 1 ? 3 : 2;
  const double D = m.diffusion, rho = m.haptotaxis;
  const int at[3] = {i, j, l}, size[3] = {nx, ny, nz};
  // P in Angio_TDA's order: stay, +x, -x, +y, -y, +z, -z.
  double P[7];
  P[0] = 1.0 - 2.0 * dims * a * D;
  for (int k = 1; k < 7; ++k) P[k] = k <= 2 * dims ? a * D : 0.0;
  const double c0 = c_at(index(i, j, l));
  const auto chi = [&](double c) { return chemotactic_sensitivity(m, c); };
  for (int d = 0; d < dims; ++d) {
    const int q = at[d], n = size[d];
    int pos[3] = {i, j, l};
    const auto value_at = [&](auto field, int r) {
      pos[d] = r;
      const double v = field(index(pos[0], pos[1], pos[2]));
      pos[d] = q;
      return v;
    };
    double cg[3], fg[3];  // dn, up, g for c and f
    for (int which = 0; which < 2; ++which) {
      double* g = which == 0 ? cg : fg;
      const auto field = [&](auto id) { return which == 0 ? c_at(id) : f_at(id); };
      if (q == 0) {
        g[0] = g[1] = g[2] = value_at(field, q + 1) - value_at(field, q);
      } else if (q == n - 1) {
        g[0] = g[1] = g[2] = value_at(field, q) - value_at(field, q - 1);
      } else {
        g[0] = value_at(field, q) - value_at(field, q - 1);
        g[1] = value_at(field, q + 1) - value_at(field, q);
        g[2] = (value_at(field, q + 1) - value_at(field, q - 1)) / 2;
      }
    }
    // The neighbour chi is read at: the forward difference's sign decides (the node itself at an end).
    const int toward = cg[1] >= 0 ? (q != n - 1 ? q + 1 : q) : (q != 0 ? q - 1 : q);
    const double chi_there = chi(value_at([&](auto id) { return c_at(id); }, toward));
    double& plus = P[1 + 2 * d];
    double& minus = P[2 + 2 * d];
    if (cg[2] > 0) {
      P[0] -= a * chi(c0) * cg[0];
      plus += a * chi_there * cg[1];
    } else if (cg[2] < 0) {
      P[0] += a * chi(c0) * cg[1];
      minus -= a * chi_there * cg[0];
    }
    if (fg[2] > 0) {
      P[0] += rho * a * fg[0];
      minus -= rho * a * fg[1];
    } else if (fg[2] < 0) {
      P[0] -= rho * a * fg[1];
      plus += rho * a * fg[0];
    }
  }
  // The draw's intervals: move k takes [max(0, T_0..T_{k-1}), min(T_k, total)), T the running sums.
  const int last = 2 * dims;
  double total = 0;
  bool negative = false;
  for (int k = 0; k <= last; ++k) {
    total += P[k];
    negative = negative || P[k] < 0;
  }
  double mass[7], running = 0, reached = 0;
  for (int k = 0; k <= last; ++k) {
    running += P[k];
    const double top = running < total ? running : total;
    mass[k] = top > reached ? top - reached : 0.0;
    reached = reached > running ? reached : running;
  }
  for (int k = last + 1; k < 7; ++k) mass[k] = 0;
  // To the stencil's order (1: i-1, 2: i+1, 3: j-1, 4: j+1, 5: l-1, 6: l+1), leaving moves to stay.
  w[0] = mass[0];
  for (int d = 0; d < 3; ++d) {
    const int q = at[d], n = size[d];
    const double up = mass[1 + 2 * d], down = mass[2 + 2 * d];
    inside[2 + 2 * d] = q + 1 < n;
    inside[1 + 2 * d] = q > 0;
    w[2 + 2 * d] = inside[2 + 2 * d] ? up : 0.0;
    w[1 + 2 * d] = inside[1 + 2 * d] ? down : 0.0;
    if (!inside[2 + 2 * d]) w[0] += up;
    if (!inside[1 + 2 * d]) w[0] += down;
  }
  inside[0] = true;
  return negative;
}

// The move weights of `scheme` (MoveWeights) at a tip's node; returns whether the one-sided scheme
// had a negative P (the central scheme's clipping is reported by choose_move).
template <class Index, class CAt, class FAt>
SIMKIT_HD inline bool move_weights(MoveWeights scheme, const ModelParams& m, double a, int nx, int ny, int nz, int i,
                                   int j, int l, Index index, CAt c_at, FAt f_at, double w[7], bool inside[7]) {
  if (scheme == MoveWeights::OneSided) return tip_weights_one_sided(m, a, nx, ny, nz, i, j, l, index, c_at, f_at, w, inside);
  tip_weights(m, a, nx, ny, nz, i, j, l, index, c_at, f_at, w, inside);
  return false;
}

// Step (4) with TAF diffusion from the 7 values of c around a node (centre, i+1, i-1, j+1, j-1,
// l+1, l-1, mirror ghosts applied; the l pair unused in 2D): c' = c + k ((D_c / h^2) Lap c - eta n c),
// with n = 1 where the node takes up c. D_c / h^2 depends on the run only, so loops hoist its division
// (a per-node fp64 division was the largest part of the GPU sweep's instructions).
SIMKIT_HD inline double diffused_c_from(const ModelParams& m, double k, double h, bool three_d, double centre,
                                        double ip, double im, double jp, double jm, double lp, double lm,
                                        bool occupied) {
  double lap = ip + im + jp + jm;
  if (three_d) lap += lp + lm;
  lap -= 2.0 * (three_d ? 3 : 2) * centre;
  const double n = occupied ? 1.0 : 0.0;
  const double diffusion = m.taf_diffusion / (h * h);
  return centre + k * (diffusion * lap - m.taf_uptake * n * centre);
}

// The same at node (i, j, l), with c read through `c_at(index(i, j, l))`.
template <class Index, class CAt>
SIMKIT_HD inline double diffused_c(const ModelParams& m, double k, double h, int nx, int ny, int nz, int i, int j,
                                   int l, Index index, CAt c_at, bool occupied) {
  return diffused_c_from(m, k, h, nz > 1, c_at(index(i, j, l)), c_at(index(upper_neighbour(i, nx), j, l)),
                         c_at(index(lower_neighbour(i, nx), j, l)), c_at(index(i, upper_neighbour(j, ny), l)),
                         c_at(index(i, lower_neighbour(j, ny), l)),
                         nz > 1 ? c_at(index(i, j, upper_neighbour(l, nz))) : 0.0,
                         nz > 1 ? c_at(index(i, j, lower_neighbour(l, nz))) : 0.0, occupied);
}

}  // namespace simkit::angio
