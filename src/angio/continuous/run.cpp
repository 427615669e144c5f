// The continuous model's run driver: everything between a validated Problem and the files.
#include "simkit/angio/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <optional>
#include <regex>

#include "angio/continuous/kernels.hpp"
#include "simkit/core/build_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "core/collective.hpp"
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

// ---- distributed runs: z-slabs (docs/scale-out.md) ----

// The neighbours of a slab over MPI (simkit::dist): halo planes with the ranks below and above,
// the reductions' carry passed up the ranks and the last rank's result broadcast.
class MpiSlabLink final : public detail::SlabLink {
 public:
  MpiSlabLink(const dist::Comm& comm, bool device) : comm_(comm), device_(device && comm.cuda_aware()) {
    // The node of every rank (a collective at construction, which every rank makes).
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string mine(host);
    mine.resize(255, '\0');
    const auto all = comm.allgather(std::as_bytes(std::span<const char>(mine.data(), mine.size())));
    const auto node = [&](int r) { return std::string(reinterpret_cast<const char*>(all.data()) + 255 * r, 255); };
    const int r = comm.rank();
    const char* halo = std::getenv("SIMKIT_HALO");
    // Opt-in (SIMKIT_HALO=ipc): on one shared H200 the IPC path measured slower than the host-staged
    // one (docs/performance.md, "Scale-out"); two GPUs have yet to decide.
    peers_on_node_ = (halo && std::string(halo) == "ipc") && (r == 0 || node(r - 1) == node(r)) &&
                     (r + 1 == comm.size() || node(r + 1) == node(r));
  }
  bool peers_on_node() const override { return peers_on_node_; }
  bool all(bool mine) override { return comm_.allreduce_min(mine ? 1 : 0) == 1; }
  void notify(int dir, int tag) override {
    const char byte = 1;
    comm_.send(&byte, 1, comm_.rank() + dir, tag);
  }
  void await(int dir, int tag) override {
    char byte = 0;
    comm_.recv(&byte, 1, comm_.rank() + dir, tag);
  }
  void exchange(const void* lo_send, const void* hi_send, void* lo_recv, void* hi_recv, std::size_t bytes) override {
    const int r = comm_.rank();
    // Upwards (my top plane to the rank above, the one below's into my lower ghost), then downwards.
    comm_.sendrecv(hi_send, bytes, hi_send ? r + 1 : -1, lo_recv, bytes, lo_recv ? r - 1 : -1, 21);
    comm_.sendrecv(lo_send, bytes, lo_send ? r - 1 : -1, hi_recv, bytes, hi_recv ? r + 1 : -1, 22);
  }
  bool device_pointers() const override { return device_; }
  void carry_in(void* data, std::size_t bytes) override {
    if (comm_.rank() > 0) comm_.recv(data, bytes, comm_.rank() - 1, 23);
  }
  void carry_on(const void* data, std::size_t bytes) override {
    if (!last()) comm_.send(data, bytes, comm_.rank() + 1, 23);
  }
  void finish(void* data, std::size_t bytes) override { comm_.broadcast(data, bytes, comm_.size() - 1); }
  bool last() const override { return comm_.rank() + 1 == comm_.size(); }

 private:
  const dist::Comm& comm_;
  bool device_;
  bool peers_on_node_ = false;
};

// This rank's planes: its own [own_begin, own_end) and those it holds (`ghosts` ghost planes on
// each side with a neighbour), global indices. One rank: the whole grid.
struct SlabPlan {
  int own_begin = 0, own_end = 0, held_begin = 0, held_end = 0;
  int ghosts = 1;
  int held() const { return held_end - held_begin; }
  int own() const { return own_end - own_begin; }
};

