// angio reference backend: analytic and invariant checks of the explicit step (expanded and flux
// forms) and of the stability check.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>

#include "angio/model.hpp"
#include "simkit/angio/angio.hpp"
#include "simkit/core/error.hpp"
#include "fields.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

using simkit::test::user_error;

ModelParams no_taxis(double diffusion) {
  ModelParams m;
  m.diffusion = diffusion;
  m.chemotaxis = 0;
  m.haptotaxis = 0;
  return m;
}

// At fixed n (no diffusion, no taxis: P0 = 1), each step is c <- c (1 - k eta n) and
// f <- f (1 - k gamma n) + k beta n: exactly the discrete closed forms below, and within the
// forward-Euler error t k (rate)^2 / 2 (relative) of c0 e^(-eta n t), f* + (f0 - f*) e^(-gamma n t).
TEST(AngioReference, FibronectinAndTafFollowTheirClosedFormsAtFixedN) {
  const Grid g{6, 5, 4, 0.2};
  ModelParams m = no_taxis(0.0);
  Fields<double> u{std::vector<double>(g.nodes(), 0.7), std::vector<double>(g.nodes(), 0.3),
                   std::vector<double>(g.nodes(), 0.9)};
  const double k = 0.01, n = 0.7;
  const int steps = 500;
  Fields<double> next;
  for (int s = 0; s < steps; ++s) {
    step_reference(g, m, k, u, next);
    std::swap(u, next);
  }
  const double t = k * steps, fstar = m.fn_production / m.fn_uptake;
  const double c_discrete = 0.9 * std::pow(1 - k * m.taf_uptake * n, steps);
  const double f_discrete = fstar + (0.3 - fstar) * std::pow(1 - k * m.fn_uptake * n, steps);
  const double c_exact = 0.9 * std::exp(-m.taf_uptake * n * t);
  const double f_exact = fstar + (0.3 - fstar) * std::exp(-m.fn_uptake * n * t);
  for (std::size_t i = 0; i < g.nodes(); ++i) {
    EXPECT_DOUBLE_EQ(u.n[i], n);
    EXPECT_NEAR(u.c[i], c_discrete, 1e-13);
    EXPECT_NEAR(u.f[i], f_discrete, 1e-13);
    const double rc = m.taf_uptake * n, rf = m.fn_uptake * n;
    EXPECT_NEAR(u.c[i], c_exact, 1.01 * c_exact * t * k * rc * rc / 2);
    EXPECT_NEAR(u.f[i], f_exact, 1.01 * std::fabs(0.3 - fstar) * t * k * rf * rf / 2 + 1e-15);
  }
}

// Pure diffusion: cos(m pi x / Lx) cos(l pi y / Ly) decays as exp(-D pi^2 (m^2/Lx^2 + l^2/Ly^2) t).
// Max error over the grid at t = 2 with k = 0.1 h^2 / D: second order in h (k scales with h^2).
double eigenmode_error(int cells) {
  const double D = 0.01, h = 1.0 / cells, k = 0.1 * h * h / D, t_end = 2.0;
  const Grid g{cells + 1, cells + 1, 1, h};
  const ModelParams m = no_taxis(D);
  const double pi = std::numbers::pi;
  Fields<double> u;
  u.n.resize(g.nodes());
  u.f.assign(g.nodes(), 0.0);
  u.c.assign(g.nodes(), 0.0);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) u.n[g.index(i, j, 0)] = std::cos(1 * pi * i * h) * std::cos(2 * pi * j * h);
  const int steps = static_cast<int>(std::lround(t_end / k));
  Fields<double> next;
  for (int s = 0; s < steps; ++s) {
    step_reference(g, m, k, u, next);
    std::swap(u, next);
  }
  const double t = steps * k, decay = std::exp(-D * pi * pi * (1 + 4) * t);
  double err = 0;
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i)
      err = std::max(err, std::fabs(u.n[g.index(i, j, 0)] - decay * std::cos(pi * i * h) * std::cos(2 * pi * j * h)));
  return err;
}

