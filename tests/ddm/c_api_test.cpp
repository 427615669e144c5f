// The ddm C API (include/simkit/ddm/c_api.h) called from C++: pairs, counts and per-region counts for u32, u64 and
// f64 against a brute-force loop written here, on random inputs with ties, for every rule and the
// host algorithms (and the auto backend, which is cuda on a GPU build with a device); cancellation by
// the callback; bad input, NULL pointers, empty sets, option ranges; and the compiled C example.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "simkit/ddm/c_api.h"
#include "regions.hpp"

#if __has_include(<sys/wait.h>)
#include <sys/wait.h>
#endif

namespace {

using IdPairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// A handle that is destroyed at the end of the test.
struct Handle {
  simkit_ddm_matcher* m = nullptr;
  Handle() { EXPECT_EQ(simkit_ddm_create(&m), SIMKIT_DDM_OK); }
  ~Handle() { simkit_ddm_destroy(m); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  operator simkit_ddm_matcher*() const { return m; }
};

// Region sets in the C API's layout (ids[i], lower[d * n + i], upper[d * n + i]) are the C++
// API's RegionSet; random ones come from the ddm tests' generator (every 5th range of zero length).
template <class T>
using Set = simkit::ddm::RegionSet<T>;
template <class T>
Set<T> random_set(std::mt19937_64& gen, std::size_t n, int dims, T base, std::uint64_t span, std::uint64_t id_base) {
  return simkit::ddm::test::random_set<T>(gen, n, dims, base, span, 5, id_base);
}
// A writable bound of region i in dimension d (bounds: lower or upper of r).
template <class T>
T& bound(std::vector<T>& bounds, const Set<T>& r, std::size_t i, int d) {
  return bounds[static_cast<std::size_t>(d) * r.size() + i];
}

// The overlap rules, written out from c_api.h's comment.
template <class T>
bool overlap(simkit_ddm_rule rule, T alo, T ahi, T blo, T bhi) {
  switch (rule) {
    case SIMKIT_DDM_RULE_CLOSED:
      return alo <= bhi && blo <= ahi;
    case SIMKIT_DDM_RULE_HALF_OPEN:
      return alo < bhi && blo < ahi;
    default:
      return alo == blo || (alo < bhi && blo < ahi);
  }
}

template <class T>
IdPairs brute(const Set<T>& s, const Set<T>& u, simkit_ddm_rule rule) {
  IdPairs out;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < u.size(); ++j) {
      bool all = true;
      for (int d = 0; d < s.dims && all; ++d) all = overlap(rule, s.lo(i, d), s.hi(i, d), u.lo(j, d), u.hi(j, d));
      if (all) out.push_back({s.ids[i], u.ids[j]});
    }
  std::sort(out.begin(), out.end());
  return out;
}

// The C API's entry points for coordinate type T, by overloading on the bound pointers.
#define C_API_OVERLOADS(SUFFIX, T)                                                                                 \
  simkit_ddm_status c_match(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* si, const T* sl, \
                            const T* su, std::size_t nu, const std::uint64_t* ui, const T* ul, const T* uu,        \
                            simkit_ddm_pair_callback cb, void* user) {                                             \
    return simkit_ddm_match_pairs_##SUFFIX(m, dims, ns, si, sl, su, nu, ui, ul, uu, cb, user);                     \
  }                                                                                                                \
  simkit_ddm_status c_count(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* si, const T* sl, \
                            const T* su, std::size_t nu, const std::uint64_t* ui, const T* ul, const T* uu,        \
                            std::uint64_t* count) {                                                                \
    return simkit_ddm_count_pairs_##SUFFIX(m, dims, ns, si, sl, su, nu, ui, ul, uu, count);                        \
  }                                                                                                                \
  simkit_ddm_status c_per_region(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* si,         \
                                 const T* sl, const T* su, std::size_t nu, const std::uint64_t* ui, const T* ul,   \
                                 const T* uu, std::uint64_t* per_s, std::uint64_t* per_u) {                        \
    return simkit_ddm_count_per_region_##SUFFIX(m, dims, ns, si, sl, su, nu, ui, ul, uu, per_s, per_u);            \
  }
C_API_OVERLOADS(u32, std::uint32_t)
C_API_OVERLOADS(u64, std::uint64_t)
C_API_OVERLOADS(f64, double)
#undef C_API_OVERLOADS

// What the pair callback saw.
struct Collected {
  IdPairs pairs;
  std::size_t calls = 0, largest = 0;
  int stop_after = 0;  // > 0: return 1 on that call
};

int collect(const std::uint64_t* sub_ids, const std::uint64_t* upd_ids, std::size_t count, void* user) {
  auto* c = static_cast<Collected*>(user);
  ++c->calls;
  c->largest = std::max(c->largest, count);
  for (std::size_t k = 0; k < count; ++k) c->pairs.push_back({sub_ids[k], upd_ids[k]});
  return c->stop_after > 0 && c->calls >= static_cast<std::size_t>(c->stop_after) ? 1 : 0;
}

template <class T>
simkit_ddm_status run_pairs(simkit_ddm_matcher* m, const Set<T>& s, const Set<T>& u, Collected& c) {
  return c_match(m, s.dims, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(), u.ids.data(),
                 u.lower.data(), u.upper.data(), collect, &c);
}
template <class T>
simkit_ddm_status run_count(simkit_ddm_matcher* m, const Set<T>& s, const Set<T>& u, std::uint64_t& count) {
  return c_count(m, s.dims, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(), u.ids.data(),
                 u.lower.data(), u.upper.data(), &count);
}

struct Choice {
  simkit_ddm_backend backend;
  simkit_ddm_algorithm algorithm;
};
// The host algorithms and the auto backend; with a usable CUDA device, the two device algorithms too.
std::vector<Choice> choices() {
  std::vector<Choice> out = {{SIMKIT_DDM_BACKEND_REFERENCE, SIMKIT_DDM_ALGORITHM_BRUTE_FORCE},
                             {SIMKIT_DDM_BACKEND_REFERENCE, SIMKIT_DDM_ALGORITHM_SBM},
                             {SIMKIT_DDM_BACKEND_REFERENCE, SIMKIT_DDM_ALGORITHM_GRID},
                             {SIMKIT_DDM_BACKEND_REFERENCE, SIMKIT_DDM_ALGORITHM_INTERVAL_TREE},
                             {SIMKIT_DDM_BACKEND_CPU, SIMKIT_DDM_ALGORITHM_PARALLEL},
                             {SIMKIT_DDM_BACKEND_AUTO, SIMKIT_DDM_ALGORITHM_AUTO}};
  simkit_ddm_matcher* m = nullptr;
  if (simkit_ddm_create(&m) != SIMKIT_DDM_OK) return out;
  std::uint64_t count = 0;
  simkit_ddm_set_backend(m, SIMKIT_DDM_BACKEND_CUDA);
  if (simkit_ddm_count_pairs_u64(m, 1, 0, nullptr, nullptr, nullptr, 0, nullptr, nullptr, nullptr, &count) ==
      SIMKIT_DDM_OK) {
    out.push_back({SIMKIT_DDM_BACKEND_CUDA, SIMKIT_DDM_ALGORITHM_GPU});
    out.push_back({SIMKIT_DDM_BACKEND_CUDA, SIMKIT_DDM_ALGORITHM_BITMATRIX});
  }
  simkit_ddm_destroy(m);
  return out;
}
constexpr std::array<simkit_ddm_rule, 3> kRules = {SIMKIT_DDM_RULE_IEEE1516, SIMKIT_DDM_RULE_HALF_OPEN,
                                                   SIMKIT_DDM_RULE_CLOSED};

template <class T>
void against_brute_force(T base, std::uint64_t span, simkit_ddm_coords coords) {
  std::mt19937_64 gen(424242 + span);
  Handle m;
  const std::vector<Choice> all = choices();
  for (int trial = 0; trial < 12; ++trial) {
    const int dims = 1 + trial % 4;
    const Set<T> s = random_set<T>(gen, 1 + gen() % 90, dims, base, span, 1);
    const Set<T> u = random_set<T>(gen, 1 + gen() % 90, dims, base, span, 1000003);
    for (simkit_ddm_rule rule : kRules)
      for (const Choice& choice : all) {
        SCOPED_TRACE("trial " + std::to_string(trial) + " rule " + std::to_string(rule) + " backend " +
                     std::to_string(choice.backend) + " algorithm " + std::to_string(choice.algorithm));
        const IdPairs expected = brute(s, u, rule);
        const std::size_t chunk = 1 + gen() % 40;
        ASSERT_EQ(simkit_ddm_set_rule(m, rule), SIMKIT_DDM_OK);
        ASSERT_EQ(simkit_ddm_set_backend(m, choice.backend), SIMKIT_DDM_OK);
        ASSERT_EQ(simkit_ddm_set_algorithm(m, choice.algorithm), SIMKIT_DDM_OK);
        ASSERT_EQ(simkit_ddm_set_chunk_pairs(m, chunk), SIMKIT_DDM_OK);
        ASSERT_EQ(simkit_ddm_set_threads(m, 1 + trial % 3), SIMKIT_DDM_OK);

        Collected c;
        ASSERT_EQ(run_pairs(m, s, u, c), SIMKIT_DDM_OK) << simkit_ddm_last_error(m);
        EXPECT_STREQ(simkit_ddm_last_error(m), "");
        std::sort(c.pairs.begin(), c.pairs.end());
        EXPECT_TRUE(c.pairs == expected) << "pair lists differ: " << c.pairs.size() << " vs " << expected.size();
        EXPECT_LE(c.largest, chunk);
        simkit_ddm_report report;
        ASSERT_EQ(simkit_ddm_last_report(m, &report), SIMKIT_DDM_OK);
        EXPECT_EQ(report.pairs, expected.size());
        EXPECT_EQ(report.coords, coords);
        EXPECT_NE(report.backend, SIMKIT_DDM_BACKEND_AUTO);
        EXPECT_NE(report.algorithm, SIMKIT_DDM_ALGORITHM_AUTO);
        if (choice.algorithm != SIMKIT_DDM_ALGORITHM_AUTO) {
          EXPECT_EQ(report.algorithm, choice.algorithm);
        }
        ASSERT_NE(report.device, nullptr);
        EXPECT_NE(std::string(report.device), "");
        EXPECT_GE(report.seconds, 0.0);

        std::uint64_t count = 12345;
        ASSERT_EQ(run_count(m, s, u, count), SIMKIT_DDM_OK) << simkit_ddm_last_error(m);
        EXPECT_EQ(count, expected.size());

        std::vector<std::uint64_t> per_s(s.size(), 99), per_u(u.size(), 99), want_s(s.size(), 0), want_u(u.size(), 0);
        for (const auto& [sid, uid] : expected) {
          ++want_s[static_cast<std::size_t>(std::find(s.ids.begin(), s.ids.end(), sid) - s.ids.begin())];
          ++want_u[static_cast<std::size_t>(std::find(u.ids.begin(), u.ids.end(), uid) - u.ids.begin())];
        }
        ASSERT_EQ(c_per_region(m, dims, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(), u.ids.data(),
                               u.lower.data(), u.upper.data(), per_s.data(), per_u.data()),
                  SIMKIT_DDM_OK)
            << simkit_ddm_last_error(m);
        EXPECT_EQ(per_s, want_s);
        EXPECT_EQ(per_u, want_u);
      }
  }
}

TEST(DdmCApi, U32AgainstBruteForce) { against_brute_force<std::uint32_t>(5u, 14, SIMKIT_DDM_COORDS_U32); }
TEST(DdmCApi, U64AgainstBruteForce) {
  against_brute_force<std::uint64_t>((std::uint64_t{1} << 61) + 1, 14, SIMKIT_DDM_COORDS_U64);
}
TEST(DdmCApi, U64WideRanges) { against_brute_force<std::uint64_t>(0, std::uint64_t{1} << 40, SIMKIT_DDM_COORDS_U64); }
TEST(DdmCApi, F64AgainstBruteForce) { against_brute_force<double>(-6.5, 30, SIMKIT_DDM_COORDS_F64); }

// Two sets where every subscription meets every update (1-D, all [0, 10]): n * n pairs.
Set<std::uint64_t> all_overlapping(std::size_t n, std::uint64_t id_base) {
  Set<std::uint64_t> r;
  r.dims = 1;
  for (std::size_t i = 0; i < n; ++i) r.ids.push_back(id_base + i);
  r.lower.assign(n, 0);
  r.upper.assign(n, 10);
  return r;
}

TEST(DdmCApi, CallbackCancels) {
  const Set<std::uint64_t> s = all_overlapping(300, 1), u = all_overlapping(300, 100000);
  for (const Choice& choice : choices())
    for (int threads : {1, 4}) {
      SCOPED_TRACE("backend " + std::to_string(choice.backend) + " algorithm " + std::to_string(choice.algorithm) +
                   " threads " + std::to_string(threads));
      Handle m;
      ASSERT_EQ(simkit_ddm_set_backend(m, choice.backend), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_algorithm(m, choice.algorithm), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_threads(m, threads), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_chunk_pairs(m, 50), SIMKIT_DDM_OK);
      Collected c;
      c.stop_after = 2;
      EXPECT_EQ(run_pairs(m, s, u, c), SIMKIT_DDM_CANCELLED);
      EXPECT_EQ(c.calls, 2u) << "the callback was called again after asking to stop";
      EXPECT_LE(c.pairs.size(), 100u);
      EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("cancelled"), std::string::npos) << simkit_ddm_last_error(m);
      simkit_ddm_report report;
      EXPECT_EQ(simkit_ddm_last_report(m, &report), SIMKIT_DDM_BAD_INPUT);
      EXPECT_EQ(report.pairs, 0u);
      // The handle works again afterwards.
      Collected all;
      ASSERT_EQ(run_pairs(m, s, u, all), SIMKIT_DDM_OK) << simkit_ddm_last_error(m);
      EXPECT_EQ(all.pairs.size(), 300u * 300u);
      EXPECT_STREQ(simkit_ddm_last_error(m), "");
    }
}

