// The production GPU matcher (cuda backend, `--algorithm gpu`), O(N + K) memory:
//   1. both sets sorted on the device by (strip, lower bound in the plan's primary dimension) with
//      CUB radix sorts (two stable passes);
//   2. count: one thread per region walks its runs of candidates (candidates.hpp, the same code
//      as the cpu matcher) and tests each with the full rule;
//   3. pairs: exclusive scan of the counts (CUB), then the same walk writes each region's pairs at
//      its offset. When the pairs do not fit in device memory, they are written in windows of
//      the global pair numbering and each window is copied out before the next.
// Count-only and per-region outputs stop after step 2 (per-region adds the other side's counts
// with atomics). Indices are 32-bit on the device (each set below 2^32 regions).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cuda_check.cuh"
#include "ddm/candidates.hpp"
#include "ddm/kernels.hpp"
#include "ddm/plan.hpp"
#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"

namespace simkit::ddm::detail {

namespace {

using Index = unsigned int;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The matchers' buffers come from the device's stream-ordered pool (cuda::PoolBuffer), on the
// legacy default stream that every step of them runs on: a match makes a dozen allocations, and
// cudaMalloc/cudaFree synchronise the device each time (cudaFree) and cost tens of microseconds, a
// large share of a 3 ms match. The pool keeps up to an eighth of the device's memory between calls
// (set on every call, for the current device), so repeated matches allocate without the driver.
void keep_pool_memory() {
  int device = 0;
  SIMKIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  SIMKIT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = cuda::current_device_memory().total / 8;
  SIMKIT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
}

// Hands n pairs held on the device as 32-bit positions (d_s[q], d_u[q]) to the sink as Match
// records, in pieces of at most `chunk` (and 2^20) pairs: each piece is copied into one of two
// pinned staging buffers on a stream of its own while the previous piece is widened on every
// host thread and delivered, so the copy over PCIe overlaps the host's work. Returns when every
// copy is done (the device buffers may then be overwritten).
class PairStager {
 public:
  // Pieces of at most 2^20 pairs, so that a window of the default 2^22 (MatchOptions::chunk_pairs)
  // is already four pieces whose copies overlap the host's work.
  explicit PairStager(std::size_t chunk, std::size_t piece = std::size_t{1} << 20)
      : step_(std::clamp<std::size_t>(chunk, 1, std::max<std::size_t>(piece, 1))) {}
  PairStager(const PairStager&) = delete;
  PairStager& operator=(const PairStager&) = delete;

  // A concurrent sink gets each piece in `threads` slices, each widened and delivered by its own
  // host thread (worker = the thread's index); a device sink the window itself, in device memory.
  void deliver(const Index* d_s, const Index* d_u, std::size_t n, const PairSinks& sinks, int threads) {
    if (n == 0) return;
    if (sinks.device != nullptr) {
      if (*sinks.device) (*sinks.device)(d_s, d_u, n, nullptr);
      return;
    }
    const MatchSink* sink = sinks.serial;
    if (sinks.concurrent == nullptr && (sink == nullptr || !*sink)) return;
    // Pinned memory is slow to allocate: only as much as this window needs (small results, e.g.
    // the incremental matcher's, stay cheap), grown when a later window needs more.
    const std::size_t want = std::min(step_, n);
    if (want > cap_) {
      if (!stream_) stream_ = std::make_unique<cuda::Stream>();
      stream_->synchronize();  // the stages about to be replaced are no longer being copied into
      for (int b = 0; b < 2; ++b) {
        stage_[b].resize(2 * want);
        if (!copied_[b]) copied_[b] = std::make_unique<cuda::Event>();
      }
      cap_ = want;
      buffer_.resize(cap_);
    }
    const std::size_t pieces = (n + cap_ - 1) / cap_;
    for (std::size_t p = 0; p <= pieces; ++p) {
      if (p < pieces) {  // start copying piece p
        const std::size_t first = p * cap_, m = std::min(cap_, n - first);
        Index* stage = stage_[p % 2].data();
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(stage, d_s + first, m * sizeof(Index), cudaMemcpyDeviceToHost, *stream_));
        SIMKIT_CUDA_CHECK(
            cudaMemcpyAsync(stage + cap_, d_u + first, m * sizeof(Index), cudaMemcpyDeviceToHost, *stream_));
        copied_[p % 2]->record(*stream_);
      }
      if (p > 0) {  // meanwhile widen and deliver piece p - 1
        const std::size_t first = (p - 1) * cap_, m = std::min(cap_, n - first);
        copied_[(p - 1) % 2]->synchronize();
        const Index* stage = stage_[(p - 1) % 2].data();
        if (sinks.concurrent != nullptr) {
          widen_pairs_concurrently(stage, stage + cap_, m, buffer_.data(), *sinks.concurrent, threads);
        } else {
          widen_pairs(stage, stage + cap_, m, buffer_.data());
          (*sink)(buffer_.data(), m);
        }
      }
    }
  }