// The initial fields, node by node, as the formulas read (docs/angio.md): initial_fields computes
// each coordinate's factors once and must give these very bits, every precision, both TAF sources,
// 2D and 3D, whole grids and slabs of planes.
template <class T>
void expect_initial_fields_per_node(const Grid& g, const InitialParams& p, int l_begin, int l_end) {
  const Fields<T> got = initial_fields<T>(g, p, l_begin, l_end);
  const double lx = (g.nx - 1) * g.h, ly = (g.ny - 1) * g.h, lz = (g.nz - 1) * g.h;
  const double pi = std::numbers::pi;
  const double nu = (std::sqrt(5.0) - 0.1) / (std::sqrt(5.0) - 1.0);
  const std::size_t skip = static_cast<std::size_t>(g.nx) * g.ny * static_cast<std::size_t>(l_begin);
  ASSERT_EQ(got.c.size(), static_cast<std::size_t>(g.nx) * g.ny * static_cast<std::size_t>(l_end - l_begin));
  std::size_t differ = 0;
  for (int l = l_begin; l < l_end; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double x = lx > 0 ? i * g.h / lx : 0, y = ly > 0 ? j * g.h / ly : 0, z = lz > 0 ? l * g.h / lz : 0;
        double c;
        if (p.taf == InitialTaf::Linear) {
          c = std::exp(-(1 - x) * (1 - x) / p.eps1);
        } else {
          const double r =
              std::sqrt((1 - x) * (1 - x) + (y - 0.5) * (y - 0.5) + (g.nz > 1 ? (z - 0.5) * (z - 0.5) : 0.0));
          c = r <= 0.1 ? 1.0 : (r < nu ? ((nu - r) / (nu - 0.1)) * ((nu - r) / (nu - 0.1)) : 0.0);
        }
        const double sy = std::sin(p.sine_frequency * pi * y), sz = std::sin(p.sine_frequency * pi * z);
        const std::size_t id = g.index(i, j, l) - skip;
        const T n = static_cast<T>(std::exp(-x * x / p.eps3) * sy * sy * (g.nz > 1 ? sz * sz : 1.0));
        const T f = static_cast<T>(0.75 * std::exp(-x * x / p.eps2));
        const T c_node = static_cast<T>(c);
        const bool same = std::memcmp(&got.c[id], &c_node, sizeof(T)) == 0 &&
                          std::memcmp(&got.n[id], &n, sizeof(T)) == 0 && std::memcmp(&got.f[id], &f, sizeof(T)) == 0;
        differ += same ? 0 : 1;
      }
  EXPECT_EQ(differ, 0u) << g.nx << "x" << g.ny << "x" << g.nz << " planes " << l_begin << ".." << l_end;
}

TEST(AngioReference, InitialFieldsAreTheFormulasNodeByNode) {
  for (const auto& [nx, ny, nz, l_begin, l_end] : {std::array{41, 41, 1, 0, 1}, std::array{37, 21, 9, 0, 9},
                                                   std::array{40, 30, 20, 5, 13}, std::array{17, 9, 8, 7, 8}}) {
    for (const InitialTaf taf : {InitialTaf::Linear, InitialTaf::Tumour}) {
      for (const int frequency : {1, 3}) {
        Grid g{nx, ny, nz, 0};
        g.h = 1.0 / (nx - 1);
        InitialParams p;
        p.taf = taf;
        p.sine_frequency = frequency;
        expect_initial_fields_per_node<double>(g, p, l_begin, l_end);
        expect_initial_fields_per_node<float>(g, p, l_begin, l_end);
      }
    }
  }
}

TEST(AngioReference, DiffusionEigenmodeConvergesAtSecondOrder) {
  const double e16 = eigenmode_error(16), e32 = eigenmode_error(32), e64 = eigenmode_error(64);
  EXPECT_LT(e64, 1e-4);
  EXPECT_NEAR(std::log2(e16 / e32), 2.0, 0.15);
  EXPECT_NEAR(std::log2(e32 / e64), 2.0, 0.15);
}

// Where c increases in +x the weight of a move to i+1 (P2) exceeds that of i-1 (P1).
TEST(AngioReference, TipWeightsPointUpTheTafGradient) {
  const ModelParams m;
  Stencil<double> s{{0.5, 0.6, 0.4, 0.5, 0.5, 0.5, 0.5}, {0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3}};
  double p[7];
  movement_coefficients(m, 1.0, 3, s, p);
  EXPECT_GT(p[2], p[1]);
  EXPECT_DOUBLE_EQ(p[3], p[4]);
  EXPECT_DOUBLE_EQ(p[5], p[6]);
  movement_coefficients(m, 1.0, 2, s, p);
  EXPECT_GT(p[2], p[1]);
  EXPECT_EQ(p[5], 0.0);
  EXPECT_EQ(p[6], 0.0);
}