// Calling the handle from its own callback is refused (and does not disturb the running call).
struct Reentry {
  simkit_ddm_matcher* m = nullptr;
  simkit_ddm_status inner = SIMKIT_DDM_OK;
  std::size_t pairs = 0;
};
int reenter(const std::uint64_t*, const std::uint64_t*, std::size_t count, void* user) {
  auto* r = static_cast<Reentry*>(user);
  r->inner = simkit_ddm_set_rule(r->m, SIMKIT_DDM_RULE_CLOSED);
  r->pairs += count;
  return 0;
}

TEST(DdmCApi, CallbackCannotReenterTheHandle) {
  const Set<std::uint64_t> s = all_overlapping(20, 1), u = all_overlapping(20, 1000);
  Handle m;
  Reentry r{m, SIMKIT_DDM_OK, 0};
  ASSERT_EQ(simkit_ddm_match_pairs_u64(m, 1, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(),
                                       u.ids.data(), u.lower.data(), u.upper.data(), reenter, &r),
            SIMKIT_DDM_OK)
      << simkit_ddm_last_error(m);
  EXPECT_EQ(r.inner, SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(r.pairs, 400u);
}

// Bad regions: the status, and a message naming the set and the region.
template <class T>
void expect_bad(simkit_ddm_matcher* m, const Set<T>& s, const Set<T>& u, const std::vector<std::string>& words) {
  std::uint64_t count = 777;
  EXPECT_EQ(run_count(m, s, u, count), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(count, 777u);
  const std::string message = simkit_ddm_last_error(m);
  for (const std::string& w : words) EXPECT_NE(message.find(w), std::string::npos) << message << " lacks " << w;
  Collected c;
  EXPECT_EQ(run_pairs(m, s, u, c), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(c.calls, 0u);
  std::vector<std::uint64_t> per_s(s.size(), 5), per_u(u.size(), 5);
  EXPECT_EQ(c_per_region(m, s.dims, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(), u.ids.data(),
                         u.lower.data(), u.upper.data(), per_s.data(), per_u.data()),
            SIMKIT_DDM_BAD_INPUT);
  EXPECT_TRUE(std::all_of(per_s.begin(), per_s.end(), [](std::uint64_t v) { return v == 5; }));
  simkit_ddm_report report;
  EXPECT_EQ(simkit_ddm_last_report(m, &report), SIMKIT_DDM_BAD_INPUT);
}

template <class T>
void bad_regions() {
  std::mt19937_64 gen(7);
  const Set<T> s = random_set<T>(gen, 6, 2, T(1), 10, 1), u = random_set<T>(gen, 5, 2, T(1), 10, 500);
  Handle m;
  {
    Set<T> bad = u;
    bound(bad.lower, bad, 3, 1) = T(9);
    bound(bad.upper, bad, 3, 1) = T(4);
    expect_bad(m, s, bad, {"U", std::to_string(bad.ids[3]), "dimension 1", "lower"});
  }
  {
    Set<T> bad = s;
    bad.ids[4] = bad.ids[1];
    expect_bad(m, bad, u, {"S", std::to_string(bad.ids[1]), "duplicate"});
  }
  for (int dims : {0, 9, -1}) {
    Set<T> bad_s = s, bad_u = u;
    bad_s.dims = bad_u.dims = dims;
    expect_bad(m, bad_s, bad_u, {std::to_string(dims), "dimensions"});
  }
  {  // empty sets are checked too
    Set<T> bad_s, bad_u;
    bad_s.dims = bad_u.dims = 9;
    expect_bad(m, bad_s, bad_u, {"9"});
  }
  if constexpr (std::is_floating_point_v<T>) {
    Set<T> bad = s;
    bound(bad.lower, bad, 2, 0) = std::numeric_limits<double>::quiet_NaN();
    expect_bad(m, bad, u, {"S", std::to_string(bad.ids[2]), "NaN"});
    bad = s;
    bound(bad.upper, bad, 0, 1) = std::numeric_limits<double>::quiet_NaN();
    expect_bad(m, bad, u, {"NaN"});
    // Infinite bounds, refused as the region files' readers refuse them.
    bad = s;
    bound(bad.upper, bad, 1, 0) = std::numeric_limits<double>::infinity();
    expect_bad(m, bad, u, {"S", std::to_string(bad.ids[1]), "infinite"});
    Set<T> bad_u = u;
    bound(bad_u.lower, bad_u, 0, 0) = -std::numeric_limits<double>::infinity();
    expect_bad(m, s, bad_u, {"U", std::to_string(bad_u.ids[0]), "infinite"});
  }
  // A good call clears the message and works.
  std::uint64_t count = 0;
  EXPECT_EQ(run_count(m, s, u, count), SIMKIT_DDM_OK);
  EXPECT_STREQ(simkit_ddm_last_error(m), "");
  EXPECT_EQ(count, brute(s, u, SIMKIT_DDM_RULE_IEEE1516).size());
}

TEST(DdmCApi, BadRegionsU32) { bad_regions<std::uint32_t>(); }
TEST(DdmCApi, BadRegionsU64) { bad_regions<std::uint64_t>(); }
TEST(DdmCApi, BadRegionsF64) { bad_regions<double>(); }

TEST(DdmCApi, NullPointers) {
  const std::uint64_t ids[2] = {1, 2};
  const double lo[2] = {0, 1}, hi[2] = {1, 2};
  std::uint64_t count = 0, per[2] = {0, 0};
  EXPECT_EQ(simkit_ddm_create(nullptr), SIMKIT_DDM_BAD_INPUT);
  simkit_ddm_destroy(nullptr);
  ASSERT_NE(simkit_ddm_last_error(nullptr), nullptr);
  EXPECT_NE(std::string(simkit_ddm_last_error(nullptr)), "");
  EXPECT_EQ(simkit_ddm_count_pairs_f64(nullptr, 1, 2, ids, lo, hi, 2, ids, lo, hi, &count), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_rule(nullptr, SIMKIT_DDM_RULE_CLOSED), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_last_report(nullptr, nullptr), SIMKIT_DDM_BAD_INPUT);

  Handle m;
  const auto expect_null = [&](simkit_ddm_status status, const std::string& word) {
    EXPECT_EQ(status, SIMKIT_DDM_BAD_INPUT);
    const std::string message = simkit_ddm_last_error(m);
    EXPECT_NE(message.find(word), std::string::npos) << message;
    EXPECT_NE(message.find("NULL"), std::string::npos) << message;
  };
  // An enumerator value out of range (a C caller can pass any int; in C++ only values within the
  // enumeration's bit range are expressible, and rule 3 is one).
  EXPECT_EQ(simkit_ddm_set_rule(m, static_cast<simkit_ddm_rule>(3)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("rule 3: expected"), std::string::npos)
      << simkit_ddm_last_error(m);
  expect_null(simkit_ddm_count_pairs_f64(m, 1, 2, nullptr, lo, hi, 2, ids, lo, hi, &count), "s_ids");
  expect_null(simkit_ddm_count_pairs_f64(m, 1, 2, ids, nullptr, hi, 2, ids, lo, hi, &count), "s_lower");
  expect_null(simkit_ddm_count_pairs_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, nullptr, &count), "u_upper");
  expect_null(simkit_ddm_count_pairs_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, hi, nullptr), "count");
  expect_null(simkit_ddm_match_pairs_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, hi, nullptr, nullptr), "callback");
  expect_null(simkit_ddm_count_per_region_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, hi, nullptr, per), "per_s");
  expect_null(simkit_ddm_count_per_region_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, hi, per, nullptr), "per_u");
  EXPECT_EQ(simkit_ddm_last_report(m, nullptr), SIMKIT_DDM_BAD_INPUT);
  // Under IEEE 1516, [0,1] meets [0,1] (equal lower bounds) and [1,2] meets [1,2], not [0,1] and [1,2].
  ASSERT_EQ(simkit_ddm_count_pairs_f64(m, 1, 2, ids, lo, hi, 2, ids, lo, hi, &count), SIMKIT_DDM_OK);
  EXPECT_EQ(count, 2u);
}

