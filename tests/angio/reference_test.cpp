// angio reference backend: analytic and invariant checks of the explicit expanded-form step.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "angio/angio.hpp"

namespace simkit::angio {
namespace {

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

}  // namespace
}  // namespace simkit::angio
