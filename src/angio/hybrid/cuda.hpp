#pragma once
// The hybrid model's GPU kernel behind a narrow interface of plain arrays (no std::vector of the
// model's own types: nvcc 12's front end cannot instantiate those with GCC 12's C++20 library).
// cuda_host.cpp builds the realisations from what it returns.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "angio/hybrid/detail.hpp"
#include "angio/model.hpp"
#include "simkit/angio/hybrid_rules.hpp"
#include "simkit/core/backend.hpp"

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

// The segment logs and tip tables of a chunk of realisations, packed on the GPU (realisation after
// realisation, each its own entries only: no padding to the longest) and downloaded in one copy per
// array; the chunk's realisations share it until the last of them is rebuilt. Its host memory is a
// slot of a small pool of page-locked buffers (PinnedChunks in cuda.cu: the copy runs at the link's
// speed and the slot goes back to the pool with the chunk's last realisation), or, for a chunk
// larger than a slot (one realisation with a very long log), fresh pageable memory (make_staged).
struct LogEntry {
  long long from, to;
  int birth, generation, tip;
  unsigned char kind;  // SegmentKind
  unsigned char pad[3];  // written (zero) too: the download reads whole entries (compute-sanitizer initcheck)
};
static_assert(sizeof(LogEntry) == 32, "LogEntry: no padding but pad");
// A realisation whose log stays on the GPU (the ensemble keeps no log for it: keep_logs) comes
// down as its per-step rows instead, which the kernel writes as it goes (steps + 1 rows; row s
// counts the segments born in steps up to s, as realisation_from_log counts the log): its counts,
// the distinct lattice edges of its network and the largest i of an occupied node so far. 32 bytes
// a step instead of 32 a segment and 9 a tip (docs/performance.md: about a twelfth for a 100^3,
// t_max = 2 realisation).
struct SummaryRow {
  int sprouts, branches;
  int fused[kFusionKinds];  // anastomoses by FusionKind
  int edges;                // distinct lattice edges
  int front_i;              // the largest i of an occupied node (0: none yet)
};
static_assert(sizeof(SummaryRow) == sizeof(LogEntry), "SummaryRow: a chunk's rows share its log entries' memory");
struct StagedLogs {
  LogEntry* log = nullptr;
  long long* tip_node = nullptr;
  unsigned char* tip_active = nullptr;
  SummaryRow* rows = nullptr;    // a chunk of rows (RawRealisation::summary): in the log's memory
  std::shared_ptr<void> memory;  // owns the arrays above: frees them, or hands the pool slot back
};
// Pageable host memory for `entries` log entries and `tips` tip rows (cuda_host.cpp), left
// uninitialised: every page is touched by `threads` threads at once before the download, since a
// single thread faulting in fresh pages was most of a short ensemble's time.
std::shared_ptr<StagedLogs> make_staged(std::size_t entries, std::size_t tips, int threads);

// One realisation as the kernel leaves it: its segment log (in the order the segments were made,
// entries [log_begin, log_begin + log_size) of `staged`), counters, and its tip table (entries
// [tip_begin, tip_begin + tips): the active tips' nodes in id order); or, `summary`, its per-step
// rows (rows [row_begin, row_begin + steps + 1) of staged->rows) and its passes, without the log.
// `overflow`: it outgrew the capacities and must be run again with more.
struct RawRealisation {
  int index = 0;  // realisation number r (seed + r)
  bool overflow = false;
  bool summary = false;
  long long steps = 0, moves = 0, clipped = 0, passes = 0;
  std::shared_ptr<const StagedLogs> staged;
  std::size_t log_begin = 0, log_size = 0, tip_begin = 0, tips = 0, row_begin = 0;
  std::vector<double> final_c;  // D_c > 0, realisation 0 only: c at the end
};

