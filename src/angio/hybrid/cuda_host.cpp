// The hybrid model's cuda backend, host side: runs the ensemble kernel (cuda.cu), runs again
// with four times the capacity any realisation that outgrew its buffers, and builds each
// realisation, on a worker thread while the GPU runs the next batches: from its segment log with
// the reference's own builder, or, for one that keeps no log, from the per-step rows the kernel
// made (from_summary).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>

#include "angio/hybrid/cuda.hpp"
#include "angio/hybrid/detail.hpp"
#include "core/parallel.hpp"
#include "simkit/angio/run.hpp"
#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"

namespace simkit::angio::detail::hybrid_cuda {
namespace {

// Rebuilds finished realisations while the GPU runs the next batches: the batches hand each
// finished realisation over as it is downloaded, and a worker thread rebuilds what has arrived on
// every host thread (each realisation on its own). The rebuild is then off the GPU's critical path
// except for the last batch's (docs/scale-out.md: ranks that share a host). Results do not depend
// on the order: each realisation is rebuilt from its own log into its own slot. The worker takes
// at most kRound realisations at a time, and `rebuild` skips the rest of its round once the
// Rebuilder is abandoned (a stop or an error elsewhere), so that abandoning it never waits for
// more than one realisation's rebuild (a stopped million-replicate run had queued minutes of them).
class Rebuilder {
 public:
  using Rebuild = std::function<void(std::vector<RawRealisation>&, const std::atomic<bool>& abandoned)>;
  explicit Rebuilder(Rebuild rebuild) : rebuild_(std::move(rebuild)), worker_([this] { loop(); }) {}
  Rebuilder(const Rebuilder&) = delete;
  Rebuilder& operator=(const Rebuilder&) = delete;
  // Without finish (an error or a stop elsewhere): what is queued is dropped, a rebuild under way ends.
  ~Rebuilder() {
    abandoned_ = true;
    close();
  }

  void push(RawRealisation&& raw) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(raw));
    }
    ready_.notify_one();
  }
  // Everything handed over is rebuilt; the worker's first error, if any, is thrown here.
  void finish() {
    close();
    if (error_) std::rethrow_exception(error_);
  }
  double busy() const { return busy_; }  // seconds spent rebuilding (after finish)

 private:
  void close() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_one();
    if (worker_.joinable()) worker_.join();
  }
  void loop() {
    for (;;) {
      std::vector<RawRealisation> work;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return closed_ || !queue_.empty(); });
        if (abandoned_ || queue_.empty()) return;
        const auto take = std::min<std::ptrdiff_t>(kRound, static_cast<std::ptrdiff_t>(queue_.size()));
        work.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + take));
        queue_.erase(queue_.begin(), queue_.begin() + take);
      }
      if (error_) continue;  // drop the rest after an error
      const auto start = std::chrono::steady_clock::now();
      try {
        rebuild_(work, abandoned_);
      } catch (...) {
        error_ = std::current_exception();
      }
      busy_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }

  static constexpr std::ptrdiff_t kRound = 4096;  // realisations a round at most
  Rebuild rebuild_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RawRealisation> queue_;
  bool closed_ = false;
  std::atomic<bool> abandoned_{false};
  std::exception_ptr error_;  // the worker's, read after the join
  double busy_ = 0;
  std::thread worker_;  // last: starts once everything above exists
};

// A realisation that came down summarised (RawRealisation::summary): its metrics from its per-step
// rows, as realisation_from_log makes them from the log (the same counts, the same products for t,
// length and front), its totals from the last row; no logs (drop_logs).
Realisation from_summary(const HybridProblem& p, std::uint64_t seed, const RawRealisation& raw) {
  const Grid& g = p.grid;
  Realisation r;
  r.seed = seed;
  r.steps = raw.steps;
  r.moves = raw.moves;
  r.clipped_draws = raw.clipped;
  r.passes = raw.passes;
  const SummaryRow* rows = raw.staged->rows + raw.row_begin;
  const auto count = static_cast<std::size_t>(raw.steps) + 1;
  r.metrics.resize(count);
  for (std::size_t s = 0; s < count; ++s) {
    const SummaryRow& x = rows[s];
    MetricsRow& row = r.metrics[s];
    row.step = static_cast<std::int64_t>(s);
    row.t = static_cast<double>(s) * p.dt;
    row.sprouts = x.sprouts;
    row.branches = x.branches;
    row.anastomoses = 0;
    for (int k = 0; k < kFusionKinds; ++k) {
      row.anastomoses_by_kind[k] = x.fused[k];
      row.anastomoses += x.fused[k];
    }
    row.tips = row.sprouts - row.anastomoses;
    row.length = static_cast<double>(x.edges) * g.h;
    // (the largest of h and every occupied node's i h, as realisation_from_log: i h grows with i)
    row.front = std::max(g.h, x.front_i * g.h);
  }
  totals_from_metrics(p, r);
  return r;
}

}  // namespace

