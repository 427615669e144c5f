// IncrementalMatcher against a full rematch from scratch (brute force): random sets with ties and
// zero-length ranges, rounds of random batches of adds, moves and removes on both sides (regions
// changed several times in a batch, moved and moved back, removed and added again), every rule,
// d = 1..3, u32/u64 above 2^53/f64, every host matcher; empty batches and sets; bad changes are
// UserErrors that leave the matcher unchanged.
#include "simkit/ddm/incremental.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "ddm/regions.hpp"
#include "simkit/ddm/ddm.hpp"
#include "support/test_support.hpp"

namespace simkit::ddm {
namespace {

using PairList = std::vector<IdPair>;

template <class T>
struct Bounds {
  std::vector<T> lower, upper;
  bool operator==(const Bounds&) const = default;
};

// The test's own record of both sets: id -> bounds.
template <class T>
struct Model {
  int dims = 1;
  std::map<std::uint64_t, Bounds<T>> s, u;
  std::map<std::uint64_t, Bounds<T>>& side(Role which) { return which == Role::Subscription ? s : u; }

  static std::map<std::uint64_t, Bounds<T>> from(const RegionSet<T>& r) {
    std::map<std::uint64_t, Bounds<T>> out;
    for (std::size_t i = 0; i < r.size(); ++i) {
      Bounds<T>& b = out[r.ids[i]];
      for (int d = 0; d < r.dims; ++d) b.lower.push_back(r.lo(i, d)), b.upper.push_back(r.hi(i, d));
    }
    return out;
  }
  RegionSet<T> set(const std::map<std::uint64_t, Bounds<T>>& m) const {
    RegionSet<T> r;
    r.dims = dims;
    for (const auto& [id, b] : m) r.ids.push_back(id);
    const std::size_t n = m.size();
    r.lower.resize(n * static_cast<std::size_t>(dims));
    r.upper.resize(n * static_cast<std::size_t>(dims));
    std::size_t i = 0;
    for (const auto& [id, b] : m) {
      for (int d = 0; d < dims; ++d) {
        r.lower[static_cast<std::size_t>(d) * n + i] = b.lower[static_cast<std::size_t>(d)];
        r.upper[static_cast<std::size_t>(d) * n + i] = b.upper[static_cast<std::size_t>(d)];
      }
      ++i;
    }
    return r;
  }
  void apply(const Change<T>& c) {
    auto& m = side(c.role);
    if (c.kind == Change<T>::Kind::Remove) {
      m.erase(c.id);
    } else {
      m[c.id] = {c.lower, c.upper};
    }
  }
};

// The full rematch: brute force from scratch, as sorted (subscription id, update id).
template <class T>
PairList full_rematch(const Model<T>& model, Rule rule) {
  const RegionSet<T> s = model.set(model.s), u = model.set(model.u);
  PairList out;
  for (const auto& [i, j] : test::brute_pairs(s, u, rule)) out.push_back({s.ids[i], u.ids[j]});
  std::sort(out.begin(), out.end());
  return out;
}

PairList minus(const PairList& a, const PairList& b) {
  PairList out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Random bounds like test::random_set's: base + [0, span] (half-units for doubles), sometimes of
// zero length, at most max_width units wide (0: no limit).
template <class T>
Bounds<T> random_bounds(std::mt19937_64& gen, int dims, T base, std::uint64_t span, std::uint64_t max_width = 0) {
  std::uniform_int_distribution<std::uint64_t> pick(0, span);
  Bounds<T> b;
  for (int d = 0; d < dims; ++d) {
    std::uint64_t lo = pick(gen), hi = pick(gen);
    if (lo > hi) std::swap(lo, hi);
    if (gen() % 6 == 0) hi = lo;
    if (max_width > 0) hi = std::min(hi, lo + gen() % (max_width + 1));
    if constexpr (std::is_floating_point_v<T>) {
      b.lower.push_back(base + static_cast<T>(lo) * T(0.5));
      b.upper.push_back(base + static_cast<T>(hi) * T(0.5));
    } else {
      b.lower.push_back(static_cast<T>(base + lo));
      b.upper.push_back(static_cast<T>(base + hi));
    }
  }
  return b;
}

template <class T>
std::uint64_t random_id(std::mt19937_64& gen, const std::map<std::uint64_t, Bounds<T>>& m) {
  auto it = m.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(gen() % m.size()));
  return it->first;
}

// A random batch, valid in order against `model` (updated to the state after the batch): adds,
// moves and removes on both sides, with regions changed several times, moved and moved back,
// removed and added again, added and removed again.
template <class T>
std::vector<Change<T>> random_batch(std::mt19937_64& gen, Model<T>& model, std::size_t size, T base, std::uint64_t span,
                                    std::uint64_t max_width, std::uint64_t& next_id,
                                    std::vector<std::uint64_t> (&retired)[2]) {
  std::vector<Change<T>> batch;
  std::uint64_t last_id[2] = {0, 0};
  bool have_last[2] = {false, false};
  while (batch.size() < size) {
    const Role side = gen() % 2 == 0 ? Role::Subscription : Role::Update;
    const int si = side == Role::Subscription ? 0 : 1;
    auto& m = model.side(side);
    const unsigned what = static_cast<unsigned>(gen() % 10);
    std::vector<Change<T>> add;
    if (m.empty() || what < 2) {
      // A new id, or one removed in an earlier batch (ids come back).
      std::uint64_t id = next_id++;
      std::erase_if(retired[si], [&](std::uint64_t r) { return m.count(r) != 0; });
      if (!retired[si].empty() && gen() % 3 == 0) id = retired[si][gen() % retired[si].size()];
      const Bounds<T> b = random_bounds(gen, model.dims, base, span, max_width);
      add.push_back(Change<T>::add(side, id, b.lower, b.upper));
      if (gen() % 4 == 0) add.push_back(Change<T>::remove(side, id));  // added and removed again
    } else {
      // Mostly a random region; sometimes the one this side changed last, if it is still there.
      std::uint64_t id = random_id(gen, m);
      if (have_last[si] && m.count(last_id[si]) && gen() % 3 == 0) id = last_id[si];
      const Bounds<T> old = m.at(id);
      if (what < 7) {
        const Bounds<T> b = random_bounds(gen, model.dims, base, span, max_width);
        add.push_back(Change<T>::move(side, id, b.lower, b.upper));
        if (what == 6) add.push_back(Change<T>::move(side, id, old.lower, old.upper));  // and back
      } else if (what < 9) {
        add.push_back(Change<T>::remove(side, id));
        if (what == 8) {
          // Removed and added again, at the old bounds or new ones.
          const Bounds<T> b = gen() % 2 ? old : random_bounds(gen, model.dims, base, span, max_width);
          add.push_back(Change<T>::add(side, id, b.lower, b.upper));
        }
      } else {
        // Moved several times.
        for (int k = 0; k < 3; ++k) {
          const Bounds<T> b = random_bounds(gen, model.dims, base, span, max_width);
          add.push_back(Change<T>::move(side, id, b.lower, b.upper));
        }
      }
    }
    for (Change<T>& c : add) {
      last_id[si] = c.id;
      have_last[si] = true;
      if (c.kind == Change<T>::Kind::Remove) retired[si].push_back(c.id);
      model.apply(c);
      batch.push_back(std::move(c));
    }
  }
  return batch;
}

// The matcher's state against the model: regions, pair set, pair count.
template <class T>
void expect_state(const IncrementalMatcher<T>& m, const Model<T>& model, const PairList& pairs) {
  EXPECT_TRUE(Model<T>::from(m.subscriptions()) == model.s) << "subscriptions differ";
  EXPECT_TRUE(Model<T>::from(m.updates()) == model.u) << "updates differ";
  EXPECT_EQ(m.pairs(), pairs.size());
  const PairList got = m.pair_list();
  ASSERT_EQ(got.size(), pairs.size());
  EXPECT_TRUE(got == pairs) << "maintained pair set differs from the full rematch";
  std::uint64_t visited = 0;
  m.for_each_pair([&](std::uint64_t, std::uint64_t) { ++visited; });
  EXPECT_EQ(visited, pairs.size());
}

using test::host_runs;
using test::Run;

// Rounds of random batches; after each, the delta against the set difference of the full
// rematches before and after, and the maintained state against the model. Regions at most
// max_width wide (0: any). Returns the number of batches matched against the prefilter's
// candidates rather than a whole set.
template <class T>
int random_rounds(const Run& run, Rule rule, int dims, T base, std::uint64_t span, std::uint64_t seed, std::size_t ns,
                  std::size_t nu, int rounds, std::uint64_t max_width = 0) {
  SCOPED_TRACE("algorithm " + std::string(to_string(run.algorithm)) + " rule " + std::string(to_string(rule)) +
               " dims " + std::to_string(dims) + " seed " + std::to_string(seed));
  std::mt19937_64 gen(seed);
  Model<T> model;
  model.dims = dims;
  RegionSet<T> s = test::random_set<T>(gen, ns, dims, base, span);
  RegionSet<T> u = test::random_set<T>(gen, nu, dims, base, span, 5, 1000000);
  if (max_width > 0) {
    for (RegionSet<T>* r : {&s, &u})
      for (std::size_t k = 0; k < r->lower.size(); ++k) {
        if constexpr (std::is_floating_point_v<T>) {
          r->upper[k] = std::min(r->upper[k], r->lower[k] + static_cast<T>(k % (max_width + 1)) * T(0.5));
        } else {
          r->upper[k] = std::min(r->upper[k], static_cast<T>(r->lower[k] + k % (max_width + 1)));
        }
      }
  }
  model.s = Model<T>::from(s);
  model.u = Model<T>::from(u);
  MatchOptions o;
  o.rule = rule;
  o.algorithm = run.algorithm;
  o.backend = run.backend;
  o.threads = 2;
  o.chunk_pairs = 1 + gen() % 40;  // many sink calls
  IncrementalMatcher<T> m(std::move(s), std::move(u), o);
  PairList before = full_rematch(model, rule);
  expect_state(m, model, before);
  std::uint64_t next_id = 5000000;
  std::vector<std::uint64_t> retired[2];
  int filtered = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::size_t size = round % 5 == 0 ? 0 : 1 + gen() % 25;  // some empty batches
    const std::vector<Change<T>> batch = random_batch(gen, model, size, base, span, max_width, next_id, retired);
    Delta delta = m.apply(batch);
    sort_delta(delta);
    const ApplyReport& r = m.last_report();
    if ((r.subscriptions > 0 && r.candidates_u < m.updates().size()) ||
        (r.updates > 0 && r.candidates_s < m.subscriptions().size())) {
      ++filtered;
    }
    const PairList after = full_rematch(model, rule);
    EXPECT_TRUE(delta.gained == minus(after, before))
        << "gained: " << delta.gained.size() << " vs " << minus(after, before).size();
    EXPECT_TRUE(delta.lost == minus(before, after))
        << "lost: " << delta.lost.size() << " vs " << minus(before, after).size();
    if (size == 0) {
      EXPECT_TRUE(delta.empty());
    }
    expect_state(m, model, after);
    if (::testing::Test::HasFailure()) return filtered;
    before = after;
  }
  return filtered;
}

template <class T>
void all_rules_and_dims(const std::vector<Run>& runs, T base, std::uint64_t span, std::uint64_t seed) {
  for (int dims = 1; dims <= 4; ++dims)
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
      for (const Run& run : runs)
        random_rounds<T>(run, rule, dims, base, span, seed + static_cast<std::uint64_t>(dims) * 31, 40, 50, 12);
}

TEST(DdmIncremental, RandomBatchesU32) { all_rules_and_dims<std::uint32_t>(host_runs(), 0u, 10, 1); }
TEST(DdmIncremental, RandomBatchesU64Above2To53) {
  all_rules_and_dims<std::uint64_t>(host_runs(), (std::uint64_t{1} << 60) + 3, 16, 2);
}
TEST(DdmIncremental, RandomBatchesDoubles) { all_rules_and_dims<double>(host_runs(), -7.25, 30, 3); }

// Fewer, larger regions sets and longer runs of batches with the cpu matcher.
TEST(DdmIncremental, ManyRoundsLargerSets) {
  for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
    random_rounds<std::uint64_t>({Algorithm::Parallel, Backend::Cpu}, rule, 2, 0, 200, 11, 400, 300, 40);
}

// Small regions in a large space: the prefilter leaves most regions out, including at ties on
// cell edges (integer bounds) and zero-length ranges.
TEST(DdmIncremental, SmallRegionsInALargeSpace) {
  int filtered = 0;
  for (int dims = 1; dims <= 3; ++dims)
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
      filtered += random_rounds<std::uint32_t>({Algorithm::Parallel, Backend::Cpu}, rule, dims, 0u, 3000,
                                               100 + static_cast<std::uint64_t>(dims), 600, 500, 15, 40);
      filtered += random_rounds<double>({Algorithm::Sbm, Backend::Reference}, rule, dims, -100.0, 3000,
                                        200 + static_cast<std::uint64_t>(dims), 500, 600, 15, 40);
      filtered += random_rounds<std::uint64_t>({Algorithm::BruteForce, Backend::Reference}, rule, dims,
                                               (std::uint64_t{1} << 60) + 3, 3000,
                                               300 + static_cast<std::uint64_t>(dims), 300, 300, 15, 40);
    }
  EXPECT_GT(filtered, 50);  // the prefilter was used, not only the whole sets
}

