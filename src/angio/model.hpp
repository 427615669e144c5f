#pragma once
// Anderson & Chaplain (1998) in 3D: the coefficients of the discretised n equation, shared by the
// continuous solver (its expanded form) and the hybrid model (tip movement weights). One formula,
// one place: every backend calls these SIMKIT_HD functions.
#include "core/hd.hpp"

namespace simkit::angio {

struct ModelParams {
  double diffusion = 0.00035;     // D
  double chemotaxis = 0.38;       // chi0, chi(c) = chi0 / (1 + alpha c)
  double chemo_saturation = 0.6;  // alpha
  double haptotaxis = 0.34;       // rho
  double fn_production = 0.05;    // beta
  double fn_uptake = 0.1;         // gamma
  double taf_uptake = 0.1;        // eta
  double taf_diffusion = 0.0;     // D_c
};

template <class T>
SIMKIT_HD inline T chemotactic_sensitivity(const ModelParams& m, T c) {
  return static_cast<T>(m.chemotaxis) / (T(1) + static_cast<T>(m.chemo_saturation) * c);
}

// The values of c and f at a node and its six neighbours, in direction order
// centre, i+1, i-1, j+1, j-1, l+1, l-1 (mirror ghosts already applied at the boundary).
template <class T>
struct Stencil {
  T c[7];
  T f[7];
};

// P0..P6 at one node with a = k / h^2 and `dims` = 3, or 2 when Nz = 1 (then the l terms vanish):
//   P0 = 1 - 2 dims a D + a alpha chi / (4 (1 + alpha c)) |grad_2h c|^2 - a chi Lap c - a rho Lap f
//   P1, P2 = a D -/+ (a / 4) [chi (c(i+1) - c(i-1)) + rho (f(i+1) - f(i-1))], likewise P3, P4 (j), P5, P6 (l).
// n_new = P0 n + P1 n(i+1) + P2 n(i-1) + P3 n(j+1) + P4 n(j-1) + P5 n(l+1) + P6 n(l-1).
// As tip weights: P0 stay, P1 to i-1, P2 to i+1, P3 to j-1, P4 to j+1, P5 to l-1, P6 to l+1.
template <class T>
SIMKIT_HD inline void movement_coefficients(const ModelParams& m, T a, int dims, const Stencil<T>& s, T p[7]) {
  const T D = static_cast<T>(m.diffusion), rho = static_cast<T>(m.haptotaxis);
  const T alpha = static_cast<T>(m.chemo_saturation);
  const T chi = chemotactic_sensitivity(m, s.c[0]);
  T grad2 = 0, lap_c = 0, lap_f = 0;
  for (int d = 0; d < dims; ++d) {
    const T dc = s.c[1 + 2 * d] - s.c[2 + 2 * d];
    const T df = s.f[1 + 2 * d] - s.f[2 + 2 * d];
    grad2 += dc * dc;
    lap_c += s.c[1 + 2 * d] + s.c[2 + 2 * d];
    lap_f += s.f[1 + 2 * d] + s.f[2 + 2 * d];
    const T drift = a / T(4) * (chi * dc + rho * df);
    p[1 + 2 * d] = a * D - drift;
    p[2 + 2 * d] = a * D + drift;
  }
  lap_c -= T(2 * dims) * s.c[0];
  lap_f -= T(2 * dims) * s.f[0];
  for (int d = dims; d < 3; ++d) p[1 + 2 * d] = p[2 + 2 * d] = 0;
  p[0] = T(1) - T(2 * dims) * a * D + a * alpha * chi / (T(4) * (T(1) + alpha * s.c[0])) * grad2 - a * chi * lap_c -
         a * rho * lap_f;
}

}  // namespace simkit::angio
