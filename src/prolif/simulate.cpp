// prolif entry points: validate, prepare each run on the host (population split of every H(0)
// row, per-row generation limits, segments of proliferating cells), then hand the lineage walks
// to the chosen backend.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/distributions.hpp"
#include "simkit/core/error.hpp"
#include "simkit/core/memory.hpp"
#include "core/dispatch.hpp"
#include "prolif/kernels.hpp"

namespace simkit::prolif {

namespace detail {

namespace {

PopulationParams make_population(const Population& p) {
  PopulationParams out;
  if (p.quiescent) {
    out.kind = Kind::Quiescent;
  } else if (p.sd == 0.0) {
    out.kind = Kind::Fixed;
    out.fixed = p.mean;
  } else {
    switch (p.distribution) {
      case Distribution::TruncatedNormal:
        out.kind = Kind::Normal;
        out.normal = make_truncated_normal(p.mean, p.sd, 0.0);
        break;
      case Distribution::Gamma:
        out.kind = Kind::Gamma;
        out.gamma = make_gamma(p.mean, p.sd);
        break;
      case Distribution::LogNormal:
        out.kind = Kind::LogNormal;
        out.lognormal = make_lognormal(p.mean, p.sd);
        break;
    }
  }
  return out;
}

// Largest generation k whose cells from a row of fluorescence `phi` exist: k = 0 always, and
// k >= 1 while phi / 2^k > phi_min (halving is exact in binary floating point).
int generation_limit(double phi, double phi_min) {
  int k = 0;
  double v = phi;
  while (k < 1100 && v / 2.0 > phi_min && v / 2.0 > 0.0) {
    v /= 2.0;
    ++k;
  }
  return k;
}

}  // namespace

PreparedRun prepare_run(const InitialHistogram& initial, const Model& model, std::uint64_t seed, Result& result) {
  PreparedRun run;
  if (model.times.size() > static_cast<std::size_t>(kMaxTimes)) {
    throw UserError("times", fmt::format(": at most {} output times per run, got {}", kMaxTimes, model.times.size()));
  }
  run.walk.seed = seed;
  run.walk.num_times = static_cast<int>(model.times.size());
  for (std::size_t j = 0; j < model.times.size(); ++j) run.walk.times[j] = model.times[j];
  run.walk.t_max = model.t_max();
  run.walk.async_start = model.start == StartMode::ProcellAsync;

  for (const Population& p : model.populations) run.populations.push_back(make_population(p));

  const std::size_t rows = initial.values.size();
  int generations = 1;
  run.max_generation.resize(rows);
  run.depth_limited.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    const int limit = generation_limit(initial.values[i], model.phi_min);
    const int capped = std::min(limit, kMaxGenerationsDevice);
    run.max_generation[i] = static_cast<std::uint8_t>(capped);
    run.depth_limited[i] = limit > capped ? 1 : 0;
    generations = std::max(generations, capped + 1);
  }

  result = Result{};
  result.times = model.times.size();
  result.rows = rows;
  result.generations = static_cast<std::size_t>(generations);
  result.populations = model.populations.size();
  result.counts.assign(result.times * result.rows * result.generations * result.populations, 0);
  result.seed = seed;

  // Initial cell ids: row after row, and within a row population after population.
  std::vector<double> proportions;
  for (const Population& p : model.populations) proportions.push_back(p.proportion);
  std::uint64_t next_cell = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    RngStream rng = lineage_stream(seed, static_cast<std::uint32_t>(i), 0, kRowSplit);
    const std::vector<std::uint64_t> split = sample_multinomial(initial.counts[i], proportions, rng);
    for (std::size_t p = 0; p < split.size(); ++p) {
      if (split[p] == 0) continue;
      // Quiescent cells never divide; with t_max = 0 no cell can (division times are > 0 and
      // every clock starts at or after 0): both are counted here, with no lineage to walk.
      if (model.populations[p].quiescent || model.t_max() <= 0.0) {
        for (std::size_t j = 0; j < result.times; ++j) result.at(j, i, 0, p) += split[p];
      } else {
        run.segments.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(p),
                                static_cast<std::uint32_t>(next_cell), static_cast<std::uint32_t>(split[p])});
        run.proliferating_cells += split[p];
      }
      next_cell += split[p];
    }
  }
  return run;
}

