// ResidentGrid (the cpu and cuda backends' resident index) against brute force: random regions of
// mixed sizes (zero-length, cell-sized, far larger than the cells, spanning everything), inserted,
// erased and moved in random order, also outside the box the grid was built for, every rule,
// d = 1..3, u32 / u64 above 2^60 / doubles around zero; every query must return exactly the
// intersecting regions, each once. The grid path (not the whole-set scan) must be what answers
// small queries.
#include "ddm/resident_grid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "ddm/model.hpp"
#include "ddm/regions.hpp"

namespace simkit::ddm {
namespace {

template <class T>
struct Box {
  std::vector<T> lower, upper;
};

// A box in base + [0, span] per dimension (half-units for doubles), mostly narrow (up to `width`
// units), sometimes of zero length, sometimes up to the whole span.
template <class T>
Box<T> random_box(std::mt19937_64& gen, int dims, T base, std::uint64_t span, std::uint64_t width) {
  Box<T> b;
  const unsigned kind = static_cast<unsigned>(gen() % 20);
  for (int d = 0; d < dims; ++d) {
    std::uint64_t lo = gen() % (span + 1), hi = lo;
    if (kind == 0) {
      lo = 0, hi = span;  // everything
    } else if (kind < 3) {
      hi = std::min(span, lo + gen() % (span / 3 + 1));  // large
    } else if (kind < 5) {
      hi = lo;  // zero length
    } else {
      hi = std::min(span, lo + gen() % (width + 1));
    }
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
bool brute_intersects(Rule rule, const Box<T>& a, const Box<T>& b) {
  for (std::size_t d = 0; d < a.lower.size(); ++d)
    if (!overlaps(rule, a.lower[d], a.upper[d], b.lower[d], b.upper[d])) return false;
  return true;
}

template <class T>
void random_operations(int dims, T base, std::uint64_t span, std::uint64_t width, std::uint64_t seed) {
  SCOPED_TRACE("dims " + std::to_string(dims) + " seed " + std::to_string(seed));
  std::mt19937_64 gen(seed);
  // The grid's geometry comes from the first half of the span; later boxes use all of it (and
  // beyond, for unsigned types with room above), so regions leave the initial box.
  const std::size_t n0 = 400;
  RegionSet<T> initial;
  initial.dims = dims;
  std::map<std::uint32_t, Box<T>> live;
  std::vector<Box<T>> boxes;
  for (std::size_t i = 0; i < n0; ++i) boxes.push_back(random_box<T>(gen, dims, base, span / 2, width));
  initial.ids.resize(n0);
  initial.lower.resize(n0 * static_cast<std::size_t>(dims));
  initial.upper.resize(n0 * static_cast<std::size_t>(dims));
  for (std::size_t i = 0; i < n0; ++i)
    for (int d = 0; d < dims; ++d) {
      initial.ids[i] = i;
      initial.lower[static_cast<std::size_t>(d) * n0 + i] = boxes[i].lower[static_cast<std::size_t>(d)];
      initial.upper[static_cast<std::size_t>(d) * n0 + i] = boxes[i].upper[static_cast<std::size_t>(d)];
    }
  ResidentGrid<T> grid(initial);
  for (std::uint32_t i = 0; i < n0; ++i) {
    grid.insert(i, boxes[i].lower.data(), boxes[i].upper.data());
    live[i] = boxes[i];
  }
  std::uint32_t next_slot = static_cast<std::uint32_t>(n0);
  std::size_t small_queries = 0, small_tested = 0;
  for (int step = 0; step < 600; ++step) {
    const unsigned what = static_cast<unsigned>(gen() % 4);
    if (what == 0 && !live.empty()) {  // erase
      auto it = live.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(gen() % live.size()));
      grid.erase(it->first);
      EXPECT_FALSE(grid.contains(it->first));
      live.erase(it);
    } else if (what == 1 && !live.empty()) {  // move
      auto it = live.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(gen() % live.size()));
      grid.erase(it->first);
      it->second = random_box<T>(gen, dims, base, span, width);
      grid.insert(it->first, it->second.lower.data(), it->second.upper.data());
    } else if (what == 2) {  // insert, at a fresh slot or a freed one
      std::uint32_t slot = next_slot;
      if (gen() % 2 == 0) {
        for (std::uint32_t s = 0; s < next_slot; ++s)
          if (!live.count(s)) {
            slot = s;
            break;
          }
      }
      if (slot == next_slot) ++next_slot;
      live[slot] = random_box<T>(gen, dims, base, span, width);
      grid.insert(slot, live[slot].lower.data(), live[slot].upper.data());
    }
    ASSERT_EQ(grid.size(), live.size());
    // A query against brute force, under every rule.
    const Box<T> q = random_box<T>(gen, dims, base, span, width);
    for (Rule rule : {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed}) {
      std::vector<std::uint32_t> got, want;
      const std::size_t tested =
          grid.query(rule, q.lower.data(), q.upper.data(), [&](std::uint32_t slot) { got.push_back(slot); });
      for (const auto& [slot, b] : live)
        if (brute_intersects(rule, q, b)) want.push_back(slot);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "step " << step << " rule " << to_string(rule);
      EXPECT_LE(tested, live.size());
      bool small = true;
      for (int d = 0; d < dims; ++d)
        small = small && static_cast<double>(q.upper[static_cast<std::size_t>(d)]) -
                                 static_cast<double>(q.lower[static_cast<std::size_t>(d)]) <=
                             static_cast<double>(width);
      if (small && rule == Rule::Closed) ++small_queries, small_tested += tested;
    }
  }
  // Small queries are answered from a few cells: on average far fewer regions than the set.
  ASSERT_GT(small_queries, 0u);
  EXPECT_LT(static_cast<double>(small_tested) / static_cast<double>(small_queries),
            0.25 * static_cast<double>(grid.size()));
}

TEST(DdmResidentGrid, U32) {
  for (int dims = 1; dims <= 3; ++dims) random_operations<std::uint32_t>(dims, 0u, 100000, 800, 10 + dims);
}
TEST(DdmResidentGrid, U64Above2To60) {
  for (int dims = 1; dims <= 3; ++dims)
    random_operations<std::uint64_t>(dims, (std::uint64_t{1} << 60) + 3, 100000, 800, 20 + dims);
}
TEST(DdmResidentGrid, DoublesAroundZero) {
  for (int dims = 1; dims <= 3; ++dims) random_operations<double>(dims, -25000.0, 100000, 800, 30 + dims);
}
// Integer cells of width one and less: every region a few units wide in a large space, ties on
// cell edges everywhere.
TEST(DdmResidentGrid, TinyRegionsOnCellEdges) {
  for (int dims = 1; dims <= 2; ++dims) random_operations<std::uint32_t>(dims, 0u, 4000, 2, 40 + dims);
}
// The full unsigned range: coordinates near 0 and near the maximum in one grid.
TEST(DdmResidentGrid, WholeU64Range) {
  random_operations<std::uint64_t>(2, 0u, ~std::uint64_t{0} - 1, std::uint64_t{1} << 40, 50);
}

}  // namespace
}  // namespace simkit::ddm
