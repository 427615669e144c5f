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
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "regions.hpp"
#include "simkit/ddm/c_api.h"

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

// Enum values as a C caller may pass them (C enums are ints): out of range included. By value
// through c_api_raw.c (C++ code may not load an enum object outside its range); in an array by
// writing the int's bytes into the element.
extern "C" {
simkit_ddm_status c_api_raw_set_rule(simkit_ddm_matcher* matcher, int rule);
simkit_ddm_status c_api_raw_set_backend(simkit_ddm_matcher* matcher, int backend);
simkit_ddm_status c_api_raw_set_algorithm(simkit_ddm_matcher* matcher, int algorithm);
const char* c_api_raw_status_name(int status);
}
template <class E>
void set_raw(E& slot, int value) {
  static_assert(sizeof(E) == sizeof(int));
  std::memcpy(&slot, &value, sizeof slot);
}

TEST(DdmCApi, OptionRanges) {
  Handle m;
  EXPECT_EQ(c_api_raw_set_rule(m, 3), SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_last_error(m)).find("rule 3"), std::string::npos) << simkit_ddm_last_error(m);
  EXPECT_EQ(c_api_raw_set_rule(m, -1), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(c_api_raw_set_backend(m, 4), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(c_api_raw_set_algorithm(m, 8), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(c_api_raw_set_algorithm(m, -1), SIMKIT_DDM_BAD_INPUT);
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
  EXPECT_STREQ(c_api_raw_status_name(42), "unknown status");
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

#if __has_include(<sys/wait.h>)
// Runs an example program (where the build put it, else beside this test binary: the GPU bundle,
// scripts/gpu-bundle.sh): its output, and whether it exited 0. Empty `found` when it is missing.
struct ExampleRun {
  bool found = false, exited_zero = false;
  std::string output;
};
ExampleRun run_example(std::string path, const char* name) {
  ExampleRun run;
  if (!std::filesystem::exists(path)) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    path = ec ? std::string() : (self.parent_path() / name).string();
    if (path.empty() || !std::filesystem::exists(path)) return run;
  }
  run.found = true;
  FILE* pipe = popen(("'" + path + "' 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) run.output += buffer.data();
  const int rc = pclose(pipe);
  run.exited_zero = WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  return run;
}
#endif

// The C example (examples/ddm/c_api_example.c) runs and exits 0.
TEST(DdmCApi, CExampleRuns) {
#if defined(SIMKIT_DDM_C_EXAMPLE) && __has_include(<sys/wait.h>)
  const ExampleRun run = run_example(SIMKIT_DDM_C_EXAMPLE, "ddm_c_example");
  if (!run.found) GTEST_SKIP() << "ddm_c_example not found";
  EXPECT_TRUE(run.exited_zero) << run.output;
  EXPECT_NE(run.output.find("subscription 101 <-> update 201"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("count: 4"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("bad region rejected"), std::string::npos) << run.output;
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

// ---- incremental matching (simkit_ddm_incremental_*) ----

namespace {

// The incremental entry points for coordinate type T, by overloading on the bound pointers.
#define C_INCREMENTAL_OVERLOADS(SUFFIX, T)                                                                         \
  simkit_ddm_status c_inc_create(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* si,         \
                                 const T* sl, const T* su, std::size_t nu, const std::uint64_t* ui, const T* ul,   \
                                 const T* uu, simkit_ddm_incremental** out) {                                      \
    return simkit_ddm_incremental_create_##SUFFIX(m, dims, ns, si, sl, su, nu, ui, ul, uu, out);                   \
  }                                                                                                                \
  simkit_ddm_status c_inc_apply(simkit_ddm_incremental* h, int dims, std::size_t n,                                \
                                const simkit_ddm_change_kind* kinds, const simkit_ddm_role* roles,                 \
                                const std::uint64_t* ids, const T* lower, const T* upper,                          \
                                simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost, void* user) {      \
    return simkit_ddm_incremental_apply_##SUFFIX(h, dims, n, kinds, roles, ids, lower, upper, gained, lost, user); \
  }
C_INCREMENTAL_OVERLOADS(u32, std::uint32_t)
C_INCREMENTAL_OVERLOADS(u64, std::uint64_t)
C_INCREMENTAL_OVERLOADS(f64, double)
#undef C_INCREMENTAL_OVERLOADS

// An incremental handle destroyed at the end of the test.
struct Incremental {
  simkit_ddm_incremental* h = nullptr;
  Incremental() = default;
  ~Incremental() { simkit_ddm_incremental_destroy(h); }
  Incremental(const Incremental&) = delete;
  Incremental& operator=(const Incremental&) = delete;
  operator simkit_ddm_incremental*() const { return h; }
};

template <class T>
simkit_ddm_status create_from(simkit_ddm_matcher* m, const Set<T>& s, const Set<T>& u, simkit_ddm_incremental** out) {
  return c_inc_create(m, s.dims, s.size(), s.ids.data(), s.lower.data(), s.upper.data(), u.size(), u.ids.data(),
                      u.lower.data(), u.upper.data(), out);
}

// A batch in the C API's layout: change k is kinds[k] of ids[k] in roles[k], bounds lower[k * dims + d].
template <class T>
struct Batch {
  int dims = 1;
  std::vector<simkit_ddm_change_kind> kinds;
  std::vector<simkit_ddm_role> roles;
  std::vector<std::uint64_t> ids;
  std::vector<T> lower, upper;
  void push(simkit_ddm_change_kind kind, simkit_ddm_role role, std::uint64_t id, const std::vector<T>& lo = {},
            const std::vector<T>& hi = {}) {
    kinds.push_back(kind);
    roles.push_back(role);
    ids.push_back(id);
    for (int d = 0; d < dims; ++d) {
      lower.push_back(lo.empty() ? T(0) : lo[static_cast<std::size_t>(d)]);
      upper.push_back(hi.empty() ? T(0) : hi[static_cast<std::size_t>(d)]);
    }
  }
  std::size_t size() const { return ids.size(); }
};

// What the gained and lost callbacks saw.
struct Deltas {
  IdPairs gained, lost;
  std::size_t calls = 0, largest = 0;
  bool lost_after_gained = false;  // a lost chunk came after a gained one (the order is lost, then gained)
  int stop_on_call = 0;            // > 0: return 1 on that call
};
int on_gained(const std::uint64_t* sub_ids, const std::uint64_t* upd_ids, std::size_t count, void* user) {
  auto* d = static_cast<Deltas*>(user);
  ++d->calls;
  d->largest = std::max(d->largest, count);
  for (std::size_t k = 0; k < count; ++k) d->gained.push_back({sub_ids[k], upd_ids[k]});
  return d->stop_on_call > 0 && d->calls >= static_cast<std::size_t>(d->stop_on_call) ? 1 : 0;
}
int on_lost(const std::uint64_t* sub_ids, const std::uint64_t* upd_ids, std::size_t count, void* user) {
  auto* d = static_cast<Deltas*>(user);
  ++d->calls;
  d->largest = std::max(d->largest, count);
  if (!d->gained.empty()) d->lost_after_gained = true;
  for (std::size_t k = 0; k < count; ++k) d->lost.push_back({sub_ids[k], upd_ids[k]});
  return d->stop_on_call > 0 && d->calls >= static_cast<std::size_t>(d->stop_on_call) ? 1 : 0;
}

template <class T>
simkit_ddm_status apply(simkit_ddm_incremental* h, const Batch<T>& b, Deltas& d) {
  return c_inc_apply(h, b.dims, b.size(), b.kinds.data(), b.roles.data(), b.ids.data(), b.lower.data(), b.upper.data(),
                     on_gained, on_lost, &d);
}

// The current pairs through simkit_ddm_incremental_for_each_pair, sorted.
IdPairs listed_pairs(simkit_ddm_incremental* h) {
  Collected c;
  EXPECT_EQ(simkit_ddm_incremental_for_each_pair(h, collect, &c), SIMKIT_DDM_OK)
      << simkit_ddm_incremental_last_error(h);
  std::sort(c.pairs.begin(), c.pairs.end());
  return c.pairs;
}

// The regions of one set as the test believes them to be: id -> (lower, upper), one value a dimension.
template <class T>
using Model = std::map<std::uint64_t, std::pair<std::vector<T>, std::vector<T>>>;

template <class T>
Model<T> model_of(const Set<T>& r) {
  Model<T> m;
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto& [lo, hi] = m[r.ids[i]];
    for (int d = 0; d < r.dims; ++d) {
      lo.push_back(r.lo(i, d));
      hi.push_back(r.hi(i, d));
    }
  }
  return m;
}

template <class T>
Set<T> set_of(const Model<T>& m, int dims) {
  Set<T> r;
  r.dims = dims;
  const std::size_t n = m.size();
  r.lower.resize(n * static_cast<std::size_t>(dims));
  r.upper.resize(n * static_cast<std::size_t>(dims));
  for (const auto& entry : m) r.ids.push_back(entry.first);  // first: bound() takes the set's size from them
  std::size_t i = 0;
  for (const auto& [id, bounds] : m) {
    for (int d = 0; d < dims; ++d) {
      bound(r.lower, r, i, d) = bounds.first[static_cast<std::size_t>(d)];
      bound(r.upper, r, i, d) = bounds.second[static_cast<std::size_t>(d)];
    }
    ++i;
  }
  return r;
}

// Random bounds of one region, as random_set draws them (ties, every 5th range of zero length).
template <class T>
std::pair<std::vector<T>, std::vector<T>> random_bounds(std::mt19937_64& gen, int dims, T base, std::uint64_t span) {
  const Set<T> one = random_set<T>(gen, 1, dims, base, span, gen() % 5 == 0 ? 1 : 0);
  return {one.lower, one.upper};
}

// The full rematch: every pair of the sets the model holds, by simkit_ddm_match_pairs (brute force).
template <class T>
IdPairs full_rematch(simkit_ddm_matcher* oracle, const Model<T>& s, const Model<T>& u, int dims) {
  Collected c;
  EXPECT_EQ(run_pairs(oracle, set_of(s, dims), set_of(u, dims), c), SIMKIT_DDM_OK) << simkit_ddm_last_error(oracle);
  std::sort(c.pairs.begin(), c.pairs.end());
  return c.pairs;
}

// Random batches (adds, moves and removes on both sides, an id changed several times in a batch,
// removed ids added again) on every host backend and algorithm and the auto backend, every rule;
// after every batch the pairs the callbacks reported, applied to the previous pair set, must be the
// full rematch's pairs, and so must the matcher's own list and count.
template <class T>
void random_batches(T base, std::uint64_t span, std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 gen(seed);
  const std::vector<Choice> all = choices();
  for (simkit_ddm_rule rule : kRules)
    for (const Choice& choice : all) {
      const int dims = 1 + static_cast<int>(gen() % 3);
      SCOPED_TRACE("rule " + std::to_string(rule) + " backend " + std::to_string(choice.backend) + " algorithm " +
                   std::to_string(choice.algorithm) + " dims " + std::to_string(dims));
      Handle options, oracle;
      ASSERT_EQ(simkit_ddm_set_rule(options, rule), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_backend(options, choice.backend), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_algorithm(options, choice.algorithm), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_threads(options, 1 + static_cast<int>(gen() % 3)), SIMKIT_DDM_OK);
      const std::size_t chunk = 1 + gen() % 7;
      ASSERT_EQ(simkit_ddm_set_chunk_pairs(options, chunk), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_rule(oracle, rule), SIMKIT_DDM_OK);
      ASSERT_EQ(simkit_ddm_set_backend(oracle, SIMKIT_DDM_BACKEND_REFERENCE), SIMKIT_DDM_OK);

      // Ids from small pools, so that removed ids come back; S and U share some ids.
      const Set<T> s0 = random_set<T>(gen, gen() % 30, dims, base, span, 1);
      const Set<T> u0 = random_set<T>(gen, gen() % 30, dims, base, span, 2);
      Model<T> ms = model_of(s0), mu = model_of(u0);
      Incremental h;
      ASSERT_EQ(create_from(options, s0, u0, &h.h), SIMKIT_DDM_OK) << simkit_ddm_last_error(options);
      const IdPairs first = full_rematch(oracle, ms, mu, dims);
      std::set<std::pair<std::uint64_t, std::uint64_t>> current(first.begin(), first.end());
      ASSERT_EQ(listed_pairs(h), first);
      simkit_ddm_apply_report report;
      EXPECT_EQ(simkit_ddm_incremental_last_report(h, &report), SIMKIT_DDM_BAD_INPUT);  // no apply yet

      for (int tick = 0; tick < 12; ++tick) {
        SCOPED_TRACE("batch " + std::to_string(tick));
        Batch<T> b;
        b.dims = dims;
        const std::size_t changes = gen() % 14;
        for (std::size_t k = 0; k < changes; ++k) {
          const bool sub = gen() % 2 == 0;
          Model<T>& m = sub ? ms : mu;
          const simkit_ddm_role role = sub ? SIMKIT_DDM_ROLE_SUBSCRIPTION : SIMKIT_DDM_ROLE_UPDATE;
          const std::uint64_t action = gen() % 10;
          if (m.empty() || action < 3) {  // add an id not present (maybe one removed earlier)
            std::uint64_t id = 0;
            do {
              id = (sub ? 1 : 2) + 3 * (gen() % 45);
            } while (m.count(id) != 0);
            auto bounds = random_bounds<T>(gen, dims, base, span);
            b.push(SIMKIT_DDM_CHANGE_ADD, role, id, bounds.first, bounds.second);
            m[id] = std::move(bounds);
            continue;
          }
          auto it = m.begin();
          std::advance(it, static_cast<std::ptrdiff_t>(gen() % m.size()));
          const std::uint64_t id = it->first;
          if (action < 8) {
            auto bounds = random_bounds<T>(gen, dims, base, span);
            // Sometimes "move" a region to where it already is.
            if (action == 7) bounds = it->second;
            b.push(SIMKIT_DDM_CHANGE_MOVE, role, id, bounds.first, bounds.second);
            it->second = std::move(bounds);
          } else {
            b.push(SIMKIT_DDM_CHANGE_REMOVE, role, id);
            m.erase(it);
          }
        }
        Deltas d;
        ASSERT_EQ(apply(h, b, d), SIMKIT_DDM_OK) << simkit_ddm_incremental_last_error(h);
        EXPECT_STREQ(simkit_ddm_incremental_last_error(h), "");
        EXPECT_LE(d.largest, chunk);
        EXPECT_FALSE(d.lost_after_gained);
        EXPECT_TRUE(std::is_sorted(d.gained.begin(), d.gained.end()));
        EXPECT_TRUE(std::is_sorted(d.lost.begin(), d.lost.end()));
        for (const auto& p : d.lost)
          EXPECT_EQ(current.erase(p), 1u) << "lost a pair not held: " << p.first << "," << p.second;
        for (const auto& p : d.gained)
          EXPECT_TRUE(current.insert(p).second) << "gained a pair held: " << p.first << "," << p.second;
        const IdPairs expected = full_rematch(oracle, ms, mu, dims);
        ASSERT_TRUE(IdPairs(current.begin(), current.end()) == expected)
            << current.size() << " pairs after the deltas, " << expected.size() << " by a full rematch";
        EXPECT_TRUE(listed_pairs(h) == expected);
        std::uint64_t count = 0;
        ASSERT_EQ(simkit_ddm_incremental_pairs(h, &count), SIMKIT_DDM_OK);
        EXPECT_EQ(count, expected.size());
        ASSERT_EQ(simkit_ddm_incremental_last_report(h, &report), SIMKIT_DDM_OK);
        EXPECT_EQ(report.pairs, expected.size());
        EXPECT_EQ(report.gained, d.gained.size());
        EXPECT_EQ(report.lost, d.lost.size());
        EXPECT_LE(report.subscriptions + report.updates + report.removed, b.size());
        EXPECT_GE(report.seconds, 0.0);
      }
    }
}

TEST(DdmCApiIncremental, RandomBatchesU32) { random_batches<std::uint32_t>(5u, 14, 31); }
TEST(DdmCApiIncremental, RandomBatchesU64) { random_batches<std::uint64_t>((std::uint64_t{1} << 61) + 1, 14, 64); }
TEST(DdmCApiIncremental, RandomBatchesU64Wide) { random_batches<std::uint64_t>(0, std::uint64_t{1} << 40, 65); }
TEST(DdmCApiIncremental, RandomBatchesF64) { random_batches<double>(-6.5, 30, 1516); }

// A bad batch: BAD_INPUT, a message with `words`, no callback, and the pairs as they were.
template <class T>
void expect_bad_batch(simkit_ddm_incremental* h, const Batch<T>& b, const std::vector<std::string>& words) {
  const IdPairs before = listed_pairs(h);
  Deltas d;
  EXPECT_EQ(apply(h, b, d), SIMKIT_DDM_BAD_INPUT);
  const std::string message = simkit_ddm_incremental_last_error(h);
  for (const std::string& w : words) EXPECT_NE(message.find(w), std::string::npos) << message << " lacks " << w;
  EXPECT_EQ(d.calls, 0u);
  simkit_ddm_apply_report report;
  EXPECT_EQ(simkit_ddm_incremental_last_report(h, &report), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(report.pairs, 0u);
  EXPECT_TRUE(listed_pairs(h) == before);
}

template <class T>
void bad_batches() {
  std::mt19937_64 gen(99);
  const Set<T> s = random_set<T>(gen, 20, 2, T(1), 10, 1), u = random_set<T>(gen, 20, 2, T(1), 10, 2);
  Handle options;
  ASSERT_EQ(simkit_ddm_set_backend(options, SIMKIT_DDM_BACKEND_CPU), SIMKIT_DDM_OK);
  Incremental h;
  ASSERT_EQ(create_from(options, s, u, &h.h), SIMKIT_DDM_OK) << simkit_ddm_last_error(options);
  ASSERT_GT(listed_pairs(h).size(), 0u);
  const std::vector<T> lo = {T(2), T(2)}, hi = {T(6), T(6)};
  // Every bad batch starts with a good change, which must not be applied either.
  const auto batch = [&] {
    Batch<T> b;
    b.dims = 2;
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, u.ids[0], {T(1), T(1)}, {T(9), T(9)});
    return b;
  };
  {  // an unknown id
    Batch<T> b = batch();
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_SUBSCRIPTION, 999999, lo, hi);
    expect_bad_batch(h, b, {"batch change 1", "S region 999999", "no region"});
    b = batch();
    b.push(SIMKIT_DDM_CHANGE_REMOVE, SIMKIT_DDM_ROLE_UPDATE, 999999);
    expect_bad_batch(h, b, {"batch change 1", "U region 999999"});
    b = batch();  // removed earlier in the same batch
    b.push(SIMKIT_DDM_CHANGE_REMOVE, SIMKIT_DDM_ROLE_SUBSCRIPTION, s.ids[3]);
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_SUBSCRIPTION, s.ids[3], lo, hi);
    expect_bad_batch(h, b, {"batch change 2", std::to_string(s.ids[3])});
  }
  {  // a duplicate add: an id present, or added twice in the batch
    Batch<T> b = batch();
    b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_SUBSCRIPTION, s.ids[5], lo, hi);
    expect_bad_batch(h, b, {"batch change 1", std::to_string(s.ids[5]), "already present"});
    b = batch();
    b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_UPDATE, 777777, lo, hi);
    b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_UPDATE, 777777, lo, hi);
    expect_bad_batch(h, b, {"batch change 2", "777777"});
  }
  {  // lower > upper
    Batch<T> b = batch();
    b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_UPDATE, 777777, {T(2), T(8)}, {T(6), T(7)});
    expect_bad_batch(h, b, {"batch change 1", "U region 777777", "dimension 1", "lower"});
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    Batch<T> b = batch();
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_SUBSCRIPTION, s.ids[2], {T(2), nan}, hi);
    expect_bad_batch(h, b, {"batch change 1", std::to_string(s.ids[2]), "NaN"});
    b = batch();
    b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_SUBSCRIPTION, 888, lo, {T(6), inf});
    expect_bad_batch(h, b, {"batch change 1", "S region 888", "infinite"});
    b = batch();
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, u.ids[1], {-inf, T(2)}, hi);
    expect_bad_batch(h, b, {"batch change 1", "infinite"});
  }
  {  // dims other than the matcher's (and out of range)
    for (int dims : {1, 3, 0, -1, 9}) {
      Batch<T> b = batch();
      b.dims = dims;
      expect_bad_batch(h, b, {"dims " + std::to_string(dims), "2 dimensions"});
    }
  }
  {  // kinds and roles out of range (C callers may pass any int)
    Batch<T> b = batch();
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, u.ids[1], lo, hi);
    set_raw(b.kinds[1], 3);
    expect_bad_batch(h, b, {"batch change 1: kind 3", "SIMKIT_DDM_CHANGE_REMOVE"});
    b.kinds[1] = SIMKIT_DDM_CHANGE_MOVE;
    set_raw(b.roles[1], -1);
    expect_bad_batch(h, b, {"batch change 1: role -1"});
  }
  {  // NULL arrays with changes > 0
    const Batch<T> b = batch();
    const IdPairs before = listed_pairs(h);
    Deltas d;
    const auto expect_null = [&](simkit_ddm_status status, const std::string& word) {
      EXPECT_EQ(status, SIMKIT_DDM_BAD_INPUT);
      const std::string message = simkit_ddm_incremental_last_error(h);
      EXPECT_NE(message.find(word + " is NULL"), std::string::npos) << message;
    };
    expect_null(c_inc_apply(h, 2, 1, nullptr, b.roles.data(), b.ids.data(), b.lower.data(), b.upper.data(), on_gained,
                            on_lost, &d),
                "kinds");
    expect_null(c_inc_apply(h, 2, 1, b.kinds.data(), nullptr, b.ids.data(), b.lower.data(), b.upper.data(), on_gained,
                            on_lost, &d),
                "roles");
    expect_null(c_inc_apply(h, 2, 1, b.kinds.data(), b.roles.data(), nullptr, b.lower.data(), b.upper.data(), on_gained,
                            on_lost, &d),
                "ids");
    expect_null(c_inc_apply(h, 2, 1, b.kinds.data(), b.roles.data(), b.ids.data(), nullptr, b.upper.data(), on_gained,
                            on_lost, &d),
                "lower");
    expect_null(c_inc_apply(h, 2, 1, b.kinds.data(), b.roles.data(), b.ids.data(), b.lower.data(),
                            static_cast<const T*>(nullptr), on_gained, on_lost, &d),
                "upper");
    EXPECT_EQ(d.calls, 0u);
    EXPECT_TRUE(listed_pairs(h) == before);
  }
  // A good batch afterwards works; REMOVE-only batches and empty ones need no arrays.
  Batch<T> good = batch();
  Deltas d;
  ASSERT_EQ(apply(h, good, d), SIMKIT_DDM_OK) << simkit_ddm_incremental_last_error(h);
  EXPECT_STREQ(simkit_ddm_incremental_last_error(h), "");
  const simkit_ddm_change_kind remove[1] = {SIMKIT_DDM_CHANGE_REMOVE};
  const simkit_ddm_role role[1] = {SIMKIT_DDM_ROLE_SUBSCRIPTION};
  const std::uint64_t id[1] = {s.ids[0]};
  EXPECT_EQ(c_inc_apply(h, 2, 1, remove, role, id, static_cast<const T*>(nullptr), static_cast<const T*>(nullptr),
                        nullptr, nullptr, nullptr),
            SIMKIT_DDM_OK)
      << simkit_ddm_incremental_last_error(h);
  EXPECT_EQ(c_inc_apply(h, 2, 0, nullptr, nullptr, nullptr, static_cast<const T*>(nullptr),
                        static_cast<const T*>(nullptr), on_gained, on_lost, &d),
            SIMKIT_DDM_OK);
  simkit_ddm_apply_report report;
  ASSERT_EQ(simkit_ddm_incremental_last_report(h, &report), SIMKIT_DDM_OK);
  EXPECT_EQ(report.gained + report.lost, 0u);
}