SlabPlan plan_slabs(const Grid& g, const dist::Comm& comm, Backend backend) {
  SlabPlan plan;
  const int ranks = comm.size();
  if (ranks == 1) {
    plan.own_end = plan.held_end = g.nz;
    return plan;
  }
  const int align = backend == Backend::Cuda ? detail::kSlabAlignment : 1;
  const int pieces = (g.nz + align - 1) / align;
  if (g.nz == 1) {
    throw UserError("grid", fmt::format(" {},{},{}: a 2D grid is not split across ranks (z-slabs); run it without "
                                        "mpirun, or on one rank",
                                        g.nx, g.ny, g.nz));
  }
  if (pieces < ranks) {
    throw UserError("grid", fmt::format(" {},{},{}: {} ranks need at least {} planes along z ({} per rank{}); use "
                                        "fewer ranks or a taller grid",
                                        g.nx, g.ny, g.nz, ranks, ranks * align, align,
                                        align > 1 ? ": the cuda backend splits in whole chunks of 35 planes" : ""));
  }
  const dist::Range r = dist::share(static_cast<std::uint64_t>(g.nz), ranks, comm.rank(), static_cast<std::uint64_t>(align));
  plan.own_begin = static_cast<int>(r.begin);
  plan.own_end = static_cast<int>(r.end);
  // The cuda backend holds two ghost planes a side (two steps per pass on a slab) where every slab
  // owns at least two planes (only the last one can own fewer than a chunk); one otherwise, and
  // always on the host backends. Every rank computes the same from the same shares.
  if (backend == Backend::Cuda) {
    std::uint64_t thinnest = g.nz;
    for (int k = 0; k < ranks; ++k) {
      const dist::Range rk = dist::share(static_cast<std::uint64_t>(g.nz), ranks, k, static_cast<std::uint64_t>(align));
      thinnest = std::min(thinnest, rk.end - rk.begin);
    }
    if (thinnest >= 2) plan.ghosts = 2;
  }
  plan.held_begin = plan.own_begin - (comm.rank() > 0 ? plan.ghosts : 0);
  plan.held_end = plan.own_end + (comm.rank() + 1 < ranks ? plan.ghosts : 0);
  return plan;
}

// Planes [first, first + count) of `in` (plane 0 at global `in_z0`) into `out` (plane 0 at `out_z0`).
template <class T>
void copy_planes(const Grid& g, const Fields<T>& in, int in_z0, Fields<T>& out, int out_z0, int first, int count) {
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  const std::vector<T>* from[3] = {&in.n, &in.f, &in.c};
  std::vector<T>* to[3] = {&out.n, &out.f, &out.c};
  for (int a = 0; a < 3; ++a)
    std::copy_n(from[a]->begin() + static_cast<std::ptrdiff_t>((first - in_z0) * plane), count * plane,
                to[a]->begin() + static_cast<std::ptrdiff_t>((first - out_z0) * plane));
}

template <class T>
Fields<T> sized(std::size_t values) {
  Fields<T> f;
  f.n.resize(values);
  f.f.resize(values);
  f.c.resize(values);
  return f;
}

