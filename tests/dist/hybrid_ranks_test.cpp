// The hybrid ensemble's library call across the ranks (run_hybrid_ensemble_ranks) under mpirun
// (-n 1, 2 and 3, CTest label `mpi`) and without it, on the cpu backend: rank 0's ensemble is the
// single-process one, realisation for realisation. With `logs` every realisation travels whole
// (segments, occupied nodes, branch and anastomosis points: the message's logs, which the CLI's
// runs never send); without, the others' logs stay behind and realisation 0 keeps its own. Comm's
// gather_into is checked here too (the gather that ensemble uses).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../angio/hybrid_choices.hpp"
#include "simkit/angio/hybrid.hpp"
#include "simkit/core/dist.hpp"

namespace simkit::angio {
namespace {

HybridProblem problem() {
  HybridProblem p;
  p.grid = Grid{31, 25, 9, 1.0 / 30};
  p.dt = 0.01;
  p.hybrid.t_max = 1.0;
  p.hybrid.psi = 0.1;
  return p;
}

RunOptions options() {
  RunOptions o;
  o.backend = Backend::Cpu;
  o.seed = 11;
  o.threads = 1;
  return o;
}

TEST(HybridRanks, WithLogsEveryRealisationArrivesWhole) {
  const dist::Comm& w = dist::Comm::world();
  const HybridProblem p = problem();
  for (const int replicates : {7, 2}) {  // 2 on 3 ranks: one rank has none
    const HybridEnsemble got = run_hybrid_ensemble_ranks(p, replicates, options(), true);
    if (!w.root()) {
      EXPECT_TRUE(got.realisations.empty());
      continue;
    }
    const std::vector<Realisation> want = run_hybrid_ensemble(p, replicates, options()).realisations;
    ASSERT_EQ(got.realisations.size(), want.size());
    bool some_logs = false;
    for (std::size_t r = 0; r < want.size(); ++r) {
      test_choices::expect_same(got.realisations[r], want[r], "realisation " + std::to_string(r));
      some_logs = some_logs || !want[r].segments.empty();
    }
    EXPECT_TRUE(some_logs) << "the realisations made no segments: the logs were not tested";
  }
}

TEST(HybridRanks, WithoutLogsOnlyRealisationZeroKeepsItsLog) {
  const dist::Comm& w = dist::Comm::world();
  const HybridProblem p = problem();
  const HybridEnsemble got = run_hybrid_ensemble_ranks(p, 6, options(), false);
  if (!w.root()) return;
  const std::vector<Realisation> want = run_hybrid_ensemble(p, 6, options(), 1).realisations;
  ASSERT_EQ(got.realisations.size(), want.size());
  for (std::size_t r = 0; r < want.size(); ++r)
    test_choices::expect_same(got.realisations[r], want[r], "realisation " + std::to_string(r));
  EXPECT_FALSE(got.realisations[0].segments.empty());
}

}  // namespace
}  // namespace simkit::angio

namespace simkit::dist {
namespace {

TEST(DistComm, GatherIntoPlacesEveryRanksBytesOnTheRootOnly) {
  const Comm& w = Comm::world();
  const int k = w.size(), r = w.rank();
  // Rank r gives r + 2 bytes of value r + 1; the root is the last rank.
  const std::vector<std::byte> mine(static_cast<std::size_t>(r) + 2, static_cast<std::byte>(r + 1));
  std::vector<std::byte> space;
  std::vector<std::size_t> sizes;
  int calls = 0;
  w.gather_into(
      mine,
      [&](std::size_t total) {
        ++calls;
        space.assign(total + 1, std::byte{0xee});  // one byte before: nothing is written there
        return space.data() + 1;
      },
      &sizes, k - 1);
  ASSERT_EQ(sizes.size(), static_cast<std::size_t>(k));
  if (r != k - 1) {
    EXPECT_EQ(calls, 0);
    return;
  }
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(space.empty());
  EXPECT_EQ(space[0], std::byte{0xee});
  std::size_t at = 1;
  for (int q = 0; q < k; ++q) {
    EXPECT_EQ(sizes[static_cast<std::size_t>(q)], static_cast<std::size_t>(q) + 2);
    for (int b = 0; b < q + 2; ++b) EXPECT_EQ(space[at++], static_cast<std::byte>(q + 1)) << "rank " << q;
  }
  EXPECT_EQ(at, space.size());
}

}  // namespace
}  // namespace simkit::dist

#include "mpi_main.hpp"  // main()