TEST(DdmCApiIncremental, BadBatchesU32) { bad_batches<std::uint32_t>(); }
TEST(DdmCApiIncremental, BadBatchesU64) { bad_batches<std::uint64_t>(); }
TEST(DdmCApiIncremental, BadBatchesF64) { bad_batches<double>(); }

TEST(DdmCApiIncremental, WrongCoordinateTypeIsBadInput) {
  std::mt19937_64 gen(3);
  const Set<std::uint32_t> s = random_set<std::uint32_t>(gen, 5, 1, 0u, 10, 1);
  Handle options;
  Incremental h;
  ASSERT_EQ(create_from(options, s, s, &h.h), SIMKIT_DDM_OK);
  const simkit_ddm_change_kind kinds[1] = {SIMKIT_DDM_CHANGE_MOVE};
  const simkit_ddm_role roles[1] = {SIMKIT_DDM_ROLE_UPDATE};
  const std::uint64_t ids[1] = {s.ids[0]};
  const double lo[1] = {1}, hi[1] = {2};
  EXPECT_EQ(simkit_ddm_incremental_apply_f64(h, 1, 1, kinds, roles, ids, lo, hi, nullptr, nullptr, nullptr),
            SIMKIT_DDM_BAD_INPUT);
  EXPECT_NE(std::string(simkit_ddm_incremental_last_error(h)).find("simkit_ddm_incremental_apply_u32"),
            std::string::npos)
      << simkit_ddm_incremental_last_error(h);
}

