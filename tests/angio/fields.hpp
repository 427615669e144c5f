#pragma once
// Random smooth fields for angio's property tests (reference_test, solver_test, solver_cuda_test).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "simkit/angio/angio.hpp"

namespace simkit::angio::test_fields {

// offset + sum of three random cosines in box units, |sum| <= amplitude < offset: smooth, positive.
inline std::vector<double> smooth_field(const Grid& g, std::mt19937_64& rng, double offset, double amplitude) {
  std::uniform_int_distribution<int> wave(0, 3);
  std::uniform_real_distribution<double> phase(0, 2 * std::numbers::pi), share(0.2, 1.0);
  struct Mode {
    int kx, ky, kz;
    double phase, weight;
  } modes[3];
  double total = 0;
  for (Mode& m : modes) {
    m = {wave(rng), wave(rng), g.nz > 1 ? wave(rng) : 0, phase(rng), share(rng)};
    total += m.weight;
  }
  const double lx = (g.nx - 1) * g.h, ly = (g.ny - 1) * g.h, lz = g.nz > 1 ? (g.nz - 1) * g.h : 1;
  std::vector<double> v(g.nodes());
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        double sum = 0;
        for (const Mode& m : modes)
          sum +=
              m.weight *
              std::cos(std::numbers::pi * (m.kx * i * g.h / lx + m.ky * j * g.h / ly + m.kz * l * g.h / lz) + m.phase);
        v[g.index(i, j, l)] = offset + amplitude * sum / total;
      }
  return v;
}

// n in [0.5, 1.5], f in 0.6 +- f_amplitude, c in 0.55 +- c_amplitude, drawn from `rng` in that
// order (n, f, c).
template <class T>
Fields<T> smooth_fields(const Grid& g, std::mt19937_64& rng, double c_amplitude, double f_amplitude) {
  const auto n = smooth_field(g, rng, 1.0, 0.5), f = smooth_field(g, rng, 0.6, f_amplitude),
             c = smooth_field(g, rng, 0.55, c_amplitude);
  Fields<T> u;
  u.n.assign(n.begin(), n.end());
  u.f.assign(f.begin(), f.end());
  u.c.assign(c.begin(), c.end());
  return u;
}

// The same from a fresh generator seeded with `seed`.
template <class T>
Fields<T> smooth_fields(const Grid& g, std::uint64_t seed, double c_amplitude, double f_amplitude) {
  std::mt19937_64 rng(seed);
  return smooth_fields<T>(g, rng, c_amplitude, f_amplitude);
}

// Another family, per-axis cosines: each field is 0.5 + (amp/3) sum_d cos(k_d pi x_d + phase_d)
// with real wave numbers k_d in [1, 4) and amp in [0.2, 0.5); n is that value squared (a localised
// bump), f and c the value itself (A&C's scales: order 1).
template <class T>
Fields<T> cosine_fields(const Grid& g, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  Fields<T> out{std::vector<T>(g.nodes()), std::vector<T>(g.nodes()), std::vector<T>(g.nodes())};
  double kx[3][3], phase[3][3], amp[3];
  for (int q = 0; q < 3; ++q) {
    amp[q] = 0.2 + 0.3 * u(rng);
    for (int d = 0; d < 3; ++d) {
      kx[q][d] = 1 + 3 * u(rng);
      phase[q][d] = 6.28 * u(rng);
    }
  }
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double x[3] = {i * g.h, j * g.h, l * g.h};
        double v[3];
        for (int q = 0; q < 3; ++q) {
          v[q] = 0.5;
          for (int d = 0; d < 3; ++d) v[q] += amp[q] / 3 * std::cos(kx[q][d] * 3.14159 * x[d] + phase[q][d]);
        }
        const std::size_t id = g.index(i, j, l);
        out.n[id] = static_cast<T>(v[0] * v[0]);
        out.f[id] = static_cast<T>(v[1]);
        out.c[id] = static_cast<T>(v[2]);
      }
  return out;
}

}  // namespace simkit::angio::test_fields
