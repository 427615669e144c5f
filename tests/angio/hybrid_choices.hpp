#pragma once
// Random rule choices of the hybrid model for the tests that compare backends or replay logs: every
// anastomosis rule (the given one, or one drawn), window (odd, so that own-trail loops, which close an
// odd number of positions back on the lattice, also land on its boundary), fork, uptake, move
// weights, daughter placement, branching probability and density condition, back steps and the
// chemotactic sensitivity.
#include <random>

#include "simkit/angio/hybrid.hpp"

namespace simkit::angio::test_choices {

inline void random_rules(HybridProblem& p, std::mt19937_64& gen, int rule = -1) {
  std::uniform_real_distribution<double> u(0, 1);
  HybridParams& h = p.hybrid;
  h.anastomosis = static_cast<AnastomosisRule>(rule >= 0 ? rule : static_cast<int>(u(gen) * 4));
  h.anastomosis_window = 3 + 2 * static_cast<int>(u(gen) * 4);
  h.fork_passes = u(gen) < 0.5;
  h.uptake = u(gen) < 0.5 ? Uptake::Tip : Uptake::Trail;
  h.weights = u(gen) < 0.4 ? MoveWeights::OneSided : MoveWeights::Central;
  h.daughter = u(gen) < 0.5 ? DaughterPlacement::Uniform : DaughterPlacement::Weights;
  h.branch_always = u(gen) < 0.3;
  h.branch_density = u(gen) < 0.4 ? 2.5 * u(gen) : 0.0;
  h.back_steps = u(gen) < 0.5;
  p.model.sensitivity = u(gen) < 0.5 ? Sensitivity::Constant : Sensitivity::Receptor;
}

}  // namespace simkit::angio::test_choices