std::shared_ptr<StagedLogs> make_staged(std::size_t entries, std::size_t tips, int threads) {
  auto staged = std::make_shared<StagedLogs>();
  struct Arrays {  // new T[] of these trivial types leaves them uninitialised: first touched below
    std::unique_ptr<std::byte[]> log;  // log entries, or a chunk of summaries' rows (the same size)
    std::unique_ptr<long long[]> tip_node;
    std::unique_ptr<unsigned char[]> tip_active;
  };
  auto arrays = std::make_shared<Arrays>();
  arrays->log.reset(new std::byte[std::max<std::size_t>(entries, 1) * sizeof(LogEntry)]);
  arrays->tip_node.reset(new long long[std::max<std::size_t>(tips, 1)]);
  arrays->tip_active.reset(new unsigned char[std::max<std::size_t>(tips, 1)]);
  staged->log = reinterpret_cast<LogEntry*>(arrays->log.get());
  staged->rows = reinterpret_cast<SummaryRow*>(arrays->log.get());
  staged->tip_node = arrays->tip_node.get();
  staged->tip_active = arrays->tip_active.get();
  staged->memory = std::move(arrays);
  constexpr std::size_t kPage = 4096;
  const auto touch = [&](void* data, std::size_t bytes) {
    auto* p = static_cast<unsigned char*>(data);
    const auto pages = static_cast<std::int64_t>((bytes + kPage - 1) / kPage);
    // A team only for chunks worth one (a small chunk's pages are touched by the copy itself).
    if (pages < 256) return;
    parallel_for(0, pages, Schedule{std::max(threads, 1), 64},
                 [&](std::int64_t q) { p[static_cast<std::size_t>(q) * kPage] = 0; });
  };
  touch(staged->log, entries * sizeof(LogEntry));
  touch(staged->tip_node, tips * sizeof(long long));
  return staged;
}

