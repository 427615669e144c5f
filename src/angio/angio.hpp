#pragma once
// angio: Anderson & Chaplain's continuous model of tumour-induced angiogenesis in 3D (n, f, c).
// Work in progress (issue 4): the grid, initial conditions and the reference explicit step.
#include <cstddef>
#include <vector>

#include "angio/model.hpp"

namespace simkit::angio {

// Vertex-centred grid: node (i, j, l) at (i h, j h, l h); Nz = 1 is the 2D model.
struct Grid {
  int nx = 0, ny = 0, nz = 1;
  double h = 0;
  std::size_t nodes() const { return static_cast<std::size_t>(nx) * ny * nz; }
  std::size_t index(int i, int j, int l) const {
    return (static_cast<std::size_t>(l) * ny + static_cast<std::size_t>(j)) * nx + static_cast<std::size_t>(i);
  }
  int dims() const { return nz == 1 ? 2 : 3; }
};

template <class T>
struct Fields {
  std::vector<T> n, f, c;
};

enum class InitialTaf { Linear, Tumour };

struct InitialParams {
  InitialTaf taf = InitialTaf::Linear;
  double eps1 = 0.45, eps2 = 0.45, eps3 = 0.001;
  int sine_frequency = 3;  // m
};

// Anderson & Chaplain's initial fields: c = exp(-(1-x)^2/eps1) (linear source at x = 1) or a
// spherical tumour on the x = 1 face (continuous version, docs/angio.md); f = 0.75 exp(-x^2/eps2);
// n = exp(-x^2/eps3) sin^2(m pi y) sin^2(m pi z) (sin^2(m pi y) in 2D). x, y, z in box units.
template <class T>
Fields<T> initial_fields(const Grid& g, const InitialParams& p);

// One forward-Euler step of the expanded form (reference backend, serial), step k.
template <class T>
void step_reference(const Grid& g, const ModelParams& m, T k, const Fields<T>& in, Fields<T>& out);

// Trapezoid-weighted integral (1/2 per boundary face a node lies on) times h^dims.
template <class T>
double integral(const Grid& g, const std::vector<T>& field);

}  // namespace simkit::angio
