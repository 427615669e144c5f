#pragma once
// Anderson & Chaplain (1998) in 3D: the coefficients of the discretised n equation, shared by the
// continuous solver (its expanded form) and the hybrid model (tip movement weights). One formula,
// one place: every backend calls these SIMKIT_HD functions.
#include "core/hd.hpp"
#include "simkit/angio/params.hpp"

namespace simkit::angio {

// The alpha the formulas use: chemo_saturation, or 0 for a constant sensitivity (chi = chi0
// exactly: 1 / (1 + 0 c) = 1 and the saturation term of P0 vanishes, as chi'(c) = 0).
SIMKIT_HD inline double effective_saturation(const ModelParams& m) {
  return m.sensitivity == Sensitivity::Constant ? 0.0 : m.chemo_saturation;
}

// The parameters in the solver's precision. The model functions below take either ModelParams
// (doubles, converted where used) or these, converted once on the host: the values are the same
// casts, so the results are the same bits, and kernels skip the conversions. chemo_saturation is
// the effective alpha (0 for a constant sensitivity).
template <class T>
struct TypedModelParams {
  T diffusion, chemotaxis, chemo_saturation, haptotaxis, fn_production, fn_uptake, taf_uptake, taf_diffusion;
};
template <class T>
TypedModelParams<T> typed(const ModelParams& m) {
  return {static_cast<T>(m.diffusion),  static_cast<T>(m.chemotaxis),    static_cast<T>(effective_saturation(m)),
          static_cast<T>(m.haptotaxis), static_cast<T>(m.fn_production), static_cast<T>(m.fn_uptake),
          static_cast<T>(m.taf_uptake), static_cast<T>(m.taf_diffusion)};
}
template <class T>
SIMKIT_HD inline T effective_saturation(const TypedModelParams<T>& m) {
  return m.chemo_saturation;
}

// The division by 1 + alpha c, on the GPU in fp32. IEEE division (div.rn.f32) compiles to a fast
// path (a reciprocal approximation refined by five FMAs) plus a range check (FCHK) and a slow-path
// call for operands near the ends of the exponent range: about 12 instructions, and 3.1 of them a
// node in the flux form's step. Kernels whose model parameters are FastQuotientParams divide
// through the fast path alone (the same instructions nvcc emits for it): the same bits as a / b
// wherever the check passes, which it does for a = +0 or |a| in [2^-60, 2^60] with b in [1, 2^60]
// (and for b in [2^-60, 2^60] with either sign when a != 0). On the GPU the refined reciprocal is
// the correctly rounded 1/b for every float b in [1, 2) (so for every b: its mantissa alone
// decides), which by Markstein's theorem makes the corrected quotient the correctly rounded a/b
// wherever nothing overflows or underflows; also checked directly, exhaustively for b in [1, 2^24)
// and in [2^-60, 2^60) with fixed a, and on 2^32 random pairs (angio_solver_cuda_test
// QuotientFastPathIsDivision). The cuda solver takes those kernels only when chi0 and the c it
// starts from keep 1 + alpha c in [1, 2^40 + 1] (quotient_in_range in cuda.cu); c stays there in
// any run that does not blow up. On the host, and in every other case, a / b.
#if defined(__CUDACC__)
// The fast path's reciprocal of b: the hardware approximation refined by one Newton step.
__device__ inline float refined_reciprocal(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return __fmaf_rn(r, __fmaf_rn(r, -b, 1.0f), r);
}
#endif
template <bool kFast, class T>
SIMKIT_HD inline T quotient(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (kFast && sizeof(T) == 4) {
    const float r1 = refined_reciprocal(b);
    const float q = __fmaf_rn(a, r1, 0.0f);
    return __fmaf_rn(r1, __fmaf_rn(-b, q, a), q);  // q + r1 (a - b q), the remainder exact
  }
#endif
  return a / b;
}

// Model parameters for kernels that divide through quotient's fast path (above).
template <class T>
struct FastQuotientParams : TypedModelParams<T> {};
template <class P>
inline constexpr bool kFastQuotient = false;
template <class T>
inline constexpr bool kFastQuotient<FastQuotientParams<T>> = true;

template <class T, class P>
SIMKIT_HD inline T chemotactic_sensitivity(const P& m, T c) {
  return quotient<kFastQuotient<P>>(static_cast<T>(m.chemotaxis), T(1) + static_cast<T>(effective_saturation(m)) * c);
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
template <int kDims, class T, class P>
SIMKIT_HD inline void movement_coefficients_fixed(const P& m, T a, const Stencil<T>& s, T p[7]) {
  constexpr int dims = kDims;
  const T D = static_cast<T>(m.diffusion), rho = static_cast<T>(m.haptotaxis);
  const T alpha = static_cast<T>(effective_saturation(m));
  // One division: 1/(1 + alpha c) gives chi and the saturation term's alpha chi / (1 + alpha c).
  const T saturation = T(1) / (T(1) + alpha * s.c[0]);
  const T chi = static_cast<T>(m.chemotaxis) * saturation;
  // (a/4) folded into the taxis coefficients once, instead of once per direction.
  const T chi_q = a / T(4) * chi, rho_q = a / T(4) * rho;
  T grad2 = 0, lap_c = 0, lap_f = 0;
  for (int d = 0; d < dims; ++d) {
    const T dc = s.c[1 + 2 * d] - s.c[2 + 2 * d];
    const T df = s.f[1 + 2 * d] - s.f[2 + 2 * d];
    grad2 += dc * dc;
    lap_c += s.c[1 + 2 * d] + s.c[2 + 2 * d];
    lap_f += s.f[1 + 2 * d] + s.f[2 + 2 * d];
    const T drift = chi_q * dc + rho_q * df;
    p[1 + 2 * d] = a * D - drift;
    p[2 + 2 * d] = a * D + drift;
  }
  lap_c -= T(2 * dims) * s.c[0];
  lap_f -= T(2 * dims) * s.f[0];
  for (int d = dims; d < 3; ++d) p[1 + 2 * d] = p[2 + 2 * d] = 0;
  p[0] = T(1) - T(2 * dims) * a * D + a * alpha * chi * saturation / T(4) * grad2 - a * chi * lap_c - a * rho * lap_f;
}

// The same with the dimension known at run time (host code, tests).
template <class T, class P>
SIMKIT_HD inline void movement_coefficients(const P& m, T a, int dims, const Stencil<T>& s, T p[7]) {
  if (dims == 3) {
    movement_coefficients_fixed<3>(m, a, s, p);
  } else {
    movement_coefficients_fixed<2>(m, a, s, p);
  }
}

// The constants of one explicit step in the solver's precision, computed once on the host so that
// every backend uses the very same values (a = k / h^2, 1 / h^2).
template <class T>
struct StepConstants {
  T k, a, inv_h2;
  int dims;
  bool flux;  // conservative upwinded flux form instead of the expanded form
};

// Upwinded taxis flux through the face between two neighbouring nodes lo -> hi (positive: towards
// hi), times h^2: v = chi((c_lo + c_hi)/2) (c_hi - c_lo) + rho (f_hi - f_lo), carried by the
// upwind density. Both nodes of a face evaluate it with the same operands in the same order, so
// what leaves one node enters the other exactly; at a mirror ghost it is exactly minus the
// interior face's flux, which makes the trapezoid-weighted integral of n telescope.
template <class T, class P>
SIMKIT_HD inline T face_velocity(const P& m, T c_lo, T c_hi, T f_lo, T f_hi) {
  return chemotactic_sensitivity(m, (c_lo + c_hi) / T(2)) * (c_hi - c_lo) +
         static_cast<T>(m.haptotaxis) * (f_hi - f_lo);
}
template <class T, class P>
SIMKIT_HD inline T face_flux(const P& m, T c_lo, T c_hi, T f_lo, T f_hi, T n_lo, T n_hi) {
  const T v = face_velocity(m, c_lo, c_hi, f_lo, f_hi);
  return v > T(0) ? v * n_lo : v * n_hi;
}

// The expanded form's n' with the P's expanded and regrouped (the same polynomial in the stencil's
// values as P0 n + sum_d P_d n_d, with q = a/4, s = 1/(1 + alpha c), chi_q = q chi0 s):
//   n' = n + aD Lap n + chi_q [n (alpha s |grad_2h c|^2 - 4 Lap c) + sum_d dc_d dn_d]
//          + rho_q [sum_d df_d dn_d - 4 n Lap f]
// where dc_d, df_d are the central differences (plus minus minus) and dn_d = n(minus) - n(plus).
// About 64 operations and one division per node in 3D instead of about 85 for the seven P's and
// their sum: the step kernels are bound by instruction issue (docs/performance.md). lap_c_out: the
// discrete Laplacian of c (sum of neighbours - 2 dims c), which the TAF diffusion reuses.
template <int kDims, class T, class P>
SIMKIT_HD inline T expanded_density(const P& m, T a, const T n[7], const Stencil<T>& s, T& lap_c_out) {
  constexpr int dims = kDims;
  const T alpha = static_cast<T>(effective_saturation(m));
  const T saturation = quotient<kFastQuotient<P>>(T(1), T(1) + alpha * s.c[0]);
  const T chi_q = a / T(4) * static_cast<T>(m.chemotaxis) * saturation;
  const T rho_q = a / T(4) * static_cast<T>(m.haptotaxis);
  T dc = s.c[1] - s.c[2], df = s.f[1] - s.f[2], dn = n[2] - n[1];
  T grad2 = dc * dc, cross_c = dc * dn, cross_f = df * dn;
  T lap_c = s.c[1] + s.c[2], lap_f = s.f[1] + s.f[2], lap_n = n[1] + n[2];
  for (int d = 1; d < dims; ++d) {
    const int up = 1 + 2 * d, down = 2 + 2 * d;
    dc = s.c[up] - s.c[down];
    df = s.f[up] - s.f[down];
    dn = n[down] - n[up];
    grad2 += dc * dc;
    cross_c += dc * dn;
    cross_f += df * dn;
    lap_c += s.c[up] + s.c[down];
    lap_f += s.f[up] + s.f[down];
    lap_n += n[up] + n[down];
  }
  lap_c -= T(2 * dims) * s.c[0];
  lap_f -= T(2 * dims) * s.f[0];
  lap_n -= T(2 * dims) * n[0];
  lap_c_out = lap_c;
  const T n4 = T(4) * n[0];
  const T chi_term = chi_q * (n[0] * (alpha * saturation * grad2) - n4 * lap_c + cross_c);
  const T rho_term = rho_q * (cross_f - n4 * lap_f);
  return n[0] + a * static_cast<T>(m.diffusion) * lap_n + chi_term + rho_term;
}

// One node's forward-Euler update from its 7-point neighbourhood (order centre, i+1, i-1, j+1,
// j-1, l+1, l-1, mirror ghosts applied): the one formula every backend runs.
//   expanded: n' = P0 n + sum_d P_d n_d (movement_coefficients), evaluated as expanded_density
//   flux:     n' = n + a [D Lap n - sum_dims (G(+face) - G(-face))], G = face_flux
//   f' = f + (k n) (beta - gamma f),   c' = c + k D_c Lap c / h^2 - eta (k n) c
// Dimension and form are template parameters so that every loop unrolls and the 7-point arrays
// stay in registers on the GPU; update_node below picks the instance at run time.
// kTaf: whether D_c != 0 (update_node_fixed decides at run time; vectorised loops decide once).
// z_face (flux form): the flux through the node's l - 1 face, known from the node below (a column
// marched upwards): that node's l + 1 face is the same face with the same operands in the same
// order, hence the same bits. `known` false: compute it (the first plane of a column's chunk).
template <class T>
struct FaceCarry {
  T flux;
  bool known;
};

// The flux form's n' from the fluxes through the node's faces (g_up[d] through its + face in
// dimension d, g_down[d] through its - face): n + a [D Lap n - sum_d (g_up[d] - g_down[d])]. A
// face's flux is the same bits from both its nodes (face_flux), so a kernel may evaluate each face
// once and hand it to both.
template <int kDims, class T, class P>
SIMKIT_HD inline T flux_density(const P& m, T a, const T n[7], const T g_up[3], const T g_down[3]) {
  // The sums start at -0, not 0: -0 + x is x for every x, so the first addition compiles away (0 + x
  // is not x for x = -0, so it stays; the only difference is the sign of a zero).
  T lap_n = -T(0), divergence = -T(0);
  for (int d = 0; d < kDims; ++d) {
    lap_n += n[1 + 2 * d] + n[2 + 2 * d];
    divergence += g_up[d] - g_down[d];
  }
  lap_n -= T(2 * kDims) * n[0];
  return n[0] + a * (static_cast<T>(m.diffusion) * lap_n - divergence);
}

// The discrete Laplacian of c (sum of the neighbours - 2 dims c) in the flux form's order.
template <int kDims, class T>
SIMKIT_HD inline T taf_laplacian(const Stencil<T>& s) {
  T lap_c = -T(2 * kDims) * s.c[0];
  for (int d = 1; d < 1 + 2 * kDims; ++d) lap_c += s.c[d];
  return lap_c;
}

// f' and c' at a node from its n, f and c (and Lap c, used when kTaf).
template <bool kTaf, class T, class P>
SIMKIT_HD inline void update_fn_taf(const P& m, const StepConstants<T>& sc, T n0, T f0, T c0, T lap_c, T& f_out,
                                    T& c_out) {
  const T kn = sc.k * n0;
  f_out = f0 + kn * (static_cast<T>(m.fn_production) - static_cast<T>(m.fn_uptake) * f0);
  // TAF diffusion is off in A&C (D_c = 0): the kTaf = false instance skips its term, which saves
  // arithmetic in the kernels that instruction issue bounds.
  const T uptake = static_cast<T>(m.taf_uptake) * kn * c0;
  if constexpr (kTaf) {
    c_out = c0 + sc.k * static_cast<T>(m.taf_diffusion) * sc.inv_h2 * lap_c - uptake;
  } else {
    c_out = c0 - uptake;
  }
}

template <int kDims, bool kFlux, bool kTaf, class T, class P>
SIMKIT_HD inline void update_node_taf(const P& m, const StepConstants<T>& sc, const T n[7], const Stencil<T>& s,
                                      T& n_out, T& f_out, T& c_out, FaceCarry<T>* z_face = nullptr) {
  T n_new, lap_c = 0;
  if constexpr (kFlux) {
    T g_up[3] = {}, g_down[3] = {};
    for (int d = 0; d < kDims; ++d) {
      const int up = 1 + 2 * d, down = 2 + 2 * d;
      g_up[d] = face_flux(m, s.c[0], s.c[up], s.f[0], s.f[up], n[0], n[up]);
      if (d == 2 && z_face != nullptr && z_face->known) {
        g_down[d] = z_face->flux;
      } else {
        g_down[d] = face_flux(m, s.c[down], s.c[0], s.f[down], s.f[0], n[down], n[0]);
      }
      if (d == 2 && z_face != nullptr) *z_face = FaceCarry<T>{g_up[d], true};
    }
    n_new = flux_density<kDims>(m, sc.a, n, g_up, g_down);
    if constexpr (kTaf) lap_c = taf_laplacian<kDims>(s);
  } else {
    n_new = expanded_density<kDims>(m, sc.a, n, s, lap_c);
  }
  const T n0 = n[0], f0 = s.f[0], c0 = s.c[0];  // (the outputs may alias the inputs)
  n_out = n_new;
  update_fn_taf<kTaf>(m, sc, n0, f0, c0, lap_c, f_out, c_out);
}

template <int kDims, bool kFlux, class T, class P>
SIMKIT_HD inline void update_node_fixed(const P& m, const StepConstants<T>& sc, const T n[7], const Stencil<T>& s,
                                        T& n_out, T& f_out, T& c_out, FaceCarry<T>* z_face = nullptr) {
  if (m.taf_diffusion != 0) {
    update_node_taf<kDims, kFlux, true>(m, sc, n, s, n_out, f_out, c_out, z_face);
  } else {
    update_node_taf<kDims, kFlux, false>(m, sc, n, s, n_out, f_out, c_out, z_face);
  }
}

template <class T, class P>
SIMKIT_HD inline void update_node(const P& m, const StepConstants<T>& sc, const T n[7], const Stencil<T>& s, T& n_out,
                                  T& f_out, T& c_out) {
  if (sc.dims == 3) {
    if (sc.flux) {
      update_node_fixed<3, true>(m, sc, n, s, n_out, f_out, c_out);
    } else {
      update_node_fixed<3, false>(m, sc, n, s, n_out, f_out, c_out);
    }
  } else if (sc.flux) {
    update_node_fixed<2, true>(m, sc, n, s, n_out, f_out, c_out);
  } else {
    update_node_fixed<2, false>(m, sc, n, s, n_out, f_out, c_out);
  }
}

// Mirror ghost nodes (the value at -1 equals the value at +1): the no-flux boundary. With a
// single node in a direction both neighbours are the node itself (and that direction is unused).
SIMKIT_HD inline int upper_neighbour(int i, int n) { return i + 1 < n ? i + 1 : (n > 1 ? i - 1 : i); }
SIMKIT_HD inline int lower_neighbour(int i, int n) { return i > 0 ? i - 1 : (n > 1 ? i + 1 : i); }

// Trapezoid weight of a node along one direction: 1/2 on a boundary face, 1 inside (and 1 for a
// direction of a single node, the 2D case).
SIMKIT_HD inline double trapezoid_weight(int i, int n) { return (n > 1 && (i == 0 || i == n - 1)) ? 0.5 : 1.0; }

}  // namespace simkit::angio