 private:
  std::size_t step_, cap_ = 0;
  // Members are destroyed in reverse order: the stream (which waits for its copies) before the
  // events and the stages, so a stage is never freed under a copy.
  cuda::PinnedBuffer<Index> stage_[2];  // s positions, then u positions (cap_ each)
  std::unique_ptr<cuda::Event> copied_[2];
  std::unique_ptr<cuda::Stream> stream_;
  std::vector<Match> buffer_;
};

// One region's bounds in one dimension as statistics, and the merge of two: the plan's inputs
// (plan.hpp), reduced on the device with CUB so that no pass over the bounds runs on the host.
template <class T>
struct StatsOf {
  const T* lo;
  const T* hi;
  __host__ __device__ DimStats<T> operator()(std::size_t i) const {
    const T l = lo[i], h = hi[i];
    return DimStats<T>{l, h, static_cast<T>(h - l), static_cast<double>(h - l)};
  }
};
template <class T>
struct MergeStats {
  __host__ __device__ DimStats<T> operator()(const DimStats<T>& a, const DimStats<T>& b) const {
    return DimStats<T>{a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max,
                       a.widest > b.widest ? a.widest : b.widest, a.side_sum + b.side_sum};
  }
};

// The plan of two sets already on the device (bounds dimension-major, as RegionView).
template <class T>
Plan<T> device_plan(const T* s_lo, const T* s_hi, std::size_t ns, const T* u_lo, const T* u_hi, std::size_t nu,
                    int dims, cuda::PoolBuffer<char>& temp) {
  std::vector<DimStats<T>> ss(static_cast<std::size_t>(dims)), us(static_cast<std::size_t>(dims));
  cuda::PoolBuffer<DimStats<T>> out(2 * static_cast<std::size_t>(dims));
  auto reduce = [&](const T* lo, const T* hi, std::size_t n, DimStats<T>* result) {
    const auto it = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), StatsOf<T>{lo, hi});
    std::size_t bytes = 0;
    SIMKIT_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, it, result, n, MergeStats<T>{}, DimStats<T>{}));
    if (temp.size() < bytes) temp.resize(bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, it, result, n, MergeStats<T>{}, DimStats<T>{}));
  };
  for (int d = 0; d < dims; ++d) {
    const std::size_t k = static_cast<std::size_t>(d);
    reduce(s_lo + k * ns, s_hi + k * ns, ns, out.data() + k);
    reduce(u_lo + k * nu, u_hi + k * nu, nu, out.data() + static_cast<std::size_t>(dims) + k);
  }
  std::vector<DimStats<T>> all(2 * static_cast<std::size_t>(dims));
  out.download(all.data(), all.size());
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  for (std::size_t k = 0; k < static_cast<std::size_t>(dims); ++k) {
    ss[k] = all[k];
    us[k] = all[static_cast<std::size_t>(dims) + k];
  }
  return plan_from_stats(ss, us, ns, nu);
}

template <class T>
__global__ void iota_and_keys(const T* lower_k, std::size_t n, T* keys, Index* index) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  keys[i] = lower_k[i];
  index[i] = static_cast<Index>(i);
}

template <class T>
__global__ void strip_keys(Plan<T> plan, const T* lower, const Index* index, std::size_t n, unsigned* strips) {
  const std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const std::size_t i = index[p];
  const T x2 = plan.k2 >= 0 ? lower[static_cast<std::size_t>(plan.k2) * n + i] : T{};
  const T x3 = plan.k3 >= 0 ? lower[static_cast<std::size_t>(plan.k3) * n + i] : T{};
  strips[p] = static_cast<unsigned>(cell_of(plan, x2, x3));
}

