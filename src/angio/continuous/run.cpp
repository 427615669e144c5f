// The continuous model's run driver: everything between a validated Problem and the files.
#include "simkit/angio/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>

#include "simkit/core/build_info.hpp"
#include "simkit/core/error.hpp"
#include "core/output.hpp"
#include "core/report.hpp"

namespace simkit::angio {

namespace {

const char* field_name(int q) { return q == 0 ? "n" : (q == 1 ? "f" : "c"); }

template <class T>
Fields<T> convert(const Fields<double>& in) {
  Fields<T> out;
  out.n.assign(in.n.begin(), in.n.end());
  out.f.assign(in.f.begin(), in.f.end());
  out.c.assign(in.c.begin(), in.c.end());
  return out;
}

template <class T>
Fields<T>& checkpoint_fields(Checkpoint& c) {
  if constexpr (std::is_same_v<T, float>) {
    return c.fp32;
  } else {
    return c.fp64;
  }
}

std::string snapshot_name(std::int64_t step, std::int64_t last) {
  const int width = std::max<int>(6, static_cast<int>(std::to_string(last).size()));
  return fmt::format("snapshots/angio_{:0{}d}.vti", step, width);
}

// Snapshots already in out/snapshots with step <= `upto` (a restart into the same directory
// keeps them in the collection).
std::vector<SnapshotEntry> existing_snapshots(const std::filesystem::path& out, std::int64_t upto, double dt) {
  std::vector<std::pair<std::int64_t, SnapshotEntry>> found;
  const std::filesystem::path dir = out / "snapshots";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  static const std::regex name(R"(angio_(\d+)\.vti)");
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    std::int64_t step = 0;
    const std::string digits = match[1].str();
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (err != std::errc() || end != digits.data() + digits.size()) continue;  // not one of ours
    if (step <= upto) found.push_back({step, SnapshotEntry{static_cast<double>(step) * dt, "snapshots/" + file}});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SnapshotEntry> entries;
  for (auto& f : found) entries.push_back(f.second);
  return entries;
}

template <class T>
RunReport run_typed(RunSettings& settings, Backend backend, const RunOptions& options) {
  Stopwatch wall;
  const Problem& problem = settings.problem;
  const Grid& g = problem.grid;
  RunReport report;
  report.backend = backend;

  Fields<T> initial;
  std::int64_t start = 0;
  if (settings.restart) {
    initial = std::move(checkpoint_fields<T>(*settings.restart));
    start = settings.restart->step;
  } else if (settings.initial) {
    initial = convert<T>(settings.initial->fields);
    settings.initial.reset();
  } else {
    initial = initial_fields<T>(g, problem.initial);
  }
  report.start_step = start;
  report.stability = check_stability(problem, initial);
  if (settings.auto_dt) {
    const double k = 0.9 * report.stability.largest_stable_k;
    if (!std::isfinite(k) || !(k > 0)) {
      // dt was not given: the grid (or the state) is what leaves no step, so name h.
      throw UserError("h", fmt::format(" {:g}: no automatic step: the largest stable k on this grid is {} ({}); give a "
                                       "larger `h`, or `dt` (and `force`)",
                                       g.h, report.stability.largest_stable_k, report.stability.binding_limit));
    }
    settings.problem.dt = round_step_down(k);
    validate(settings.problem);
  }
  if (settings.t_max) {
    const double steps = std::ceil(*settings.t_max / problem.dt - 1e-9);
    if (!std::isfinite(*settings.t_max) || !(steps < 4.0e18)) {
      throw UserError("t_max", fmt::format(" {}: needs {} steps of k = {:.6g}; give a finite, smaller end time",
                                  *settings.t_max, steps, problem.dt));
    }
    settings.steps = std::max<std::int64_t>(1, static_cast<std::int64_t>(steps));
  }
  if (settings.restart && start >= settings.steps) {
    throw UserError(settings.t_max ? "t_max" : "steps",
                    fmt::format(" {}: the checkpoint {} is already at step {} (t = {:.6g}); nothing to do",
                                settings.t_max ? fmt::format("{}", *settings.t_max) : std::to_string(settings.steps),
                                settings.restart_source, start, static_cast<double>(start) * problem.dt));
  }
  // A restart continues a run that was accepted (or forced) from its own initial state; what does
  // not depend on the state, the diffusion limit of the grid, must still hold unless the original
  // run or this one was forced (a checkpoint's header is not checksummed).
  const auto forced_before = [&] {
    const auto& run = settings.restart->run;
    return run.is_object() && run.contains("force") && run["force"].is_boolean() && run["force"].get<bool>();
  };
  if (settings.restart && !settings.force && !forced_before() && !(problem.dt <= report.stability.diffusion_limit)) {
    throw input_error(settings.restart_source, 0, "dt",
                      fmt::format("{:.6g} exceeds the diffusion limit {:.6g} of its grid, and the run that wrote it "
                                  "was not forced (give `force` to continue anyway)",
                                  problem.dt, report.stability.diffusion_limit));
  }
  enforce_stability(problem, report.stability, settings.force || settings.restart.has_value());

  // Everything goes to a staging directory first (core StagedOutput): a run that fails, or is
  // stopped, leaves settings.out as it was. What a restart keeps of the earlier run is read from
  // settings.out itself.
  StagedOutput staged(settings.out);
  const std::filesystem::path& dir = staged.dir();
  if (settings.output_every >= 0) ensure_output_directory(dir / "snapshots");
  const std::filesystem::path series_path = dir / "series.csv";
  const std::filesystem::path pvd_path = dir / "angio.pvd";
  const std::filesystem::path checkpoint_path = dir / "checkpoint.ckpt";
  // Where the earlier part of a restarted run is: settings.out, or, for a restart from the
  // checkpoint of a run that died (killed, power cut) before moving its outputs into place, that
  // run's staging directory inside settings.out. Its series rows and snapshots are taken from
  // there (the snapshots moved into this run's staging), and the directory goes at the commit.
  std::filesystem::path earlier = settings.out;
  bool earlier_is_staging = false;
  if (settings.restart) {
    std::error_code ec;
    const std::filesystem::path from = std::filesystem::weakly_canonical(settings.restart_source, ec).parent_path();
    const std::filesystem::path out_real = std::filesystem::weakly_canonical(settings.out, ec);
    if (!ec && from.parent_path() == out_real && from.filename().string().rfind(".simkit-staging-", 0) == 0 &&
        from != std::filesystem::weakly_canonical(dir, ec)) {
      earlier = from;
      earlier_is_staging = true;
    }
  }
  const std::filesystem::path target_series = earlier / "series.csv";

  std::vector<SeriesRow> series;
  std::vector<SnapshotEntry> snapshots;
  if (start > 0) {
    std::error_code ec;
    if (settings.series_every > 0 && std::filesystem::exists(target_series, ec)) {
      // Only the rows an uninterrupted run has: step 0 and multiples of series_every (the
      // interrupted run also wrote one at its own last step).
      for (const SeriesRow& row : read_series_csv(target_series))
        if (row.step <= start && (row.step == 0 || row.step % settings.series_every == 0)) series.push_back(row);
    }
    for (const SnapshotEntry& e : existing_snapshots(earlier, start, problem.dt)) {
      const auto step_of = static_cast<std::int64_t>(std::llround(e.t / problem.dt));
      if (step_of == 0 || (settings.output_every > 0 && step_of % settings.output_every == 0)) {
        snapshots.push_back(e);
        if (earlier_is_staging) {
          ensure_output_directory(dir / "snapshots");
          std::filesystem::rename(earlier / e.file, dir / e.file, ec);
          if (ec) throw UserError("out", fmt::format(" {}: cannot take over {}: {}", settings.out.string(),
                                                     (earlier / e.file).string(), ec.message()));
        }
      }
    }
  }

  auto solver = make_solver<T>(problem, initial, backend, options);
  initial = Fields<T>{};  // the solver has its own copy; check_capacity counts on this
  report.device = solver->device();
  Fields<T> host;  // read-back buffer
  bool host_current = false;
  std::int64_t step = start;
  auto time_of = [&](std::int64_t s) { return static_cast<double>(s) * problem.dt; };
  auto fetch = [&]() -> const Fields<T>& {
    if (!host_current) solver->read(host);
    host_current = true;
    return host;
  };
  auto snapshot = [&]() {
    const std::string name = snapshot_name(step, settings.steps);
    write_vti(dir / name, g, fetch());
    snapshots.erase(
        std::remove_if(snapshots.begin(), snapshots.end(), [&](const SnapshotEntry& e) { return e.file == name; }),
        snapshots.end());
    snapshots.push_back({time_of(step), name});
    write_pvd(pvd_path, snapshots);
  };
  auto add_series = [&](const Reductions& r) {
    series.push_back({step, time_of(step), r});
    // Under its limit the flux form keeps n >= 0 exactly; the limit is checked on the initial
    // fields, and steepening gradients can lower it during the run: stop and say so.
    if (problem.form == Form::Flux && r.min[0] < 0 && !settings.force) {
      write_series_csv(series_path, series);
      throw UserError("dt", fmt::format(
          " {:.6g}: the flux form made n negative (min n = {:.3g}) at step {} (t = {:.6g}): its step limit, "
          "{:.6g} on the initial fields, fell below k as the gradients steepened; use a smaller `dt`, or `force`",
          problem.dt, r.min[0], step, time_of(step), report.stability.flux_limit));
    }
    for (int q = 0; q < 3; ++q) {
      if (!std::isfinite(r.integral[q]) || !std::isfinite(r.min[q]) || !std::isfinite(r.max[q])) {
        if (settings.series_every > 0) write_series_csv(series_path, series);
        throw UserError("dt", fmt::format(
            " {:.6g}: the run became unstable: {} is no longer finite at step {} (t = {:.6g}); the stability "
            "check allowed k <= {:.6g} ({})",
            problem.dt, field_name(q), step, time_of(step), report.stability.largest_stable_k,
            report.stability.binding_limit));
      }
    }
  };

  if (start == 0) {
    if (settings.series_every > 0) add_series(solver->reduce());
    snapshot();
  }
  auto next_multiple = [](std::int64_t s, std::int64_t every) {
    return every > 0 ? (s / every + 1) * every : std::numeric_limits<std::int64_t>::max();
  };
  // Chunks of at most ~1 s of work between progress updates, estimated from the rate so far.
  std::int64_t chunk_cap = 16;
  while (step < settings.steps) {
    throw_if_stopped(options);  // SIGINT, SIGTERM: at most ~1 s of work after the request
    std::int64_t stop = settings.steps;
    stop = std::min(stop, next_multiple(step, settings.series_every));
    stop = std::min(stop, next_multiple(step, settings.output_every));
    stop = std::min(stop, next_multiple(step, settings.checkpoint_every));
    stop = std::min(stop, step + chunk_cap);
    const bool series_row = settings.series_every > 0 && (stop % settings.series_every == 0 || stop == settings.steps);
    Stopwatch compute;
    const Reductions r = solver->advance(stop - step, series_row);
    const double seconds = compute.seconds();
    report.compute_seconds += seconds;
    const std::int64_t done = stop - step;
    step = stop;
    host_current = false;
    if (seconds > 0)
      chunk_cap = std::clamp<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(done) / seconds), 1, 1 << 20);
    if (series_row) add_series(r);
    if ((settings.output_every > 0 && step % settings.output_every == 0) || step == settings.steps) snapshot();
    if (settings.checkpoint_every > 0 && (step % settings.checkpoint_every == 0 || step == settings.steps)) {
      // series.csv first: a crash between the two then leaves the series ahead of the checkpoint,
      // never behind it (a restart keeps only rows up to its step).
      if (settings.series_every > 0) write_series_csv(series_path, series);
      write_checkpoint(checkpoint_path, problem, step, options.seed, fetch(),
                       nlohmann::json{{"series_every", settings.series_every},
                                      {"output_every", settings.output_every},
                                      {"checkpoint_every", settings.checkpoint_every},
                                      {"quicklook", settings.quicklook},
                                      {"force", settings.force}});
    }
    if (options.progress)
      options.progress(static_cast<double>(step - start), static_cast<double>(settings.steps - start));
  }
  report.end_step = step;
  report.dt = problem.dt;
  report.nodes = g.nodes();
  report.precision = problem.precision;
  report.form = problem.form;
  report.final_state = (!series.empty() && series.back().step == step) ? series.back().r : solver->reduce();