// Creation errors are the matching functions' errors, stored on the options handle.
TEST(DdmCApiIncremental, CreateErrors) {
  std::mt19937_64 gen(5);
  const Set<double> s = random_set<double>(gen, 6, 2, 0.0, 10, 1), u = random_set<double>(gen, 5, 2, 0.0, 10, 500);
  Handle options;
  {
    Set<double> bad = u;
    bound(bad.lower, bad, 3, 1) = 9;
    bound(bad.upper, bad, 3, 1) = 4;
    simkit_ddm_incremental* out = reinterpret_cast<simkit_ddm_incremental*>(&gen);  // set to NULL on failure
    EXPECT_EQ(create_from(options, s, bad, &out), SIMKIT_DDM_BAD_INPUT);
    EXPECT_EQ(out, nullptr);
    const std::string message = simkit_ddm_last_error(options);
    EXPECT_NE(message.find("U region " + std::to_string(bad.ids[3])), std::string::npos) << message;
  }
  {
    Set<double> bad = s;
    bad.ids[4] = bad.ids[1];
    Incremental h;
    EXPECT_EQ(create_from(options, bad, u, &h.h), SIMKIT_DDM_BAD_INPUT);
    EXPECT_NE(std::string(simkit_ddm_last_error(options)).find("duplicate"), std::string::npos);
    Set<double> inf = s;
    bound(inf.upper, inf, 2, 0) = std::numeric_limits<double>::infinity();
    EXPECT_EQ(create_from(options, inf, u, &h.h), SIMKIT_DDM_BAD_INPUT);
    EXPECT_NE(std::string(simkit_ddm_last_error(options)).find("infinite"), std::string::npos);
  }
  for (int dims : {0, 9}) {
    Set<double> bs = s, bu = u;
    bs.dims = bu.dims = dims;
    Incremental h;
    EXPECT_EQ(create_from(options, bs, bu, &h.h), SIMKIT_DDM_BAD_INPUT);
    EXPECT_NE(std::string(simkit_ddm_last_error(options)).find(std::to_string(dims)), std::string::npos);
  }
  {  // cuda that cannot be had
    Handle cuda;
    ASSERT_EQ(simkit_ddm_set_backend(cuda, SIMKIT_DDM_BACKEND_CUDA), SIMKIT_DDM_OK);
    ASSERT_EQ(simkit_ddm_set_device(cuda, 999), SIMKIT_DDM_OK);
    Incremental h;
    EXPECT_EQ(create_from(cuda, s, u, &h.h), SIMKIT_DDM_UNAVAILABLE);
    EXPECT_EQ(h.h, nullptr);
  }
  // Empty sets (arrays NULL) are fine: an RTI may start with nothing and add regions.
  Incremental h;
  ASSERT_EQ(
      simkit_ddm_incremental_create_f64(options, 2, 0, nullptr, nullptr, nullptr, 0, nullptr, nullptr, nullptr, &h.h),
      SIMKIT_DDM_OK)
      << simkit_ddm_last_error(options);
  EXPECT_STREQ(simkit_ddm_last_error(options), "");
  Batch<double> b;
  b.dims = 2;
  b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_SUBSCRIPTION, 1, {0, 0}, {10, 10});
  b.push(SIMKIT_DDM_CHANGE_ADD, SIMKIT_DDM_ROLE_UPDATE, 1, {5, 5}, {6, 6});
  Deltas d;
  ASSERT_EQ(apply(h.h, b, d), SIMKIT_DDM_OK) << simkit_ddm_incremental_last_error(h);
  EXPECT_EQ(d.gained, (IdPairs{{1, 1}}));
  // The options were copied: changing or destroying the options handle does not reach the matcher.
  ASSERT_EQ(simkit_ddm_set_rule(options, SIMKIT_DDM_RULE_CLOSED), SIMKIT_DDM_OK);
}