// Bounds of every dimension in sorted order: out[d * n + p] = in[d * n + index[p]].
template <class T>
__global__ void gather_bounds(const T* lower, const T* upper, const Index* index, std::size_t n, int dims, T* lo,
                              T* hi) {
  const std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const std::size_t i = index[p];
  for (int d = 0; d < dims; ++d) {
    lo[static_cast<std::size_t>(d) * n + p] = lower[static_cast<std::size_t>(d) * n + i];
    hi[static_cast<std::size_t>(d) * n + p] = upper[static_cast<std::size_t>(d) * n + i];
  }
}

__global__ void strip_starts(const unsigned* sorted_strips, std::size_t n, std::int64_t strips, std::int64_t* start) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t > strips) return;
  if (sorted_strips == nullptr) {  // one strip
    start[t] = t == 0 ? 0 : static_cast<std::int64_t>(n);
    return;
  }
  start[t] = static_cast<std::int64_t>(lower_bound_of(sorted_strips, 0, n, static_cast<unsigned>(t)));
}

// Thread r < ns takes the subscription at sorted position r, else the update at r - ns: adjacent
// threads have adjacent runs.
template <class T>
struct Job {
  Rule rule;
  int dims;
  Plan<T> plan;
  SortedSet<T, Index> ss, su;
};

template <class T>
__global__ void count_kernel(Job<T> job, unsigned long long* counts) {
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= job.ss.n + job.su.n) return;
  unsigned long long c = 0;
  if (r < job.ss.n) {
    if (counts_by_run(job.rule, job.dims, true)) {
      c = run_count_from_subscription(job.rule, job.ss, r, job.su);
    } else {
      for_each_from_subscription(job.rule, job.dims, job.plan, job.ss, r, job.su, [&](std::size_t) { ++c; });
    }
  } else if (counts_by_run(job.rule, job.dims, false)) {
    c = run_count_from_update(job.rule, job.ss, job.su, r - job.ss.n);
  } else {
    for_each_from_update(job.rule, job.dims, job.plan, job.ss, job.su, r - job.ss.n, [&](std::size_t) { ++c; });
  }
  counts[r] = c;
}

template <class T>
__global__ void per_region_kernel(Job<T> job, unsigned long long* per_s, unsigned long long* per_u) {
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= job.ss.n + job.su.n) return;
  unsigned long long c = 0;
  if (r < job.ss.n) {
    for_each_from_subscription(job.rule, job.dims, job.plan, job.ss, r, job.su, [&](std::size_t q) {
      ++c;
      atomicAdd(per_u + job.su.index[q], 1ULL);
    });
    atomicAdd(per_s + job.ss.index[r], c);
  } else {
    const std::size_t r_u = r - job.ss.n;
    for_each_from_update(job.rule, job.dims, job.plan, job.ss, job.su, r_u, [&](std::size_t q) {
      ++c;
      atomicAdd(per_s + job.ss.index[q], 1ULL);
    });
    atomicAdd(per_u + job.su.index[r_u], c);
  }
}