// The default initial conditions are symmetric about y = 1/2 and z = 1/2; the step keeps that.
TEST(AngioReference, MirrorSymmetryIsPreserved) {
  const Grid g{21, 17, 17, 1.0 / 20};
  const auto init = initial_fields<double>(g, InitialParams{});
  Fields<double> u = init, next;
  const ModelParams m;
  for (int s = 0; s < 20; ++s) {
    step_reference(g, m, 0.05, u, next);
    std::swap(u, next);
  }
  double scale = 0;
  for (double v : u.n) scale = std::max(scale, std::fabs(v));
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const auto a = g.index(i, j, l), b = g.index(i, g.ny - 1 - j, g.nz - 1 - l);
        EXPECT_NEAR(u.n[a], u.n[b], 1e-13 * scale);
        EXPECT_NEAR(u.c[a], u.c[b], 1e-15);
        EXPECT_NEAR(u.f[a], u.f[b], 1e-15);
      }
}

TEST(AngioReference, TrapezoidIntegralIsExactForLinearFields) {
  const Grid g{11, 6, 5, 0.1};
  std::vector<double> v(g.nodes());
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) v[g.index(i, j, l)] = 1.0 + 2.0 * i * g.h;
  // Box [0,1] x [0,0.5] x [0,0.4]: integral of 1 + 2x = (1 + 1) * 0.5 * 0.4.
  EXPECT_NEAR(integral(g, v), 0.4, 1e-13);
}

// ---- Flux form, stability check, symmetry (property tests: random smooth fields, printed seed) ----

// n in [0.5, 1.5], f in 0.6 +- f_amplitude, c in 0.55 +- c_amplitude. With the default parameters
// and amplitudes of 0.3-0.4 the taxis velocities across a cell exceed 4D by far (mesh Peclet > 2
// at almost every node): the regime docs/angio.md ("Stability") is about.
template <class T>
Fields<T> random_smooth_fields(const Grid& g, std::uint64_t seed, double c_amplitude = 0.4, double f_amplitude = 0.3) {
  return test_fields::smooth_fields<T>(g, seed, c_amplitude, f_amplitude);
}

// A milder problem on which the expanded form stays stable and positive for 200 steps (D = 0.01,
// c and f within +-0.05 of their means: mesh Peclet <= 2 at nearly every node), to compare the two
// forms' drifts. (With +-0.1 the expanded form still blew up for about one seed in twenty; with
// +-0.05, over 120 seeds, its drift was >= 7e-4 and the fp32 flux drift <= 3e-8.)
ModelParams mild_model() {
  ModelParams m;
  m.diffusion = 0.01;
  return m;
}
constexpr double kMildAmplitude = 0.05;

template <class T>
Fields<T> run_steps(const Grid& g, const ModelParams& m, double k, Fields<T> u, int steps, Form form) {
  Fields<T> next;
  for (int s = 0; s < steps; ++s) {
    step_reference(g, m, static_cast<T>(k), u, next, form);
    std::swap(u, next);
  }
  return u;
}

Problem problem_for(const Grid& g, const ModelParams& m, Form form, double dt = 0) {
  Problem p;
  p.grid = g;
  p.model = m;
  p.form = form;
  p.dt = dt;
  return p;
}

template <class T>
double relative_drift(const Grid& g, const Fields<T>& before, const Fields<T>& after) {
  return std::fabs(integral(g, after.n) - integral(g, before.n)) / integral(g, before.n);
}

// Each flux-form step moves n between nodes through face fluxes that both sides evaluate from the
// same operands (and a mirror ghost's flux is exactly minus the interior one), so the
// trapezoid-weighted sum of n changes only by the rounding of the per-node updates. A node update
// n + a (D Lap n - div) rounds about ten times where it matters, each time by at most eps/2 of a
// term no larger than about max n (a times the outflow is <= 1/2 at half the limit), and max n is
// at most ~3 mean n here: so the integral moves by at most ~15 eps per step, relative; we allow 20.
// (Observed: about 1e-3 of the bound, as the roundings mostly cancel.) A real leak -- a lost face,
// a wrong boundary weight -- moves it by O(k v / h), some 1e-3 per step here, far above it.
constexpr double kRoundingsPerStep = 20;

