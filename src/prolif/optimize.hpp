#pragma once
// The optimizers behind prolif fit, on any batch objective (tests run them on analytic functions).
#include <cstdint>
#include <functional>
#include <vector>

#include "simkit/prolif/fit.hpp"

namespace simkit::prolif {

struct Scored {
  double fitness = 0;
  std::vector<double> detail;  // carried along with the best point (fit: the per-target distances)
};
// Fitness of a generation of points, in order (one batch of simulations in fit()).
using BatchFunction = std::function<std::vector<Scored>(const std::vector<std::vector<double>>&)>;

struct Minimum {
  std::vector<double> x;
  Scored best;
  std::vector<FitIteration> history;
  std::int64_t evaluations = 0;
};

// Minimises f over the box `bounds` with options.optimizer, particles, iterations/budget, seed,
// log_init and on_iteration. Deterministic for a seed when f is.
Minimum minimize(const BatchFunction& f, const std::vector<Range>& bounds, const FitOptions& options);

}  // namespace simkit::prolif
