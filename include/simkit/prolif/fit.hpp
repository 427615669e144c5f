#pragma once
// Calibration of a proliferation model to measured histograms (what ProCell users do with
// FST-PSO): free parameters with bounds, ProCell's fitness (the Hellinger distance on its
// logarithmic bins), every generation of the optimizer evaluated as one batch (one GPU launch).
// docs/prolif.md, "Fitting".
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

struct Range {
  double min = 0, max = 0;
};

// Which values of one population a fit may change (absent: fixed at the model's value).
struct PopulationFreedom {
  std::optional<Range> proportion, mean, sd;
};

// A model with free parameters. `model` holds every fixed value (a free value there is only a
// valid placeholder); `free` has one entry per population.
struct FitSpec {
  Model model;
  std::vector<PopulationFreedom> free;
  std::optional<Range> phi_min;
};

// The free parameters in the optimizer's order (ProCell's): the proportions' stick-breaking
// fractions, then every free mean, then every free sd, then phi_min.
//  - proportions: the free ones share 1 - (sum of the fixed ones). With m free proportions there
//    are m - 1 fractions u in [0, 1]: the first takes u1 of what is left, the next u2 of what
//    is then left, ..., the last the remainder (ProCell's rel2abs_prob). A proportion outside its
//    own [min, max] makes the point infeasible (fitness = targets + distance to the bounds).
struct FreeParameter {
  enum class Kind { Fraction, Mean, Sd, PhiMin } kind = Kind::Mean;
  int population = -1;  // -1 for phi_min; for a fraction, the free population it splits off
  std::string name;     // "fast.mean", "fast.sd", "phi_min", "slow.proportion"
  Range bounds;
};
std::vector<FreeParameter> free_parameters(const FitSpec& spec);

// The model at point x, and how far its proportions lie outside their bounds (0: feasible).
struct Decoded {
  Model model;
  double violation = 0;
};
Decoded decode(const FitSpec& spec, std::span<const double> x);
// The point that decodes to `model`'s values (clamped to the bounds): best.toml -> a start.
std::vector<double> encode(const FitSpec& spec, const Model& model);

// Makes spec.model a valid model: the free proportions share what the fixed ones leave equally,
// and every free value is clamped into its bounds.
void settle_placeholders(FitSpec& spec);

// Checks a fit specification (bounds ordered and finite, means > 0, proportions possible).
// UserError naming `source` and the field.
void validate(const FitSpec& spec, const std::string& source);

struct FitTarget {
  InitialHistogram histogram;
  double time = 0;  // hours
};

enum class Optimizer { FstPso, CmaEs };
std::string to_string(Optimizer optimizer);
Optimizer parse_optimizer(const std::string& text, const std::string& what);

struct FitIteration {
  int restart = 0;              // which independent optimization (FitOptions::restarts)
  int iteration = 0;            // 0: the initial swarm / first generation
  std::int64_t evaluations = 0;  // so far
  double best = 0;              // best fitness so far
  double mean = 0;              // mean fitness of this iteration's evaluations
  std::vector<double> best_x;
};

struct FitOptions {
  Optimizer optimizer = Optimizer::FstPso;
  int particles = 50;        // swarm size (FST-PSO) or population lambda (CMA-ES); ProCell's default is 50
  int iterations = 100;      // after the initial evaluation
  std::int64_t budget = 0;   // > 0: stop when this many evaluations are done (overrides iterations)
  int replicates = 1;        // simulations per evaluation, their binned histograms summed
  bool common_random_numbers = false;  // every evaluation uses the same seeds (docs/prolif.md)
  bool log_init = false;     // FST-PSO: initial positions log-uniform within positive bounds
  // Independent optimizations with seeds of their own; the best point of each is re-simulated
  // `restart_check` times with fresh seeds and the one with the lowest mean fitness is kept (a
  // swarm can settle in a local optimum; the noisy fitness it found is optimistic).
  int restarts = 1;
  int restart_check = 10;
  Binning binning;           // bins, low, high; phi_min comes from each evaluated model
  std::uint64_t seed = 1;
  RunOptions run;            // backend, device, threads, stop; run.seed and run.progress are ignored
  // Not null: the ranks of an MPI job share the work (docs/scale-out.md, "prolif across ranks").
  // Every rank calls fit() or bootstrap() with the same arguments; each iteration's evaluations are
  // split over the ranks and their fitness values exchanged, so every rank takes the same optimizer
  // steps and gets the result of one process, bitwise.
  const dist::Comm* comm = nullptr;
  std::function<void(const FitIteration&)> on_iteration;
};

