#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

#include "simkit/core/error.hpp"
#include "core/numbers.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

namespace {

// The readers check the same rules with line numbers; this is the last gate for models built in
// code or changed by command-line overrides, so messages name the population instead of a line.
void check_population(const Population& pop, const std::string& source) {
  const auto fail = [&](std::string_view field, const std::string& problem) {
    return input_error(source, 0, field, fmt::format("population '{}': {}", pop.name, problem));
  };
  const auto check = [&](double v, Bound bound, std::string_view field) {
    if (const std::string problem = number_problem(v, bound); !problem.empty()) throw fail(field, problem);
  };
  check(pop.proportion, Bound::Fraction, "proportion");
  if (pop.quiescent) return;
  check(pop.mean, Bound::Positive, "mean");
  check(pop.sd, Bound::NonNegative, "sd");
}

}  // namespace

void validate(const Model& model, const std::string& source) {
  if (model.populations.empty()) throw input_error(source, 0, "population", "at least one population is required");
  std::set<std::string> names;
  int quiescent = 0;
  double sum = 0;
  for (const auto& pop : model.populations) {
    if (pop.name.empty()) throw input_error(source, 0, "name", "a population name must not be empty");
    if (!names.insert(pop.name).second)
      throw input_error(source, 0, "name", fmt::format("duplicate population name '{}'", pop.name));
    check_population(pop, source);
    if (pop.quiescent && ++quiescent > 1)
      throw input_error(source, 0, "quiescent", "more than one quiescent population (at most one is allowed)");
    sum += pop.proportion;
  }
  if (std::abs(sum - 1.0) > 1e-6)
    throw input_error(source, 0, "proportion",
                      fmt::format("proportions sum to {:.12g}, expected 1 (within 1e-6)", sum));

  checked_number(model.phi_min, Bound::NonNegative, source, 0, "phi_min");

  if (model.times.empty())
    throw input_error(source, 0, "times", "at least one output time is required (give times or t_max)");
  for (std::size_t i = 0; i < model.times.size(); ++i) {
    const double t = model.times[i];
    checked_number(t, Bound::NonNegative, source, 0, "times");
    if (i > 0 && t <= model.times[i - 1])
      throw input_error(source, 0, "times",
                        fmt::format("must be strictly ascending, got {} after {}", t, model.times[i - 1]));
  }
}

std::uint64_t InitialHistogram::total_cells() const {
  std::uint64_t total = 0;
  for (const std::uint64_t count : counts) {
    // Unsigned wrap-around would silently lose cells; the engine sizes its work from this total.
    if (count > std::numeric_limits<std::uint64_t>::max() - total)
      throw input_error(source, 0, "count", "the total number of cells exceeds 2^64 - 1");
    total += count;
  }
  return total;
}

}  // namespace simkit::prolif