TEST(DdmCApi, EmptySets) {
  const std::uint64_t ids[1] = {9};
  const std::uint32_t lo[2] = {0, 0}, hi[2] = {5, 5};
  for (const Choice& choice : choices()) {
    Handle m;
    ASSERT_EQ(simkit_ddm_set_backend(m, choice.backend), SIMKIT_DDM_OK);
    ASSERT_EQ(simkit_ddm_set_algorithm(m, choice.algorithm), SIMKIT_DDM_OK);
    std::uint64_t count = 5, per_u[1] = {7};
    EXPECT_EQ(simkit_ddm_count_pairs_u32(m, 2, 0, nullptr, nullptr, nullptr, 0, nullptr, nullptr, nullptr, &count),
              SIMKIT_DDM_OK)
        << simkit_ddm_last_error(m);
    EXPECT_EQ(count, 0u);
    count = 5;
    EXPECT_EQ(simkit_ddm_count_pairs_u32(m, 2, 0, nullptr, nullptr, nullptr, 1, ids, lo, hi, &count), SIMKIT_DDM_OK);
    EXPECT_EQ(count, 0u);
    Collected c;
    EXPECT_EQ(simkit_ddm_match_pairs_u32(m, 2, 1, ids, lo, hi, 0, nullptr, nullptr, nullptr, collect, &c),
              SIMKIT_DDM_OK);
    EXPECT_EQ(c.calls, 0u);
    EXPECT_EQ(simkit_ddm_count_per_region_u32(m, 2, 0, nullptr, nullptr, nullptr, 1, ids, lo, hi, nullptr, per_u),
              SIMKIT_DDM_OK);
    EXPECT_EQ(per_u[0], 0u);
    simkit_ddm_report report;
    ASSERT_EQ(simkit_ddm_last_report(m, &report), SIMKIT_DDM_OK);
    EXPECT_EQ(report.pairs, 0u);
    EXPECT_EQ(report.coords, SIMKIT_DDM_COORDS_U32);
  }
}