// Batches of hundreds to thousands of changes (the bookkeeping then runs on several threads).
// On cuda, the changed lists outgrow their threshold (4096) and the device index is rebuilt, and
// the adds outgrow the slots reserved and the device state is rebuilt from the regions.
TEST(DdmIncremental, LargeBatches) {
  std::vector<Backend> backends = {Backend::Cpu};
  if (simkit::test::cuda_usable()) backends.push_back(Backend::Cuda);
  for (const Backend backend : backends)
    for (const int threads : {2, 3})
      for (Rule rule : {Rule::Ieee1516, Rule::Closed}) {
        if (backend == Backend::Cuda && threads == 3) continue;
        SCOPED_TRACE("threads " + std::to_string(threads) + " backend " + std::string(to_string(backend)));
        std::mt19937_64 gen(static_cast<std::uint64_t>(40 + threads));
        Model<std::uint32_t> model;
        model.dims = 2;
        RegionSet<std::uint32_t> s = test::random_set<std::uint32_t>(gen, 2500, 2, 0u, 5000, 9);
        RegionSet<std::uint32_t> u = test::random_set<std::uint32_t>(gen, 2000, 2, 0u, 5000, 11, 1000000);
        for (RegionSet<std::uint32_t>* r : {&s, &u})
          for (std::size_t k = 0; k < r->lower.size(); ++k)
            r->upper[k] = std::min(r->upper[k], static_cast<std::uint32_t>(r->lower[k] + 150 + k % 50));
        model.s = Model<std::uint32_t>::from(s);
        model.u = Model<std::uint32_t>::from(u);
        MatchOptions o;
        o.rule = rule;
        o.backend = backend;
        o.threads = threads;
        IncrementalMatcher<std::uint32_t> m(std::move(s), std::move(u), o);
        PairList before = full_rematch(model, rule);
        std::uint64_t next_id = 5000000;
        std::vector<std::uint64_t> retired[2];
        for (int round = 0; round < 6; ++round) {
          const std::size_t size = 1500 + gen() % 4000;  // from 4096 changes, the staging is parallel too
          const auto batch = random_batch<std::uint32_t>(gen, model, size, 0u, 5000, 200, next_id, retired);
          Delta delta = m.apply(batch);
          sort_delta(delta);
          const PairList after = full_rematch(model, rule);
          EXPECT_GE(m.last_report().subscriptions + m.last_report().updates + m.last_report().removed, 512u);
          EXPECT_TRUE(delta.gained == minus(after, before)) << "round " << round;
          EXPECT_TRUE(delta.lost == minus(before, after)) << "round " << round;
          expect_state(m, model, after);
          if (::testing::Test::HasFailure()) return;
          before = after;
        }
      }
}

