#pragma once
// The hybrid (discrete tip-cell) model's per-tip rules, shared by every backend (SIMKIT_HD):
// move weights from the continuous model's P0..P6, the branching probability table, and the
// closed forms of c and f at a node that endothelial cells have occupied for m steps.
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

// Step (4) with TAF diffusion at node (i, j, l): c' = c + k (D_c Lap c / h^2 - eta n c), with n = 1
// where the node is occupied, the 7-point Laplacian (5-point in 2D) and mirror ghosts.
template <class Index, class CAt>
SIMKIT_HD inline double diffused_c(const ModelParams& m, double k, double h, int nx, int ny, int nz, int i, int j,
                                   int l, Index index, CAt c_at, bool occupied) {
  const double centre = c_at(index(i, j, l));
  double lap = c_at(index(upper_neighbour(i, nx), j, l)) + c_at(index(lower_neighbour(i, nx), j, l)) +
               c_at(index(i, upper_neighbour(j, ny), l)) + c_at(index(i, lower_neighbour(j, ny), l));
  if (nz > 1) lap += c_at(index(i, j, upper_neighbour(l, nz))) + c_at(index(i, j, lower_neighbour(l, nz)));
  lap -= 2.0 * (nz > 1 ? 3 : 2) * centre;
  const double n = occupied ? 1.0 : 0.0;
  return centre + k * (m.taf_diffusion * lap / (h * h) - m.taf_uptake * n * centre);
}

}  // namespace simkit::angio