// Writes the pairs numbered [window, window + capacity) of the global numbering (offsets from the
// scan of the counts) into out_s/out_u at position number - window, as positions in the sets.
// Each thread's pairs are consecutive, but a warp's 32 threads write 32 far-apart places: one
// 4-byte store per pair would cost a memory transaction each. So each thread stages its pairs in
// shared memory by 32-byte sector (8 positions, aligned in the output, which cudaMalloc aligns)
// and writes a full sector with two 16-byte stores per array; only the partial sectors at the ends
// of its range are written one position at a time.
constexpr unsigned kWriteThreads = 128;
template <class T>
__global__ void __launch_bounds__(kWriteThreads)
    write_kernel(Job<T> job, const unsigned long long* offsets, const unsigned long long* counts,
                 unsigned long long window, unsigned long long capacity, Index* out_s, Index* out_u) {
  __shared__ __align__(16) Index stage_s[kWriteThreads * 8];
  __shared__ __align__(16) Index stage_u[kWriteThreads * 8];
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= job.ss.n + job.su.n) return;
  const unsigned long long begin = offsets[r], end = begin + counts[r];
  if (end <= window || begin >= window + capacity) return;
  Index* my_s = stage_s + threadIdx.x * 8;
  Index* my_u = stage_u + threadIdx.x * 8;
  const unsigned long long first = begin > window ? begin - window : 0;  // output positions this thread
  const unsigned long long last = (end < window + capacity ? end : window + capacity) - window;  // writes
  unsigned long long at = begin;
  unsigned long long from = first;                   // first output position staged and not yet written
  const auto flush = [&](unsigned long long upto) {  // writes staged positions [from, upto)
    if (upto == from) return;
    const unsigned k0 = static_cast<unsigned>(from & 7);
    if (k0 == 0 && upto - from == 8) {
      reinterpret_cast<uint4*>(out_s + from)[0] = reinterpret_cast<const uint4*>(my_s)[0];
      reinterpret_cast<uint4*>(out_s + from)[1] = reinterpret_cast<const uint4*>(my_s)[1];
      reinterpret_cast<uint4*>(out_u + from)[0] = reinterpret_cast<const uint4*>(my_u)[0];
      reinterpret_cast<uint4*>(out_u + from)[1] = reinterpret_cast<const uint4*>(my_u)[1];
    } else {
      for (unsigned long long o = from; o < upto; ++o) {
        out_s[o] = my_s[o & 7];
        out_u[o] = my_u[o & 7];
      }
    }
    from = upto;
  };
  auto put = [&](Index i, Index j) {
    if (at >= window && at < window + capacity) {
      const unsigned long long o = at - window;
      my_s[o & 7] = i;
      my_u[o & 7] = j;
      if ((o & 7) == 7) flush(o + 1);
    }
    ++at;
  };
  if (r < job.ss.n) {
    const Index i = job.ss.index[r];
    for_each_from_subscription(job.rule, job.dims, job.plan, job.ss, r, job.su,
                               [&](std::size_t q) { put(i, job.su.index[q]); });
  } else {
    const std::size_t r_u = r - job.ss.n;
    const Index j = job.su.index[r_u];
    for_each_from_update(job.rule, job.dims, job.plan, job.ss, job.su, r_u,
                         [&](std::size_t q) { put(job.ss.index[q], j); });
  }
  flush(last);
}

unsigned blocks_for(std::size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// One set sorted by (strip, lower_k) on the device, with its bounds gathered in that order.
template <class T>
struct DeviceSorted {
  cuda::PoolBuffer<Index> index;
  cuda::PoolBuffer<std::int64_t> strip_start;
  cuda::PoolBuffer<T> lo, hi;
  std::size_t n = 0;
  SortedSet<T, Index> view() const { return {index.data(), strip_start.data(), lo.data(), hi.data(), n}; }
};

template <class T>
DeviceSorted<T> sort_on_device(const Plan<T>& plan, const T* lower, const T* upper, std::size_t n, int dims,
                               cuda::PoolBuffer<char>& temp) {
  DeviceSorted<T> out;
  out.n = n;
  const std::size_t m = std::max<std::size_t>(n, 1);
  out.index.resize(m);
  out.strip_start.resize(static_cast<std::size_t>(plan.cells()) + 1);
  out.lo.resize(m * static_cast<std::size_t>(dims));
  out.hi.resize(m * static_cast<std::size_t>(dims));
  cuda::PoolBuffer<T> keys_in(m), keys_out(m);
  cuda::PoolBuffer<Index> index_in(m);
  const unsigned threads = 256;
  const T* lower_k = lower + static_cast<std::size_t>(plan.k) * n;
  if (n > 0) iota_and_keys<<<blocks_for(n, threads), threads>>>(lower_k, n, keys_in.data(), index_in.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  auto sort_pairs = [&](const auto* k_in, auto* k_out, const Index* v_in, Index* v_out) {
    std::size_t bytes = 0;
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k_in, k_out, v_in, v_out, n));
    if (temp.size() < bytes) temp.resize(bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, k_in, k_out, v_in, v_out, n));
  };
  if (n > 0) sort_pairs(keys_in.data(), keys_out.data(), index_in.data(), out.index.data());
  if (plan.cells() > 1 && n > 0) {
    // A stable second pass by strip keeps the lower_k order inside each strip.
    cuda::PoolBuffer<unsigned> strips_in(n), strips_out(n);
    strip_keys<<<blocks_for(n, threads), threads>>>(plan, lower, out.index.data(), n, strips_in.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    sort_pairs(strips_in.data(), strips_out.data(), out.index.data(), index_in.data());
    std::swap(out.index, index_in);
    strip_starts<<<blocks_for(static_cast<std::size_t>(plan.cells()) + 1, threads), threads>>>(
        strips_out.data(), n, plan.cells(), out.strip_start.data());
  } else {
    strip_starts<<<1, 32>>>(nullptr, n, 1, out.strip_start.data());
  }
  SIMKIT_CUDA_CHECK_LAUNCH();
  if (n > 0) {
    gather_bounds<<<blocks_for(n, threads), threads>>>(lower, upper, out.index.data(), n, dims, out.lo.data(),
                                                       out.hi.data());
  }
  SIMKIT_CUDA_CHECK_LAUNCH();
  return out;
}

}  // namespace