TEST(DdmIncremental, CudaBackend) {
  SIMKIT_SKIP_WITHOUT_CUDA();
  for (int dims = 1; dims <= 3; ++dims)
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed})
      random_rounds<double>({Algorithm::Gpu, Backend::Cuda}, rule, dims, -7.25, 30, 17, 60, 70, 10);
}

// The deltas, unsorted, are the same for every thread count and backend (the order is defined by
// the batch and the slots, never by the scheduling), and the resident backends report testing far
// fewer regions than a whole set.
TEST(DdmIncremental, DeltaOrderIsTheSameForEveryThreadCountAndBackend) {
  std::vector<test::Run> runs = {{Algorithm::BruteForce, Backend::Reference}, {Algorithm::Parallel, Backend::Cpu}};
  if (simkit::test::cuda_usable()) runs.push_back({Algorithm::Gpu, Backend::Cuda});
  for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
    std::vector<std::vector<Delta>> seen;
    for (const test::Run& run : runs)
      for (const int threads : {1, 2, 3}) {
        if (run.backend != Backend::Cpu && threads > 1) continue;
        std::mt19937_64 gen(77);
        Model<std::uint32_t> model;
        model.dims = 2;
        RegionSet<std::uint32_t> s = test::random_set<std::uint32_t>(gen, 3000, 2, 0u, 20000, 9);
        RegionSet<std::uint32_t> u = test::random_set<std::uint32_t>(gen, 2500, 2, 0u, 20000, 11, 1000000);
        for (RegionSet<std::uint32_t>* r : {&s, &u})
          for (std::size_t k = 0; k < r->lower.size(); ++k)
            r->upper[k] = std::min(r->upper[k], static_cast<std::uint32_t>(r->lower[k] + 300 + k % 200));
        model.s = Model<std::uint32_t>::from(s);
        model.u = Model<std::uint32_t>::from(u);
        MatchOptions o;
        o.rule = rule;
        o.backend = run.backend;
        o.algorithm = run.algorithm;
        o.threads = threads;
        IncrementalMatcher<std::uint32_t> m(std::move(s), std::move(u), o);
        EXPECT_EQ(m.resident(), run.backend != Backend::Reference);
        std::uint64_t next_id = 5000000;
        std::vector<std::uint64_t> retired[2];
        std::vector<Delta> deltas;
        for (int round = 0; round < 4; ++round) {
          const auto batch = random_batch<std::uint32_t>(gen, model, 600 + 300 * static_cast<std::size_t>(round), 0u,
                                                         20000, 400, next_id, retired);
          deltas.push_back(m.apply(batch));
          if (m.resident()) {
            const ApplyReport& r = m.last_report();
            EXPECT_LT(r.candidates_u, 2 * r.subscriptions * m.updates().size() / 20);
          }
        }
        seen.push_back(std::move(deltas));
      }
    for (std::size_t k = 1; k < seen.size(); ++k)
      for (std::size_t round = 0; round < seen[0].size(); ++round) {
        EXPECT_TRUE(seen[k][round].gained == seen[0][round].gained) << "run " << k << " round " << round;
        EXPECT_TRUE(seen[k][round].lost == seen[0][round].lost) << "run " << k << " round " << round;
      }
  }
}

