#pragma once
// What `simkit prolif fit` writes: the best model (TOML and ProCell .prc), the optimizer's
// history, result.json, and plots of the fit and of the convergence. The best model is checked by
// re-simulating it with fresh seeds (the fitness found by a noisy optimizer is optimistic).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simkit/prolif/fit.hpp"
#include "simkit/prolif/prc.hpp"

namespace simkit::prolif {

// One compared time of the check: a fit target or a validation histogram.
struct FitCheck {
  double time = 0;
  bool validation = false;
  std::string source;                      // the histogram's file
  std::vector<double> target;              // binned target counts
  std::vector<std::vector<double>> runs;   // binned simulated counts, per check run
  std::vector<double> hellinger;           // normalized Hellinger distance of each run
  // The check runs' binned counts added up, bin by bin.
  std::vector<double> pooled() const;
};

struct FitReport {
  InitialHistogram initial;
  FitSpec spec;
  std::vector<FitTarget> targets, validations;
  FitOptions options;
  FitResult result;
  std::vector<FitCheck> checks;  // targets first, then validations
  int check_runs = 0;
  std::string backend, device;
  double wall_seconds = 0;
  double check_seconds = 0;
  double device_init_seconds = 0;  // the CUDA context, created before the fit and not counted in it
  std::optional<Uncertainty> uncertainty;  // --bootstrap
  ProcellProject project;  // file names and settings for best.prc (its spec is replaced by the fit's)
};

// How well the best model explains the data as a likelihood, for comparing models with different
// numbers of free parameters: the target's cells are taken as independent draws from the
// model's fluorescence distribution, binned, so the binned counts are multinomial with the
// model's bin fractions p_b (estimated from the check runs' pooled counts; an empty bin gets half
// a cell of the pool, so that no measured bin has p = 0). log L = sum over targets and bins of
// t_b log p_b; AIC = 2k - 2 log L, BIC = k ln n - 2 log L with k free parameters and n the
// targets' cells in the bins. docs/prolif.md says why and when to distrust it.
struct ModelScore {
  int parameters = 0;
  double cells = 0;
  double log_likelihood = 0, aic = 0, bic = 0;
};
ModelScore score(const FitReport& report);

// Simulates the best model `runs` times (seeds derived from options.seed, none used by the fit)
// and fills report.checks.
void check_fit(FitReport& report, int runs);

// The best model as a model TOML that `simkit prolif simulate --config` reads.
std::string model_toml(const Model& model);

nlohmann::json fit_result_json(const FitReport& report);

// best.toml, best.prc, history.csv, result.json, fit.svg and convergence.svg into `dir`, all or
// nothing (staged). Returns the result.json document.
nlohmann::json write_fit_outputs(const std::filesystem::path& dir, const FitReport& report);

}  // namespace simkit::prolif
