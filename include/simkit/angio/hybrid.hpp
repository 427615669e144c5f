#pragma once
// angio's hybrid model: discrete endothelial tip cells that move with the continuous model's
// P0..P6, branch and anastomose into a vessel network (Anderson & Chaplain 1998, section 4; in 3D
// as in Darbyshire 2015), run as ensembles of independent realisations (docs/angio.md).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "simkit/angio/angio.hpp"
#include "simkit/angio/hybrid_rules.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio {

// Branching probability per step P_n(c): the first row with c <= c_upto gives it.
struct BranchRule {
  double c_upto = 0;
  double probability = 0;
  // (constructors rather than aggregate initialisation: nvcc 12 cannot copy aggregates with
  // default member initialisers through std::construct_at)
  BranchRule() = default;
  constexpr BranchRule(double c, double p) : c_upto(c), probability(p) {}
};

// An initial tip's place on the parent vessel's face, in box fractions: y, and z in 3D (not given:
// the mid-plane z = 0.5).
struct SproutPosition {
  static constexpr double kMidPlane = -1;  // z not given
  double y = 0, z = kMidPlane;
  SproutPosition() = default;
  constexpr SproutPosition(double y_, double z_ = kMidPlane) : y(y_), z(z_) {}
  double z_or_mid_plane() const { return z == kMidPlane ? 0.5 : z; }
};

struct HybridParams {
  double psi = 0.5;  // a sprout may branch once older than psi (time since born or last branched)
  std::vector<BranchRule> branching = {
      {0.25, 0.0}, {0.45, 0.2}, {0.6, 0.3}, {0.68, 0.4}, {std::numeric_limits<double>::infinity(), 1.0}};
  bool branch_always = false;  // branching probability 1 instead of the P_n(c) table (Angio_TDA)
  // Branching density condition (A&C's n > n_b ~ 1/c): a tip branches only when the occupied nodes
  // of its Moore neighbourhood (3^dims nodes, itself included) number more than branch_density / c.
  // 0: off.
  double branch_density = 0;
  DaughterPlacement daughter = DaughterPlacement::Weights;
  MoveWeights weights = MoveWeights::Central;
  AnastomosisRule anastomosis = AnastomosisRule::Other;
  int anastomosis_window = 10;  // AnastomosisRule::Window: own-trail positions passed over (N)
  // A tip meeting its parent's or its daughter's sprout within psi of their branch passes over it
  // instead of fusing (docs/angio.md, "The parent-daughter artefact").
  bool fork_passes = true;
  Uptake uptake = Uptake::Trail;
  bool back_steps = false;  // may a tip step back onto the node it came from (Angio_TDA: yes)
  int sprouts = 0;          // initial tips on the parent vessel (0: one per maximum of the initial n)
  std::vector<SproutPosition> sprouts_at;  // explicit initial tips (then `sprouts` is ignored)
  int max_tips = 100000;  // no branching while this many tips are active (the initial sprouts are not capped)
  double reach_x = 0.95;  // stop when a sprout reaches x >= reach_x (fraction of the box)
  double t_max = 20;      // or at this time
};

struct HybridProblem {
  Grid grid;
  ModelParams model;
  double dt = 0;
  InitialParams initial;
  HybridParams hybrid;
};

struct Segment {
  std::int64_t from = 0, to = 0;  // node indices (adjacent nodes)
  std::int32_t birth_step = 0;    // the step that made it, plus 1 (0 for the initial sprouts' first segment)
  std::int32_t generation = 0;    // branch generation of the sprout it belongs to
  std::int32_t sprout = 0;        // the sprout (tip id) it belongs to
  SegmentKind kind = SegmentKind::Move;
  Segment() = default;
  constexpr Segment(std::int64_t f, std::int64_t t, std::int32_t birth, std::int32_t gen, std::int32_t tip,
                    SegmentKind k)
      : from(f), to(t), birth_step(birth), generation(gen), sprout(tip), kind(k) {}
};

struct MetricsRow {
  std::int64_t step = 0;
  double t = 0;
  std::int64_t tips = 0, sprouts = 0, branches = 0, anastomoses = 0;
  std::int64_t anastomoses_by_kind[kFusionKinds] = {0, 0, 0, 0};  // by FusionKind
  double length = 0;  // vessel length: distinct lattice edges of the network x h (parent vessel excluded)
  double front = 0;   // largest x reached by a sprout
};

struct Realisation {
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  bool reached = false;
  double reach_time = 0;  // when `reached`
  std::int64_t branches = 0, anastomoses = 0, sprouts = 0;
  std::int64_t anastomoses_by_kind[kFusionKinds] = {0, 0, 0, 0};  // by FusionKind
  std::int64_t passes = 0;                    // moves onto an occupied node that did not fuse
  std::int64_t moves = 0, clipped_draws = 0;  // move draws, and those where a negative P was clipped
  std::vector<Segment> segments;
  std::vector<MetricsRow> metrics;               // after every step (row 0: the initial state)
  std::vector<std::int64_t> occupied;            // every other occupied node, in occupation order
  std::vector<std::int64_t> branch_points;       // nodes where a branch started
  std::vector<std::int64_t> anastomosis_points;  // nodes where a tip fused with a vessel or sprout
  std::vector<FusionKind> anastomosis_kinds;     // their kinds, in the same order
  std::vector<std::int64_t> active_tip_nodes;    // at the end
  std::vector<double> final_c;  // D_c > 0: the c field at the end (of realisation 0 only, in an ensemble)
};