template <class T>
void expect_flux_conserves(std::uint64_t seed) {
  const int steps = 200;
  const double bound = kRoundingsPerStep * steps * std::numeric_limits<T>::epsilon();
  for (const Grid& g : {Grid{17, 13, 9, 1.0 / 16}, Grid{23, 19, 1, 1.0 / 22}}) {
    // Default parameters, steep random fields: the expanded form is unstable here (negative
    // P1..P6 nearly everywhere) and is only compared over its first 10 steps.
    {
      const ModelParams m;
      const Fields<T> u0 = random_smooth_fields<T>(g, seed);
      const double k = 0.5 * check_stability(problem_for(g, m, Form::Flux), u0).largest_stable_k;
      const double flux = relative_drift(g, u0, run_steps(g, m, k, u0, steps, Form::Flux));
      const double expanded10 = relative_drift(g, u0, run_steps(g, m, k, u0, 10, Form::Expanded));
      SCOPED_TRACE(
          fmt::format("steep, grid {}x{}x{}, seed {}: flux drift {:.3g} (bound {:.3g}), expanded after 10 "
                      "steps {:.3g}",
                      g.nx, g.ny, g.nz, seed, flux, bound, expanded10));
      EXPECT_LE(flux, bound);
      EXPECT_GT(expanded10, 100 * std::max<double>(flux, std::numeric_limits<T>::epsilon()));
    }
    // The mild problem: both forms stable for all 200 steps; the expanded central form is not
    // conservative (a 2D run of 2000 steps drifted 7.6 %), the flux form is, to round-off.
    {
      const ModelParams m = mild_model();
      const Fields<T> u0 = random_smooth_fields<T>(g, seed, kMildAmplitude, kMildAmplitude);
      const Problem p = problem_for(g, m, Form::Flux);
      const StabilityReport r = check_stability(p, u0);
      const double k = 0.5 * std::min(r.largest_stable_k, r.expanded_limit);
      const Fields<T> flux_end = run_steps(g, m, k, u0, steps, Form::Flux);
      const Fields<T> expanded_end = run_steps(g, m, k, u0, steps, Form::Expanded);
      const double flux = relative_drift(g, u0, flux_end), expanded = relative_drift(g, u0, expanded_end);
      SCOPED_TRACE(fmt::format("mild, grid {}x{}x{}, seed {}: flux drift {:.3g} (bound {:.3g}), expanded {:.3g}", g.nx,
                               g.ny, g.nz, seed, flux, bound, expanded));
      EXPECT_LE(flux, bound);
      EXPECT_GT(expanded, 100 * std::max<double>(flux, std::numeric_limits<T>::epsilon()));
      EXPECT_GT(*std::min_element(expanded_end.n.begin(), expanded_end.n.end()), T(0));  // it did not blow up
    }
  }
}

TEST(AngioFlux, ConservesTheTrapezoidIntegralOfNFp64) {
  const std::uint64_t seed = test::printed_seed(20240611);
  for (std::uint64_t s = seed; s < seed + 3; ++s) expect_flux_conserves<double>(s);
}

TEST(AngioFlux, ConservesTheTrapezoidIntegralOfNFp32) {
  const std::uint64_t seed = test::printed_seed(20240612);
  for (std::uint64_t s = seed; s < seed + 3; ++s) expect_flux_conserves<float>(s);
}