// The sum of n device counts (CUB), waited for.
unsigned long long sum_on_device(const unsigned long long* counts, std::size_t n, cuda::PoolBuffer<char>& temp) {
  cuda::PoolBuffer<unsigned long long> sum(1);
  std::size_t bytes = 0;
  SIMKIT_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, counts, sum.data(), n));
  if (temp.size() < bytes) temp.resize(bytes);
  SIMKIT_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, counts, sum.data(), n));
  unsigned long long total = 0;
  sum.download(&total, 1);
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  return total;
}

// Counts in one dimension where every run's candidates intersect (counts_by_run): each set is
// sorted by lower bound with its upper bounds as the values (no index, no gather), and thread r
// takes the r-th region of its set in that order, so that neighbouring threads' binary searches in
// the other set's sorted lower bounds read the same cache lines; no candidate is read.
template <class T>
__global__ void run_count_kernel(Rule rule, const T* s_lo, const T* s_hi, std::size_t ns, const T* u_lo, const T* u_hi,
                                 std::size_t nu, unsigned long long* counts) {
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= ns + nu) return;
  std::size_t first = 0, last = 0;
  if (r < ns) {
    run_from_subscription(rule, u_lo, 0, nu, s_lo[r], s_hi[r], first, last);
  } else {
    run_from_update(rule, s_lo, 0, ns, u_lo[r - ns], u_hi[r - ns], first, last);
  }
  counts[r] = last - first;
}

template <class T>
unsigned long long count_1d_by_runs(Rule rule, const T* s_lo, const T* s_hi, std::size_t ns, const T* u_lo,
                                    const T* u_hi, std::size_t nu, cuda::PoolBuffer<char>& temp) {
  cuda::PoolBuffer<T> s_lo_sorted(ns), s_hi_sorted(ns), u_lo_sorted(nu), u_hi_sorted(nu);
  for (auto [lo, hi, lo_out, hi_out, n] : {std::tuple{s_lo, s_hi, s_lo_sorted.data(), s_hi_sorted.data(), ns},
                                           std::tuple{u_lo, u_hi, u_lo_sorted.data(), u_hi_sorted.data(), nu}}) {
    std::size_t bytes = 0;
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, lo, lo_out, hi, hi_out, n));
    if (temp.size() < bytes) temp.resize(bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, lo, lo_out, hi, hi_out, n));
  }
  const std::size_t regions = ns + nu;
  cuda::PoolBuffer<unsigned long long> counts(regions);
  run_count_kernel<<<blocks_for(regions, 256), 256>>>(rule, s_lo_sorted.data(), s_hi_sorted.data(), ns,
                                                      u_lo_sorted.data(), u_hi_sorted.data(), nu, counts.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  return sum_on_device(counts.data(), regions, temp);
}