// Sets that start empty, fill up, and empty again.
TEST(DdmIncremental, FromEmptyToEmpty) {
  std::mt19937_64 gen(9);
  Model<std::uint32_t> model;
  model.dims = 2;
  IncrementalMatcher<std::uint32_t> m(model.set(model.s), model.set(model.u), {});
  EXPECT_EQ(m.pairs(), 0u);
  EXPECT_TRUE(m.apply({}).empty());
  std::vector<Change<std::uint32_t>> fill;
  for (std::uint64_t id = 1; id <= 30; ++id)
    for (Role side : {Role::Subscription, Role::Update}) {
      const Bounds<std::uint32_t> b = random_bounds<std::uint32_t>(gen, 2, 0u, 8);
      fill.push_back(Change<std::uint32_t>::add(side, id, b.lower, b.upper));
      model.apply(fill.back());
    }
  const PairList full = full_rematch(model, Rule::Ieee1516);
  ASSERT_FALSE(full.empty());
  Delta delta = m.apply(fill);
  sort_delta(delta);
  EXPECT_TRUE(delta.gained == full);
  EXPECT_TRUE(delta.lost.empty());
  expect_state(m, model, full);
  std::vector<Change<std::uint32_t>> clear;
  for (std::uint64_t id = 1; id <= 30; ++id)
    for (Role side : {Role::Subscription, Role::Update}) clear.push_back(Change<std::uint32_t>::remove(side, id));
  model.s.clear();
  model.u.clear();
  delta = m.apply(clear);
  sort_delta(delta);
  EXPECT_TRUE(delta.gained.empty());
  EXPECT_TRUE(delta.lost == full);
  expect_state(m, model, {});
  EXPECT_EQ(m.subscriptions().size(), 0u);
}