std::vector<WalkStats> run_backend(Backend backend, const std::vector<PreparedRun>& runs, std::vector<Result>& results,
                                   const RunOptions& options, const CellProgress& progress) {
  return SIMKIT_DISPATCH(backend, run(runs, results, options, progress));
}

void check_stats(const WalkStats& stats) {
  if (stats.too_deep > 0) {
    throw UserError(
        fmt::format("a lineage went past {} generations ({} divisions): simkit follows at most {} generations; raise "
                    "`phi_min` or lower `t_max`",
                    kMaxGenerationsDevice, stats.too_deep, kMaxGenerationsDevice));
  }
}

// Every run of a batch holds its counts (8 bytes for each time x row x generation x population) and
// its initial-cell segments; the cuda backend stages all counts once more on the host and holds
// them on the device. Estimated from the first run, before the others are prepared.
void check_batch_memory(const PreparedRun& first, const Result& result, std::size_t runs, Backend backend, int device) {
  const double counts = static_cast<double>(result.counts.size()) * 8.0;
  const double per_run = counts * (backend == Backend::Cuda ? 2.0 : 1.0) +
                         static_cast<double>(first.segments.size() * sizeof(Segment)) +
                         static_cast<double>(first.max_generation.size() * 2) + sizeof(Result) + sizeof(PreparedRun);
  const double total = per_run * static_cast<double>(runs);
  const std::string detail = fmt::format(" {}: {} runs of {} counts each", runs, runs, result.counts.size());
  require_host_memory(total, "replicates", detail, "run fewer replicates at once, or fewer output times");
  if (backend == Backend::Cuda) {
    const double device_bytes = counts * static_cast<double>(runs) + 64.0 * 1024 * 1024;
    const std::size_t free = device_memory(device).free;
    if (device_bytes > static_cast<double>(free)) {
      throw DeviceMemoryError("replicates", fmt::format("{}: needs {} of GPU memory and device {} has {} free", detail,
                                                        gib_text(device_bytes), device,
                                                        gib_text(static_cast<double>(free))));
    }
  }
}

}  // namespace detail

std::vector<Result> simulate_batch(const InitialHistogram& initial, std::span<const Model> models,
                                   std::span<const std::uint64_t> seeds, const RunOptions& options) {
  if (models.size() != seeds.size()) throw InternalError("simulate_batch: models and seeds differ in length");
  if (initial.values.size() != initial.counts.size()) throw InternalError("simulate_batch: malformed histogram");
  const std::uint64_t cells = initial.total_cells();
  if (cells >= (std::uint64_t{1} << 32)) {
    throw UserError(
        fmt::format("{}: {} initial cells; simkit handles fewer than 2^32 (4.29e9) per run", initial.source, cells));
  }
  if (initial.values.size() >= (std::size_t{1} << 32)) throw UserError(initial.source + ": too many rows");
  for (const Model& m : models) validate(m, "model");

  const Backend backend = resolve_backend(options.backend, options.device);
  std::vector<Result> results(models.size());
  std::vector<detail::PreparedRun> runs;
  runs.reserve(models.size());
  for (std::size_t r = 0; r < models.size(); ++r) {
    throw_if_stopped(options);  // preparing 10^5 replicates takes seconds
    runs.push_back(detail::prepare_run(initial, models[r], seeds[r], results[r]));
    if (r == 0) detail::check_batch_memory(runs[0], results[0], models.size(), backend, options.device);
  }

  // Progress in initial cells walked, over all runs.
  double total_cells = 0, done_cells = 0;
  for (const auto& run : runs) total_cells += static_cast<double>(run.proliferating_cells);
  const detail::CellProgress progress = [&](std::uint64_t walked) {
    done_cells += static_cast<double>(walked);
    if (options.progress) options.progress(done_cells, total_cells);
  };
  const std::vector<detail::WalkStats> stats = detail::run_backend(backend, runs, results, options, progress);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    detail::check_stats(stats[r]);
    results[r].divisions = stats[r].divisions;
  }
  return results;
}

Result simulate(const InitialHistogram& initial, const Model& model, const RunOptions& options) {
  const std::uint64_t seed = options.seed;
  return simulate_batch(initial, std::span<const Model>(&model, 1), std::span<const std::uint64_t>(&seed, 1), options)
      .front();
}

}  // namespace simkit::prolif
