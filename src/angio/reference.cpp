// angio reference backend: the simplest correct serial code, the oracle for the others.
#include <cmath>
#include <numbers>

#include "angio/angio.hpp"

namespace simkit::angio {

namespace {

// Mirror ghost nodes (the value at -1 equals the value at +1): the no-flux boundary.
inline int upper(int i, int n) { return i + 1 < n ? i + 1 : (n > 1 ? i - 1 : i); }
inline int lower(int i, int n) { return i > 0 ? i - 1 : (n > 1 ? i + 1 : i); }

}  // namespace

template <class T>
Fields<T> initial_fields(const Grid& g, const InitialParams& p) {
  Fields<T> out;
  out.n.resize(g.nodes());
  out.f.resize(g.nodes());
  out.c.resize(g.nodes());
  const double lx = (g.nx - 1) * g.h, ly = (g.ny - 1) * g.h, lz = (g.nz - 1) * g.h;
  const double pi = std::numbers::pi;
  // A&C's circular tumour, made continuous: c = 1 within r <= 0.1, then ((nu - r)/(nu - 0.1))^2.
  const double nu = (std::sqrt(5.0) - 0.1) / (std::sqrt(5.0) - 1.0);
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double x = lx > 0 ? i * g.h / lx : 0, y = ly > 0 ? j * g.h / ly : 0, z = lz > 0 ? l * g.h / lz : 0;
        const std::size_t id = g.index(i, j, l);
        double c;
        if (p.taf == InitialTaf::Linear) {
          c = std::exp(-(1 - x) * (1 - x) / p.eps1);
        } else {
          const double r =
              std::sqrt((1 - x) * (1 - x) + (y - 0.5) * (y - 0.5) + (g.nz > 1 ? (z - 0.5) * (z - 0.5) : 0.0));
          c = r <= 0.1 ? 1.0 : (r < nu ? ((nu - r) / (nu - 0.1)) * ((nu - r) / (nu - 0.1)) : 0.0);
        }
        const double sy = std::sin(p.sine_frequency * pi * y), sz = std::sin(p.sine_frequency * pi * z);
        out.c[id] = static_cast<T>(c);
        out.f[id] = static_cast<T>(0.75 * std::exp(-x * x / p.eps2));
        out.n[id] = static_cast<T>(std::exp(-x * x / p.eps3) * sy * sy * (g.nz > 1 ? sz * sz : 1.0));
      }
  return out;
}

template <class T>
void step_reference(const Grid& g, const ModelParams& m, T k, const Fields<T>& in, Fields<T>& out) {
  const T a = k / static_cast<T>(g.h * g.h);
  const int dims = g.dims();
  const T beta = static_cast<T>(m.fn_production), gamma = static_cast<T>(m.fn_uptake);
  const T eta = static_cast<T>(m.taf_uptake), dc = static_cast<T>(m.taf_diffusion);
  out.n.resize(g.nodes());
  out.f.resize(g.nodes());
  out.c.resize(g.nodes());
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::size_t nb[7] = {g.index(i, j, l),
                                   g.index(upper(i, g.nx), j, l),
                                   g.index(lower(i, g.nx), j, l),
                                   g.index(i, upper(j, g.ny), l),
                                   g.index(i, lower(j, g.ny), l),
                                   g.index(i, j, upper(l, g.nz)),
                                   g.index(i, j, lower(l, g.nz))};
        Stencil<T> s;
        for (int d = 0; d < 7; ++d) {
          s.c[d] = in.c[nb[d]];
          s.f[d] = in.f[nb[d]];
        }
        T p[7];
        movement_coefficients(m, a, dims, s, p);
        T n_new = p[0] * in.n[nb[0]];
        for (int d = 1; d < 1 + 2 * dims; ++d) n_new += p[d] * in.n[nb[d]];
        const T n0 = in.n[nb[0]], f0 = s.f[0], c0 = s.c[0];
        T lap_c = -T(2 * dims) * c0;
        for (int d = 1; d < 1 + 2 * dims; ++d) lap_c += s.c[d];
        out.n[nb[0]] = n_new;
        out.f[nb[0]] = f0 + k * (beta * n0 - gamma * n0 * f0);
        out.c[nb[0]] = c0 + k * (dc * lap_c / static_cast<T>(g.h * g.h) - eta * n0 * c0);
      }
}

template <class T>
double integral(const Grid& g, const std::vector<T>& field) {
  auto w = [](int i, int n) { return (n > 1 && (i == 0 || i == n - 1)) ? 0.5 : 1.0; };
  double sum = 0;
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i)
        sum += w(i, g.nx) * w(j, g.ny) * (g.nz > 1 ? w(l, g.nz) : 1.0) * static_cast<double>(field[g.index(i, j, l)]);
  return sum * std::pow(g.h, g.dims());
}

template Fields<float> initial_fields<float>(const Grid&, const InitialParams&);
template Fields<double> initial_fields<double>(const Grid&, const InitialParams&);
template void step_reference<float>(const Grid&, const ModelParams&, float, const Fields<float>&, Fields<float>&);
template void step_reference<double>(const Grid&, const ModelParams&, double, const Fields<double>&, Fields<double>&);
template double integral<float>(const Grid&, const std::vector<float>&);
template double integral<double>(const Grid&, const std::vector<double>&);

}  // namespace simkit::angio