// One region touched several times in a batch: only the net effect counts.
TEST(DdmIncremental, SameRegionTwiceInABatch) {
  // S 1 = [0, 10], S 2 = [20, 30]; U 7 = [5, 6], U 8 = [25, 26]; pairs (1, 7), (2, 8).
  using C = Change<double>;
  RegionSet<double> s{1, {1, 2}, {0, 20}, {10, 30}}, u{1, {7, 8}, {5, 25}, {6, 26}};
  IncrementalMatcher<double> m(s, u, {});
  ASSERT_EQ(m.pair_list(), (PairList{{1, 7}, {2, 8}}));
  const auto sub = Role::Subscription, upd = Role::Update;
  // Moved and moved back; moved twice, ending where it was.
  Delta d = m.apply({C::move(sub, 1, {20}, {30}), C::move(sub, 1, {0}, {10})});
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(m.last_report().subscriptions, 0u);
  d = m.apply({C::move(upd, 7, {21}, {22}), C::move(upd, 7, {100}, {101}), C::move(upd, 7, {5}, {6})});
  EXPECT_TRUE(d.empty());
  // Added and removed again: nothing; removed and added again elsewhere: a move.
  d = m.apply({C::add(sub, 3, {0}, {100}), C::remove(sub, 3)});
  EXPECT_TRUE(d.empty());
  d = m.apply({C::remove(sub, 1), C::add(sub, 1, {20}, {30})});
  EXPECT_EQ(d.gained, (PairList{{1, 8}}));
  EXPECT_EQ(d.lost, (PairList{{1, 7}}));
  // Removed, added again, moved back: nothing.
  d = m.apply({C::remove(sub, 1), C::add(sub, 1, {50}, {60}), C::move(sub, 1, {20}, {30})});
  EXPECT_TRUE(d.empty());
  // Both sides of a pair changed in one batch: the pair counts once.
  d = m.apply(
      {C::move(sub, 2, {0}, {10}), C::move(upd, 7, {1}, {2}), C::move(sub, 1, {0}, {3}), C::move(upd, 8, {2}, {3})});
  EXPECT_EQ(m.pair_list(), (PairList{{1, 7}, {1, 8}, {2, 7}, {2, 8}}));
  EXPECT_EQ(d.lost, PairList{});
  sort_delta(d);
  EXPECT_EQ(d.gained, (PairList{{1, 7}, {2, 7}}));  // (1, 8) and (2, 8) were there before
  EXPECT_EQ(m.pairs(), 4u);
}