// An enum value as a C caller may pass it (C enums are ints): out of range included.
template <class E>
E raw_enum(int value) {
  static_assert(sizeof(E) == sizeof(int));
  E e;
  std::memcpy(&e, &value, sizeof e);
  return e;
}

TEST(DdmCApi, OptionRanges) {
  Handle m;
  EXPECT_EQ(simkit_ddm_set_rule(m, raw_enum<simkit_ddm_rule>(3)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("rule 3"), std::string::npos) << simkit_ddm_last_error(m);
  EXPECT_EQ(simkit_ddm_set_rule(m, raw_enum<simkit_ddm_rule>(-1)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_backend(m, raw_enum<simkit_ddm_backend>(4)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_algorithm(m, raw_enum<simkit_ddm_algorithm>(8)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_algorithm(m, raw_enum<simkit_ddm_algorithm>(-1)), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_threads(m, -1), SIMKIT_DDM_BAD_INPUT);
  // More threads than the OpenMP runtime can start used to kill the calling program.
  EXPECT_EQ(simkit_ddm_set_threads(m, 100000), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("at most"), std::string::npos) << simkit_ddm_last_error(m);
  EXPECT_EQ(simkit_ddm_set_threads(m, 2147483647), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_device(m, -1), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_set_chunk_pairs(m, 0), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("chunk_pairs"), std::string::npos);
  EXPECT_EQ(simkit_ddm_set_rule(m, SIMKIT_DDM_RULE_CLOSED), SIMKIT_DDM_OK);
  EXPECT_STREQ(simkit_ddm_last_error(m), "");

  // The refused values left the defaults: [0,1] and [1,2] touch, which only the closed rule counts.
  const std::uint64_t s_ids[1] = {1}, u_ids[1] = {2};
  const std::uint64_t s_lo[1] = {0}, s_hi[1] = {1}, u_lo[1] = {1}, u_hi[1] = {2};
  std::uint64_t count = 0;
  ASSERT_EQ(simkit_ddm_count_pairs_u64(m, 1, 1, s_ids, s_lo, s_hi, 1, u_ids, u_lo, u_hi, &count), SIMKIT_DDM_OK);
  EXPECT_EQ(count, 1u);

  // An algorithm on the wrong backend is bad input; cuda on a device that does not exist is unavailable.
  ASSERT_EQ(simkit_ddm_set_backend(m, SIMKIT_DDM_BACKEND_CPU), SIMKIT_DDM_OK);
  ASSERT_EQ(simkit_ddm_set_algorithm(m, SIMKIT_DDM_ALGORITHM_SBM), SIMKIT_DDM_OK);
  EXPECT_EQ(simkit_ddm_count_pairs_u64(m, 1, 1, s_ids, s_lo, s_hi, 1, u_ids, u_lo, u_hi, &count), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("sbm"), std::string::npos) << simkit_ddm_last_error(m);
  ASSERT_EQ(simkit_ddm_set_backend(m, SIMKIT_DDM_BACKEND_CUDA), SIMKIT_DDM_OK);
  ASSERT_EQ(simkit_ddm_set_algorithm(m, SIMKIT_DDM_ALGORITHM_AUTO), SIMKIT_DDM_OK);
  ASSERT_EQ(simkit_ddm_set_device(m, 999), SIMKIT_DDM_OK);
  EXPECT_EQ(simkit_ddm_count_pairs_u64(m, 1, 1, s_ids, s_lo, s_hi, 1, u_ids, u_lo, u_hi, &count),
            SIMKIT_DDM_UNAVAILABLE);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)), "");
  ASSERT_EQ(simkit_ddm_set_backend(m, SIMKIT_DDM_BACKEND_AUTO), SIMKIT_DDM_OK);
  ASSERT_EQ(simkit_ddm_set_algorithm(m, SIMKIT_DDM_ALGORITHM_GPU), SIMKIT_DDM_OK);
  EXPECT_EQ(simkit_ddm_count_pairs_u64(m, 1, 1, s_ids, s_lo, s_hi, 1, u_ids, u_lo, u_hi, &count),
            SIMKIT_DDM_UNAVAILABLE);
}

TEST(DdmCApi, StatusNames) {
  for (int s = SIMKIT_DDM_OK; s <= SIMKIT_DDM_INTERNAL; ++s) {
    EXPECT_NE(std::string(simkit_ddm_status_name(static_cast<simkit_ddm_status>(s))), "unknown status");
  }
  EXPECT_STREQ(simkit_ddm_status_name(SIMKIT_DDM_OK), "ok");
  EXPECT_STREQ(simkit_ddm_status_name(raw_enum<simkit_ddm_status>(42)), "unknown status");
}

// Handles are independent: one per thread, matching at the same time.
TEST(DdmCApi, OneHandlePerThread) {
  std::mt19937_64 gen(11);
  const Set<double> s = random_set<double>(gen, 200, 2, 0.0, 40, 1), u = random_set<double>(gen, 200, 2, 0.0, 40, 9999);
  const std::size_t expected = brute(s, u, SIMKIT_DDM_RULE_IEEE1516).size();
  std::vector<std::uint64_t> counts(4, 0);
  std::vector<int> status(4, -1);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      simkit_ddm_matcher* m = nullptr;
      if (simkit_ddm_create(&m) != SIMKIT_DDM_OK) return;
      simkit_ddm_set_backend(m, t % 2 == 0 ? SIMKIT_DDM_BACKEND_REFERENCE : SIMKIT_DDM_BACKEND_CPU);
      simkit_ddm_set_threads(m, 2);
      status[t] = run_count(m, s, u, counts[t]);
      simkit_ddm_destroy(m);
    });
  }
  for (std::thread& th : threads) th.join();
  for (std::size_t t = 0; t < 4; ++t) {
    EXPECT_EQ(status[t], SIMKIT_DDM_OK);
    EXPECT_EQ(counts[t], expected);
  }
}

