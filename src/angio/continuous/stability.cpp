// Stability limits of the explicit step, evaluated once on the fields a run starts from.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "simkit/angio/angio.hpp"
#include "angio/continuous/kernels.hpp"
#include "simkit/core/error.hpp"

namespace simkit::angio {

namespace detail {

template <class T>
StabilityParts stability_parts(const Problem& problem, const Fields<T>& u, int l_begin, int l_end) {
  const Grid& g = problem.grid;
  const ModelParams& m = problem.model;
  const int dims = g.dims();
  double worst_expanded = 0, worst_flux = 0, worst_speed2 = 0, max_n = 0;
  std::int64_t negative_nodes = 0;
#pragma omp parallel for schedule(static) reduction(max : worst_expanded, worst_flux, worst_speed2, max_n) \
    reduction(+ : negative_nodes)
  for (int l = l_begin; l < l_end; ++l) {
    for (int j = 0; j < g.ny; ++j) {
      for (int i = 0; i < g.nx; ++i) {
        std::size_t nb[7];
        detail::neighbour_indices(g, i, j, l, nb);
        Stencil<double> s;
        for (int d = 0; d < 7; ++d) {
          s.c[d] = static_cast<double>(u.c[nb[d]]);
          s.f[d] = static_cast<double>(u.f[nb[d]]);
        }
        // With a = 1: P0 = 1 - X, and the expanded step needs a X <= 1; P1..P6 < 0 means the mesh
        // Peclet number exceeds 2 in that direction, which no k fixes.
        double p[7];
        movement_coefficients(m, 1.0, dims, s, p);
        worst_expanded = std::max(worst_expanded, 1.0 - p[0]);
        // Forward Euler with central taxis differences is stable (von Neumann, frozen
        // coefficients) only for k |u|^2 <= 2 D, u = (chi grad c + rho grad f) by central
        // differences: with Peclet > 2 this binds long before P0 >= 0 does.
        double speed2 = 0;
        for (int d = 0; d < dims; ++d) {
          const double velocity = (chemotactic_sensitivity(m, s.c[0]) * (s.c[1 + 2 * d] - s.c[2 + 2 * d]) +
                                   m.haptotaxis * (s.f[1 + 2 * d] - s.f[2 + 2 * d])) /
                                  (2 * g.h);
          speed2 += velocity * velocity;
        }
        worst_speed2 = std::max(worst_speed2, speed2);
        bool negative = false;
        for (int d = 1; d < 1 + 2 * dims; ++d) negative = negative || p[d] < 0;
        negative_nodes += negative ? 1 : 0;
        // Flux form: n' = n (1 - a sum_d [2D + outflow velocities]) + a (inflows), so a times
        // the bracket must stay <= 1 for n' >= 0.
        double outflow = 0;
        for (int d = 0; d < dims; ++d) {
          const int up = 1 + 2 * d, down = 2 + 2 * d;
          const double v_up = face_velocity(m, s.c[0], s.c[up], s.f[0], s.f[up]);
          const double v_down = face_velocity(m, s.c[down], s.c[0], s.f[down], s.f[0]);
          outflow += 2 * m.diffusion + std::max(v_up, 0.0) + std::max(-v_down, 0.0);
        }
        worst_flux = std::max(worst_flux, outflow);
        max_n = std::max(max_n, std::abs(static_cast<double>(u.n[nb[0]])));
      }
    }
  }
  return StabilityParts{worst_expanded, worst_flux, worst_speed2, max_n, negative_nodes};
}

StabilityReport stability_report(const Problem& problem, const StabilityParts& parts) {
  const Grid& g = problem.grid;
  const ModelParams& m = problem.model;
  const int dims = g.dims();
  const double inf = std::numeric_limits<double>::infinity();
  const double h2 = g.h * g.h;
  const double worst_expanded = parts.worst_expanded, worst_flux = parts.worst_flux,
               worst_speed2 = parts.worst_speed2, max_n = parts.max_n;
  const std::int64_t negative_nodes = parts.negative_nodes;
  StabilityReport r;
  const double dmax = std::max(m.diffusion, m.taf_diffusion);
  r.diffusion_limit = dmax > 0 ? h2 / (2 * dims * dmax) : inf;
  // f' = f (1 - k gamma n) + k beta n and c' = c (1 - k (eta n + 2 dims D_c / h^2)) + neighbours:
  // both coefficients must stay >= 0 (the c one also bounds TAF diffusion's checkerboard mode).
  const double rate = std::max(m.fn_uptake * max_n, m.taf_uptake * max_n + 2 * dims * m.taf_diffusion / h2);
  r.reaction_limit = rate > 0 ? 1 / rate : inf;
  r.expanded_limit = worst_expanded > 0 ? h2 / worst_expanded : inf;
  r.advection_limit = worst_speed2 > 0 ? (m.diffusion > 0 ? 2 * m.diffusion / worst_speed2 : 0.0) : inf;
  r.flux_limit = worst_flux > 0 ? h2 / worst_flux : inf;
  r.negative_weight_fraction = static_cast<double>(negative_nodes) / static_cast<double>(g.nodes());
  struct Limit {
    const char* name;
    double k;
  };
  const bool expanded = problem.form == Form::Expanded;
  const Limit limits[] = {
      {"diffusion (k <= h^2 / (2 dims max(D, D_c)))", r.diffusion_limit},
      {"reaction (k max(gamma n, eta n + 2 dims D_c / h^2) <= 1)", r.reaction_limit},
      expanded ? Limit{"expanded-form (P0 >= 0 at every node)", r.expanded_limit}
               : Limit{"flux-form (upwinded outflow a sum <= 1 at every node)", r.flux_limit},
      expanded ? Limit{"expanded-form advection (k |u|^2 <= 2 D, von Neumann)", r.advection_limit}
               : Limit{"flux-form (upwinded outflow a sum <= 1 at every node)", r.flux_limit},
  };
  r.largest_stable_k = inf;
  for (const Limit& limit : limits)
    if (limit.k < r.largest_stable_k) {
      r.largest_stable_k = limit.k;
      r.binding_limit = limit.name;
    }
  return r;
}

template StabilityParts stability_parts<float>(const Problem&, const Fields<float>&, int, int);
template StabilityParts stability_parts<double>(const Problem&, const Fields<double>&, int, int);

}  // namespace detail

template <class T>
StabilityReport check_stability(const Problem& problem, const Fields<T>& u) {
  return detail::stability_report(problem, detail::stability_parts(problem, u, 0, problem.grid.nz));
}

void enforce_stability(const Problem& problem, const StabilityReport& report, bool force) {
  if (force || problem.dt <= report.largest_stable_k) return;
  throw UserError(
      "dt", fmt::format(" {:.6g}: unstable: the {} limit allows at most k = {:.6g} on this grid and initial state; use "
                  "`dt` {:.6g} or less, or `force` to run anyway",
                  problem.dt, report.binding_limit, report.largest_stable_k, report.largest_stable_k));
}

template StabilityReport check_stability<float>(const Problem&, const Fields<float>&);
template StabilityReport check_stability<double>(const Problem&, const Fields<double>&);

double round_step_down(double k) {
  const int exponent = static_cast<int>(std::floor(std::log10(k))) - 1;
  const double mantissa = std::floor(k / std::pow(10.0, exponent));
  return std::stod(fmt::format("{:.0f}e{}", mantissa, exponent));
}

}  // namespace simkit::angio
