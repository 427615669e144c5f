// prolif entry points: validate, prepare each run on the host (population split of every H(0)
// row, per-row generation limits, segments of proliferating cells), then hand the lineage walks
// to the chosen backend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/collective.hpp"
#include "core/distributions.hpp"
#include "simkit/core/dist.hpp"
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

// Restricts a prepared run to one part: the segments cut to the part's share of the proliferating
// cells (in segment order, which is cell-id order), and the host-counted cells left to part 0.
void keep_part(PreparedRun& run, Result& result, const Part& part) {
  const dist::Range range =
      dist::share(run.proliferating_cells, static_cast<int>(part.count), static_cast<int>(part.index));
  std::vector<Segment> kept;
  std::uint64_t at = 0;  // proliferating cells before the segment
  for (const Segment& s : run.segments) {
    const std::uint64_t begin = std::max(at, range.begin), end = std::min(at + s.count, range.end);
    if (begin < end) {
      kept.push_back({s.row, s.population, static_cast<std::uint32_t>(s.first_cell + (begin - at)),
                      static_cast<std::uint32_t>(end - begin)});
    }
    at += s.count;
  }
  run.segments = std::move(kept);
  run.proliferating_cells = range.size();
  if (part.index != 0) std::fill(result.counts.begin(), result.counts.end(), std::uint64_t{0});
}

}  // namespace

PreparedRun prepare_run(const InitialHistogram& initial, const Model& model, std::uint64_t seed, const Part& part,
                        Result& result) {
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
  if (part.count > 1) keep_part(run, result, part);
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
                                   std::span<const std::uint64_t> seeds, const RunOptions& options, Part part) {
  if (part.count == 0 || part.count > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
      part.index >= part.count) {
    throw UserError("part", fmt::format(" {} of {}: expected a part index below a count of 1 to {}", part.index,
                                        part.count, std::numeric_limits<int>::max()));
  }
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
    runs.push_back(detail::prepare_run(initial, models[r], seeds[r], part, results[r]));
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

std::vector<Result> simulate_batch(const InitialHistogram& initial, std::span<const Model> models,
                                   std::span<const std::uint64_t> seeds, const RunOptions& options) {
  return simulate_batch(initial, models, seeds, options, Part{});
}

void merge(Result& into, const Result& part) {
  if (into.times != part.times || into.rows != part.rows || into.generations != part.generations ||
      into.populations != part.populations || into.counts.size() != part.counts.size() || into.seed != part.seed) {
    throw UserError("result", fmt::format(": cannot merge parts of different runs ({}x{}x{}x{} counts, seed {}, and "
                                          "{}x{}x{}x{}, seed {})",
                                          into.times, into.rows, into.generations, into.populations, into.seed,
                                          part.times, part.rows, part.generations, part.populations, part.seed));
  }
  for (std::size_t i = 0; i < into.counts.size(); ++i) into.counts[i] += part.counts[i];
  into.divisions += part.divisions;
}

namespace {

// A result as bytes (shape, divisions, seed, then the counts) and back, for the gathers.
void append_bytes(std::vector<std::byte>& out, const Result& r) {
  const std::uint64_t head[6] = {r.times, r.rows, r.generations, r.populations, r.divisions, r.seed};
  const auto* h = reinterpret_cast<const std::byte*>(head);
  out.insert(out.end(), h, h + sizeof head);
  const auto* c = reinterpret_cast<const std::byte*>(r.counts.data());
  out.insert(out.end(), c, c + r.counts.size() * sizeof(std::uint64_t));
}

Result read_bytes(const std::byte*& at, const std::byte* end) {
  std::uint64_t head[6];
  if (static_cast<std::size_t>(end - at) < sizeof head) throw InternalError("prolif: a gathered result is truncated");
  std::memcpy(head, at, sizeof head);
  at += sizeof head;
  Result r;
  r.times = head[0];
  r.rows = head[1];
  r.generations = head[2];
  r.populations = head[3];
  r.divisions = head[4];
  r.seed = head[5];
  const std::size_t n = r.times * r.rows * r.generations * r.populations;
  if (static_cast<std::size_t>(end - at) / sizeof(std::uint64_t) < n)
    throw InternalError("prolif: a gathered result is truncated");
  r.counts.resize(n);
  std::memcpy(r.counts.data(), at, n * sizeof(std::uint64_t));
  at += n * sizeof(std::uint64_t);
  return r;
}

}  // namespace

Result simulate_distributed(const InitialHistogram& initial, const Model& model, const RunOptions& options,
                            const dist::Comm& comm) {
  const std::uint64_t seed = options.seed;
  const Part part{static_cast<std::uint64_t>(comm.rank()), static_cast<std::uint64_t>(comm.size())};
  Result result = dist::collectively(comm, [&] {
    return simulate_batch(initial, std::span<const Model>(&model, 1), std::span<const std::uint64_t>(&seed, 1), options,
                          part)
        .front();
  });
  if (!comm.distributed()) return result;
  // Counts and divisions in one sum (integers: exact, whatever the order of the ranks).
  std::vector<std::uint64_t> sums(result.counts);
  sums.push_back(result.divisions);
  comm.reduce_sum(sums);
  if (comm.root()) {
    std::copy(sums.begin(), sums.end() - 1, result.counts.begin());
    result.divisions = sums.back();
  }
  return result;
}

std::vector<Result> simulate_batch_distributed(const InitialHistogram& initial, std::span<const Model> models,
                                               std::span<const std::uint64_t> seeds, const RunOptions& options,
                                               const dist::Comm& comm, bool everywhere) {
  if (!comm.distributed()) return simulate_batch(initial, models, seeds, options);
  if (models.size() != seeds.size()) throw InternalError("simulate_batch: models and seeds differ in length");
  const dist::Range mine = dist::share(models.size(), comm.size(), comm.rank());
  const std::vector<Result> local = dist::collectively(comm, [&] {
    // Every rank validates the whole batch (a bad model on another rank's share is an error here too).
    for (const Model& m : models) validate(m, "model");
    if (mine.size() == 0) return std::vector<Result>{};
    return simulate_batch(initial, models.subspan(mine.begin, mine.size()), seeds.subspan(mine.begin, mine.size()),
                          options);
  });
  std::vector<std::byte> bytes;
  for (const Result& r : local) append_bytes(bytes, r);
  const std::vector<std::byte> all = everywhere ? comm.allgather(bytes) : comm.gather(bytes);
  std::vector<Result> out;
  if (!everywhere && !comm.root()) return out;
  out.reserve(models.size());
  const std::byte* at = all.data();
  const std::byte* end = all.data() + all.size();
  while (at != end) out.push_back(read_bytes(at, end));
  if (out.size() != models.size()) throw InternalError("prolif: gathered results differ in number from the runs");
  return out;
}

Result simulate(const InitialHistogram& initial, const Model& model, const RunOptions& options) {
  const std::uint64_t seed = options.seed;
  return simulate_batch(initial, std::span<const Model>(&model, 1), std::span<const std::uint64_t>(&seed, 1), options)
      .front();
}

}  // namespace simkit::prolif
