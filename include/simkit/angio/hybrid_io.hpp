#pragma once
// Files of the hybrid model (docs/angio.md, "Outputs" of the hybrid model): per-realisation metrics, the ensemble table and summary,
// the network as VTK PolyData, and a quick-look projection. Writers are atomic (core/output.hpp).
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "simkit/angio/hybrid.hpp"
#include "simkit/core/backend.hpp"

namespace simkit::angio {

// metrics CSV of one realisation: header `step,t,tips,sprouts,branches,anastomoses,
// anastomoses_own,anastomoses_parent_daughter,anastomoses_sprout,anastomoses_vessel,length,front`,
// one row per MetricsRow, numbers with 17 significant digits.
void write_metrics_csv(const std::filesystem::path& path, const std::vector<MetricsRow>& rows);

// ensemble.csv: header `realisation,seed,reach_time,branches,anastomoses,anastomoses_own,
// anastomoses_parent_daughter,anastomoses_sprout,anastomoses_vessel,passes,length,front`, one row
// per realisation (reach_time empty when the front never reached --reach-x).
void write_ensemble_csv(const std::filesystem::path& path, const std::vector<Realisation>& ensemble);

// Mean and 5-95 % band (nearest-rank percentiles) of reach time (over the realisations that
// reached; with their count), branches, anastomoses (also by kind), length and final front, plus
// the number and fraction that reached, the passes, the rules, and the fraction of move draws that
// clipped a negative weight. {"reach_time": {"mean":..,"p05":..,"p95":..,"count":..}, ...}.
nlohmann::json ensemble_summary(const std::vector<Realisation>& ensemble);

// The network of one realisation as VTK XML PolyData (ascii): points at node coordinates (i h,
// j h, l h), one 2-point line per segment, cell data "birth_time" (Float64, birth_step * dt),
// "generation" (Int32), "sprout" (Int32, the sprout a segment belongs to) and "kind" (UInt8,
// SegmentKind: sprout, move, pass, branch, or the kind of anastomosis it closes); the parent vessel
// is not drawn. ParaView opens it directly.
void write_network_vtp(const std::filesystem::path& path, const HybridProblem& problem, const Realisation& r);

// The fields of one realisation at its end, for write_vti: n = 1 on the occupied nodes (parent
// vessel included) and 0 elsewhere; f and c from the closed forms of each node's occupation time
// (with D_c > 0, c is the realisation's own field). The same values the tips saw.
Fields<double> hybrid_fields(const HybridProblem& problem, const Realisation& r);

// Quick look: network.png with two panels, the projections of the network on the xy plane and
// (3D only) the xz plane, segments drawn dark on white, the parent vessel as a grey line at x = 0,
// each node scaled to at least 2 px and the panel at most ~800 px. Returns the files written.
std::vector<std::filesystem::path> write_network_png(const std::filesystem::path& dir, const HybridProblem& problem,
                                                     const Realisation& r);

// What a hybrid run records besides its ensemble (result.json).
struct HybridRunInfo {
  std::uint64_t seed = 1;        // realisation r ran with seed + r
  Backend backend = Backend::Cpu;  // the backend that ran (resolved)
  double seconds = 0;            // compute time of the ensemble
  bool quicklook = true;         // write network.png
  int threads = 0;               // threads writing the metrics files (0: all; --threads, OMP_NUM_THREADS)
  // Asked between files while the outputs are written (a million realisations' metrics files take
  // minutes): true ends the write with simkit::Stopped, the staging directory goes and `out` stays
  // as it was. Under MPI (write_hybrid_outputs_ranks) asked once, on every rank together, after
  // the files are written and before they move into place.
  StopCallback stop;
  // metrics/realisation_NNNNN.csv of the first metrics_files realisations only (the default: all;
  // 0: none). Large ensembles (10^5-10^6 realisations) are summarised by ensemble.csv and
  // result.json; a file each is minutes of writing there (--metrics-files).
  std::uint64_t metrics_files = std::numeric_limits<std::uint64_t>::max();
};

// The run layer of the hybrid model (docs/angio.md, "Outputs" of the hybrid model): writes into
// `out` (created when missing) metrics/realisation_NNNNN.csv for every realisation or the first
// info.metrics_files (removing any other of an earlier run, so that metrics/ matches this run),
// ensemble.csv, network.vtp and fields.vti of realisation 0 (fields in fp32), network.png unless
// !quicklook, and result.json (ensemble_summary with the problem, the rules and `info`). Returns
// result.json's content. Atomic as a whole: the files are staged and moved into `out` only when
// all are written, and an earlier run's files that this one did not write are removed.
nlohmann::json write_hybrid_outputs(const std::filesystem::path& out, const HybridProblem& problem,
                                    const std::vector<Realisation>& ensemble, const HybridRunInfo& info);

// The same over the ranks of an MPI job, after run_hybrid_ensemble_ranks(..., share): a collective
// call (every rank, its own `share`; `ensemble` is read on rank 0 only). Rank 0 stages, every rank
// writes the metrics files of its own realisations into rank 0's staging directory (so `out` must
// be on a file system every rank sees), rank 0 writes the other files from `ensemble` and moves
// everything into place: the files of write_hybrid_outputs, byte for byte. Returns result.json's
// content on rank 0 and null on the others. On one rank it is write_hybrid_outputs.
nlohmann::json write_hybrid_outputs_ranks(const std::filesystem::path& out, const HybridProblem& problem,
                                          const std::vector<Realisation>& ensemble, const HybridShare& share,
                                          const HybridRunInfo& info);

}  // namespace simkit::angio