struct FitResult {
  std::vector<FreeParameter> parameters;
  std::vector<double> best_x;
  Model best;
  double fitness = 0;                     // sum over targets of the normalized Hellinger distance
  std::vector<double> fitness_per_target;  // of the best point, as found during the fit
  std::vector<FitIteration> history;     // every restart's iterations, in order
  std::vector<double> restart_fitness;   // with restarts: each restart's best point re-simulated
  int restart_chosen = 0;
  std::int64_t evaluations = 0;          // over all restarts
  std::int64_t simulations = 0;
  double seconds = 0;
};

FitResult fit(const InitialHistogram& initial, const FitSpec& spec, std::span<const FitTarget> targets,
              const FitOptions& options);

// Confidence intervals of the fitted values by parametric bootstrap: `fits` synthetic data sets
// are drawn from the best model (per target one simulation at the target's time, then as many
// cells as the target has, sampled from the simulated histogram: the measurement's own sampling
// noise), and each is fitted again with the same options and a seed of its own. The spread of
// the refitted values holds the data's sampling noise, the simulation's noise and the optimizer's
// own variability; the interval is the central `level` of it (percentiles, numpy's
// interpolation). docs/prolif.md, "Uncertainty".
struct ParameterInterval {
  std::string name;
  double best = 0, low = 0, high = 0, mean = 0, sd = 0;
};
struct Uncertainty {
  int fits = 0;
  double level = 0.95;
  std::vector<ParameterInterval> parameters;   // the free parameters (optimizer coordinates)
  std::vector<ParameterInterval> proportions;  // every population's proportion, derived
  std::vector<std::vector<double>> points;     // each refit's best point
  std::vector<double> fitness;                 // each refit's fitness on its synthetic data
  double seconds = 0;
};
Uncertainty bootstrap(const InitialHistogram& initial, const FitSpec& spec, std::span<const FitTarget> targets,
                      const FitOptions& options, const FitResult& best, int fits, double level = 0.95,
                      const std::function<void(int done)>& on_fit = nullptr);

// The fitness of models: each model simulated `replicates` times (seeds[m * replicates + r]),
// per target the binned counts summed over replicates and compared with the target by the
// normalized Hellinger distance (1 when either side has no cell in the bins); the sum over
// targets. All models in one simulate_batch; with `comm` (not null, a collective call) the models
// are split over the ranks and every rank gets every value. Used by fit() and for reports.
class Objective {
 public:
  Objective(const InitialHistogram& initial, std::span<const FitTarget> targets, const Binning& binning,
            int replicates, const RunOptions& run, const dist::Comm* comm = nullptr);
  // Output times of every simulation: the distinct target times, ascending.
  const std::vector<double>& times() const { return times_; }
  struct Value {
    double fitness = 0;
    std::vector<double> per_target;
  };
  std::vector<Value> evaluate(std::span<const Model> models, std::span<const std::uint64_t> seeds);
  // Binned simulated counts of one result at target `t` (for plots).
  std::vector<double> binned(const Result& result, std::size_t target, double phi_min) const;
  std::vector<double> binned_target(std::size_t target, double phi_min) const;
  std::int64_t simulations() const { return simulations_; }

 private:
  const InitialHistogram& initial_;
  std::vector<FitTarget> targets_;
  Binning binning_;
  int replicates_;
  RunOptions run_;
  const dist::Comm* comm_ = nullptr;
  std::vector<double> times_;
  std::vector<std::size_t> time_index_;       // per target, into times_
  std::vector<int> h0_bin_;                   // [row * 64 + k]: bin of values[row] / 2^k (-1 below, -2 above)
  std::vector<std::vector<int>> target_bin_;  // per target, per row
  std::int64_t simulations_ = 0;
};

}  // namespace simkit::prolif
