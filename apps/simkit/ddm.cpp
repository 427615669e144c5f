// `simkit ddm generate`, `simkit ddm match` and `simkit ddm replay` (docs/ddm.md): make a workload,
// or read regions, match them and write the count, the pairs (streamed to the file) or per-region
// counts, or keep a matcher alive over ticks of moving regions.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "core/collective.hpp"
#include "core/output.hpp"
#include "core/report.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/distributed.hpp"
#include "simkit/ddm/generate.hpp"
#include "simkit/ddm/io.hpp"
#include "simkit/ddm/replay.hpp"

namespace simkit::cli {

namespace {

namespace fs = std::filesystem;
using namespace simkit::ddm;

// ---- generate ----

struct GenerateArgs {
  std::string n, side = "volume", out;
  double alpha = 0, interest = 2;
  int dims = 1;
  bool integer = false, clustered = false, moving = false, json = false, quiet = false;
  std::uint64_t seed = 1;
};

// A region count: digits, or an integer written like 1e6.
std::uint64_t parse_count(const std::string& text, std::string_view flag) {
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc{} && ptr == text.data() + text.size()) return value;
  double d = 0;
  const auto [dptr, dec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (dec == std::errc{} && dptr == text.data() + text.size() && d >= 0 && d == std::floor(d) &&
      d <= 9007199254740992.0)
    return static_cast<std::uint64_t>(d);
  throw UserError(fmt::format("{} {}: expected a whole number of regions (e.g. 1000000 or 1e6)", flag, text));
}

// The parent directory of an output file must exist (checked before any work).
void check_output_path(const std::string& path, std::string_view flag) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw UserError(fmt::format("{} {}: is a directory, expected a file name", flag, path));
  const fs::path parent = p.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw UserError(fmt::format("{} {}: the directory {} does not exist", flag, path, parent.string()));
  }
}

int run_generate(const GenerateArgs& a) {
  Stopwatch clock;
  GenerateOptions o;
  o.n = parse_count(a.n, "--n");
  o.alpha = a.alpha;
  o.dims = a.dims;
  o.side = parse_side_rule(a.side);
  o.integer = a.integer;
  o.clustered = a.clustered;
  o.moving = a.moving;
  o.interest = a.interest;
  o.seed = a.seed;
  check_output_path(a.out, "--out");
  const AnyRegions regions = generate(o);
  throw_if_signalled();
  write_regions(a.out, regions);
  const double seconds = clock.seconds();
  const std::size_t ns = subscription_count(regions), nu = update_count(regions);
  const std::string coords(to_string(coords_of(regions)));
  if (a.json) {
    const nlohmann::json j = {{"command", "simkit ddm generate"},
                              {"subscriptions", ns},
                              {"updates", nu},
                              {"dims", o.dims},
                              {"alpha", o.alpha},
                              {"side", std::string(to_string(o.side))},
                              {"side_length", side_length(o)},
                              {"space_length", o.length},
                              {"coords", coords},
                              {"clustered", o.clustered},
                              {"moving", o.moving},
                              {"entities", o.moving ? nlohmann::json(ns) : nlohmann::json(nullptr)},
                              {"interest", o.moving ? nlohmann::json(o.interest) : nlohmann::json(nullptr)},
                              {"subscription_side_length", subscription_side_length(o)},
                              {"seed", o.seed},
                              {"seconds", seconds},
                              {"out", a.out}};
    fmt::print("{}\n", j.dump());
  } else if (o.moving) {
    fmt::print(
        "simkit ddm generate: {:.4g} s, {} entities (subscription and update id e each), {} dimension{}, update "
        "side {} ({}, alpha {}), interest side {} (x{}), {}{}, seed {} -> {}\n",
        seconds, ns, o.dims, o.dims == 1 ? "" : "s", human_number(side_length(o)), to_string(o.side), o.alpha,
        human_number(subscription_side_length(o)), o.interest, coords, o.clustered ? ", clustered" : "", o.seed, a.out);
  } else {
    fmt::print(
        "simkit ddm generate: {:.4g} s, {} subscriptions, {} updates, {} dimension{}, side {} ({}, alpha {}), "
        "{}{}, seed {} -> {}\n",
        seconds, ns, nu, o.dims, o.dims == 1 ? "" : "s", human_number(side_length(o)), to_string(o.side), o.alpha,
        coords, o.clustered ? ", clustered" : "", o.seed, a.out);
  }
  return 0;
}

