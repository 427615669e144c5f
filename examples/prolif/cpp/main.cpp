// Simulates a two-population ProCell model (one quiescent, one dividing every 24 +- 4 h) from a
// small initial histogram and prints the cells per generation at 72 h, and their mean as expected
// from the model. Uses only simkit's installed headers (docs/architecture.md).
#include <cstdint>
#include <cstdio>
#include <exception>

#include "simkit/core/error.hpp"
#include "simkit/prolif/prolif.hpp"

int main() {
  try {
    simkit::prolif::InitialHistogram initial;
    initial.values = {1000.0, 2000.0, 4000.0};
    initial.counts = {3000, 4000, 3000};
    initial.source = "in-memory histogram";

    simkit::prolif::Model model;
    model.populations = {{"quiescent", 0.2, true, 0, 0, simkit::prolif::Distribution::TruncatedNormal},
                         {"dividing", 0.8, false, 24.0, 4.0, simkit::prolif::Distribution::TruncatedNormal}};
    model.phi_min = 1.0;
    model.times = {72.0};
    simkit::prolif::validate(model, "example model");

    simkit::RunOptions options;  // backend auto: the GPU when there is one
    options.seed = 42;
    const simkit::prolif::Result result = simkit::prolif::simulate(initial, model, options);

    const auto generations = result.by_generation(0);
    std::printf("cells at 72 h: %llu (from %llu), %llu divisions\n",
                static_cast<unsigned long long>(result.total(0)),
                static_cast<unsigned long long>(initial.total_cells()),
                static_cast<unsigned long long>(result.divisions));
    for (std::size_t k = 0; k < generations.size(); ++k)
      if (generations[k] > 0)
        std::printf("  generation %zu: %llu\n", k, static_cast<unsigned long long>(generations[k]));
    return result.total(0) > initial.total_cells() ? 0 : 1;
  } catch (const simkit::UserError& e) {
    std::fprintf(stderr, "prolif_example: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prolif_example: internal error: %s\n", e.what());
    return 1;
  }
}
