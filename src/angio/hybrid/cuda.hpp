#pragma once
// The hybrid model's GPU kernel behind a narrow interface of plain arrays (no std::vector of the
// model's own types: nvcc 12's front end cannot instantiate those with GCC 12's C++20 library).
// cuda_host.cpp builds the realisations from what it returns.
#include <cstdint>
#include <functional>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/angio/hybrid_rules.hpp"
#include "angio/model.hpp"

namespace simkit::angio::detail::hybrid_cuda {

constexpr int kMaxRules = 16;

// The rule choices of HybridParams, as plain values for the kernel.
struct RuleSet {
  AnastomosisRule anastomosis = AnastomosisRule::Other;
  int window = 10;
  bool fork_passes = true;
  Uptake uptake = Uptake::Trail;
  bool branch_always = false;
  double branch_density = 0;
  DaughterPlacement daughter = DaughterPlacement::Weights;
  bool back_steps = false;
  MoveWeights weights = MoveWeights::Central;
};

struct KernelProblem {
  ModelParams model;
  int nx = 0, ny = 0, nz = 0;
  double h = 0, dt = 0, psi = 0, reach_front = 0;
  long long last_step = 0, max_tips = 0;
  int rules = 0;
  double rule_c[kMaxRules] = {}, rule_p[kMaxRules] = {};
  RuleSet rule;
  unsigned long long seed = 0;
};

// One realisation as the kernel leaves it: its segment log (in the order the segments were made),
// counters, and the nodes of its active tips in id order. `overflow`: it outgrew the capacities
// and must be run again with more.
struct RawRealisation {
  int index = 0;  // realisation number r (seed + r)
  bool overflow = false;
  long long steps = 0, moves = 0, clipped = 0;
  std::vector<long long> from, to;
  std::vector<int> birth, generation, tip;
  std::vector<unsigned char> kind;  // SegmentKind
  std::vector<long long> active_nodes;
  std::vector<double> final_c;  // D_c > 0, realisation 0 only: c at the end
};

// Where the time went (seconds), summed over calls: the initial fields on the host (setup), device
// memory (allocate), uploading the initial fields, the kernel launches, downloading the logs, and
// rebuilding the realisations on the host (rebuild: the rebuilding thread's busy time, which
// overlaps the next batches' kernels).
struct Timing {
  double setup = 0, allocate = 0, upload = 0, kernel = 0, download = 0, rebuild = 0;
};

// Runs realisations `which` (batched to fit the GPU's free memory) with per-realisation
// capacities of `segments` segments and `tips` tips; `done(raw)` receives each one, in no
// particular order, on the calling thread. `row_copies` forces one download per realisation
// (otherwise used only when padding the batch's logs to one length would take too much memory). D_c > 0
// (kp.model.taf_diffusion) gives every realisation its own c field on the GPU.
void run_realisations(const KernelProblem& p, const std::vector<double>& c0, const std::vector<double>& f0,
                      const std::vector<long long>& sprout_node, const std::vector<long long>& sprout_previous,
                      const std::vector<int>& which, long long segments, long long tips, int device,
                      const std::function<void(RawRealisation&&)>& done, Timing* timing = nullptr,
                      bool row_copies = false, const StopCallback& stop = {});

}  // namespace simkit::angio::detail::hybrid_cuda
