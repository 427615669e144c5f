// The hybrid ensemble's library call across the ranks (run_hybrid_ensemble_ranks) under mpirun
// (-n 1, 2 and 3, CTest label `mpi`) and without it, on the cpu backend: rank 0's ensemble is the
// single-process one, realisation for realisation. With `logs` every realisation travels whole
// (segments, occupied nodes, branch and anastomosis points: the message's logs, which the CLI's
// runs never send); without, the others' logs stay behind and realisation 0 keeps its own. Comm's
// probe is checked here too (rank 0 waits for the others' messages with it).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
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

TEST(DistComm, ProbeSeesAMessageOnlyOnceItIsSent) {
  const Comm& w = Comm::world();
  const int k = w.size(), r = w.rank();
  if (!w.distributed()) GTEST_SKIP() << "one rank: nothing to probe (run under mpirun -n 2 or more)";
  // Rank 0 probes each rank's tag before that rank sends (nothing there: the barrier is after the
  // probe), then waits for the message with probe alone, as the hybrid gather does.
  for (int q = 1; q < k; ++q) {
    if (r == 0) EXPECT_FALSE(w.probe(q, 7200)) << "rank " << q << " has not sent yet";
    w.barrier();
    if (r == q) {
      const std::uint64_t value = 1000 + static_cast<std::uint64_t>(q);
      w.send(&value, sizeof value, 0, 7200);
    } else if (r == 0) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      bool seen = false;
      while (!(seen = w.probe(q, 7200)) && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_TRUE(seen) << "rank " << q << "'s message never showed";
      EXPECT_FALSE(w.probe(q, 7201)) << "another tag";
      std::uint64_t value = 0;
      w.recv(&value, sizeof value, q, 7200);
      EXPECT_EQ(value, 1000u + static_cast<std::uint64_t>(q));
      EXPECT_FALSE(w.probe(q, 7200)) << "the message was taken";
    }
    w.barrier();
  }
}

}  // namespace
}  // namespace simkit::dist

#include "mpi_main.hpp"  // main()