// Strong chemotaxis up a steep TAF front, n = A&C's initial cells (zero on the sine nodes): the
// expanded form's negative P1..P6 (mesh Peclet >> 2) make n < 0 next to zero-density nodes, while
// the upwinded flux form, under its limit, updates n as a non-negative combination of old values.
template <class T>
void expect_flux_keeps_n_non_negative(const Grid& g) {
  ModelParams m;
  m.chemotaxis = 5;
  InitialParams ip;
  ip.eps1 = 0.05;  // steep c
  ip.eps3 = 0.01;  // n spread over a few nodes from x = 0
  const Fields<T> u0 = initial_fields<T>(g, ip);
  const StabilityReport flux = check_stability(problem_for(g, m, Form::Flux), u0);
  const StabilityReport expanded = check_stability(problem_for(g, m, Form::Expanded), u0);
  EXPECT_GT(expanded.negative_weight_fraction, 0.0);
  // The flux form's own limit for both: the expanded form's advection limit is far smaller here,
  // but what is tested is the sign of n, which no step size fixes for negative weights.
  const double k = 0.9 * std::min(flux.largest_stable_k, expanded.expanded_limit);
  Fields<T> uf = u0, ue = u0, next;
  T min_flux = 0, min_expanded = 0;
  for (int s = 0; s < 100; ++s) {
    step_reference(g, m, static_cast<T>(k), uf, next, Form::Flux);
    std::swap(uf, next);
    step_reference(g, m, static_cast<T>(k), ue, next, Form::Expanded);
    std::swap(ue, next);
    min_flux = std::min(min_flux, *std::min_element(uf.n.begin(), uf.n.end()));
    min_expanded = std::min(min_expanded, *std::min_element(ue.n.begin(), ue.n.end()));
  }
  SCOPED_TRACE(fmt::format("grid {}x{}x{}: k = {:.4g}, min n flux {:.3g}, expanded {:.3g}", g.nx, g.ny, g.nz, k,
                           min_flux, min_expanded));
  // std::min would skip a NaN: the flux run must also have stayed finite for its minimum to count.
  EXPECT_TRUE(std::all_of(uf.n.begin(), uf.n.end(), [](T x) { return std::isfinite(x); }));
  EXPECT_GE(min_flux, T(0));  // exactly: no tolerance, the update is monotone
  EXPECT_LT(min_expanded, T(0));
}

TEST(AngioFlux, KeepsNNonNegativeWhereTheExpandedFormGoesNegative) {
  expect_flux_keeps_n_non_negative<double>(Grid{25, 13, 9, 1.0 / 24});
  expect_flux_keeps_n_non_negative<double>(Grid{41, 21, 1, 1.0 / 40});
  expect_flux_keeps_n_non_negative<float>(Grid{25, 13, 9, 1.0 / 24});
}

TEST(AngioStability, RefusesAboveTheLargestStableStepUnlessForced) {
  const std::uint64_t seed = test::printed_seed(7);
  for (Form form : {Form::Expanded, Form::Flux})
    for (const Grid& g : {Grid{15, 11, 7, 1.0 / 14}, Grid{19, 13, 1, 1.0 / 18}}) {
      const Fields<double> u = random_smooth_fields<double>(g, seed);
      Problem p = problem_for(g, ModelParams{}, form);
      const StabilityReport r = check_stability(p, u);
      ASSERT_TRUE(std::isfinite(r.largest_stable_k) && r.largest_stable_k > 0);
      EXPECT_EQ(r.largest_stable_k, form == Form::Flux ? std::min({r.diffusion_limit, r.reaction_limit, r.flux_limit})
                                                       : std::min({r.diffusion_limit, r.reaction_limit,
                                                                   r.expanded_limit, r.advection_limit}));
      p.dt = 1.1 * r.largest_stable_k;
      const std::string message = user_error([&] { enforce_stability(p, r, false); });
      EXPECT_NE(message.find(fmt::format("{:.6g}", r.largest_stable_k)), std::string::npos) << message;
      EXPECT_NE(message.find("`force`"), std::string::npos) << message;  // the CLI prints --force
      EXPECT_NO_THROW(enforce_stability(p, r, true));
      p.dt = 0.9 * r.largest_stable_k;
      EXPECT_NO_THROW(enforce_stability(p, r, false));
    }
}

TEST(AngioStability, DiffusionLimitIsHSquaredOverTwoDimsMaxD) {
  const std::uint64_t seed = test::printed_seed(8);
  for (double taf_diffusion : {0.0, 0.002})
    for (const Grid& g : {Grid{9, 8, 7, 0.125}, Grid{9, 8, 1, 0.125}}) {
      ModelParams m;
      m.taf_diffusion = taf_diffusion;
      const StabilityReport r = check_stability(problem_for(g, m, Form::Flux), random_smooth_fields<double>(g, seed));
      const int dims = g.nz == 1 ? 2 : 3;
      EXPECT_EQ(r.diffusion_limit, g.h * g.h / (2 * dims * std::max(m.diffusion, m.taf_diffusion)))
          << "dims " << dims << ", D_c " << taf_diffusion;
    }
}

