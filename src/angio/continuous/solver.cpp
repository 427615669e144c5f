// Backend dispatch, problem validation and the capacity check.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "angio/continuous/kernels.hpp"
#include "core/dispatch.hpp"
#include "simkit/angio/run.hpp"
#include "simkit/core/memory.hpp"
#include "simkit/core/error.hpp"
#include "core/numbers.hpp"

namespace simkit::angio {

namespace detail {
template <class T>
std::unique_ptr<Solver<T>> make_backend(Backend backend, const Problem& problem, const Fields<T>& initial,
                                        const RunOptions& options, const SlabSetup& slab) {
  return SIMKIT_DISPATCH(backend, make<T>(problem, initial, options, slab));
}
template std::unique_ptr<Solver<float>> make_backend<float>(Backend, const Problem&, const Fields<float>&,
                                                            const RunOptions&, const SlabSetup&);
template std::unique_ptr<Solver<double>> make_backend<double>(Backend, const Problem&, const Fields<double>&,
                                                              const RunOptions&, const SlabSetup&);
}  // namespace detail

template <class T>
std::unique_ptr<Solver<T>> make_solver(const Problem& problem, const Fields<T>& initial, Backend backend,
                                       const RunOptions& options) {
  return detail::make_backend<T>(backend, problem, initial, options, detail::SlabSetup::whole(problem.grid));
}

template std::unique_ptr<Solver<float>> make_solver<float>(const Problem&, const Fields<float>&, Backend,
                                                           const RunOptions&);
template std::unique_ptr<Solver<double>> make_solver<double>(const Problem&, const Fields<double>&, Backend,
                                                             const RunOptions&);

void validate(const Problem& p) {
  const Grid& g = p.grid;
  auto require = [](bool ok, const char* field, const std::string& problem) {
    if (!ok) throw UserError(field, ": " + problem);
  };
  require(g.nx >= 2 && g.ny >= 2 && g.nz >= 1, "grid",
          fmt::format("{},{},{}: need NX >= 2, NY >= 2, NZ >= 1 (NZ = 1 is the 2D model)", g.nx, g.ny, g.nz));
  require(std::isfinite(g.h) && g.h > 0, "h", fmt::format("{}: the spacing must be a positive number", g.h));
  require(std::isfinite(p.dt) && p.dt > 0, "dt", fmt::format("{}: the step must be a positive number", p.dt));
  const ModelParams& m = p.model;
  // Parameters and initial shapes come from config files, not flags: their messages name the
  // config keys and carry no field for front ends to rename.
  for (const ModelParamField& field : kModelParamFields) {
    if (const std::string problem = number_problem(m.*field.member, Bound::NonNegative); !problem.empty()) {
      throw UserError(fmt::format("model parameter: {} ({}): {}", field.name, field.symbol, problem));
    }
  }
  const InitialParams& ip = p.initial;
  if (!(std::isfinite(ip.eps1) && ip.eps1 > 0 && std::isfinite(ip.eps2) && ip.eps2 > 0 && std::isfinite(ip.eps3) &&
        ip.eps3 > 0)) {
    throw UserError("initial: eps1, eps2 and eps3 must be positive numbers");
  }
  if (ip.sine_frequency < 0) throw UserError(fmt::format("initial: m = {}: must be >= 0", ip.sine_frequency));
}


void check_capacity(const Problem& p, Backend backend, int device) {
  const double nodes = static_cast<double>(p.grid.nx) * p.grid.ny * p.grid.nz;
  if (nodes > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 64)) {
    throw UserError("grid", fmt::format(" {},{},{}: too many nodes", p.grid.nx, p.grid.ny, p.grid.nz));
  }
  const double value = p.precision == Precision::Fp32 ? 4.0 : 8.0;
  // Host: the initial fields or the read-back buffer (3 arrays; run() frees the first before it
  // allocates the second), plus the two states of reference/cpu (6 arrays).
  const double host = nodes * value * (backend == Backend::Cuda ? 3.0 : 9.0);
  require_host_memory(host, "grid",
                      fmt::format(" {},{},{}: the {} run", p.grid.nx, p.grid.ny, p.grid.nz,
                                  p.precision == Precision::Fp32 ? "fp32" : "fp64"),
                      backend == Backend::Cuda ? "use a smaller grid" : "use a smaller grid or `backend` cuda");
  if (backend == Backend::Cuda) {
    // CUDA grids are at most 65535 blocks in y and z: the kernels use ceil(NY / 8) and NZ.
    if (p.grid.ny > 8 * 65535 || p.grid.nz > 65535) {
      throw UserError("grid", fmt::format(" {},{},{}: the cuda backend takes NY <= {} and NZ <= 65535", p.grid.nx,
                                  p.grid.ny, p.grid.nz, 8 * 65535));
    }
    const double device_bytes = nodes * value * 6.0 + 64.0 * 1024 * 1024;
    const std::size_t free = device_memory(device).free;
    if (device_bytes > static_cast<double>(free)) {
      throw DeviceMemoryError("grid", fmt::format(" {},{},{}: the run needs {} of GPU memory and device {} has {} free",
                                  p.grid.nx, p.grid.ny, p.grid.nz, gib_text(device_bytes), device,
                                  gib_text(static_cast<double>(free))));
    }
  }
}

}  // namespace simkit::angio
