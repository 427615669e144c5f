// angio reference backend: the simplest correct serial code, the oracle for the others.
#include <cmath>
#include <numbers>
#include <type_traits>
#include <vector>

#include "simkit/angio/angio.hpp"
#include "angio/continuous/kernels.hpp"
#include "core/subnormal.hpp"

namespace simkit::angio {

namespace detail {

template <class T>
void fill_initial_fields(const Grid& g, const InitialParams& p, int l_begin, int l_end, T* n, T* f, T* c_out) {
  const std::size_t skip = static_cast<std::size_t>(g.nx) * g.ny * static_cast<std::size_t>(l_begin);
  const double lx = (g.nx - 1) * g.h, ly = (g.ny - 1) * g.h, lz = (g.nz - 1) * g.h;
  const double pi = std::numbers::pi;
  // A&C's circular tumour, made continuous: c = 1 within r <= 0.1, then ((nu - r)/(nu - 0.1))^2.
  const double nu = (std::sqrt(5.0) - 0.1) / (std::sqrt(5.0) - 1.0);
  // The factors that depend on one coordinate only, once each (the same operations in the same
  // order as a node's own evaluation: the same bits): x and the three profiles along it, y and
  // sin(..y)^2 as sy * sy, z and sin(..z)^2.
  std::vector<double> xs(static_cast<std::size_t>(g.nx)), c_x(xs.size()), f_x(xs.size()), n_x(xs.size());
  std::vector<double> ys(static_cast<std::size_t>(g.ny)), sy_of(ys.size());
  std::vector<double> zs(static_cast<std::size_t>(l_end - l_begin)), sz2_of(zs.size());
  for (int i = 0; i < g.nx; ++i) {
    const double x = lx > 0 ? i * g.h / lx : 0;
    const auto k = static_cast<std::size_t>(i);
    xs[k] = x;
    c_x[k] = std::exp(-(1 - x) * (1 - x) / p.eps1);
    f_x[k] = 0.75 * std::exp(-x * x / p.eps2);
    n_x[k] = std::exp(-x * x / p.eps3);
  }
  for (int j = 0; j < g.ny; ++j) {
    const double y = ly > 0 ? j * g.h / ly : 0;
    ys[static_cast<std::size_t>(j)] = y;
    sy_of[static_cast<std::size_t>(j)] = std::sin(p.sine_frequency * pi * y);
  }
  for (int l = l_begin; l < l_end; ++l) {
    const double z = lz > 0 ? l * g.h / lz : 0, sz = std::sin(p.sine_frequency * pi * z);
    zs[static_cast<std::size_t>(l - l_begin)] = z;
    sz2_of[static_cast<std::size_t>(l - l_begin)] = g.nz > 1 ? sz * sz : 1.0;
  }
  // Every node on its own: threads change no bit.
#pragma omp parallel for collapse(2) schedule(static)
  for (int l = l_begin; l < l_end; ++l)
    for (int j = 0; j < g.ny; ++j) {
      const double y = ys[static_cast<std::size_t>(j)], z = zs[static_cast<std::size_t>(l - l_begin)];
      const double sy = sy_of[static_cast<std::size_t>(j)], sz2 = sz2_of[static_cast<std::size_t>(l - l_begin)];
      for (int i = 0; i < g.nx; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const double x = xs[k];
        const std::size_t id = g.index(i, j, l) - skip;
        double c;
        if (p.taf == InitialTaf::Linear) {
          c = c_x[k];
        } else {
          const double r =
              std::sqrt((1 - x) * (1 - x) + (y - 0.5) * (y - 0.5) + (g.nz > 1 ? (z - 0.5) * (z - 0.5) : 0.0));
          c = r <= 0.1 ? 1.0 : (r < nu ? ((nu - r) / (nu - 0.1)) * ((nu - r) / (nu - 0.1)) : 0.0);
        }
        c_out[id] = static_cast<T>(c);
        f[id] = static_cast<T>(f_x[k]);
        if (n != nullptr) n[id] = static_cast<T>(n_x[k] * sy * sy * sz2);
      }
    }
}
template void fill_initial_fields<float>(const Grid&, const InitialParams&, int, int, float*, float*, float*);
template void fill_initial_fields<double>(const Grid&, const InitialParams&, int, int, double*, double*, double*);

}  // namespace detail

template <class T>
Fields<T> initial_fields(const Grid& g, const InitialParams& p, int l_begin, int l_end) {
  if (l_end < 0) l_end = g.nz;
  const std::size_t values = static_cast<std::size_t>(g.nx) * g.ny * static_cast<std::size_t>(l_end - l_begin);
  Fields<T> out;
  out.n.resize(values);
  out.f.resize(values);
  out.c.resize(values);
  detail::fill_initial_fields(g, p, l_begin, l_end, out.n.data(), out.f.data(), out.c.data());
  return out;
}

template <class T>
void step_reference(const Grid& g, const ModelParams& m, T k, const Fields<T>& in, Fields<T>& out, Form form) {
  Problem p;
  p.grid = g;
  p.dt = static_cast<double>(k);
  p.form = form;
  StepConstants<T> sc = detail::step_constants<T>(p);
  sc.k = k;
  sc.a = k / static_cast<T>(g.h * g.h);
  out.n.resize(g.nodes());
  out.f.resize(g.nodes());
  out.c.resize(g.nodes());
  const FlushSubnormals flush(std::is_same_v<T, float>);
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      detail::step_row(g, typed<T>(m), sc, in.n.data(), in.f.data(), in.c.data(), out.n.data(), out.f.data(),
                       out.c.data(), j, l, nullptr);
}

template <class T>
double integral(const Grid& g, const std::vector<T>& field) {
  const auto w = trapezoid_weight;
  double sum = 0;
  for (int l = 0; l < g.nz; ++l)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i)
        sum += w(i, g.nx) * w(j, g.ny) * (g.nz > 1 ? w(l, g.nz) : 1.0) * static_cast<double>(field[g.index(i, j, l)]);
  return sum * std::pow(g.h, g.dims());
}