// The seven values of c and f around node (i, j, l) with mirror ghosts, in Stencil order.
Stencil<double> stencil_at(const Grid& g, const Fields<double>& u, int i, int j, int l) {
  const std::size_t nb[7] = {g.index(i, j, l),
                             g.index(upper_neighbour(i, g.nx), j, l),
                             g.index(lower_neighbour(i, g.nx), j, l),
                             g.index(i, upper_neighbour(j, g.ny), l),
                             g.index(i, lower_neighbour(j, g.ny), l),
                             g.index(i, j, upper_neighbour(l, g.nz)),
                             g.index(i, j, lower_neighbour(l, g.nz))};
  Stencil<double> s;
  for (int d = 0; d < 7; ++d) {
    s.c[d] = u.c[nb[d]];
    s.f[d] = u.f[nb[d]];
  }
  return s;
}

// Smallest P0 over the grid at step k (P0 is affine in k, so the expanded limit is where it hits 0).
double smallest_p0(const Grid& g, const ModelParams& m, const Fields<double>& u, double k) {
  double smallest = std::numeric_limits<double>::infinity();
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        double p[7];
        movement_coefficients(m, k / (g.h * g.h), g.dims(), stencil_at(g, u, i, j, l), p);
        smallest = std::min(smallest, p[0]);
      }
  return smallest;
}

TEST(AngioStability, ExpandedLimitIsWhereTheSmallestP0CrossesZero) {
  const std::uint64_t seed = test::printed_seed(9);
  for (const Grid& g : {Grid{15, 11, 7, 1.0 / 14}, Grid{19, 13, 1, 1.0 / 18}}) {
    const ModelParams m;
    const Fields<double> u = random_smooth_fields<double>(g, seed);
    const StabilityReport r = check_stability(problem_for(g, m, Form::Expanded), u);
    ASSERT_TRUE(std::isfinite(r.expanded_limit));
    EXPECT_LT(smallest_p0(g, m, u, 1.01 * r.expanded_limit), 0.0);
    EXPECT_GE(smallest_p0(g, m, u, 0.99 * r.expanded_limit), 0.0);
  }
}

TEST(AngioStability, NegativeWeightFractionNeedsTaxis) {
  const Grid g{15, 11, 7, 1.0 / 14};
  const std::uint64_t seed = test::printed_seed(10);
  const Fields<double> u = random_smooth_fields<double>(g, seed);
  const StabilityReport quiet = check_stability(problem_for(g, no_taxis(0.00035), Form::Expanded), u);
  EXPECT_EQ(quiet.negative_weight_fraction, 0.0);
  ModelParams strong;
  strong.chemotaxis = 5;
  const StabilityReport taxis = check_stability(problem_for(g, strong, Form::Expanded), u);
  EXPECT_GT(taxis.negative_weight_fraction, 0.0);
  EXPECT_LE(taxis.negative_weight_fraction, 1.0);
}

// Fields symmetric in y (bitwise) stay symmetric bitwise under the flux form: at node j and its
// mirror the y faces swap, and each face velocity is computed as exactly minus its mirror image
// (x - y = -(y - x) and (a + b) = (b + a) in IEEE arithmetic), and so is the upwinded flux.
TEST(AngioFlux, MirrorSymmetryInYIsBitwise) {
  const std::uint64_t seed = test::printed_seed(11);
  for (const Grid& g : {Grid{13, 12, 5, 1.0 / 12}, Grid{13, 11, 7, 1.0 / 12}, Grid{17, 14, 1, 1.0 / 16}}) {
    Fields<double> u = random_smooth_fields<double>(g, seed);
    for (auto* v : {&u.n, &u.f, &u.c})
      for (int l = 0; l < g.nz; ++l)
        for (int j = 0; j < g.ny / 2; ++j)
          for (int i = 0; i < g.nx; ++i) (*v)[g.index(i, g.ny - 1 - j, l)] = (*v)[g.index(i, j, l)];
    const ModelParams m;
    const double k = 0.5 * check_stability(problem_for(g, m, Form::Flux), u).largest_stable_k;
    u = run_steps(g, m, k, u, 50, Form::Flux);
    int asymmetric = 0;
    for (const auto* v : {&u.n, &u.f, &u.c})
      for (int l = 0; l < g.nz; ++l)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i)
            asymmetric += (*v)[g.index(i, j, l)] != (*v)[g.index(i, g.ny - 1 - j, l)] ? 1 : 0;
    EXPECT_EQ(asymmetric, 0) << "grid " << g.nx << "x" << g.ny << "x" << g.nz;
  }
}