template <class T>
std::uint64_t gpu(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int device, int host_threads, Output mode,
                  std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                  std::vector<std::uint64_t>* per_u, MatchReport& report) {
  if (s.size >= std::numeric_limits<Index>::max() || u.size >= std::numeric_limits<Index>::max()) {
    throw UserError("algorithm", " gpu: each set must hold fewer than 2^32 - 1 regions");
  }
  const cuda::DeviceGuard guard(device);
  if (s.size == 0 || u.size == 0) return 0;
  keep_pool_memory();
  const std::size_t ns = s.size, nu = u.size, dims = static_cast<std::size_t>(s.dims);
  {
    // Device memory per region: the bounds twice (input and sorted), sort keys, indices, counts
    // and offsets; the pairs themselves go in windows of whatever is left.
    const std::size_t free = cuda::current_device_memory().free;
    const double need = static_cast<double>(ns + nu) * (4.0 * sizeof(T) * static_cast<double>(dims) + 2.0 * sizeof(T) +
                                                        3.0 * sizeof(Index) + 4.0 + 16.0);
    if (need > 0.9 * static_cast<double>(free)) {
      throw DeviceMemoryError("algorithm", " gpu: " + std::to_string(ns + nu) + " regions need about " +
                                               std::to_string(static_cast<long long>(need / 1048576.0)) +
                                               " MiB of device memory and " + std::to_string(free >> 20) +
                                               " MiB are free; use the cpu backend");
    }
  }
  Clock::time_point t = Clock::now();
  cuda::PoolBuffer<T> s_lo, s_hi, u_lo, u_hi;
  s_lo.upload(s.lower, ns * dims);
  s_hi.upload(s.upper, ns * dims);
  u_lo.upload(u.lower, nu * dims);
  u_hi.upload(u.upper, nu * dims);
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  report.upload_seconds = since(t);

  t = Clock::now();
  cuda::PoolBuffer<char> temp;
  if (mode == Output::Count && counts_by_run(rule, s.dims, true) && counts_by_run(rule, s.dims, false)) {
    const unsigned long long total =
        count_1d_by_runs(rule, s_lo.data(), s_hi.data(), ns, u_lo.data(), u_hi.data(), nu, temp);
    report.seconds = since(t);
    return total;
  }
  const Plan<T> plan = device_plan(s_lo.data(), s_hi.data(), ns, u_lo.data(), u_hi.data(), nu, s.dims, temp);
  const DeviceSorted<T> sorted_s = sort_on_device(plan, s_lo.data(), s_hi.data(), ns, s.dims, temp);
  const DeviceSorted<T> sorted_u = sort_on_device(plan, u_lo.data(), u_hi.data(), nu, u.dims, temp);
  const Job<T> job{rule, s.dims, plan, sorted_s.view(), sorted_u.view()};
  const std::size_t regions = ns + nu;
  const unsigned threads = 128;
  if (mode == Output::PerRegion) {
    cuda::PoolBuffer<unsigned long long> d_per_s(ns), d_per_u(nu);
    d_per_s.fill_zero();
    d_per_u.fill_zero();
    per_region_kernel<<<blocks_for(regions, threads), threads>>>(job, d_per_s.data(), d_per_u.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    report.seconds = since(t);
    t = Clock::now();
    static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
    d_per_s.download(reinterpret_cast<unsigned long long*>(per_s->data()), ns);
    d_per_u.download(reinterpret_cast<unsigned long long*>(per_u->data()), nu);
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    report.output_seconds = since(t);
    std::uint64_t total = 0;
    for (const std::uint64_t c : *per_s) total += c;
    return total;
  }
  cuda::PoolBuffer<unsigned long long> counts(regions), offsets(regions + 1);
  count_kernel<<<blocks_for(regions, threads), threads>>>(job, counts.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  if (mode == Output::Count) {
    const unsigned long long total = sum_on_device(counts.data(), regions, temp);
    report.seconds = since(t);
    return total;
  }
  // Pairs: offsets, then windows of the global numbering as large as device memory allows.
  SIMKIT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, counts.data(), offsets.data() + 1, regions));
  if (temp.size() < bytes) temp.resize(bytes);
  SIMKIT_CUDA_CHECK(cudaMemsetAsync(offsets.data(), 0, sizeof(unsigned long long)));
  SIMKIT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, counts.data(), offsets.data() + 1, regions));
  unsigned long long total = 0;
  SIMKIT_CUDA_CHECK(cudaMemcpy(&total, offsets.data() + regions, sizeof(total), cudaMemcpyDeviceToHost));
  const std::size_t free = cuda::current_device_memory().free;
  const unsigned long long fit = std::max<unsigned long long>(1, free / 2 / (2 * sizeof(Index)));
  // A window holds at most chunk pairs (MatchOptions::chunk_pairs) and half the free memory.
  const unsigned long long capacity = std::min<unsigned long long>(
      {std::max<unsigned long long>(total, 1), fit, std::max<unsigned long long>(chunk, 1)});
  cuda::PoolBuffer<Index> out_s(capacity), out_u(capacity);
  PairStager stager(chunk);
  double output = 0;
  for (unsigned long long window = 0; window < total; window += capacity) {
    write_kernel<<<blocks_for(regions, kWriteThreads), kWriteThreads>>>(job, offsets.data(), counts.data(), window,
                                                                        capacity, out_s.data(), out_u.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    const Clock::time_point o = Clock::now();
    stager.deliver(out_s.data(), out_u.data(), static_cast<std::size_t>(std::min(capacity, total - window)), sinks,
                   effective_threads(host_threads));
    output += since(o);
  }
  report.seconds = since(t) - output;
  report.output_seconds = output;
  return total;
}

