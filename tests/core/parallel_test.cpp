// The shared OpenMP helpers (src/core/parallel.hpp): parallel_sort equals std::sort for every thread
// count, and parallel_for visits every index once and carries the first exception out.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/parallel.hpp"
#include "support/test_support.hpp"

namespace simkit {
namespace {

TEST(ParallelSort, EqualsStdSortForEveryThreadCount) {
  std::mt19937_64 gen(test::printed_seed(77));
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70000}, std::size_t{1} << 20}) {
    // Keys with many ties, made unique by an index (as ddm sorts them), and bare keys with ties.
    std::uniform_int_distribution<int> key(0, static_cast<int>(n / 16 + 1));
    std::vector<std::tuple<int, std::uint64_t>> keyed(n);
    std::vector<int> bare(n);
    for (std::size_t i = 0; i < n; ++i) {
      keyed[i] = {key(gen), i};
      bare[i] = key(gen);
    }
    auto keyed_expected = keyed;
    auto bare_expected = bare;
    std::sort(keyed_expected.begin(), keyed_expected.end());
    std::sort(bare_expected.begin(), bare_expected.end(), std::greater<>());
    for (int threads : {1, 2, 3, 7, 16}) {
      auto k = keyed;
      parallel_sort(k.begin(), k.end(), threads);
      EXPECT_EQ(k, keyed_expected) << "n " << n << ", threads " << threads;
      auto b = bare;
      parallel_sort(b.begin(), b.end(), threads, std::greater<>());
      EXPECT_EQ(b, bare_expected) << "n " << n << ", threads " << threads;
    }
  }
}

TEST(ParallelSort, AlreadySortedAndReversedInputs) {
  std::vector<std::uint64_t> up(300000), down(300000);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = i, down[i] = up.size() - i;
  auto a = up, b = down;
  parallel_sort(a.begin(), a.end(), 4);
  parallel_sort(b.begin(), b.end(), 4);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(a, up);
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(b.front(), 1u);
  EXPECT_EQ(b.back(), down.size());
}

TEST(ParallelFor, VisitsEveryIndexOnce) {
  for (std::int64_t chunk : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}}) {
    std::vector<std::atomic<int>> seen(10007);
    parallel_for(0, 10007, Schedule{3, chunk}, [&](std::int64_t i) { seen[static_cast<std::size_t>(i)]++; });
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i << ", chunk " << chunk;
  }
  int calls = 0;
  parallel_for(5, 5, Schedule{4, 0}, [&](std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, CarriesTheFirstExceptionOut) {
  for (std::int64_t chunk : {std::int64_t{0}, std::int64_t{2}}) {
    std::atomic<int> after{0};
    try {
      parallel_for(0, 100000, Schedule{4, chunk}, [&](std::int64_t i) {
        if (i == 777) throw std::invalid_argument("index 777");
        if (i > 50000) after++;
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "index 777");
    }
    // The loop is usable again afterwards (nothing is left behind in the slot).
    EXPECT_NO_THROW(parallel_for(0, 10, Schedule{2, chunk}, [](std::int64_t) {}));
  }
}

}  // namespace
}  // namespace simkit