// Each bad change, after good ones in the same batch: a UserError naming the id, nothing changed.
TEST(DdmIncremental, BadChangesLeaveTheMatcherUnchanged) {
  using C = Change<double>;
  std::mt19937_64 gen(4);
  RegionSet<double> s = test::random_set<double>(gen, 30, 2, 0.0, 20);
  RegionSet<double> u = test::random_set<double>(gen, 30, 2, 0.0, 20, 5, 1000000);
  Model<double> model;
  model.dims = 2;
  model.s = Model<double>::from(s);
  model.u = Model<double>::from(u);
  const std::uint64_t s_id = s.ids[3], u_id = u.ids[4];
  IncrementalMatcher<double> m(s, u, {});
  const PairList pairs = full_rematch(model, Rule::Ieee1516);
  const auto sub = Role::Subscription, upd = Role::Update;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<C> good = {C::move(sub, s_id, {0, 0}, {20, 20}), C::add(upd, 777, {1, 1}, {2, 2}),
                               C::remove(upd, u_id)};
  struct Bad {
    C change;
    std::uint64_t id;
  };
  const std::vector<Bad> bad = {
      {C::move(sub, 424242, {0, 0}, {1, 1}), 424242},   // unknown id
      {C::remove(upd, 424243), 424243},                 // unknown id
      {C::add(sub, s_id, {0, 0}, {1, 1}), s_id},        // id present
      {C::add(upd, 777, {0, 0}, {1, 1}), 777},          // added earlier in the batch
      {C::move(upd, u_id, {0, 0}, {1, 1}), u_id},       // removed earlier in the batch
      {C::remove(upd, u_id), u_id},                     // removed twice
      {C::move(sub, s_id, {0, 5}, {1, 4}), s_id},       // lower > upper
      {C::move(sub, s_id, {0, nan}, {1, 1}), s_id},     // NaN
      {C::add(sub, 5088, {0, 0}, {1, nan}), 5088},      // NaN
      {C::move(sub, s_id, {0}, {1}), s_id},             // one dimension, not two
      {C::add(upd, 5099, {0, 0, 0}, {1, 1, 1}), 5099},  // three
      {C::add(upd, 5098, {0, 0}, {1}), 5098},           // lower and upper of different lengths
  };
  for (const Bad& b : bad) {
    std::vector<C> batch = good;
    batch.push_back(b.change);
    batch.push_back(C::move(sub, s.ids[5], {3, 3}, {4, 4}));
    try {
      m.apply(batch);
      ADD_FAILURE() << "no UserError for id " << b.id;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("region " + std::to_string(b.id)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("batch change 3"), std::string::npos) << e.what();
    }
    expect_state(m, model, pairs);
  }
  // Still works afterwards.
  for (const C& c : good) model.apply(c);
  Delta d = m.apply(good);
  sort_delta(d);
  const PairList after = full_rematch(model, Rule::Ieee1516);
  EXPECT_TRUE(d.gained == minus(after, pairs));
  EXPECT_TRUE(d.lost == minus(pairs, after));
  expect_state(m, model, after);
}

TEST(DdmIncremental, BadSetsAreUserErrors) {
  RegionSet<double> ok{1, {1}, {0}, {1}};
  EXPECT_THROW(IncrementalMatcher<double>(RegionSet<double>{1, {1, 1}, {0, 0}, {1, 1}}, ok, {}), UserError);
  EXPECT_THROW(IncrementalMatcher<double>(RegionSet<double>{1, {1}, {2}, {1}}, ok, {}), UserError);
  EXPECT_THROW(IncrementalMatcher<double>(RegionSet<double>{1, {1, 2}, {0}, {1}}, ok, {}), UserError);
  EXPECT_THROW(IncrementalMatcher<double>(RegionSet<double>{2, {1}, {0, 0}, {1, 1}}, ok, {}), UserError);
  MatchOptions o;
  o.algorithm = Algorithm::Sbm;
  o.backend = Backend::Cpu;
  EXPECT_THROW(IncrementalMatcher<double>(ok, ok, o), UserError);
  const RegionSet<double> empty{1, {}, {}, {}};
  EXPECT_THROW(IncrementalMatcher<double>(empty, empty, o), UserError);  // checked even with nothing to match
}

}  // namespace
}  // namespace simkit::ddm
