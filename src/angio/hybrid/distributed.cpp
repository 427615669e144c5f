// The hybrid model's ensemble over the ranks of an MPI job (docs/scale-out.md): realisations split
// by range, each rank runs its share with the seeds the single-process run gives them (seed + r),
// and rank 0 gathers them in realisation order. Every random draw of a realisation is keyed by its
// own seed, so the gathered ensemble is the single-process one, bit for bit.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "core/parallel.hpp"
#include "core/report.hpp"
#include "simkit/angio/hybrid.hpp"
#include "simkit/core/backend.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

namespace simkit::angio {

namespace {

// Writes into [at, end), memory sized beforehand (Sizer).
class Writer {
 public:
  Writer(std::byte* at, const std::byte* end) : at_(at), end_(end) {}
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    give(&v, sizeof(T));
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(v.size());
    give(v.data(), v.size() * sizeof(T));
  }
  bool done() const { return at_ == end_; }

 private:
  void give(const void* data, std::size_t n) {
    if (static_cast<std::size_t>(end_ - at_) < n)
      throw InternalError("hybrid ensemble: the message's size was miscounted");
    if (n) std::memcpy(at_, data, n);
    at_ += n;
  }
  std::byte* at_;
  const std::byte* end_;
};

// Counts what a Writer would hold (the message is sized by the serialiser itself, then allocated once).
class Sizer {
 public:
  template <class T>
  void put(const T&) {
    bytes += sizeof(T);
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    bytes += sizeof(std::uint64_t) + v.size() * sizeof(T);
  }
  std::size_t bytes = 0;
};

class Reader {
 public:
  Reader(const std::byte* data, std::size_t size) : at_(data), end_(data + size) {}
  template <class T>
  T get() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint64_t>();
    if (n > static_cast<std::uint64_t>(end_ - at_) / sizeof(T)) throw InternalError("hybrid ensemble: a short message");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  bool done() const { return at_ == end_; }