  if (settings.series_every > 0) write_series_csv(series_path, series);
  std::vector<std::filesystem::path> quicklook;
  if (settings.quicklook) quicklook = write_quicklook(dir, g, fetch());
  report.wall_seconds = wall.seconds();
  write_file_atomic(dir / "run.json", report.to_json(settings).dump(2) + "\n");
  // Into place. Of what an earlier run left in settings.out, the snapshots this run's collection
  // lists (a restart keeps those up to its step) stay; the rest of the earlier run's own files go,
  // so that the directory holds one run, and --restart cannot pick up a stale checkpoint.
  std::vector<std::filesystem::path> kept;
  for (const SnapshotEntry& e : snapshots) kept.push_back(e.file);
  staged.commit([&](const std::filesystem::path& rel) {
    static const char* const kOwn[] = {"series.csv", "angio.pvd", "checkpoint.ckpt", "run.json",
                                       "slice.png",  "mip_n.png", "slice.svg"};
    for (const char* own : kOwn)
      if (rel == own) return true;
    return matches_output_pattern(rel, "snapshots", "angio_", ".vti") &&
           std::find(kept.begin(), kept.end(), rel) == kept.end();
  });
  if (earlier_is_staging) {
    std::error_code ec;
    std::filesystem::remove_all(earlier, ec);  // the dead run's leftovers, now taken over
  }
  if (settings.series_every > 0) report.files.push_back(settings.out / "series.csv");
  report.files.push_back(settings.out / "angio.pvd");
  if (settings.checkpoint_every > 0) report.files.push_back(settings.out / "checkpoint.ckpt");
  for (const auto& file : quicklook) report.files.push_back(settings.out / file.filename());
  report.files.push_back(settings.out / "run.json");
  return report;
}

}  // namespace

