#pragma once
// prolif: stochastic simulation of cell proliferation (the ProCell model of Nobile et al. 2019).
// Data flow: histogram + model files -> (io) InitialHistogram, Model -> simulate() -> Result
// -> analysis (binning, Hellinger, replicate bands) -> writers.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "simkit/core/backend.hpp"

namespace simkit::dist {
class Comm;
}

namespace simkit::prolif {

enum class Distribution { TruncatedNormal, Gamma, LogNormal };
enum class StartMode { Sync, ProcellAsync };

struct Population {
  std::string name;
  double proportion = 0;
  bool quiescent = false;  // never divides; counted at its initial fluorescence at every time
  double mean = 0;         // hours (> 0), proliferating populations only
  double sd = 0;           // hours (>= 0; 0: every division takes exactly `mean`)
  Distribution distribution = Distribution::TruncatedNormal;
};

struct Model {
  std::vector<Population> populations;  // at most one quiescent; proportions sum to 1 (1e-6)
  double phi_min = 0;                   // fluorescence threshold: daughters with phi/2 <= phi_min are discarded
  std::vector<double> times;            // output times, ascending, >= 0; t_max = times.back()
  StartMode start = StartMode::Sync;
  double t_max() const { return times.empty() ? 0.0 : times.back(); }
};

// H(0): rows (fluorescence, count), zero-count rows already removed, in file order.
struct InitialHistogram {
  std::vector<double> values;
  std::vector<std::uint64_t> counts;
  std::string source;  // file name, for messages
  std::uint64_t total_cells() const;
};

// Counts of existing cells per (output time, H(0) row, generation, population): a cell of
// generation k from row i has fluorescence values[i] / 2^k. Dense, index ((t*rows + i)*generations + k)*populations +
// p.
struct Result {
  std::size_t times = 0, rows = 0, generations = 0, populations = 0;
  std::vector<std::uint64_t> counts;
  std::uint64_t divisions = 0;  // division events up to t_max (including those whose daughters were discarded)
  std::uint64_t seed = 0;

  std::uint64_t& at(std::size_t t, std::size_t i, std::size_t k, std::size_t p) {
    return counts[((t * rows + i) * generations + k) * populations + p];
  }
  std::uint64_t at(std::size_t t, std::size_t i, std::size_t k, std::size_t p) const {
    return counts[((t * rows + i) * generations + k) * populations + p];
  }
  std::uint64_t total(std::size_t t) const;
  std::vector<std::uint64_t> by_generation(std::size_t t) const;
  std::vector<std::uint64_t> by_population(std::size_t t) const;
};

// Checks a model against the rules above; a UserError names `source` and the field.
void validate(const Model& model, const std::string& source);

// One simulation. RunOptions::seed keys every random draw; backend reference/cpu give identical
// results whatever the thread count, cuda the same draws (see docs/reproducibility.md).
Result simulate(const InitialHistogram& initial, const Model& model, const RunOptions& options);

// Many runs in one call (replicates, calibration): run r uses models[r] and seeds[r].
std::vector<Result> simulate_batch(const InitialHistogram& initial, std::span<const Model> models,
                                   std::span<const std::uint64_t> seeds, const RunOptions& options);

// One part of a run (docs/scale-out.md, "prolif across ranks"): part `index` of `count` walks the
// lineages of the proliferating initial cells in its contiguous share of them (dist::share over
// the run's proliferating cells, in cell-id order: row after row, population after population),
// and part 0 alone counts the cells that never divide (quiescent ones; every cell when t_max = 0).
// Random draws are keyed by initial cell, so the parts of a run merged (merge) equal the whole run
// exactly, counts and divisions, on every backend and for any count.
struct Part {
  std::uint64_t index = 0, count = 1;
};

// simulate_batch restricted to one part of every run (Part{0, 1}: the whole runs). A UserError
// (field "part") when index >= count or count is 0 or above 2^31 - 1.
std::vector<Result> simulate_batch(const InitialHistogram& initial, std::span<const Model> models,
                                   std::span<const std::uint64_t> seeds, const RunOptions& options, Part part);

// Adds the counts and divisions of `part` into `into`: two parts of one run (same shape, same seed;
// a UserError, field "result", otherwise).
void merge(Result& into, const Result& part);

// One run split over the ranks of `comm`: rank r simulates Part{r, size}, and the counts and
// divisions are summed onto the root. Only the root's result is the whole run (bitwise the result
// of simulate()); every other rank's holds its own part. A collective call: every rank passes the
// same arguments. A UserError on any rank is thrown on every rank (the lowest failing rank's).
Result simulate_distributed(const InitialHistogram& initial, const Model& model, const RunOptions& options,
                            const dist::Comm& comm);

// The runs of a batch split over the ranks of `comm`: rank r simulates runs dist::share(runs, size,
// r) (whole runs), and the results are gathered in run order, bitwise those of simulate_batch(), on
// the root (`everywhere` false: the other ranks get an empty vector) or on every rank. Collective,
// with the same arguments on every rank; errors as for simulate_distributed.
std::vector<Result> simulate_batch_distributed(const InitialHistogram& initial, std::span<const Model> models,
                                               std::span<const std::uint64_t> seeds, const RunOptions& options,
                                               const dist::Comm& comm, bool everywhere = false);

// Largest number of generations simkit follows (heap-indexed lineages in 64 bits).
inline constexpr int kMaxGenerations = 62;

}  // namespace simkit::prolif