// ---- match ----

struct MatchArgs {
  CommonRunOptions common;
  std::string input, rule = "ieee1516", pairs, per_region, algorithm = "auto", coords = "auto";
  bool count = false;
  bool pairs_per_rank = false;  // --pairs-per-rank: FILE.rank<r>.EXT from each rank
};

// Rank r's pair file of --pairs-per-rank: "pairs.csv" -> "pairs.rank2.csv" ("pairs" -> "pairs.rank2";
// the extension, and so the format, kept).
std::string per_rank_path(const std::string& path, int rank) {
  const fs::path p(path);
  fs::path name = p.stem();
  name += fmt::format(".rank{}", rank);
  name += p.extension();
  return (p.parent_path() / name).string();
}

// The matching options of `ddm match` and `ddm replay` from their flags.
MatchOptions match_options(const std::string& rule, const std::string& algorithm, const CommonRunOptions& common) {
  MatchOptions o;
  o.rule = parse_rule(rule);
  o.algorithm = parse_algorithm(algorithm);
  o.backend = parse_backend(common.backend);
  o.device = rank_device(common);
  o.threads = checked_threads(common.threads);
  return o;
}

std::optional<Coords> coords_option(const std::string& text) {
  return text == "auto" ? std::nullopt : std::optional<Coords>(parse_coords(text));
}

// Fails before the input is read when the backend and algorithm cannot run here (the matcher
// would find out the same, after reading a possibly large file).
void check_backend(const MatchOptions& o) {
  Backend backend = o.backend;
  if (backend == Backend::Auto && o.algorithm != Algorithm::Auto) {
    // --backend auto with an algorithm: the algorithm's own backend.
    for (Backend home : {Backend::Reference, Backend::Cpu, Backend::Cuda}) {
      try {
        resolve_algorithm(o.algorithm, home);
        backend = home;
        break;
      } catch (const UserError&) {
      }
    }
  }
  if (o.backend == Backend::Auto && o.algorithm != Algorithm::Auto) {
    try {
      resolve_backend(backend, o.device);
    } catch (const UserError& e) {
      // The user named the algorithm, not the backend: say which backend it needs, and why that
      // one cannot run (the backend error's detail after its own value, " cuda: ").
      std::string_view why = e.field() == "backend" ? std::string_view(e.detail()) : std::string_view(e.what());
      if (e.field() == "backend" && why.find(": ") != std::string_view::npos) why.remove_prefix(why.find(": ") + 2);
      throw UserError("algorithm", fmt::format(" {} runs on the {} backend: {}", to_string(o.algorithm),
                                               simkit::to_string(backend), why));
    }
  }
  resolve_algorithm(o.algorithm, resolve_backend(backend, o.device));
}

