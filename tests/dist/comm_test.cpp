// simkit::dist::Comm under mpirun (-n 1, 2 and 3, CTest label `mpi`) and without it: every
// collective against what it must give, computed independently on each rank.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "simkit/core/dist.hpp"

namespace simkit::dist {
namespace {

TEST(DistShare, CoversEveryItemOnceInRankOrder) {
  for (std::uint64_t n : {0ull, 1ull, 7ull, 35ull, 100ull, 1400ull}) {
    for (int ranks : {1, 2, 3, 5}) {
      for (std::uint64_t align : {1ull, 35ull}) {
        std::uint64_t next = 0, largest = 0, smallest = n + 1;
        for (int r = 0; r < ranks; ++r) {
          const Range s = share(n, ranks, r, align);
          EXPECT_EQ(s.begin, next) << n << " " << ranks << " " << r;
          EXPECT_LE(s.begin, s.end);
          if (s.end < n) EXPECT_EQ(s.end % align, 0u);  // only the last block is short
          const std::uint64_t blocks = (s.size() + align - 1) / align;
          largest = std::max(largest, blocks);
          smallest = std::min(smallest, blocks);
          next = s.end;
        }
        EXPECT_EQ(next, n);
        EXPECT_LE(largest - smallest, 1u) << "block counts differ by at most one";
      }
    }
  }
}

TEST(DistComm, CollectivesGiveWhatTheyMust) {
  const Comm& w = Comm::world();
  const int k = w.size(), r = w.rank();
  EXPECT_EQ(launched_by_launcher() && built_with_mpi(), k >= 1 && (k > 1 || launched_by_launcher()));
  std::vector<std::uint64_t> v = {static_cast<std::uint64_t>(r) + 1, 10};
  w.allreduce_sum(v);
  EXPECT_EQ(v[0], static_cast<std::uint64_t>(k) * (k + 1) / 2);
  EXPECT_EQ(v[1], 10u * static_cast<std::uint64_t>(k));
  EXPECT_EQ(w.allreduce_max(r), k - 1);
  EXPECT_EQ(w.allreduce_min(r + 5), 5);
  std::vector<std::uint64_t> s = {static_cast<std::uint64_t>(r) * 3};
  w.reduce_sum(s, 0);
  if (w.root()) EXPECT_EQ(s[0], 3u * static_cast<std::uint64_t>(k) * (k - 1) / 2);
  const std::string text = w.broadcast(w.root() ? std::string("from the root") : std::string("x"));
  EXPECT_EQ(text, "from the root");
  // gather: rank r contributes r + 1 bytes of value r.
  std::vector<std::byte> mine(static_cast<std::size_t>(r) + 1, static_cast<std::byte>(r));
  std::vector<std::size_t> sizes;
  const std::vector<std::byte> all = w.allgather(mine, &sizes);
  ASSERT_EQ(sizes.size(), static_cast<std::size_t>(k));
  std::size_t at = 0;
  for (int q = 0; q < k; ++q) {
    EXPECT_EQ(sizes[static_cast<std::size_t>(q)], static_cast<std::size_t>(q) + 1);
    for (int b = 0; b <= q; ++b) EXPECT_EQ(all[at++], static_cast<std::byte>(q));
  }
  EXPECT_EQ(at, all.size());
  w.barrier();
}

TEST(DistComm, SendrecvPassesAlongTheRing) {
  const Comm& w = Comm::world();
  if (!w.distributed()) GTEST_SKIP() << "one rank: no neighbours (run under mpirun -n 2 or more)";
  const int k = w.size(), r = w.rank();
  const int up = r + 1 < k ? r + 1 : -1, down = r > 0 ? r - 1 : -1;
  std::vector<double> send(1000, static_cast<double>(r)), recv(1000, -1.0);
  w.sendrecv(send.data(), send.size() * sizeof(double), up, recv.data(), recv.size() * sizeof(double), down, 3);
  for (double x : recv) EXPECT_EQ(x, down >= 0 ? static_cast<double>(down) : -1.0);
}

}  // namespace
}  // namespace simkit::dist

#include "mpi_main.hpp"  // main()