// A 3D grid with nz = 3 and fields constant in z against the 2D grid (nz = 1) with the same x-y
// values: the z faces carry no flux and the z second differences vanish, so the two runs solve
// the same equations. They are not bitwise equal: the 3D Laplacian sums (x + y + (n + n)) - 6n
// where 2D sums (x + y) - 4n (and the expanded form's P0 has 1 - 6aD and two more aD n terms
// instead of 1 - 4aD), which round differently. So: equal to round-off, a few ulps of the
// field's scale per step, here bounded by 1e-13 max|n| after 40 steps in fp64 (40 steps x ~10
// roundings x eps = 1e-13 x max|n| as a worst case; observed about 10x less).
TEST(AngioReference, TwoDimensionalRunEqualsAThreeDimensionalOneConstantInZ) {
  const std::uint64_t seed = test::printed_seed(12);
  const Grid g2{17, 13, 1, 1.0 / 16}, g3{17, 13, 3, 1.0 / 16};
  const ModelParams m = mild_model();  // the expanded form stays stable on it (see above)
  for (Form form : {Form::Expanded, Form::Flux}) {
    const Fields<double> u2 = random_smooth_fields<double>(g2, seed, kMildAmplitude, kMildAmplitude);
    Fields<double> u3;
    for (int l = 0; l < g3.nz; ++l) {
      u3.n.insert(u3.n.end(), u2.n.begin(), u2.n.end());
      u3.f.insert(u3.f.end(), u2.f.begin(), u2.f.end());
      u3.c.insert(u3.c.end(), u2.c.begin(), u2.c.end());
    }
    // The 3D limit is the smaller one (one more direction); the same k for both runs.
    const double k = 0.5 * check_stability(problem_for(g3, m, form), u3).largest_stable_k;
    const Fields<double> e2 = run_steps(g2, m, k, u2, 40, form);
    const Fields<double> e3 = run_steps(g3, m, k, u3, 40, form);
    double scale = 0, worst = 0, z_spread = 0;
    int differ = 0;
    for (int l = 0; l < g3.nz; ++l)
      for (int j = 0; j < g2.ny; ++j)
        for (int i = 0; i < g2.nx; ++i) {
          const auto a = g2.index(i, j, 0), b = g3.index(i, j, l);
          scale = std::max(scale, std::fabs(e2.n[a]));
          worst = std::max(worst, std::fabs(e2.n[a] - e3.n[b]));
          differ += e2.n[a] != e3.n[b] ? 1 : 0;
          z_spread = std::max(z_spread, std::fabs(e3.n[b] - e3.n[g3.index(i, j, 0)]));
          EXPECT_NEAR(e2.f[a], e3.f[b], 1e-13);
          EXPECT_NEAR(e2.c[a], e3.c[b], 1e-13);
        }
    std::printf("%s: max|dn| %.3g of max|n| %.3g, %d of %zu values differ, z spread %.3g\n",
                form == Form::Flux ? "flux" : "expanded", worst, scale, differ, g3.nodes(), z_spread);
    EXPECT_LE(worst, 1e-13 * scale);
    EXPECT_EQ(z_spread, 0.0);  // every l of the 3D run computes the same sums: bitwise constant in z
    // The integral is over a box 2h deep: exactly 2h times the 2D one (up to the integral's rounding).
    EXPECT_NEAR(integral(g3, e3.n), 2 * g3.h * integral(g2, e2.n), 1e-12 * integral(g3, e3.n));
  }
}

}  // namespace
}  // namespace simkit::angio