// Snapshots already in out/snapshots with step <= `upto` (a restart into the same directory
// keeps them in the collection).
std::vector<SnapshotEntry> existing_snapshots(const std::filesystem::path& out, std::int64_t upto, double dt) {
  std::vector<std::pair<std::int64_t, SnapshotEntry>> found;
  const std::filesystem::path dir = out / "snapshots";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  static const std::regex name(R"(angio_(\d+)\.p?vti)");
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

  // Under mpirun each rank holds a z-slab (docs/scale-out.md); one rank holds the whole grid.
  const dist::Comm& comm = dist::Comm::world();
  const SlabPlan plan = plan_slabs(g, comm, backend);
  std::unique_ptr<detail::SlabLink> link;
  if (comm.distributed()) link = std::make_unique<MpiSlabLink>(comm, backend == Backend::Cuda);
  Grid lg = g;  // the planes this rank holds
  lg.nz = plan.held();
  detail::SlabSetup setup;
  setup.slab = detail::Slab{plan.held_begin, g.nz, plan.own_begin - plan.held_begin, plan.own_end - plan.held_begin,
                            plan.ghosts};
  setup.link = link.get();
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  report.ranks = comm.size();

  if (settings.restart && comm.distributed()) {
    // The checkpoints' split must be this run's (the cuda backend splits in whole 35-plane chunks).
    const nlohmann::json slab = settings.restart->run.value("slab", nlohmann::json::object());
    if (slab.value("z_begin", -1) != plan.own_begin || slab.value("z_end", -1) != plan.own_end) {
      throw input_error(settings.restart_source, 0, "slab",
                        fmt::format("holds planes [{}, {}) but this run's rank {} owns [{}, {}): restart with the "
                                    "backend of the run that wrote it (the cuda backend splits in chunks of {} planes)",
                                    slab.value("z_begin", -1), slab.value("z_end", -1), comm.rank(), plan.own_begin,
                                    plan.own_end, detail::kSlabAlignment));
    }
  }
  Fields<T> initial;
  std::int64_t start = 0;
  if (settings.restart) {
    // One rank's checkpoint holds its own planes (the whole grid on one rank); the ghosts come from
    // the neighbours below.
    Fields<T>& own = checkpoint_fields<T>(*settings.restart);
    start = settings.restart->step;
    if (!comm.distributed()) {
      initial = std::move(own);
    } else {
      initial = sized<T>(plane * static_cast<std::size_t>(lg.nz));
      copy_planes(g, own, plan.own_begin, initial, plan.held_begin, plan.own_begin, plan.own());
    }
  } else if (settings.initial) {
    Fields<T> whole = convert<T>(settings.initial->fields);
    settings.initial.reset();
    if (!comm.distributed()) {
      initial = std::move(whole);
    } else {
      initial = sized<T>(plane * static_cast<std::size_t>(lg.nz));
      copy_planes(g, whole, 0, initial, plan.held_begin, plan.held_begin, plan.held());
    }
  } else {
    initial = initial_fields<T>(g, problem.initial, plan.held_begin, plan.held_end);
  }
  {
    detail::HostHalo<T> halo;
    detail::exchange_ghosts(lg, setup, initial, halo);
  }
  report.start_step = start;
  {
    // Each rank's worst values over its own planes, then the maxima and the count over the ranks
    // (non-negative doubles order as their bits): the same report as one rank's.
    Problem local = problem;
    local.grid = lg;
    detail::StabilityParts parts =
        detail::stability_parts(local, initial, setup.slab.own_begin, setup.slab.own_end);
    if (comm.distributed()) {
      for (double* v : {&parts.worst_expanded, &parts.worst_flux, &parts.worst_speed2, &parts.max_n})
        *v = std::bit_cast<double>(comm.allreduce_max(std::bit_cast<std::int64_t>(*v)));
      std::uint64_t count = static_cast<std::uint64_t>(parts.negative_nodes);
      comm.allreduce_sum(std::span<std::uint64_t>(&count, 1));
      parts.negative_nodes = static_cast<std::int64_t>(count);
    }
    report.stability = detail::stability_report(problem, parts);
  }
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
  // Distributed: rank 0 stages, every rank writes its pieces and checkpoint into the same staging
  // directory (the output directory must be on a file system every rank sees), rank 0 commits.
  std::optional<StagedOutput> staged;
  std::filesystem::path dir;
  if (comm.root()) {
    staged.emplace(settings.out);
    dir = staged->dir();
  }
  dir = comm.broadcast(dir.string());
  const bool root = comm.root();
  if (settings.snapshots && root) ensure_output_directory(dir / "snapshots");
  comm.barrier();
  const std::filesystem::path series_path = dir / "series.csv";
  const std::filesystem::path pvd_path = dir / "angio.pvd";
  const std::filesystem::path checkpoint_path = dir / checkpoint_name(comm.rank(), comm.size());
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
  if (start > 0 && root) {
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
          // A parallel snapshot's pieces are in the directory of its name.
          const std::filesystem::path pieces = std::filesystem::path(e.file).replace_extension();
          if (std::filesystem::path(e.file).extension() == ".pvti" && std::filesystem::is_directory(earlier / pieces, ec)) {
            std::filesystem::rename(earlier / pieces, dir / pieces, ec);
            if (ec) throw UserError("out", fmt::format(" {}: cannot take over {}: {}", settings.out.string(),
                                                       (earlier / pieces).string(), ec.message()));
          }
        }
      }
    }
  }

  Problem local = problem;  // dt is final now
  local.grid = lg;
  auto solver = detail::make_backend<T>(backend, local, initial, options, setup);
  comm.barrier();  // every slab is on its device: the steps' time is not one rank's start-up skew
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
    std::string name = snapshot_name(step, settings.steps);
    if (!comm.distributed()) {
      write_vti(dir / name, g, fetch());
    } else {
      // Each rank's own planes and the plane above (its ghost, current after the exchange): point
      // data pieces share their boundary plane, as ParaView expects.
      const std::string stem = name.substr(0, name.size() - 4);
      const auto piece = [&](int r) { return fmt::format("{}/piece_{}.vti", stem, r); };
      const int last = plan.own_end - 1 + (plan.held_end > plan.own_end ? 1 : 0);
      if (root) ensure_output_directory(dir / stem);
      comm.barrier();
      write_vti_piece(dir / piece(comm.rank()), g, plan.own_begin, last, fetch(), plan.held_begin);
      std::int64_t range[2] = {plan.own_begin, last};
      const auto all = comm.gather(std::as_bytes(std::span<const std::int64_t>(range)));
      name = stem + ".pvti";
      if (root) {
        std::vector<VtiPiece> pieces;
        const auto* z = reinterpret_cast<const std::int64_t*>(all.data());
        for (int r = 0; r < comm.size(); ++r)
          pieces.push_back({static_cast<int>(z[2 * r]), static_cast<int>(z[2 * r + 1]),
                            std::filesystem::path(piece(r)).lexically_relative("snapshots").string()});
        write_pvti(dir / name, g, problem.precision, pieces);
      }
    }
    if (!root) return;
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
      if (root) write_series_csv(series_path, series);
      throw UserError("dt", fmt::format(
          " {:.6g}: the flux form made n negative (min n = {:.3g}) at step {} (t = {:.6g}): its step limit, "
          "{:.6g} on the initial fields, fell below k as the gradients steepened; use a smaller `dt`, or `force`",
          problem.dt, r.min[0], step, time_of(step), report.stability.flux_limit));
    }
    for (int q = 0; q < 3; ++q) {
      if (!std::isfinite(r.integral[q]) || !std::isfinite(r.min[q]) || !std::isfinite(r.max[q])) {
        if (settings.series_every > 0 && root) write_series_csv(series_path, series);
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
    if (settings.snapshots) snapshot();
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
    if (settings.snapshots && ((settings.output_every > 0 && step % settings.output_every == 0) || step == settings.steps))
      snapshot();
    if (settings.checkpoint_every > 0 && (step % settings.checkpoint_every == 0 || step == settings.steps)) {
      // series.csv first: a crash between the two then leaves the series ahead of the checkpoint,
      // never behind it (a restart keeps only rows up to its step).
      if (settings.series_every > 0 && root) write_series_csv(series_path, series);
      nlohmann::json run_settings{{"series_every", settings.series_every},
                                  {"output_every", settings.output_every},
                                  {"checkpoint_every", settings.checkpoint_every},
                                  {"quicklook", settings.quicklook},
                                  {"force", settings.force}};
      if (!comm.distributed()) {
        write_checkpoint(checkpoint_path, problem, step, options.seed, fetch(), run_settings);
      } else {
        // Each rank its own planes, as a checkpoint of a grid that many planes tall; "slab" says
        // where they lie, and a restart on as many ranks puts them back.
        Problem own = problem;
        own.grid.nz = plan.own();
        Fields<T> mine = sized<T>(plane * static_cast<std::size_t>(plan.own()));
        copy_planes(g, fetch(), plan.held_begin, mine, plan.own_begin, plan.own_begin, plan.own());
        run_settings["slab"] = {{"rank", comm.rank()}, {"ranks", comm.size()}, {"z_begin", plan.own_begin},
                                {"z_end", plan.own_end}, {"nz", g.nz}};
        write_checkpoint(checkpoint_path, own, step, options.seed, mine, run_settings);
      }
    }
    if (options.progress && root)
      options.progress(static_cast<double>(step - start), static_cast<double>(settings.steps - start));
  }
  report.end_step = step;
  report.dt = problem.dt;
  report.nodes = g.nodes();
  report.precision = problem.precision;
  report.form = problem.form;
  report.final_state = (!series.empty() && series.back().step == step) ? series.back().r : solver->reduce();

  if (settings.series_every > 0 && root) write_series_csv(series_path, series);
  std::vector<std::filesystem::path> quicklook;
  if (settings.quicklook) {
    if (!comm.distributed()) {
      quicklook = write_quicklook(dir, g, fetch());
    } else {
      // The mid-plane from the rank that owns it, the maximum of n along z folded over the ranks.
      const Fields<T>& u = fetch();
      const int mid = g.nz / 2;
      std::vector<double> mip, mid_values;
      for (int l = plan.own_begin; l < plan.own_end; ++l) {
        const auto at = u.n.begin() + static_cast<std::ptrdiff_t>((l - plan.held_begin) * plane);
        max_into(mip, std::vector<double>(at, at + static_cast<std::ptrdiff_t>(plane)));
      }
      if (mid >= plan.own_begin && mid < plan.own_end) {
        for (const std::vector<T>* a : {&u.n, &u.f, &u.c}) {
          const auto at = a->begin() + static_cast<std::ptrdiff_t>((mid - plan.held_begin) * plane);
          mid_values.insert(mid_values.end(), at, at + static_cast<std::ptrdiff_t>(plane));
        }
      }
      const auto mips = comm.gather(std::as_bytes(std::span<const double>(mip)));
      const auto mids = comm.gather(std::as_bytes(std::span<const double>(mid_values)));
      if (root) {
        std::vector<double> all_mip;
        const auto* m = reinterpret_cast<const double*>(mips.data());
        for (int r = 0; r < comm.size(); ++r)
          max_into(all_mip, std::vector<double>(m + r * plane, m + (r + 1) * plane));
        const auto* v = reinterpret_cast<const double*>(mids.data());
        std::array<std::vector<double>, 3> planes;
        for (int a = 0; a < 3; ++a) planes[a].assign(v + a * plane, v + (a + 1) * plane);
        quicklook = write_quicklook(dir, g, planes, all_mip);
      }
    }
  }
  report.wall_seconds = wall.seconds();
  comm.barrier();  // every rank's pieces and checkpoint are written
  if (!root) return report;
  write_file_atomic(dir / "run.json", report.to_json(settings).dump(2) + "\n");
  // Into place. Of what an earlier run left in settings.out, the snapshots this run's collection
  // lists (a restart keeps those up to its step) stay; the rest of the earlier run's own files go,
  // so that the directory holds one run, and --restart cannot pick up a stale checkpoint.
  std::vector<std::filesystem::path> kept;
  for (const SnapshotEntry& e : snapshots) kept.push_back(e.file);
  staged->commit([&](const std::filesystem::path& rel) {
    static const char* const kOwn[] = {"series.csv", "angio.pvd", "checkpoint.ckpt", "run.json",
                                       "slice.png",  "mip_n.png", "slice.svg"};
    for (const char* own : kOwn)
      if (rel == own) return true;
    if (matches_output_pattern(rel, "", "checkpoint.rank", ".ckpt")) return true;  // a distributed run's
    const auto listed = [&](const std::filesystem::path& file) {
      return std::find(kept.begin(), kept.end(), file) != kept.end();
    };
    if (matches_output_pattern(rel, "snapshots", "angio_", ".vti") || matches_output_pattern(rel, "snapshots", "angio_", ".pvti"))
      return !listed(rel);
    // A piece snapshots/angio_<step>/piece_<r>.vti goes with its .pvti.
    const std::filesystem::path parent = rel.parent_path();
    if (parent.parent_path() == "snapshots" && parent.filename().string().rfind("angio_", 0) == 0 &&
        rel.filename().string().rfind("piece_", 0) == 0 && rel.extension() == ".vti")
      return !listed(std::filesystem::path(parent.string() + ".pvti"));
    return false;
  });
  if (earlier_is_staging) {
    std::error_code ec;
    std::filesystem::remove_all(earlier, ec);  // the dead run's leftovers, now taken over
  }
  if (settings.series_every > 0) report.files.push_back(settings.out / "series.csv");
  if (settings.snapshots) report.files.push_back(settings.out / "angio.pvd");
  if (settings.checkpoint_every > 0) report.files.push_back(settings.out / "checkpoint.ckpt");
  for (const auto& file : quicklook) report.files.push_back(settings.out / file.filename());
  report.files.push_back(settings.out / "run.json");
  return report;
}

}  // namespace