namespace {

// The bit-matrix baseline: bit (i, j) of an |S| x ceil(|U| / 32) word matrix says whether
// subscription i and update j intersect (every dimension, the full rule). One thread fills one
// 32-bit word.
template <class T>
__global__ void bitmatrix_fill(Rule rule, int dims, const T* s_lo, const T* s_hi, std::size_t ns, const T* u_lo,
                               const T* u_hi, std::size_t nu, std::size_t words, unsigned* bits) {
  const std::size_t w = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t i = blockIdx.y + static_cast<std::size_t>(blockIdx.z) * 65535;
  if (w >= words || i >= ns) return;
  unsigned word = 0;
  for (unsigned b = 0; b < 32; ++b) {
    const std::size_t j = w * 32 + b;
    if (j < nu && intersects(rule, dims, s_lo, s_hi, ns, i, u_lo, u_hi, nu, j)) word |= 1u << b;
  }
  bits[i * words + w] = word;
}

__global__ void bitmatrix_rows(const unsigned* bits, std::size_t ns, std::size_t words, unsigned long long* rows,
                               unsigned long long* columns) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= ns) return;
  unsigned long long c = 0;
  for (std::size_t w = 0; w < words; ++w) {
    const unsigned word = bits[i * words + w];
    c += static_cast<unsigned long long>(__popc(word));
    if (columns != nullptr) {
      for (unsigned rest = word; rest != 0; rest &= rest - 1) atomicAdd(columns + w * 32 + (__ffs(rest) - 1), 1ULL);
    }
  }
  rows[i] = c;
}

__global__ void bitmatrix_pairs(const unsigned* bits, std::size_t ns, std::size_t words,
                                const unsigned long long* offsets, unsigned long long window,
                                unsigned long long capacity, Index* out_s, Index* out_u) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= ns) return;
  unsigned long long at = offsets[i];
  if (offsets[i + 1] <= window || at >= window + capacity) return;
  for (std::size_t w = 0; w < words; ++w)
    for (unsigned rest = bits[i * words + w]; rest != 0; rest &= rest - 1) {
      if (at >= window && at < window + capacity) {
        out_s[at - window] = static_cast<Index>(i);
        out_u[at - window] = static_cast<Index>(w * 32 + (__ffs(rest) - 1));
      }
      ++at;
    }
}

}  // namespace