// The parent vessel's nodes: the x = 0 face, occupied from the start (the same for every realisation).
std::vector<std::int64_t> parent_vessel(const Grid& g);

// Checks the problem (grid, step, table, psi...); UserError naming the field.
void validate(const HybridProblem& problem);

// The largest stable k of the hybrid model: the diffusion limit h^2 / (2 dims max(D, D_c)) (the
// tip weights clip negative P, so no taxis limit applies); +inf when D = D_c = 0.
double hybrid_step_limit(const HybridProblem& problem);

// Sets problem.dt: `dt` when given (a UserError above the limit unless `force`), else 0.9 x the
// limit but at least 100 steps to t_max, rounded down to two significant digits (docs/angio.md,
// "Configuration" of the hybrid model). Without diffusion a step must be given.
void choose_hybrid_step(HybridProblem& problem, std::optional<double> dt, bool force);

// One realisation on the serial reference backend; every random draw is keyed by
// (seed, tip id, step, purpose), so realisation r of --seed S equals a run with --seed S + r.
Realisation run_hybrid_reference(const HybridProblem& problem, std::uint64_t seed);

// An ensemble and what made it.
struct HybridEnsemble {
  std::vector<Realisation> realisations;  // realisation r has seed options.seed + r
  Backend backend = Backend::Reference;   // the backend that ran (never Auto)
  std::string device;                     // "CPU, 16 threads", "NVIDIA H200 (device 0)"...
};

// Realisations r = 0..replicates-1 with seeds options.seed + r. options.backend Auto runs cuda when
// the build has it and options.device is usable, else cpu (resolve_backend). Reference runs them one
// after another, cpu shares them among options.threads threads; each equals a single run with its
// seed, whatever the thread count. cuda runs them concurrently on GPU options.device (one warp per
// realisation) and gives the same realisations bit for bit (with D_c > 0 each realisation has its
// own c field on the GPU). options.progress(done, total) is called from one thread at a time.
// keep_logs >= 0: only realisations 0 .. keep_logs - 1 keep their logs (segments, occupied,
// branch_points, anastomosis_points and _kinds, active_tip_nodes); the others are left with their
// counts and metrics, and the host memory of their logs is reused as the ensemble is built (for large
// ensembles whose outputs draw one network, as the CLI's). -1: every realisation keeps its logs.
HybridEnsemble run_hybrid_ensemble(const HybridProblem& problem, int replicates, const RunOptions& options,
                                   int keep_logs = -1);

// The same over the ranks of an MPI job (simkit::dist, docs/scale-out.md): rank k runs realisations
// dist::share(replicates, K, k) with their seeds options.seed + r on its own device, and rank 0 gathers
// them in realisation order, equal to run_hybrid_ensemble's bit for bit; the other ranks return no
// realisations. Without `logs`, realisations other than 0 come without their logs (segments,
// occupied, branch_points, anastomosis_points and _kinds, active_tip_nodes), which the outputs
// (write_hybrid_outputs) draw for realisation 0 only; their counts and metrics are complete. On one
// rank it is run_hybrid_ensemble (keep_logs 1 without `logs`).
HybridEnsemble run_hybrid_ensemble_ranks(const HybridProblem& problem, int replicates, const RunOptions& options,
                                         bool logs = false);

// One rank's own realisations: realisations first .. first + count - 1 of the ensemble.
struct HybridShare {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::vector<Realisation> realisations;  // on ranks other than 0 (rank 0's are in the ensemble itself)
};

// The same, with the metrics kept where they were made: rank 0 receives the other ranks'
// realisations with their counts and only their last metrics row (all that ensemble.csv and the
// summary read: 218 bytes a realisation without its logs, instead of 96 a step), and `share` gets
// this rank's range and, on the other ranks, its realisations with every metrics row (logs dropped as above),
// for write_hybrid_outputs_ranks (hybrid_io.hpp), which writes each rank's metrics files on that
// rank. Realisation 0 is always rank 0's own, whole. On one rank it is run_hybrid_ensemble, `share`
// the whole range.
HybridEnsemble run_hybrid_ensemble_ranks(const HybridProblem& problem, int replicates, const RunOptions& options,
                                         bool logs, HybridShare& share);

// run_hybrid_ensemble, returning the realisations only.
std::vector<Realisation> run_hybrid_ensemble(const HybridProblem& problem, std::uint64_t seed, int replicates,
                                             Backend backend, int threads, const ProgressCallback& progress = {},
                                             int device = 0);

}  // namespace simkit::angio