int run_match(const MatchArgs& a) {
  Stopwatch clock;
  // Under mpirun the larger set is split over the ranks (docs/scale-out.md, "ddm across ranks"):
  // counts are summed onto the root, pairs merged there in (subscription, update) order, or written
  // by each rank to a file of its own (--pairs-per-rank); the root prints.
  const dist::Comm& world = dist::Comm::world();
  std::string pairs_file = a.pairs;
  if (a.pairs_per_rank) pairs_file = per_rank_path(a.pairs, world.rank());
  // The pair and per-region files must not be the region file (also through links).
  refuse_input_as_output(pairs_file, false, "--input", a.input, "--pairs");
  refuse_input_as_output(a.per_region, false, "--input", a.input, "--per-region");
  MatchOptions o = match_options(a.rule, a.algorithm, a.common);
  const std::optional<Coords> coords = coords_option(a.coords);
  std::string mode = "count", out;
  if (!a.pairs.empty()) {
    mode = "pairs";
    out = pairs_file;
    check_output_path(out, "--pairs");
  } else if (!a.per_region.empty()) {
    mode = "per-region";
    out = a.per_region;
    check_output_path(out, "--per-region");
  }
  check_backend(o);

  const AnyRegions regions = read_regions(a.input, coords);
  const double read_seconds = clock.seconds();

  const MatchReport report = std::visit(
      [&](const auto& r) {
        const auto s = view(r.subscriptions);
        const auto u = view(r.updates);
        if (mode == "pairs") {
          const auto writer_for = [&] {
            return std::make_unique<PairWriter>(out, PairWriter::format_for(out), r.subscriptions.ids, r.updates.ids);
          };
          MatchReport rep;
          if (a.pairs_per_rank) {
            const auto writer = writer_for();
            rep = match_pairs_per_rank(s, u, o, world,
                                       [&writer](const Match* pairs, std::size_t n) { writer->write(pairs, n); });
            throw_if_signalled();
            dist::collectively(world, [&writer] { writer->commit(); });
          } else if (world.distributed()) {
            const auto writer = world.root() ? writer_for() : nullptr;
            rep = match_pairs_distributed(s, u, o, world,
                                          [&writer](const Match* pairs, std::size_t n) { writer->write(pairs, n); });
            throw_if_signalled();
            if (writer) writer->commit();
          } else {
            const auto writer = writer_for();
            rep = match_pairs(s, u, o, [&writer](const Match* pairs, std::size_t n) { writer->write(pairs, n); });
            throw_if_signalled();  // the writer's temporary file goes with it
            writer->commit();
          }
          return rep;
        }
        if (mode == "per-region") {
          std::vector<std::uint64_t> per_s, per_u;
          const MatchReport rep = count_per_region_distributed(s, u, o, world, per_s, per_u);
          throw_if_signalled();
          if (world.root()) write_per_region_csv(out, r.subscriptions.ids, per_s, r.updates.ids, per_u);
          return rep;
        }
        return count_pairs_distributed(s, u, o, world);
      },
      regions);
  if (!world.root()) return 0;

  const std::size_t ns = subscription_count(regions), nu = update_count(regions);
  const int dims = dims_of(regions);
  const std::string coords_name(to_string(coords_of(regions)));
  RunSummary summary;
  summary.command = "simkit ddm match";
  summary.backend = std::string(simkit::to_string(report.backend));
  summary.device = report.device;
  summary.wall_seconds = clock.seconds();
  summary.throughput = report.seconds > 0 ? static_cast<double>(report.pairs) / report.seconds : 0.0;
  summary.throughput_unit = "pairs";
  nlohmann::json out_json = out.empty() ? nlohmann::json(nullptr) : nlohmann::json(out);
  if (a.pairs_per_rank) {
    out_json = nlohmann::json::array();
    for (int r = 0; r < world.size(); ++r) out_json.push_back(per_rank_path(a.pairs, r));
  }
  summary.extra = {{"input", a.input},
                   {"subscriptions", ns},
                   {"updates", nu},
                   {"dims", dims},
                   {"coords", coords_name},
                   {"rule", std::string(to_string(o.rule))},
                   {"algorithm", std::string(to_string(report.algorithm))},
                   {"output", mode},
                   {"out", out_json},
                   {"ranks", world.size()},
                   {"pairs", report.pairs},
                   {"seconds", report.seconds},
                   {"read_seconds", read_seconds},
                   {"upload_seconds", report.upload_seconds},
                   {"output_seconds", report.output_seconds}};
  if (a.common.json) {
    summary.print(true);
  } else {
    std::string text = summary.text();
    if (world.distributed()) text += fmt::format(", {} ranks", world.size());
    text += fmt::format(
        "; {} subscriptions x {} updates ({} dimension{}, {}, {}), {} pairs, algorithm {}, matching "
        "{:.4g} s",
        ns, nu, dims, dims == 1 ? "" : "s", coords_name, to_string(o.rule), report.pairs, to_string(report.algorithm),
        report.seconds);
    if (a.pairs_per_rank) {
      text += fmt::format(" -> {}", per_rank_path(a.pairs, 0));
      if (world.size() > 1) text += fmt::format(" ... {}", per_rank_path(a.pairs, world.size() - 1));
    } else if (!out.empty()) {
      text += fmt::format(" -> {}", out);
    }
    fmt::print("{}\n", text);
  }
  return 0;
}