namespace detail::reference {
namespace {

template <class T>
class ReferenceSolver final : public Solver<T> {
 public:
  ReferenceSolver(const Problem& p, const Fields<T>& initial, const SlabSetup& slab)
      : g_(p.grid), m_(typed<T>(p.model)), sc_(step_constants<T>(p)), s_(slab), u_(initial), next_(initial) {}

  Reductions advance(std::int64_t steps, bool reduce) override {
    const FlushSubnormals flush(std::is_same_v<T, float>);
    std::vector<Reductions> rows;
    for (std::int64_t s = 0; s < steps; ++s) {
      const bool last = reduce && s + 1 == steps;
      for (int l = s_.slab.own_begin; l < s_.slab.own_end; ++l)
        for (int j = 0; j < g_.ny; ++j) {
          Reductions row = empty_reductions();
          step_row(g_, m_, sc_, u_.n.data(), u_.f.data(), u_.c.data(), next_.n.data(), next_.f.data(), next_.c.data(),
                   j, l, last ? &row : nullptr);
          if (last) rows.push_back(row);
        }
      std::swap(u_, next_);
      exchange_ghosts(g_, s_, u_, halo_);
    }
    return reduce ? fold_rows(g_, s_, rows) : Reductions{};
  }

  Reductions reduce() override {
    std::vector<Reductions> rows;
    for (int l = s_.slab.own_begin; l < s_.slab.own_end; ++l)
      for (int j = 0; j < g_.ny; ++j) rows.push_back(reduce_row(g_, u_, j, l));
    return fold_rows(g_, s_, rows);
  }

  void read(Fields<T>& out) override { out = u_; }
  std::string device() const override { return "CPU, 1 thread (serial reference)"; }

 private:
  Grid g_;
  TypedModelParams<T> m_;
  StepConstants<T> sc_;
  SlabSetup s_;
  HostHalo<T> halo_;
  Fields<T> u_, next_;
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, const RunOptions&,
                                const SlabSetup& slab) {
  return std::make_unique<ReferenceSolver<T>>(problem, initial, slab);
}
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, const RunOptions&,
                                                   const SlabSetup&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, const RunOptions&,
                                                     const SlabSetup&);

}  // namespace detail::reference

template Fields<float> initial_fields<float>(const Grid&, const InitialParams&, int, int);
template Fields<double> initial_fields<double>(const Grid&, const InitialParams&, int, int);
template void step_reference<float>(const Grid&, const ModelParams&, float, const Fields<float>&, Fields<float>&, Form);
template void step_reference<double>(const Grid&, const ModelParams&, double, const Fields<double>&, Fields<double>&,
                                     Form);
template double integral<float>(const Grid&, const std::vector<float>&);
template double integral<double>(const Grid&, const std::vector<double>&);

}  // namespace simkit::angio