TEST(DdmCApiIncremental, NullArguments) {
  const std::uint64_t ids[1] = {1};
  const std::uint64_t lo[1] = {0}, hi[1] = {1};
  const simkit_ddm_change_kind kinds[1] = {SIMKIT_DDM_CHANGE_MOVE};
  const simkit_ddm_role roles[1] = {SIMKIT_DDM_ROLE_UPDATE};
  simkit_ddm_incremental* out = nullptr;
  std::uint64_t count = 0;
  simkit_ddm_apply_report report;
  EXPECT_EQ(simkit_ddm_incremental_create_u64(nullptr, 1, 1, ids, lo, hi, 1, ids, lo, hi, &out), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(simkit_ddm_incremental_apply_u64(nullptr, 1, 1, kinds, roles, ids, lo, hi, nullptr, nullptr, nullptr),
            SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_incremental_pairs(nullptr, &count), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_incremental_for_each_pair(nullptr, collect, nullptr), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_incremental_last_report(nullptr, &report), SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(simkit_ddm_incremental_last_report(nullptr, nullptr), SIMKIT_DDM_BAD_INPUT);
  ASSERT_NE(simkit_ddm_incremental_last_error(nullptr), nullptr);
  EXPECT_NE(std::string(simkit_ddm_incremental_last_error(nullptr)), "");
  simkit_ddm_incremental_destroy(nullptr);

  Handle options;
  // The message is read after the call (not as an argument beside it: the order would be unspecified).
  const auto expect_null = [&](simkit_ddm_status status, const std::string& message, const std::string& word) {
    EXPECT_EQ(status, SIMKIT_DDM_BAD_INPUT);
    EXPECT_NE(message.find(word + " is NULL"), std::string::npos) << message;
  };
  simkit_ddm_status st = simkit_ddm_incremental_create_u64(options, 1, 1, ids, lo, hi, 1, ids, lo, hi, nullptr);
  expect_null(st, simkit_ddm_last_error(options), "out");
  st = simkit_ddm_incremental_create_u64(options, 1, 1, nullptr, lo, hi, 1, ids, lo, hi, &out);
  expect_null(st, simkit_ddm_last_error(options), "s_ids");
  st = simkit_ddm_incremental_create_u64(options, 1, 1, ids, lo, hi, 1, ids, lo, nullptr, &out);
  expect_null(st, simkit_ddm_last_error(options), "u_upper");
  EXPECT_EQ(out, nullptr);
  Incremental h;
  ASSERT_EQ(simkit_ddm_incremental_create_u64(options, 1, 1, ids, lo, hi, 1, ids, lo, hi, &h.h), SIMKIT_DDM_OK);
  st = simkit_ddm_incremental_pairs(h, nullptr);
  expect_null(st, simkit_ddm_incremental_last_error(h), "count");
  st = simkit_ddm_incremental_for_each_pair(h, nullptr, nullptr);
  expect_null(st, simkit_ddm_incremental_last_error(h), "callback");
  EXPECT_EQ(simkit_ddm_incremental_last_report(h, nullptr), SIMKIT_DDM_BAD_INPUT);
  ASSERT_EQ(simkit_ddm_incremental_pairs(h, &count), SIMKIT_DDM_OK);
  EXPECT_EQ(count, 1u);
}

// A callback that stops the delivery: CANCELLED, but the batch is applied; the handle refuses calls
// from its own callbacks; for_each_pair stops too.
struct Reenter {
  simkit_ddm_incremental* h = nullptr;
  simkit_ddm_status inner = SIMKIT_DDM_OK;
  std::size_t calls = 0;
};
int reenter_incremental(const std::uint64_t*, const std::uint64_t*, std::size_t, void* user) {
  auto* r = static_cast<Reenter*>(user);
  std::uint64_t count = 0;
  r->inner = simkit_ddm_incremental_pairs(r->h, &count);
  ++r->calls;
  return 0;
}

TEST(DdmCApiIncremental, CallbacksCancelAndCannotReenter) {
  const Set<std::uint64_t> s = all_overlapping(30, 1), u = all_overlapping(30, 1000);
  Handle options;
  ASSERT_EQ(simkit_ddm_set_chunk_pairs(options, 7), SIMKIT_DDM_OK);
  Incremental h;
  ASSERT_EQ(create_from(options, s, u, &h.h), SIMKIT_DDM_OK);
  // Move every update away (900 pairs lost), then back (900 gained), stopping the delivery.
  Batch<std::uint64_t> away, back;
  away.dims = back.dims = 1;
  for (std::uint64_t id : u.ids) {
    away.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, id, {100}, {110});
    back.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, id, {0}, {10});
  }
  Deltas d;
  d.stop_on_call = 3;
  EXPECT_EQ(apply(h.h, away, d), SIMKIT_DDM_CANCELLED);
  EXPECT_EQ(d.calls, 3u);
  EXPECT_EQ(d.lost.size(), 21u);
  const std::string message = simkit_ddm_incremental_last_error(h);
  EXPECT_NE(message.find("cancelled"), std::string::npos) << message;
  EXPECT_NE(message.find("applied"), std::string::npos) << message;
  std::uint64_t count = 99;
  ASSERT_EQ(simkit_ddm_incremental_pairs(h, &count), SIMKIT_DDM_OK);
  EXPECT_EQ(count, 0u);
  simkit_ddm_apply_report report;
  ASSERT_EQ(simkit_ddm_incremental_last_report(h, &report), SIMKIT_DDM_OK);
  EXPECT_EQ(report.lost, 900u);
  EXPECT_EQ(report.updates, 30u);

  Reenter r{h, SIMKIT_DDM_OK, 0};
  ASSERT_EQ(simkit_ddm_incremental_apply_u64(h, 1, back.size(), back.kinds.data(), back.roles.data(), back.ids.data(),
                                             back.lower.data(), back.upper.data(), reenter_incremental, nullptr, &r),
            SIMKIT_DDM_OK)
      << simkit_ddm_incremental_last_error(h);
  EXPECT_EQ(r.inner, SIMKIT_DDM_BAD_INPUT);
  EXPECT_EQ(r.calls, (900u + 6) / 7);
  ASSERT_EQ(simkit_ddm_incremental_pairs(h, &count), SIMKIT_DDM_OK);
  EXPECT_EQ(count, 900u);

  Collected c;
  c.stop_after = 2;
  EXPECT_EQ(simkit_ddm_incremental_for_each_pair(h, collect, &c), SIMKIT_DDM_CANCELLED);
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(c.pairs.size(), 14u);
  EXPECT_EQ(listed_pairs(h).size(), 900u);
}