// ---- replay ----

struct ReplayArgs {
  CommonRunOptions common;
  std::string input, rule = "ieee1516", algorithm = "auto", coords = "auto", mobility = "region-walk";
  std::int64_t ticks = 100;
  double move_fraction = 0.001, step = 1.0, speed = 0.5;
  bool verify = false;
  bool step_given = false, speed_given = false;  // named on the command line
};

// The replay itself is the library's (ddm/replay.hpp); this reads the file, maps its errors to flags
// and prints the summary.
int run_replay(const ReplayArgs& a) {
  Stopwatch clock;
  ReplayOptions options;
  options.ticks = a.ticks;
  options.move_fraction = a.move_fraction;
  options.step = a.step;
  options.speed = a.speed;
  options.mobility = parse_mobility(a.mobility);
  options.seed = a.common.seed;
  options.verify = a.verify;
  // Defaults are fine for every mobility; a flag named for the wrong one is a mistake.
  if (a.speed_given && options.mobility != Mobility::Waypoint) {
    throw UserError(
        fmt::format("--speed: sets the pace of --mobility waypoint, not of --mobility {}; use --step", a.mobility));
  }
  if (a.step_given && options.mobility == Mobility::Waypoint) {
    throw UserError(
        "--step: sets the random walks (--mobility region-walk or walk); --mobility waypoint moves at "
        "--speed");
  }
  validate(options);  // before a possibly large file is read
  MatchOptions o = match_options(a.rule, a.algorithm, a.common);
  check_backend(o);
  o.backend = resolve_backend(o.backend, o.device);
  o.stop = [] { return stop_signal() != 0; };
  const std::optional<Coords> coords = coords_option(a.coords);
  AnyRegions regions = read_regions(a.input, coords);
  Progress progress("ddm replay", "ticks", a.common.quiet);
  const auto on_tick = [&progress](double done, double total) { progress.update(done, total); };
  ReplayResult r;
  try {
    r = std::visit([&](auto& any) { return replay(std::move(any), options, o, on_tick); }, regions);
  } catch (const UserError& e) {
    // The regions are the file's: "--input FILE: ...", the rest of the message with flags for fields.
    if (e.field() != "regions") throw;
    throw UserError(fmt::format("--input {}{}", a.input, cli_message(UserError(std::string(), e.detail()))));
  }
  progress.finish();
  const auto optional_count = [](const std::optional<std::size_t>& n) {
    return n ? nlohmann::json(*n) : nlohmann::json(nullptr);
  };
  RunSummary summary;
  summary.command = "simkit ddm replay";
  summary.backend = std::string(simkit::to_string(o.backend));
  summary.device = device_description(o.backend, o.device, o.threads);
  summary.wall_seconds = clock.seconds();
  summary.throughput = r.ticks_per_second;
  summary.throughput_unit = "ticks";
  summary.extra = {{"subscriptions", r.subscriptions},
                   {"updates", r.updates},
                   {"dims", r.dims},
                   {"ticks", r.ticks},
                   {"mobility", std::string(to_string(r.mobility))},
                   {"entities", optional_count(r.entities)},
                   {"entities_per_tick", optional_count(r.entities_per_tick)},
                   {"moves_per_tick", r.moves_per_tick},
                   {"move_fraction", r.move_fraction},
                   {"initial_pairs", r.initial_pairs},
                   {"final_pairs", r.final_pairs},
                   {"pairs_gained", r.pairs_gained},
                   {"pairs_lost", r.pairs_lost},
                   {"build_seconds", r.build_seconds},
                   {"latency_seconds",
                    {{"p50", r.p50_seconds}, {"p99", r.p99_seconds}, {"max", r.max_seconds}, {"mean", r.mean_seconds}}},
                   {"ticks_per_second", r.ticks_per_second},
                   {"verified", options.verify ? nlohmann::json(r.verified) : nlohmann::json(nullptr)},
                   {"input", a.input},
                   {"rule", std::string(to_string(o.rule))},
                   {"seed", a.common.seed}};
  if (a.common.json) {
    summary.print(true);
  } else {
    const std::string entities =
        r.entities ? fmt::format(" ({} of {} entities)", *r.entities_per_tick, *r.entities) : std::string();
    fmt::print(
        "{}; {} ticks of {} moves{}, {}, latency p50 {:.3g} ms, p99 {:.3g} ms, max {:.3g} ms; {} pairs at the "
        "end{}\n",
        summary.text(), r.ticks, r.moves_per_tick, entities, to_string(r.mobility), 1e3 * r.p50_seconds,
        1e3 * r.p99_seconds, 1e3 * r.max_seconds, r.final_pairs, options.verify ? " (verified by a full rematch)" : "");
  }
  return 0;
}

}  // namespace

