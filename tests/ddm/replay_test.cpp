// The federation replay of the library (ddm/replay.hpp), which `simkit ddm replay` and BM_DdmReplay
// run: with `verify` (a full rematch after the last tick) every mobility model, rule, coordinate
// type and backend gives verified results, and every backend the same pairs (the moves depend on the
// seed and the regions only); the same seed gives the same run whatever the thread count; progress
// and stop are honoured between ticks; bad options are UserErrors naming the field.
#include "simkit/ddm/replay.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "simkit/core/error.hpp"
#include "simkit/ddm/generate.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

constexpr Mobility kMobilities[] = {Mobility::RegionWalk, Mobility::Walk, Mobility::Waypoint};
constexpr Rule kRules[] = {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed};

// reference and cpu, and cuda when a device is usable.
std::vector<Backend> backends() {
  std::vector<Backend> out = {Backend::Reference, Backend::Cpu};
  if (test::cuda_usable()) out.push_back(Backend::Cuda);
  return out;
}

// generate's workload: entities (`moving`) or plain regions.
AnyRegions workload(std::uint64_t n, int dims, bool moving, bool integer, bool clustered = false) {
  GenerateOptions g;
  g.n = n;
  g.alpha = 6;
  g.dims = dims;
  g.moving = moving;
  g.integer = integer;
  g.clustered = clustered;
  g.seed = 4;
  return generate(g);
}

// The same regions with u32 coordinates (generate's integers lie in [0, 10^6]).
Regions<std::uint32_t> to_u32(const Regions<std::uint64_t>& r) {
  Regions<std::uint32_t> out;
  for (auto [from, to] : {std::pair{&r.subscriptions, &out.subscriptions}, std::pair{&r.updates, &out.updates}}) {
    to->dims = from->dims;
    to->ids = from->ids;
    to->lower.assign(from->lower.begin(), from->lower.end());
    to->upper.assign(from->upper.begin(), from->upper.end());
  }
  return out;
}

ReplayOptions replay_options(Mobility mobility, std::uint64_t seed = 1) {
  ReplayOptions o;
  o.ticks = 8;
  o.move_fraction = 0.1;
  o.mobility = mobility;
  o.speed = 5;  // fast enough that waypoint entities arrive and draw new destinations within the run
  o.seed = seed;
  o.verify = true;
  return o;
}

MatchOptions match_options(Backend backend, Rule rule = Rule::Ieee1516, int threads = 2) {
  MatchOptions m;
  m.backend = backend;
  m.rule = rule;
  m.threads = threads;
  return m;
}

ReplayResult run(const AnyRegions& regions, const ReplayOptions& o, const MatchOptions& m) {
  return std::visit([&](const auto& r) { return replay(r, o, m); }, regions);
}

std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> outcome(const ReplayResult& r) {
  return {r.final_pairs, r.pairs_gained, r.pairs_lost};
}

TEST(DdmReplay, VerifiedWithTheSameFinalPairsOnEveryBackend) {
  struct Input {
    std::string name;
    AnyRegions regions;
    bool entities;  // ids pair up: every mobility; else region-walk only
  };
  std::vector<Input> inputs;
  inputs.push_back({"entities f64", workload(1200, 2, true, false), true});
  inputs.push_back({"entities u64 clustered", workload(1200, 2, true, true, true), true});
  inputs.push_back({"entities u32", to_u32(std::get<Regions<std::uint64_t>>(inputs.back().regions)), true});
  inputs.push_back({"plain u64 3-D", workload(1001, 3, false, true), false});
  for (const Input& in : inputs)
    for (const Mobility mobility : kMobilities) {
      if (!in.entities && mobility != Mobility::RegionWalk) continue;
      for (const Rule rule : kRules) {
        std::optional<std::uint64_t> first_final;
        for (const Backend backend : backends()) {
          SCOPED_TRACE(fmt::format("{}, mobility {}, rule {}, backend {}", in.name, to_string(mobility),
                                   to_string(rule), to_string(backend)));
          const ReplayResult r = run(in.regions, replay_options(mobility), match_options(backend, rule));
          EXPECT_TRUE(r.verified);
          EXPECT_EQ(r.ticks, 8);
          EXPECT_EQ(r.mobility, mobility);
          EXPECT_EQ(r.subscriptions, subscription_count(in.regions));
          EXPECT_EQ(r.updates, update_count(in.regions));
          EXPECT_EQ(r.dims, dims_of(in.regions));
          if (mobility == Mobility::RegionWalk) {
            EXPECT_FALSE(r.entities.has_value());
            EXPECT_FALSE(r.entities_per_tick.has_value());
            const double regions = static_cast<double>(r.subscriptions + r.updates);
            EXPECT_EQ(r.moves_per_tick, static_cast<std::size_t>(std::llround(0.1 * regions)));
          } else {
            EXPECT_EQ(r.entities, 600u);
            EXPECT_EQ(r.entities_per_tick, 60u);
            EXPECT_EQ(r.moves_per_tick, 120u);
          }
          EXPECT_GT(r.pairs_gained, 0u);
          EXPECT_EQ(r.initial_pairs + r.pairs_gained - r.pairs_lost, r.final_pairs);
          ASSERT_EQ(r.latency_seconds.size(), 8u);
          EXPECT_LE(r.p50_seconds, r.p99_seconds);
          EXPECT_LE(r.p99_seconds, r.max_seconds);
          EXPECT_LE(r.mean_seconds, r.max_seconds);
          EXPECT_GT(r.ticks_per_second, 0.0);
          // Every backend makes the same moves, so it ends with the same pairs.
          if (!first_final) first_final = r.final_pairs;
          EXPECT_EQ(r.final_pairs, *first_final);
        }
      }
    }
}