// The C example (examples/ddm/c_api_example.c) runs and exits 0. It is looked for where the build
// put it, then beside this test binary (the GPU bundle, scripts/gpu-bundle.sh).
TEST(DdmCApi, CExampleRuns) {
#if defined(SIMKIT_DDM_C_EXAMPLE) && __has_include(<sys/wait.h>)
  std::string example = SIMKIT_DDM_C_EXAMPLE;
  if (!std::filesystem::exists(example)) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    example = ec ? std::string() : (self.parent_path() / "ddm_c_example").string();
    if (example.empty() || !std::filesystem::exists(example)) GTEST_SKIP() << "ddm_c_example not found";
  }
  FILE* pipe = popen(("'" + example + "' 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) output += buffer.data();
  const int rc = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(rc)) << output;
  EXPECT_EQ(WEXITSTATUS(rc), 0) << output;
  EXPECT_NE(output.find("subscription 101 <-> update 201"), std::string::npos) << output;
  EXPECT_NE(output.find("count: 4"), std::string::npos) << output;
  EXPECT_NE(output.find("bad region rejected"), std::string::npos) << output;
#else
  GTEST_SKIP() << "the C example's path is not compiled in";
#endif
}

}  // namespace

namespace {

// The pair order is fixed whatever the thread count and chunk size (issue 14: byte-identical pair
// files from the C API), for every algorithm the build has.
TEST(DdmCApi, PairOrderIsTheSameForEveryThreadCount) {
  std::mt19937_64 gen(20261124);
  Handle m;
  const Set<double> s = random_set<double>(gen, 3000, 2, 0.0, 300, 1);
  const Set<double> u = random_set<double>(gen, 3000, 2, 0.0, 300, 1000003);
  for (const Choice& choice : choices()) {
    SCOPED_TRACE("backend " + std::to_string(choice.backend) + " algorithm " + std::to_string(choice.algorithm));
    ASSERT_EQ(simkit_ddm_set_backend(m, choice.backend), SIMKIT_DDM_OK);
    ASSERT_EQ(simkit_ddm_set_algorithm(m, choice.algorithm), SIMKIT_DDM_OK);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> first;
    for (const auto& [threads, chunk] : {std::pair{1, 1u << 16}, std::pair{2, 333u}, std::pair{5, 4096u}}) {
      ASSERT_EQ(simkit_ddm_set_threads(m, threads), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_chunk_pairs(m, chunk), SIMKIT_DDM_OK);
      Collected c;
      ASSERT_EQ(run_pairs(m, s, u, c), SIMKIT_DDM_OK) << simkit_ddm_last_error(m);
      ASSERT_GT(c.pairs.size(), 1000u);
      if (first.empty()) {
        first = c.pairs;
      } else {
        EXPECT_TRUE(c.pairs == first) << threads << " threads, chunk " << chunk << ": another order";
      }
    }
  }
}

}  // namespace