// The seed thesis's GPU algorithm, bit-packed as its conclusion proposes: O(|S| |U| / 8) bytes of
// device memory, a historical baseline for sets up to about 50,000 regions (larger ones are
// refused when the matrix does not fit).
template <class T>
std::uint64_t bitmatrix(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int device, int host_threads,
                        Output mode, std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                        std::vector<std::uint64_t>* per_u, MatchReport& report) {
  const cuda::DeviceGuard guard(device);
  if (s.size == 0 || u.size == 0) return 0;
  const std::size_t ns = s.size, nu = u.size, dims = static_cast<std::size_t>(s.dims);
  const std::size_t words = (nu + 31) / 32;
  std::size_t free = cuda::current_device_memory().free;
  const double matrix = static_cast<double>(ns) * static_cast<double>(words) * 4.0;
  if (matrix > 0.6 * static_cast<double>(free) || ns >= std::numeric_limits<Index>::max()) {
    throw UserError("algorithm", " bitmatrix: the " + std::to_string(ns) + " x " + std::to_string(nu) +
                                     " bit matrix needs " + std::to_string(static_cast<long long>(matrix / 1048576.0)) +
                                     " MiB and " + std::to_string(free >> 20) +
                                     " MiB are free; use `algorithm` gpu (O(N + K) memory)");
  }
  Clock::time_point t = Clock::now();
  cuda::PoolBuffer<T> s_lo, s_hi, u_lo, u_hi;
  s_lo.upload(s.lower, ns * dims);
  s_hi.upload(s.upper, ns * dims);
  u_lo.upload(u.lower, nu * dims);
  u_hi.upload(u.upper, nu * dims);
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  report.upload_seconds = since(t);
  t = Clock::now();
  cuda::PoolBuffer<unsigned> bits(ns * words);
  const unsigned threads = 128;
  const dim3 grid(blocks_for(words, threads), static_cast<unsigned>(std::min<std::size_t>(ns, 65535)),
                  static_cast<unsigned>((ns + 65534) / 65535));
  bitmatrix_fill<<<grid, threads>>>(rule, s.dims, s_lo.data(), s_hi.data(), ns, u_lo.data(), u_hi.data(), nu, words,
                                    bits.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  cuda::PoolBuffer<unsigned long long> rows(ns), columns, offsets(ns + 1);
  if (mode == Output::PerRegion) {
    columns.resize(words * 32);
    columns.fill_zero();
  }
  bitmatrix_rows<<<blocks_for(ns, threads), threads>>>(bits.data(), ns, words, rows.data(),
                                                       mode == Output::PerRegion ? columns.data() : nullptr);
  SIMKIT_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  cuda::PoolBuffer<char> temp;
  SIMKIT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, rows.data(), offsets.data() + 1, ns));
  temp.resize(bytes);
  SIMKIT_CUDA_CHECK(cudaMemsetAsync(offsets.data(), 0, sizeof(unsigned long long)));
  SIMKIT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, rows.data(), offsets.data() + 1, ns));
  unsigned long long total = 0;
  SIMKIT_CUDA_CHECK(cudaMemcpy(&total, offsets.data() + ns, sizeof(total), cudaMemcpyDeviceToHost));
  if (mode != Output::Pairs) {
    report.seconds = since(t);
    if (mode == Output::PerRegion) {
      const Clock::time_point o = Clock::now();
      std::vector<unsigned long long> r(ns), c(words * 32);
      rows.download(r.data(), ns);
      columns.download(c.data(), words * 32);
      SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
      for (std::size_t i = 0; i < ns; ++i) (*per_s)[i] = r[i];
      for (std::size_t j = 0; j < nu; ++j) (*per_u)[j] = c[j];
      report.output_seconds = since(o);
    }
    return total;
  }
  free = cuda::current_device_memory().free;
  const unsigned long long capacity = std::min<unsigned long long>(
      {std::max<unsigned long long>(total, 1), std::max<unsigned long long>(1, free / 2 / (2 * sizeof(Index))),
       std::max<unsigned long long>(chunk, 1)});
  cuda::PoolBuffer<Index> out_s(capacity), out_u(capacity);
  PairStager stager(chunk);
  double output = 0;
  for (unsigned long long window = 0; window < total; window += capacity) {
    bitmatrix_pairs<<<blocks_for(ns, threads), threads>>>(bits.data(), ns, words, offsets.data(), window, capacity,
                                                          out_s.data(), out_u.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    const Clock::time_point o = Clock::now();
    stager.deliver(out_s.data(), out_u.data(), static_cast<std::size_t>(std::min(capacity, total - window)), sinks,
                   effective_threads(host_threads));
    output += since(o);
  }
  report.seconds = since(t) - output;
  report.output_seconds = output;
  return total;
}

#define SIMKIT_DDM_CUDA(T)                                                                                             \
  template std::uint64_t gpu<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, int, Output, std::size_t,       \
                                const PairSinks&, std::vector<std::uint64_t>*, std::vector<std::uint64_t>*,            \
                                MatchReport&);                                                                         \
  template std::uint64_t bitmatrix<T>(const RegionView<T>&, const RegionView<T>&, Rule, int, int, Output, std::size_t, \
                                      const PairSinks&, std::vector<std::uint64_t>*, std::vector<std::uint64_t>*,      \
                                      MatchReport&);
SIMKIT_DDM_CUDA(std::uint32_t)
SIMKIT_DDM_CUDA(std::uint64_t)
SIMKIT_DDM_CUDA(double)
#undef SIMKIT_DDM_CUDA

}  // namespace simkit::ddm::detail