// Where the time went (seconds), summed over calls: the initial fields on the host (setup), device
// memory (allocate), uploading the initial fields, the kernel launches, downloading the logs, and
// rebuilding the realisations on the host (rebuild: the rebuilding thread's busy time, which
// overlaps the next batches' kernels).
struct Timing {
  double setup = 0, allocate = 0, upload = 0, kernel = 0, download = 0, rebuild = 0;
  double rows = 0;     // the downloaded chunks handed over one realisation at a time
  double slot_wait = 0;  // waiting for a pinned chunk slot that the rebuild still held (in download)
  int slots = 0;         // pinned chunk slots allocated
  double batches = 0;  // run_realisations in all (the batches' buffers freed included)
  double finish = 0;   // waiting for the rebuild after the last batch
  long long summarised = 0;  // realisations that came down as their per-step rows (no log)
  // GPU times by events (only with a Timing): the D_c = 0 parts' launches from the first start to
  // the last end, and the chunks' pack kernels (logs) and their copies down.
  double parts_span = 0, chunk_kernels = 0, chunk_copies = 0;
  // Host times: each D_c = 0 batch's start until its parts can launch (uploads and clears), and
  // from the end of the last batch until its buffers are freed.
  double prepare = 0, release = 0;
  long long chunks = 0;
  long long scratch_rows = 0;  // the most realisations' tables, tips and logs allocated at once
  long long key_clears = 0;    // D_c = 0 hash tables cleared when the launches' epochs ran out
  // Another call's times (setup, batches, rebuild, finish and release are the caller's or summed apart).
  void add(const Timing& t) {
    upload += t.upload;
    kernel += t.kernel;
    download += t.download;
    allocate += t.allocate;
    rows += t.rows;
    slot_wait += t.slot_wait;
    slots = slots > t.slots ? slots : t.slots;
    summarised += t.summarised;
    parts_span += t.parts_span;
    prepare += t.prepare;
    chunk_kernels += t.chunk_kernels;
    chunk_copies += t.chunk_copies;
    chunks += t.chunks;
    scratch_rows = scratch_rows > t.scratch_rows ? scratch_rows : t.scratch_rows;
    key_clears += t.key_clears;
  }
};

// Runs realisations `which` (batched to fit the GPU's free memory) with per-realisation
// capacities of `segments` segments and `tips` tips; `done(raw)` receives each one, in no
// particular order, on the calling thread. A batch's logs come down in chunks of realisations
// (packed, about 16 MiB of log entries each; `row_copies`: one entry, so one realisation with a
// log a chunk, and the empty ones beside it), each handed over as soon as it is down. D_c > 0
// (kp.model.taf_diffusion) gives every realisation its own c field on the GPU. `threads`: the host
// threads that touch the chunks' fresh pages.
// `pinned`: where the page-locked chunk slots live (PinnedChunks, cuda.cu), made at the first call
// and reused by the next; the caller drops it on the run's thread after the rebuild.
// `part`: realisations a part of a D_c = 0 batch (tests: many parts on few realisations); 0 the
// default (an eighth of the batch, at least 4096).
// `keep_logs`: realisations r >= keep_logs (when >= 0) come down summarised (RawRealisation::summary),
// their logs never leaving the GPU; -1: every realisation with its log. `knobs`: row_copies, part,
// epochs, pinned_entries and batch of Capacity (detail.hpp; its capacities are `segments` and `tips`).
class PinnedChunks;
void run_realisations(const KernelProblem& p, std::span<const double> c0, std::span<const double> f0,
                      const std::vector<long long>& sprout_node, const std::vector<long long>& sprout_previous,
                      const std::vector<int>& which, long long segments, long long tips, int device,
                      const std::function<void(RawRealisation&&)>& done, Timing* timing, const Capacity& knobs,
                      const StopCallback& stop, int threads, std::shared_ptr<PinnedChunks>& pinned, int keep_logs);

}  // namespace simkit::angio::detail::hybrid_cuda