nlohmann::json RunReport::to_json(const RunSettings& settings) const {
  const Problem& p = settings.problem;
  const double node_count = static_cast<double>(p.grid.nodes());
  const double steps = static_cast<double>(end_step - start_step);
  const double rate = compute_seconds > 0 ? steps / compute_seconds : 0;
  nlohmann::json j;
  j["simkit_version"] = build_info().version;
  j["commit"] = build_info().commit;
  j["problem"] = problem_to_json(p);
  j["backend"] = std::string(to_string(backend));
  j["device"] = device;
  j["start_step"] = start_step;
  j["end_step"] = end_step;
  j["t_end"] = static_cast<double>(end_step) * p.dt;
  j["compute_seconds"] = compute_seconds;
  j["wall_seconds"] = wall_seconds;
  j["steps_per_second"] = rate;
  j["gnode_updates_per_second"] = rate * node_count / 1e9;
  j["effective_gb_per_second"] = rate * node_count * bytes_per_node_step(p.precision) / 1e9;
  j["stability"] = {
      {"diffusion_limit", stability.diffusion_limit}, {"reaction_limit", stability.reaction_limit},
      {"expanded_limit", stability.expanded_limit},   {"advection_limit", stability.advection_limit},
      {"flux_limit", stability.flux_limit},           {"largest_stable_k", stability.largest_stable_k},
      {"binding_limit", stability.binding_limit},     {"negative_weight_fraction", stability.negative_weight_fraction}};
  nlohmann::json fin;
  for (int q = 0; q < 3; ++q) {
    fin[std::string("int_") + field_name(q)] = final_state.integral[q];
    fin[std::string("min_") + field_name(q)] = final_state.min[q];
    fin[std::string("max_") + field_name(q)] = final_state.max[q];
  }
  j["final"] = fin;
  j["output_every"] = settings.output_every;
  j["series_every"] = settings.series_every;
  j["checkpoint_every"] = settings.checkpoint_every;
  j["forced"] = settings.force;
  j["steps"] = settings.steps;
  return j;
}

RunReport run(RunSettings settings, const RunOptions& options) {
  if (settings.auto_dt) settings.problem.dt = 1;  // placeholder until the stability check sets it
  validate(settings.problem);
  const Backend backend = resolve_backend(options.backend, options.device);
  check_capacity(settings.problem, backend, options.device);
  if (settings.steps < 1) throw UserError("steps", fmt::format(" {}: must be >= 1", settings.steps));
  if (settings.output_every < 0 || settings.series_every < 0 || settings.checkpoint_every < 0) {
    throw UserError("output_every", ", `series_every` and `checkpoint_every` must be >= 0");
  }
  if (settings.problem.precision == Precision::Fp32) return run_typed<float>(settings, backend, options);
  return run_typed<double>(settings, backend, options);
}

}  // namespace simkit::angio