void add_ddm_command(CLI::App& app, Action& action) {
  auto* ddm = app.add_subcommand("ddm", "Data Distribution Management matching for HLA (IEEE 1516)");
  ddm->require_subcommand(1);

  auto* gen = ddm->add_subcommand("generate", "Write a synthetic workload of N equal regions (docs/ddm.md)");
  auto g = std::make_shared<GenerateArgs>();
  gen->add_option("--n", g->n, "Regions in all: ceil(N/2) subscriptions, the rest updates (1e6 is fine)")->required();
  gen->add_option("--alpha", g->alpha, "Overlap degree alpha, 0 < alpha <= N")->required()->check(kFinite);
  gen->add_option("--dims", g->dims, "Dimensions, 1 to 8")->required();
  gen->add_option("--side", g->side,
                  "volume: side L*(alpha/N)^(1/d), about 2^(d-2)*alpha*N pairs; per-dimension: side alpha*L/N")
      ->capture_default_str();
  gen->add_flag("--integer", g->integer, "Integer bounds (u64 coordinates) instead of doubles");
  gen->add_flag("--clustered", g->clustered, "Lower bounds around 8 hot spots (normal, sd L/50) instead of uniform");
  auto* moving = gen->add_flag("--moving", g->moving,
                               "Entities: N/2 of them, entity e owning update e and subscription e (its area of "
                               "interest) around one point; for ddm replay --mobility walk|waypoint");
  gen->add_option("--interest", g->interest,
                  "With --moving: the side of an area of interest over the side of an update region")
      ->capture_default_str()
      ->check(kFinite)
      ->needs(moving);
  gen->add_option("--seed", g->seed, "Random seed; the output depends only on it and the other flags")
      ->check(kSeed)
      ->capture_default_str();
  gen->add_option("--out", g->out, "Region file to write: CSV, or binary when the name ends in .bin")->required();
  gen->add_flag("--json", g->json, "Print the summary as one JSON object on one line of stdout");
  gen->add_flag("--quiet,-q", g->quiet, "No progress display on stderr (generate has none; accepted as everywhere)");
  gen->callback([&action, g] { action = [g] { return run_generate(*g); }; });

  auto* match = ddm->add_subcommand("match", "Find every intersecting subscription/update pair of a region file");
  auto m = std::make_shared<MatchArgs>();
  match->add_option("--input", m->input, "Region file: CSV (set,id,lower0,upper0,...) or binary (docs/ddm.md)")
      ->required();
  match->add_option("--rule", m->rule, "Overlap rule: ieee1516, half-open or closed")->capture_default_str();
  auto* count = match->add_flag("--count", m->count, "Print the number of pairs only (the default)");
  auto* pairs =
      match->add_option("--pairs", m->pairs, "Write every pair by id: CSV (subscription,update), or binary for .bin");
  auto* per_rank =
      match->add_flag("--pairs-per-rank", m->pairs_per_rank,
                      "With --pairs: each rank writes its own pairs to FILE.rank<r>.EXT, unsorted, instead "
                      "of the root writing all of them in (subscription, update) order (mpirun)");
  per_rank->needs(pairs);
  auto* per_region = match->add_option("--per-region", m->per_region,
                                       "Write set,id,count: how many regions of the other set each region meets");
  count->excludes(pairs)->excludes(per_region);
  pairs->excludes(count)->excludes(per_region);
  per_region->excludes(count)->excludes(pairs);
  match
      ->add_option("--algorithm", m->algorithm,
                   "auto (the backend's default), brute-force, grid, sbm, interval-tree (reference), parallel "
                   "(cpu), bitmatrix, gpu (cuda)")
      ->capture_default_str();
  match
      ->add_option("--coords", m->coords,
                   "Coordinate type: auto (u64 when every bound is an integer, else f64), u32, u64 or f64")
      ->capture_default_str();
  add_common_run_options(*match, m->common);
  match->callback([&action, m] { action = [m] { return run_match(*m); }; });

  auto* rep = ddm->add_subcommand(
      "replay", "Keep a matcher alive over ticks of moving regions: per-tick latency and sustained ticks/s");
  auto r = std::make_shared<ReplayArgs>();
  rep->add_option("--input", r->input, "Region file: CSV or binary (docs/ddm.md)")->required();
  rep->add_option("--ticks", r->ticks, "Ticks to replay")->capture_default_str();
  rep->add_option("--move-fraction", r->move_fraction,
                  "Fraction of all regions (region-walk) or of all entities (walk, waypoint) moved each tick")
      ->capture_default_str()
      ->check(kFinite);
  rep->add_option("--mobility", r->mobility,
                  "region-walk: regions move on their own, a random walk; walk: entities (a subscription and an "
                  "update with the same id, as ddm generate --moving writes) move both regions together, a random "
                  "walk; waypoint: entities head for random destinations at --speed")
      ->capture_default_str();
  auto* step = rep->add_option("--step", r->step,
                               "Random-walk step (region-walk, walk): sd of a move per dimension, in units of the "
                               "region's own extent (walk: the update's)")
                   ->capture_default_str()
                   ->check(kFinite);
  auto* speed = rep->add_option("--speed", r->speed,
                                "Waypoint pace: the distance an entity covers per move, in units of its update "
                                "region's side")
                    ->capture_default_str()
                    ->check(kFinite);
  rep->add_option("--rule", r->rule, "Overlap rule: ieee1516, half-open or closed")->capture_default_str();
  rep->add_option("--algorithm", r->algorithm, "The matcher's algorithm (as for ddm match)")->capture_default_str();
  rep->add_option("--coords", r->coords, "Coordinate type: auto, u32, u64 or f64")->capture_default_str();
  rep->add_option("--seed", r->common.seed, "Random seed of the moves")->check(kSeed)->capture_default_str();
  rep->add_flag("--verify", r->verify, "After the last tick, check the pairs against a full rematch");
  add_common_run_options(*rep, r->common);
  rep->callback([&action, r, step, speed] {
    r->step_given = step->count() > 0;
    r->speed_given = speed->count() > 0;
    action = [r] { return run_replay(*r); };
  });
}

}  // namespace simkit::cli