// The same seed gives the same run (and another seed another one), whatever the thread count.
TEST(DdmReplay, DeterministicForASeed) {
  const AnyRegions regions = workload(2000, 2, true, false);
  for (const Mobility mobility : kMobilities) {
    SCOPED_TRACE(to_string(mobility));
    ReplayOptions o = replay_options(mobility, 5);
    o.ticks = 30;
    o.move_fraction = 0.2;
    o.verify = false;
    const auto first = outcome(run(regions, o, match_options(Backend::Cpu, Rule::Ieee1516, 1)));
    EXPECT_EQ(outcome(run(regions, o, match_options(Backend::Cpu, Rule::Ieee1516, 2))), first);
    EXPECT_EQ(outcome(run(regions, o, match_options(Backend::Cpu, Rule::Ieee1516, 1))), first);
    EXPECT_EQ(outcome(run(regions, o, match_options(Backend::Reference))), first);
    o.seed = 6;
    EXPECT_NE(outcome(run(regions, o, match_options(Backend::Cpu, Rule::Ieee1516, 1))), first);
  }
}

// progress(ticks done, ticks) after every tick; a stop request ends the run between ticks.
TEST(DdmReplay, ReportsProgressAndStopsBetweenTicks) {
  const auto regions = std::get<Regions<double>>(workload(400, 2, true, false));
  const ReplayOptions o = replay_options(Mobility::Walk);
  std::vector<std::pair<double, double>> calls;
  const ReplayResult r = replay(regions, o, match_options(Backend::Cpu),
                                [&](double done, double total) { calls.emplace_back(done, total); });
  ASSERT_EQ(calls.size(), 8u);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    EXPECT_EQ(calls[k].first, static_cast<double>(k + 1));
    EXPECT_EQ(calls[k].second, 8.0);
  }
  EXPECT_TRUE(r.verified);

  MatchOptions m = match_options(Backend::Cpu);
  std::size_t ticks_done = 0;
  m.stop = [&ticks_done] { return ticks_done >= 3; };
  EXPECT_THROW(replay(regions, o, m, [&](double, double) { ++ticks_done; }), Stopped);
  EXPECT_EQ(ticks_done, 3u);
}

// Expects `f` to throw a UserError about `field` whose message contains `part`.
void expect_field(const std::function<void()>& f, const std::string& field, const std::string& part = {}) {
  try {
    f();
    ADD_FAILURE() << "no UserError about " << field;
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(DdmReplay, BadOptionsAreUserErrorsNamingTheField) {
  const auto entities = std::get<Regions<double>>(workload(100, 2, true, false));
  const MatchOptions m = match_options(Backend::Cpu);
  const auto with = [&](const std::function<void(ReplayOptions&)>& change) {
    return [&entities, &m, change] {
      ReplayOptions o = replay_options(Mobility::Waypoint);
      change(o);
      replay(entities, o, m);
    };
  };
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  expect_field(with([](ReplayOptions& o) { o.ticks = 0; }), "ticks", "ticks 0");
  expect_field(with([](ReplayOptions& o) { o.ticks = -3; }), "ticks", "ticks -3");
  for (const double bad : {-0.1, 1.5, kNaN})
    expect_field(with([=](ReplayOptions& o) { o.move_fraction = bad; }), "move_fraction");
  for (const double bad : {-1.0, kInf, kNaN}) expect_field(with([=](ReplayOptions& o) { o.step = bad; }), "step");
  for (const double bad : {0.0, -1.0, kInf, kNaN})
    expect_field(with([=](ReplayOptions& o) { o.speed = bad; }), "speed");
  expect_field(with([](ReplayOptions& o) { o.mobility = static_cast<Mobility>(7); }), "mobility");
  // validate() says the same before any regions are at hand.
  ReplayOptions o;
  o.move_fraction = 2;
  expect_field([&] { validate(o); }, "move_fraction", "move_fraction 2");
  EXPECT_NO_THROW(validate(ReplayOptions{}));

  expect_field([] { parse_mobility("fly"); }, "mobility", "fly: expected region-walk, walk or waypoint");
  for (const Mobility mobility : kMobilities) EXPECT_EQ(parse_mobility(to_string(mobility)), mobility);

  // Walk and waypoint need ids that pair up; region-walk moves any regions.
  const auto plain = std::get<Regions<double>>(workload(101, 2, false, false));  // subscription 50 has no update 50
  Regions<double> extra = entities;                                              // one update more
  extra.updates.ids.push_back(1000);
  for (int d = 0; d < 2; ++d) {
    const auto n = entities.updates.size();
    extra.updates.lower.insert(extra.updates.lower.begin() + static_cast<std::ptrdiff_t>((d + 1) * n + d), 0.0);
    extra.updates.upper.insert(extra.updates.upper.begin() + static_cast<std::ptrdiff_t>((d + 1) * n + d), 1.0);
  }
  for (const Mobility mobility : {Mobility::Walk, Mobility::Waypoint}) {
    SCOPED_TRACE(to_string(mobility));
    expect_field([&] { replay(plain, replay_options(mobility), m); }, "regions", "subscription 50 has no update");
    expect_field([&] { replay(extra, replay_options(mobility), m); }, "regions", "update 1000 has no subscription");
  }
  EXPECT_TRUE(replay(plain, replay_options(Mobility::RegionWalk), m).verified);
  Regions<double> none;
  none.subscriptions.dims = none.updates.dims = 2;
  expect_field([&] { replay(none, replay_options(Mobility::RegionWalk), m); }, "regions", "no regions");
}

}  // namespace
}  // namespace simkit::ddm