// Handles are independent: one per thread, each applying its own batches at the same time.
TEST(DdmCApiIncremental, OneHandlePerThread) {
  std::mt19937_64 gen(17);
  const Set<double> s = random_set<double>(gen, 150, 2, 0.0, 40, 1), u = random_set<double>(gen, 150, 2, 0.0, 40, 2);
  Batch<double> b;
  b.dims = 2;
  for (std::size_t i = 0; i < 40; ++i)
    b.push(SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_SUBSCRIPTION, s.ids[i], {1, 1}, {9, 9});
  Model<double> ms = model_of(s);
  for (std::size_t i = 0; i < 40; ++i) ms[s.ids[i]] = {{1, 1}, {9, 9}};
  const std::size_t expected = brute(set_of(ms, 2), u, SIMKIT_DDM_RULE_IEEE1516).size();
  std::vector<std::uint64_t> counts(4, 0);
  std::vector<int> status(4, -1);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      simkit_ddm_matcher* m = nullptr;
      if (simkit_ddm_create(&m) != SIMKIT_DDM_OK) return;
      simkit_ddm_set_backend(m, t % 2 == 0 ? SIMKIT_DDM_BACKEND_REFERENCE : SIMKIT_DDM_BACKEND_CPU);
      simkit_ddm_set_threads(m, 2);
      simkit_ddm_incremental* h = nullptr;
      Deltas d;
      status[t] = create_from(m, s, u, &h);
      if (status[t] == SIMKIT_DDM_OK) status[t] = apply(h, b, d);
      if (status[t] == SIMKIT_DDM_OK) status[t] = simkit_ddm_incremental_pairs(h, &counts[t]);
      simkit_ddm_incremental_destroy(h);
      simkit_ddm_destroy(m);
    });
  }
  for (std::thread& th : threads) th.join();
  for (std::size_t t = 0; t < 4; ++t) {
    EXPECT_EQ(status[t], SIMKIT_DDM_OK);
    EXPECT_EQ(counts[t], expected);
  }
}

// The RTI example (examples/ddm/rti_ticks.c) runs and exits 0: it checks every tick against a full
// rematch itself.
TEST(DdmCApiIncremental, RtiTicksExampleRuns) {
#if defined(SIMKIT_DDM_RTI_TICKS_EXAMPLE) && __has_include(<sys/wait.h>)
  const ExampleRun run = run_example(SIMKIT_DDM_RTI_TICKS_EXAMPLE, "ddm_rti_ticks");
  if (!run.found) GTEST_SKIP() << "ddm_rti_ticks not found";
  EXPECT_TRUE(run.exited_zero) << run.output;
  EXPECT_NE(run.output.find("tick 5:"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("bad batch rejected"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("every tick matched a full rematch"), std::string::npos) << run.output;
#else
  GTEST_SKIP() << "the RTI example's path is not compiled in";
#endif
}

}  // namespace