std::vector<Realisation> run(const HybridProblem& problem, std::uint64_t seed, int replicates, int device,
                             const ProgressCallback& progress, const Capacity& initial_capacity, Timing* timing,
                             const StopCallback& stop, int threads, int keep_logs) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const Clock::time_point setup_start = Clock::now();
  // SIMKIT_HYBRID_TIMING=1: the phases on stderr at the end (a diagnostic, for measurements).
  Timing diagnostic;
  const bool report = timing == nullptr && std::getenv("SIMKIT_HYBRID_TIMING") != nullptr;
  if (report) timing = &diagnostic;
  const Grid& g = problem.grid;
  if (problem.hybrid.branching.size() > static_cast<std::size_t>(kMaxRules)) {
    throw UserError(fmt::format("branching table: at most {} rows", kMaxRules));
  }
  KernelProblem kp;
  kp.model = problem.model;
  kp.nx = g.nx;
  kp.ny = g.ny;
  kp.nz = g.nz;
  kp.h = g.h;
  kp.dt = problem.dt;
  kp.psi = problem.hybrid.psi;
  kp.reach_front = hybrid_reach_front(problem);
  kp.last_step = hybrid_last_step(problem);
  kp.max_tips = problem.hybrid.max_tips;
  kp.rules = static_cast<int>(problem.hybrid.branching.size());
  for (int r = 0; r < kp.rules; ++r) {
    kp.rule_c[r] = problem.hybrid.branching[static_cast<std::size_t>(r)].c_upto;
    kp.rule_p[r] = problem.hybrid.branching[static_cast<std::size_t>(r)].probability;
  }
  const HybridParams& h = problem.hybrid;
  kp.rule = RuleSet{h.anastomosis,   h.anastomosis_window, h.fork_passes, h.uptake,
                    h.branch_always, h.branch_density,     h.daughter,    h.back_steps, h.weights};
  kp.seed = seed;
  // The initial c and f (no n), into memory that the threads computing them touch first (a
  // vector's zeroing alone took longer than the values).
  const std::size_t nodes = static_cast<std::size_t>(g.nodes());
  const std::unique_ptr<double[]> c0(new double[nodes]), f0(new double[nodes]);
  fill_initial_fields<double>(g, problem.initial, 0, g.nz, nullptr, f0.get(), c0.get());
  std::vector<long long> sprout_node, sprout_previous;
  for (const auto& [j, l] : sprout_positions(g, problem.initial, problem.hybrid)) {
    sprout_previous.push_back(static_cast<long long>(g.index(0, j, l)));
    sprout_node.push_back(static_cast<long long>(g.index(1, j, l)));
  }
  const auto sprouts = static_cast<std::int64_t>(sprout_node.size());
  std::int64_t segments = std::max(initial_capacity.segments, sprouts + 1);
  std::int64_t tips = std::max(initial_capacity.tips, sprouts + 1);

  if (timing) timing->setup += since(setup_start);
  std::vector<Realisation> out(static_cast<std::size_t>(replicates));
  std::vector<int> pending(static_cast<std::size_t>(replicates));
  for (int r = 0; r < replicates; ++r) pending[static_cast<std::size_t>(r)] = r;
  int done = 0;
  // The worker's OpenMP teams take `threads` (--threads), or this thread's count when 0, which a new
  // thread would not inherit.
  if (threads <= 0) threads = omp_get_max_threads();
  // The page-locked chunk slots, declared before the rebuilder so that they outlive every chunk it
  // holds and are freed here, on this thread.
  std::shared_ptr<PinnedChunks> pinned;
  // (SIMKIT_HYBRID_PART, for measurements: realisations a D_c = 0 part, as Capacity::part)
  Capacity knobs = initial_capacity;
  if (const char* env = std::getenv("SIMKIT_HYBRID_PART"); knobs.part == 0 && env != nullptr)
    knobs.part = std::max(0, std::atoi(env));
  Rebuilder rebuilder([&](std::vector<RawRealisation>& finished, const std::atomic<bool>& abandoned) {
    const auto count = static_cast<std::int64_t>(finished.size());
    parallel_for(0, count, Schedule{threads, 4}, [&](std::int64_t k) {
      if (abandoned.load(std::memory_order_relaxed)) return;  // the run is ending: skip the rest
      if (stop && stop()) throw Stopped();  // also while finish() waits for the last batches' rebuild
      RawRealisation& raw = finished[static_cast<std::size_t>(k)];
      Realisation& r = out[static_cast<std::size_t>(raw.index)];
      const std::uint64_t seed_r = seed + static_cast<std::uint64_t>(raw.index);
      if (raw.summary) {  // its log stayed on the GPU
        r = from_summary(problem, seed_r, raw);
        raw.staged.reset();
      } else {
        std::vector<Segment> log;
        std::vector<std::int64_t> active;
        if (raw.staged) {
          const LogEntry* entries = raw.staged->log + raw.log_begin;
          log.reserve(raw.log_size);
          for (std::size_t e = 0; e < raw.log_size; ++e) {
            const LogEntry& x = entries[e];
            log.emplace_back(x.from, x.to, x.birth, x.generation, x.tip, static_cast<SegmentKind>(x.kind));
          }
          for (std::size_t t = raw.tip_begin; t < raw.tip_begin + raw.tips; ++t)
            if (raw.staged->tip_active[t]) active.push_back(raw.staged->tip_node[t]);
          raw.staged.reset();  // the chunk's host memory goes with its last realisation
        }
        r = realisation_from_log(problem, seed_r, raw.steps, raw.moves, raw.clipped, std::move(log), std::move(active));
        if (keep_logs >= 0 && raw.index >= keep_logs) drop_logs(r);
      }
      r.final_c = std::move(raw.final_c);
#pragma omp critical(simkit_angio_hybrid_cuda_progress)
      {
        ++done;
        if (progress) progress(done, replicates);
      }
    });
  });
  while (!pending.empty()) {
    std::vector<int> overflowed;
    const Clock::time_point batches_start = Clock::now();
    run_realisations(
        kp, {c0.get(), nodes}, {f0.get(), nodes}, sprout_node, sprout_previous, pending, segments, tips, device,
        [&](RawRealisation&& raw) {
          if (raw.overflow) {
            overflowed.push_back(raw.index);
          } else {
            rebuilder.push(std::move(raw));
          }
        },
        timing, knobs, stop, threads, pinned, keep_logs);
    if (timing) timing->batches += since(batches_start);
    std::sort(overflowed.begin(), overflowed.end());
    pending = std::move(overflowed);
    if (segments > std::numeric_limits<std::int64_t>::max() / 8 || tips > std::numeric_limits<int>::max() / 8) {
      throw InternalError("hybrid cuda: capacities overflow");
    }
    segments *= 4;
    tips *= 4;
  }
  const Clock::time_point finish_start = Clock::now();
  rebuilder.finish();
  // The rebuilding thread's busy time: most of it overlapped the batches' kernels.
  if (timing) {
    timing->finish += since(finish_start);
    timing->rebuild += rebuilder.busy();
  }
  if (report) {
    const Timing& t = diagnostic;
    std::fprintf(
        stderr,
        "simkit: hybrid cuda phases (s): setup %.4f, upload %.4f, allocate %.4f, kernel %.4f, download %.4f "
        "(of which waiting for a pinned slot %.4f, %d slots), rows %.4f, batches %.4f (freeing included), "
        "rebuild busy %.4f, waited for the rebuild %.4f, total %.4f (%d realisations, %lld summarised); GPU: parts "
        "%.4f, %lld chunks' kernels %.4f and copies %.4f; host: batches' prepare %.4f, release %.4f\n",
        t.setup, t.upload, t.allocate, t.kernel, t.download, t.slot_wait, t.slots, t.rows, t.batches, t.rebuild,
        t.finish, since(setup_start), replicates, t.summarised, t.parts_span, t.chunks, t.chunk_kernels, t.chunk_copies,
        t.prepare, t.release);
  }
  return out;
}

}  // namespace simkit::angio::detail::hybrid_cuda

namespace simkit::angio::detail::hybrid::cuda {

std::vector<Realisation> run(const HybridProblem& problem, int replicates, const RunOptions& options, int keep_logs) {
  return hybrid_cuda::run(problem, options.seed, replicates, options.device, options.progress, hybrid_cuda::Capacity{},
                          nullptr, options.stop, effective_threads(options.threads), keep_logs);
}

}  // namespace simkit::angio::detail::hybrid::cuda