std::string checkpoint_name(int rank, int ranks) {
  return ranks == 1 ? std::string("checkpoint.ckpt") : fmt::format("checkpoint.rank{}of{}.ckpt", rank, ranks);
}

std::filesystem::path rank_checkpoint(const std::filesystem::path& given, int rank, int ranks) {
  if (ranks == 1) return given;
  return given.parent_path() / checkpoint_name(rank, ranks);
}

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
  j["ranks"] = ranks;
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
  {
    // Each rank holds its slab only: the capacity is checked for the planes this rank holds, and a
    // rank that lacks it (a smaller GPU, a fuller node) stops every rank with its message.
    const dist::Comm& comm = dist::Comm::world();
    dist::collectively(comm, [&] {
      Problem mine = settings.problem;
      if (comm.distributed()) mine.grid.nz = plan_slabs(settings.problem.grid, comm, backend).held();
      check_capacity(mine, backend, options.device);
    });
  }
  if (settings.steps < 1) throw UserError("steps", fmt::format(" {}: must be >= 1", settings.steps));
  if (settings.output_every < 0 || settings.series_every < 0 || settings.checkpoint_every < 0) {
    throw UserError("output_every", ", `series_every` and `checkpoint_every` must be >= 0");
  }
  if (settings.problem.precision == Precision::Fp32) return run_typed<float>(settings, backend, options);
  return run_typed<double>(settings, backend, options);
}

}  // namespace simkit::angio