 private:
  void take(void* out, std::size_t n) {
    if (static_cast<std::size_t>(end_ - at_) < n) throw InternalError("hybrid ensemble: a short message");
    if (n) std::memcpy(out, at_, n);
    at_ += n;
  }
  const std::byte* at_;
  const std::byte* end_;
};

// `last_metrics`: only the last metrics row travels (the rank that made them writes the others).
template <class Out>
void put(Out& w, const Realisation& r, bool last_metrics) {
  w.put(r.seed);
  w.put(r.steps);
  w.put(r.reached);
  w.put(r.reach_time);
  w.put(r.branches);
  w.put(r.anastomoses);
  w.put(r.sprouts);
  w.put(r.anastomoses_by_kind);
  w.put(r.passes);
  w.put(r.moves);
  w.put(r.clipped_draws);
  if (last_metrics && r.metrics.size() > 1) {
    w.template put<std::uint64_t>(1);
    w.put(r.metrics.back());
  } else {
    w.put_vector(r.metrics);
  }
  // Most realisations of a large ensemble come without logs: one byte says so (seven empty vectors
  // were a fifth of the message).
  const bool logs =
      !(r.segments.empty() && r.occupied.empty() && r.branch_points.empty() && r.anastomosis_points.empty() &&
        r.anastomosis_kinds.empty() && r.active_tip_nodes.empty() && r.final_c.empty());
  w.put(logs);
  if (!logs) return;
  w.put_vector(r.segments);
  w.put_vector(r.occupied);
  w.put_vector(r.branch_points);
  w.put_vector(r.anastomosis_points);
  w.put_vector(r.anastomosis_kinds);
  w.put_vector(r.active_tip_nodes);
  w.put_vector(r.final_c);
}

Realisation get(Reader& in) {
  Realisation r;
  r.seed = in.get<std::uint64_t>();
  r.steps = in.get<std::int64_t>();
  r.reached = in.get<bool>();
  r.reach_time = in.get<double>();
  r.branches = in.get<std::int64_t>();
  r.anastomoses = in.get<std::int64_t>();
  r.sprouts = in.get<std::int64_t>();
  using Kinds = decltype(r.anastomoses_by_kind);
  const auto kinds = in.get<std::array<std::int64_t, std::extent_v<Kinds>>>();
  std::copy(kinds.begin(), kinds.end(), r.anastomoses_by_kind);
  r.passes = in.get<std::int64_t>();
  r.moves = in.get<std::int64_t>();
  r.clipped_draws = in.get<std::int64_t>();
  r.metrics = in.get_vector<MetricsRow>();
  if (!in.get<bool>()) return r;  // no logs
  r.segments = in.get_vector<Segment>();
  r.occupied = in.get_vector<std::int64_t>();
  r.branch_points = in.get_vector<std::int64_t>();
  r.anastomosis_points = in.get_vector<std::int64_t>();
  r.anastomosis_kinds = in.get_vector<FusionKind>();
  r.active_tip_nodes = in.get_vector<std::int64_t>();
  r.final_c = in.get_vector<double>();
  return r;
}

// Without `share` every realisation travels whole (but for the logs, without `logs`).
HybridEnsemble gather_ranks(const HybridProblem& problem, int replicates, const RunOptions& options, bool logs,
                            HybridShare* share) {
  const dist::Comm& comm = dist::Comm::world();
  if (!comm.distributed()) {
    HybridEnsemble all = run_hybrid_ensemble(problem, replicates, options, logs ? -1 : 1);
    if (share) *share = HybridShare{0, all.realisations.size(), {}};
    return all;
  }
  validate(problem);
  if (replicates < 1) throw UserError("replicates", fmt::format(" {}: must be >= 1", replicates));
  const dist::Range mine = dist::share(static_cast<std::uint64_t>(replicates), comm.size(), comm.rank());
  if (share) *share = HybridShare{mine.begin, mine.size(), {}};
  // SIMKIT_HYBRID_TIMING=1: where a rank's time after its run goes, on stderr (for measurements).
  const bool report = std::getenv("SIMKIT_HYBRID_TIMING") != nullptr;
  Stopwatch clock;
  double ran = 0, packed = 0, gathered = 0;
  const Schedule schedule{effective_threads(options.threads), 256};
  // Rank 0 runs its share on a worker thread while this one (the one that may call MPI) makes the
  // ensemble's vector and receives and reads the others' realisations as each rank sends them:
  // the gather overlaps rank 0's run. The others run, then send.
  std::atomic<bool> first_done{false};  // a realisation of this rank's is done (its setup is over)
  const auto run_mine = [&]() {
    HybridEnsemble ran_here;
    if (mine.size() > 0) {
      RunOptions o = options;
      o.seed = options.seed + mine.begin;  // realisation r has seed + r, on whichever rank runs it
      o.progress = [&, user = options.progress](double done, double total) {
        first_done.store(true, std::memory_order_relaxed);
        if (user) user(done, total);
      };
      // Without `logs` only realisation 0 keeps its logs, on the rank that runs it.
      ran_here = run_hybrid_ensemble(problem, static_cast<int>(mine.size()), o, logs ? -1 : (mine.begin == 0 ? 1 : 0));
    } else {
      ran_here.backend = resolve_backend(options.backend, options.device);
      ran_here.device = device_description(ran_here.backend, options.device, effective_threads(options.threads));
    }
    // Realisation 0 of the whole ensemble alone keeps its final c.
    for (std::size_t k = 0; k < ran_here.realisations.size(); ++k)
      if (mine.begin + k != 0) ran_here.realisations[k].final_c = {};
    return ran_here;
  };
  constexpr int kSizeTag = 7101, kBodyTag = 7102;
  std::size_t message_size = 0;
  HybridEnsemble out;
  if (!comm.root()) {
    HybridEnsemble local = run_mine();
    ran = clock.seconds();
    out.backend = local.backend;
    out.device = local.device;
    // The message: its count n, the end of each realisation's bytes (n offsets from the first
    // realisation's start), then the realisations; written on the rank's threads, each where the
    // offsets put it, into memory those threads touch first.
    const bool last_metrics = share != nullptr;
    const auto n = static_cast<std::int64_t>(local.realisations.size());
    std::vector<std::uint64_t> ends(static_cast<std::size_t>(n));
    parallel_for(0, n, schedule, [&](std::int64_t k) {
      Sizer size;
      put(size, local.realisations[static_cast<std::size_t>(k)], last_metrics);
      ends[static_cast<std::size_t>(k)] = size.bytes;
    });
    std::uint64_t total = 0;
    for (std::uint64_t& e : ends) e = total += e;
    const std::size_t head = (1 + ends.size()) * sizeof(std::uint64_t);
    message_size = head + total;
    const std::unique_ptr<std::byte[]> message(new std::byte[message_size]);
    Writer index(message.get(), message.get() + head);
    index.put<std::uint64_t>(static_cast<std::uint64_t>(n));
    for (const std::uint64_t e : ends) index.put(e);
    parallel_for(0, n, schedule, [&](std::int64_t k) {
      const auto at = static_cast<std::size_t>(k);
      Writer w(message.get() + head + (at == 0 ? 0 : ends[at - 1]), message.get() + head + ends[at]);
      put(w, local.realisations[at], last_metrics);
      if (!w.done()) throw InternalError("hybrid ensemble: the message's size was miscounted");
    });
    if (share) share->realisations = std::move(local.realisations);  // this rank writes their metrics
    packed = clock.seconds();
    const std::uint64_t size = message_size;
    comm.send(&size, sizeof size, 0, kSizeTag);
    comm.send(message.get(), message_size, 0, kBodyTag);
    gathered = clock.seconds();
  } else {
    std::future<HybridEnsemble> running = std::async(std::launch::async, run_mine);
    // The run's result once it is there (a failure is raised at once, not after the others' sends).
    std::optional<HybridEnsemble> local;
    const auto poll = [&](std::chrono::microseconds wait) {
      if (!local && running.wait_for(wait) == std::future_status::ready) local = running.get();
    };
    // The vector once the run's setup is over (made during the setup, it slowed it: the run's
    // threads and this one share the cores).
    while (!first_done.load(std::memory_order_relaxed) && !local) poll(std::chrono::microseconds(200));
    out.realisations.resize(static_cast<std::size_t>(replicates));
    std::size_t next = mine.size();
    for (int k = 1; k < comm.size(); ++k) {
      // Waits without spinning (a blocking receive would take a core from the run's threads).
      while (!comm.probe(k, kSizeTag)) {
        poll(std::chrono::microseconds(0));
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      std::uint64_t size = 0;
      comm.recv(&size, sizeof size, k, kSizeTag);
      if (size < sizeof(std::uint64_t)) throw InternalError("hybrid ensemble: a short message");
      const std::unique_ptr<std::byte[]> bytes(new std::byte[size]);
      constexpr std::size_t kTouch = std::size_t{1} << 20;  // first touched by this rank's threads
      parallel_for(0, static_cast<std::int64_t>((size + kTouch - 1) / kTouch), Schedule{schedule.threads, 0},
                   [&](std::int64_t c) {
                     const std::size_t at = static_cast<std::size_t>(c) * kTouch;
                     std::memset(bytes.get() + at, 0, std::min<std::size_t>(kTouch, size - at));
                   });
      comm.recv(bytes.get(), size, k, kBodyTag);
      Reader index(bytes.get(), size);
      const auto n = index.get<std::uint64_t>();
      if (n > (size - sizeof(std::uint64_t)) / sizeof(std::uint64_t) || n > out.realisations.size() - next)
        throw InternalError("hybrid ensemble: realisations lost in the gather");
      const std::byte* body = bytes.get() + (1 + n) * sizeof(std::uint64_t);
      const std::size_t body_size = size - (1 + n) * sizeof(std::uint64_t);
      std::vector<std::uint64_t> ends(n);
      for (std::uint64_t& e : ends) e = index.get<std::uint64_t>();
      if (n > 0 && ends.back() != body_size) throw InternalError("hybrid ensemble: a short message");
      parallel_for(0, static_cast<std::int64_t>(n), schedule, [&](std::int64_t c) {
        const auto at = static_cast<std::size_t>(c);
        const std::uint64_t begin = at == 0 ? 0 : ends[at - 1];
        if (begin > ends[at] || ends[at] > body_size) throw InternalError("hybrid ensemble: a short message");
        Reader in(body + begin, ends[at] - begin);
        out.realisations[next + at] = get(in);
        if (!in.done()) throw InternalError("hybrid ensemble: a realisation's bytes were miscounted");
      });
      next += n;
    }
    gathered = clock.seconds();
    if (!local) local = running.get();
    ran = clock.seconds();
    out.backend = local->backend;
    out.device = local->device;
    if (next != static_cast<std::size_t>(replicates) || local->realisations.size() != mine.size())
      throw InternalError("hybrid ensemble: realisations lost in the gather");
    parallel_for(0, static_cast<std::int64_t>(mine.size()), schedule, [&](std::int64_t k) {
      out.realisations[static_cast<std::size_t>(k)] = std::move(local->realisations[static_cast<std::size_t>(k)]);
    });
    packed = ran;
  }
  if (report) {
    fmt::print(stderr,
               "simkit: hybrid ranks, rank {} (s): run {:.4f}, message {:.4f} ({} bytes), sent/received by {:.4f}, "
               "end {:.4f}\n",
               comm.rank(), ran, packed - ran, message_size, gathered, clock.seconds());
  }
  return out;
}

}  // namespace

HybridEnsemble run_hybrid_ensemble_ranks(const HybridProblem& problem, int replicates, const RunOptions& options,
                                         bool logs) {
  return gather_ranks(problem, replicates, options, logs, nullptr);
}

HybridEnsemble run_hybrid_ensemble_ranks(const HybridProblem& problem, int replicates, const RunOptions& options,
                                         bool logs, HybridShare& share) {
  return gather_ranks(problem, replicates, options, logs, &share);
}

}  // namespace simkit::angio
