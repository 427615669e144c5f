// `simkit ddm generate`, `simkit ddm match` and `simkit ddm replay` (docs/ddm.md): make a workload,
// or read regions, match them and write the count, the pairs (streamed to the file) or per-region
// counts, or keep a matcher alive over ticks of moving regions.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common.hpp"
#include "core/output.hpp"
#include "core/report.hpp"
#include "core/rng.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/generate.hpp"
#include "simkit/ddm/incremental.hpp"
#include "simkit/ddm/io.hpp"

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
};

// The matching options of `ddm match` and `ddm replay` from their flags.
MatchOptions match_options(const std::string& rule, const std::string& algorithm, const CommonRunOptions& common) {
  MatchOptions o;
  o.rule = parse_rule(rule);
  o.algorithm = parse_algorithm(algorithm);
  o.backend = parse_backend(common.backend);
  o.device = common.device;
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
  // The pair and per-region files must not be the region file (also through links).
  refuse_input_as_output(a.pairs, false, "--input", a.input, "--pairs");
  refuse_input_as_output(a.per_region, false, "--input", a.input, "--per-region");
  MatchOptions o = match_options(a.rule, a.algorithm, a.common);
  const std::optional<Coords> coords = coords_option(a.coords);
  std::string mode = "count", out;
  if (!a.pairs.empty()) {
    mode = "pairs";
    out = a.pairs;
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
          PairWriter writer(out, PairWriter::format_for(out), r.subscriptions.ids, r.updates.ids);
          const MatchReport rep =
              match_pairs(s, u, o, [&writer](const Match* pairs, std::size_t n) { writer.write(pairs, n); });
          throw_if_signalled();  // the writer's temporary file goes with it
          writer.commit();
          return rep;
        }
        if (mode == "per-region") {
          std::vector<std::uint64_t> per_s, per_u;
          const MatchReport rep = count_per_region(s, u, o, per_s, per_u);
          throw_if_signalled();
          write_per_region_csv(out, r.subscriptions.ids, per_s, r.updates.ids, per_u);
          return rep;
        }
        return count_pairs(s, u, o);
      },
      regions);

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
  summary.extra = {{"input", a.input},
                   {"subscriptions", ns},
                   {"updates", nu},
                   {"dims", dims},
                   {"coords", coords_name},
                   {"rule", std::string(to_string(o.rule))},
                   {"algorithm", std::string(to_string(report.algorithm))},
                   {"output", mode},
                   {"out", out.empty() ? nlohmann::json(nullptr) : nlohmann::json(out)},
                   {"pairs", report.pairs},
                   {"seconds", report.seconds},
                   {"read_seconds", read_seconds},
                   {"upload_seconds", report.upload_seconds},
                   {"output_seconds", report.output_seconds}};
  if (a.common.json) {
    summary.print(true);
  } else {
    std::string text = summary.text();
    text += fmt::format(
        "; {} subscriptions x {} updates ({} dimension{}, {}, {}), {} pairs, algorithm {}, matching "
        "{:.4g} s",
        ns, nu, dims, dims == 1 ? "" : "s", coords_name, to_string(o.rule), report.pairs, to_string(report.algorithm),
        report.seconds);
    if (!out.empty()) text += fmt::format(" -> {}", out);
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

// How the regions move (docs/ddm.md, "simkit ddm replay"). RegionWalk moves regions one by one;
// Walk and Waypoint move entities, a subscription and an update with the same id, together.
enum class Mobility { RegionWalk, Walk, Waypoint };
constexpr Named<Mobility> kMobilityNames[] = {
    {Mobility::RegionWalk, "region-walk"}, {Mobility::Walk, "walk"}, {Mobility::Waypoint, "waypoint"}};

Mobility parse_mobility(const std::string& text) {
  if (const auto m = value_of(kMobilityNames, text)) return *m;
  throw UserError(fmt::format("--mobility {}: expected {}", text, names_text(kMobilityNames)));
}

// Stream tags of replay's draws: the regions or entities chosen in a tick (keyed by the tick), and an
// entity's moves (keyed by the entity and the tick).
constexpr std::uint32_t kChoiceTag = 0x72706c79u;      // "rply"
constexpr std::uint32_t kEntityMoveTag = 0x656e7479u;  // "enty"

// The entities of a file: entity e is subscription s[e] and update u[e] (positions), with the same id.
// Walk and waypoint need every subscription id to be an update id and vice versa.
struct Entities {
  std::vector<std::size_t> s, u;
};

template <class T>
Entities pair_entities(const Regions<T>& r, const ReplayArgs& a) {
  std::unordered_map<std::uint64_t, std::size_t> update_at;
  update_at.reserve(r.updates.size());
  for (std::size_t j = 0; j < r.updates.size(); ++j) update_at.emplace(r.updates.ids[j], j);
  const auto unpaired = [&](const char* set, std::uint64_t id, const char* other) {
    return UserError(
        fmt::format("--input {}: --mobility {} moves entities, a subscription and an update with the same "
                    "id, but {} {} has no {} with that id (ddm generate --moving writes paired files; "
                    "--mobility region-walk moves any file)",
                    a.input, a.mobility, set, id, other));
  };
  Entities out;
  out.s.reserve(r.subscriptions.size());
  out.u.reserve(r.subscriptions.size());
  for (std::size_t i = 0; i < r.subscriptions.size(); ++i) {
    const auto found = update_at.find(r.subscriptions.ids[i]);
    if (found == update_at.end()) throw unpaired("subscription", r.subscriptions.ids[i], "update");
    out.s.push_back(i);
    out.u.push_back(found->second);
  }
  if (r.updates.size() != r.subscriptions.size()) {  // ids are unique per set: some update has no subscription
    std::unordered_set<std::uint64_t> subscribed(r.subscriptions.ids.begin(), r.subscriptions.ids.end());
    for (const std::uint64_t id : r.updates.ids)
      if (subscribed.count(id) == 0) throw unpaired("update", id, "subscription");
  }
  return out;
}

// `v` moved by `shift` (a whole number for integer coordinates), but by no more than the room below or
// above it, counted exactly in T: a u64 bound near 2^64 or above 2^53 never wraps or leaves the box
// however the double `shift` rounded.
template <class T>
T shifted(T v, double shift, T room_below, T room_above) {
  if constexpr (std::is_floating_point_v<T>) {
    return v + std::clamp(shift, -static_cast<double>(room_below), static_cast<double>(room_above));
  } else {
    const auto magnitude = static_cast<std::uint64_t>(std::fabs(shift));
    if (shift < 0) return static_cast<T>(v - static_cast<T>(std::min<std::uint64_t>(magnitude, room_below)));
    return static_cast<T>(v + static_cast<T>(std::min<std::uint64_t>(magnitude, room_above)));
  }
}

// One entity's moves: a random walk (Walk) or towards waypoints (Waypoint, which keeps a destination
// per entity). Both regions move by the same displacement, kept inside the regions' bounding box.
template <class T>
class EntityMover {
 public:
  EntityMover(const ReplayArgs& a, Mobility mobility, std::vector<T> box_lo, std::vector<T> box_hi,
              std::size_t entities)
      : a_(a), mobility_(mobility), box_lo_(std::move(box_lo)), box_hi_(std::move(box_hi)), dims_(box_lo_.size()) {
    if (mobility_ == Mobility::Waypoint) {
      destination_.assign(entities * dims_, 0.0);
      has_destination_.assign(entities, false);
    }
  }

  // Moves entity e (subscription si of s, update ui of u) at `tick`, in place, with draws keyed by
  // (seed, e, tick); appends the two changes to `batch`.
  void move(std::size_t e, std::int64_t tick, RegionSet<T>& s, std::size_t si, RegionSet<T>& u, std::size_t ui,
            std::vector<Change<T>>& batch) {
    RngStream rng(a_.common.seed, StreamId{static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(tick),
                                           kEntityMoveTag ^ static_cast<std::uint32_t>(e >> 32)});
    // How far the pair may go each way in each dimension, exactly.
    std::vector<T> below(dims_), above(dims_);
    for (std::size_t d = 0; d < dims_; ++d) {
      const int di = static_cast<int>(d);
      below[d] = static_cast<T>(std::min(s.lo(si, di), u.lo(ui, di)) - box_lo_[d]);
      above[d] = static_cast<T>(box_hi_[d] - std::max(s.hi(si, di), u.hi(ui, di)));
    }
    std::vector<double> shift(dims_, 0.0);
    if (mobility_ == Mobility::Walk) {
      for (std::size_t d = 0; d < dims_; ++d) {
        const int di = static_cast<int>(d);
        const double extent = static_cast<double>(u.hi(ui, di)) - static_cast<double>(u.lo(ui, di));
        shift[d] = rng.normal() * a_.step * (extent > 0 ? extent : 1.0);
        if constexpr (!std::is_floating_point_v<T>) shift[d] = std::round(shift[d]);
      }
    } else {
      waypoint_shift(e, rng, u, ui, below, above, shift);
    }
    std::vector<T> s_lower(dims_), s_upper(dims_), u_lower(dims_), u_upper(dims_);
    for (std::size_t d = 0; d < dims_; ++d) {
      const int di = static_cast<int>(d);
      s_lower[d] = shifted(s.lo(si, di), shift[d], below[d], above[d]);
      s_upper[d] = shifted(s.hi(si, di), shift[d], below[d], above[d]);
      u_lower[d] = shifted(u.lo(ui, di), shift[d], below[d], above[d]);
      u_upper[d] = shifted(u.hi(ui, di), shift[d], below[d], above[d]);
      s.lower[d * s.size() + si] = s_lower[d];
      s.upper[d * s.size() + si] = s_upper[d];
      u.lower[d * u.size() + ui] = u_lower[d];
      u.upper[d * u.size() + ui] = u_upper[d];
    }
    batch.push_back(Change<T>::move(Role::Subscription, s.ids[si], std::move(s_lower), std::move(s_upper)));
    batch.push_back(Change<T>::move(Role::Update, u.ids[ui], std::move(u_lower), std::move(u_upper)));
  }

 private:
  // Towards the entity's destination (a position of the update's lower corner where both regions
  // lie in the box) by `speed` x the update's mean side, arriving when it is that close.
  void waypoint_shift(std::size_t e, RngStream& rng, const RegionSet<T>& u, std::size_t ui, const std::vector<T>& below,
                      const std::vector<T>& above, std::vector<double>& shift) {
    double* dest = &destination_[e * dims_];
    std::vector<double> at(dims_);
    double side = 0;
    for (std::size_t d = 0; d < dims_; ++d) {
      at[d] = static_cast<double>(u.lo(ui, static_cast<int>(d)));
      side += static_cast<double>(u.hi(ui, static_cast<int>(d))) - at[d];
    }
    side /= static_cast<double>(dims_);
    const double step = a_.speed * (side > 0 ? side : 1.0);
    // A new destination on arrival takes effect at the entity's next move, drawn from that tick's stream.
    if (!has_destination_[e]) {
      draw_destination(rng, at, below, above, dest);
      has_destination_[e] = true;
    }
    double distance = 0;
    for (std::size_t d = 0; d < dims_; ++d) distance += (dest[d] - at[d]) * (dest[d] - at[d]);
    distance = std::sqrt(distance);
    if (distance <= step) {
      for (std::size_t d = 0; d < dims_; ++d) shift[d] = dest[d] - at[d];
      has_destination_[e] = false;
      return;
    }
    std::size_t widest = 0;
    bool any = false;
    for (std::size_t d = 0; d < dims_; ++d) {
      shift[d] = (dest[d] - at[d]) * step / distance;
      if constexpr (!std::is_floating_point_v<T>) shift[d] = std::round(shift[d]);
      any = any || shift[d] != 0;
      if (std::fabs(dest[d] - at[d]) > std::fabs(dest[widest] - at[widest])) widest = d;
    }
    // Integer coordinates and a step under half a unit: one unit along the longest way, so that the
    // entity still arrives.
    if (!any) shift[widest] = dest[widest] > at[widest] ? 1.0 : -1.0;
  }

  // A destination uniform among the positions `at` - below .. `at` + above (whole numbers for integers).
  void draw_destination(RngStream& rng, const std::vector<double>& at, const std::vector<T>& below,
                        const std::vector<T>& above, double* dest) const {
    for (std::size_t d = 0; d < dims_; ++d) {
      const double lo = at[d] - static_cast<double>(below[d]);
      const double width = static_cast<double>(below[d]) + static_cast<double>(above[d]);
      if constexpr (std::is_floating_point_v<T>) {
        dest[d] = lo + rng.uniform() * width;
      } else {
        dest[d] = lo + std::min(std::floor(rng.uniform() * (width + 1)), width);
      }
    }
  }

  const ReplayArgs& a_;
  Mobility mobility_;
  std::vector<T> box_lo_, box_hi_;
  std::size_t dims_;
  std::vector<double> destination_;  // entity e's, at [e * dims, (e + 1) * dims)
  std::vector<bool> has_destination_;
};

// A federation's ticks: each tick moves a fraction of all regions (region-walk: both sets, chosen
// uniformly, a random walk of sd `step` x the region's own extent per dimension) or of all entities
// (walk, waypoint: both regions of an entity by one displacement), kept inside the regions' bounding
// box, and applies the moves to an IncrementalMatcher as one batch. Deterministic for a seed.
template <class T>
nlohmann::json replay(Regions<T> r, const ReplayArgs& a, Mobility mobility, const MatchOptions& o, Progress& progress) {
  const int dims = r.dims();
  std::vector<T> box_lo(static_cast<std::size_t>(dims)), box_hi(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    bool first = true;
    for (const RegionSet<T>* set : {&r.subscriptions, &r.updates}) {
      for (std::size_t i = 0; i < set->size(); ++i) {
        const T lo = set->lo(i, d), hi = set->hi(i, d);
        if (first || lo < box_lo[static_cast<std::size_t>(d)]) box_lo[static_cast<std::size_t>(d)] = lo;
        if (first || hi > box_hi[static_cast<std::size_t>(d)]) box_hi[static_cast<std::size_t>(d)] = hi;
        first = false;
      }
    }
  }
  const std::size_t ns = r.subscriptions.size(), nu = r.updates.size(), total = ns + nu;
  if (total == 0) throw UserError("--input " + a.input + ": no regions");
  const bool entity_moves = mobility != Mobility::RegionWalk;
  const Entities entities = entity_moves ? pair_entities(r, a) : Entities{};
  // What is chosen each tick: regions, or entities (each two regions).
  const std::size_t population = entity_moves ? entities.s.size() : total;
  const auto chosen_per_tick =
      std::min(population, static_cast<std::size_t>(std::llround(a.move_fraction * static_cast<double>(population))));
  const std::size_t moves = entity_moves ? 2 * chosen_per_tick : chosen_per_tick;
  EntityMover<T> mover(a, mobility, box_lo, box_hi, population);
  Stopwatch build;
  IncrementalMatcher<T> matcher(r.subscriptions, r.updates, o);
  const double build_seconds = build.seconds();
  const std::uint64_t initial_pairs = matcher.pairs();
  std::vector<double> latency;
  std::uint64_t gained = 0, lost = 0;
  for (std::int64_t tick = 0; tick < a.ticks; ++tick) {
    throw_if_signalled();
    RngStream rng(a.common.seed, StreamId::from64(static_cast<std::uint64_t>(tick), kChoiceTag));
    std::vector<Change<T>> batch;
    batch.reserve(moves);
    std::unordered_set<std::size_t> chosen;
    while (chosen.size() < chosen_per_tick) {
      const auto k = static_cast<std::size_t>(rng.uniform() * static_cast<double>(population)) % population;
      if (!chosen.insert(k).second) continue;
      if (entity_moves) {
        mover.move(k, tick, r.subscriptions, entities.s[k], r.updates, entities.u[k], batch);
        continue;
      }
      RegionSet<T>& set = k < ns ? r.subscriptions : r.updates;
      const std::size_t i = k < ns ? k : k - ns;
      std::vector<T> lower(static_cast<std::size_t>(dims)), upper(static_cast<std::size_t>(dims));
      for (int d = 0; d < dims; ++d) {
        const double lo = static_cast<double>(set.lo(i, d)), hi = static_cast<double>(set.hi(i, d));
        const double extent = hi - lo, blo = static_cast<double>(box_lo[static_cast<std::size_t>(d)]);
        const double bhi = static_cast<double>(box_hi[static_cast<std::size_t>(d)]);
        double shift = rng.normal() * a.step * (extent > 0 ? extent : 1.0);
        if constexpr (!std::is_floating_point_v<T>) shift = std::round(shift);
        const double new_lo = std::clamp(lo + shift, blo, std::max(blo, bhi - extent));
        lower[static_cast<std::size_t>(d)] = static_cast<T>(new_lo);
        upper[static_cast<std::size_t>(d)] = static_cast<T>(new_lo + extent);
        set.lower[static_cast<std::size_t>(d) * set.size() + i] = lower[static_cast<std::size_t>(d)];
        set.upper[static_cast<std::size_t>(d) * set.size() + i] = upper[static_cast<std::size_t>(d)];
      }
      batch.push_back(
          Change<T>::move(k < ns ? Role::Subscription : Role::Update, set.ids[i], std::move(lower), std::move(upper)));
    }
    Stopwatch sw;
    const Delta delta = matcher.apply(batch);
    latency.push_back(sw.seconds());
    gained += delta.gained.size();
    lost += delta.lost.size();
    progress.update(static_cast<double>(tick + 1), static_cast<double>(a.ticks));
  }
  progress.finish();
  std::optional<bool> verified;
  if (a.verify) {
    const std::uint64_t full = count_pairs(view(r.subscriptions), view(r.updates), o).pairs;
    verified = full == matcher.pairs();
    if (!*verified)
      throw InternalError(
          fmt::format("ddm replay: {} pairs kept incrementally, {} by a full rematch", matcher.pairs(), full));
  }
  double sum = 0;
  for (double l : latency) sum += l;
  std::vector<double> sorted = latency;
  std::sort(sorted.begin(), sorted.end());
  const auto quantile = [&](double q) {
    if (sorted.empty()) return 0.0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
  };
  return {{"subscriptions", ns},
          {"updates", nu},
          {"dims", dims},
          {"ticks", a.ticks},
          {"mobility", std::string(name_of(kMobilityNames, mobility))},
          {"entities", entity_moves ? nlohmann::json(population) : nlohmann::json(nullptr)},
          {"entities_per_tick", entity_moves ? nlohmann::json(chosen_per_tick) : nlohmann::json(nullptr)},
          {"moves_per_tick", moves},
          {"move_fraction", a.move_fraction},
          {"initial_pairs", initial_pairs},
          {"final_pairs", matcher.pairs()},
          {"pairs_gained", gained},
          {"pairs_lost", lost},
          {"build_seconds", build_seconds},
          {"latency_seconds",
           {{"p50", quantile(0.5)},
            {"p99", quantile(0.99)},
            {"max", sorted.empty() ? 0.0 : sorted.back()},
            {"mean", latency.empty() ? 0.0 : sum / static_cast<double>(latency.size())}}},
          {"ticks_per_second", sum > 0 ? static_cast<double>(latency.size()) / sum : 0.0},
          {"verified", verified ? nlohmann::json(*verified) : nlohmann::json(nullptr)}};
}

int run_replay(const ReplayArgs& a) {
  Stopwatch clock;
  if (a.ticks < 1) throw UserError(fmt::format("--ticks {}: must be >= 1", a.ticks));
  if (!(a.move_fraction >= 0 && a.move_fraction <= 1))
    throw UserError(fmt::format("--move-fraction {}: must lie in [0, 1]", a.move_fraction));
  if (!(a.step >= 0) || !std::isfinite(a.step)) throw UserError(fmt::format("--step {}: must be >= 0", a.step));
  const Mobility mobility = parse_mobility(a.mobility);
  if (a.speed_given && mobility != Mobility::Waypoint) {
    throw UserError(
        fmt::format("--speed: sets the pace of --mobility waypoint, not of --mobility {}; use --step", a.mobility));
  }
  if (a.step_given && mobility == Mobility::Waypoint) {
    throw UserError(
        "--step: sets the random walks (--mobility region-walk or walk); --mobility waypoint moves at "
        "--speed");
  }
  if (!(a.speed > 0) || !std::isfinite(a.speed)) throw UserError(fmt::format("--speed {}: must be > 0", a.speed));
  MatchOptions o = match_options(a.rule, a.algorithm, a.common);
  check_backend(o);
  o.backend = resolve_backend(o.backend, o.device);
  const std::optional<Coords> coords = coords_option(a.coords);
  AnyRegions regions = read_regions(a.input, coords);
  Progress progress("ddm replay", "ticks", a.common.quiet);
  nlohmann::json doc = std::visit([&](auto& r) { return replay(std::move(r), a, mobility, o, progress); }, regions);
  const double ticks_per_second = doc["ticks_per_second"].get<double>();
  RunSummary summary;
  summary.command = "simkit ddm replay";
  summary.backend = std::string(simkit::to_string(o.backend));
  summary.device = device_description(o.backend, o.device, o.threads);
  summary.wall_seconds = clock.seconds();
  summary.throughput = ticks_per_second;
  summary.throughput_unit = "ticks";
  doc["input"] = a.input;
  doc["rule"] = std::string(to_string(o.rule));
  doc["seed"] = a.common.seed;
  summary.extra = doc;
  if (a.common.json) {
    summary.print(true);
  } else {
    const auto& l = doc["latency_seconds"];
    const std::string entities = mobility == Mobility::RegionWalk
                                     ? std::string()
                                     : fmt::format(" ({} of {} entities)", doc["entities_per_tick"].get<std::size_t>(),
                                                   doc["entities"].get<std::size_t>());
    fmt::print(
        "{}; {} ticks of {} moves{}, {}, latency p50 {:.3g} ms, p99 {:.3g} ms, max {:.3g} ms; {} pairs at the "
        "end{}\n",
        summary.text(), a.ticks, doc["moves_per_tick"].get<std::size_t>(), entities, a.mobility,
        1e3 * l["p50"].get<double>(), 1e3 * l["p99"].get<double>(), 1e3 * l["max"].get<double>(),
        doc["final_pairs"].get<std::uint64_t>(), a.verify ? " (verified by a full rematch)" : "");
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
