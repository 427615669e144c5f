// CUDA backend: one thread per proliferating initial cell walks its whole lineage (model.hpp,
// the same code as the host backends). A block takes up to kBlock cells of one (row, population)
// segment, so its counts go to a small shared-memory table [time][generation] that is flushed to
// global memory with one atomic per non-zero entry. Memory is O(rows x generations x populations
// x times) for the counts plus O(segments): never a generation of cells.
#include <algorithm>
#include <vector>

#include "core/cuda_check.cuh"
#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::cuda {

using ::simkit::cuda::DeviceBuffer;
using ::simkit::cuda::DeviceGuard;

namespace {

constexpr int kBlock = 64;

struct Layout {
  unsigned long long rows, generations, populations;
};

__global__ void __launch_bounds__(kBlock)
    walk_kernel(const WalkParams walk, const PopulationParams* __restrict__ pops,
                const std::uint8_t* __restrict__ max_generation, const std::uint8_t* __restrict__ depth_limited,
                const Segment* __restrict__ tasks, Layout layout, unsigned long long* __restrict__ counts,
                unsigned long long* __restrict__ stats) {
  extern __shared__ unsigned long long table[];  // [num_times][generations]
  const Segment task = tasks[blockIdx.x];
  const int entries = walk.num_times * static_cast<int>(layout.generations);
  for (int e = threadIdx.x; e < entries; e += blockDim.x) table[e] = 0;
  __syncthreads();

  WalkStats st;
  if (threadIdx.x < task.count) {
    const PopulationParams pop = pops[task.population];
    double births[kMaxGenerationsDevice + 1];
    const int generations = static_cast<int>(layout.generations);
    st = walk_lineage(walk, pop, task.first_cell + threadIdx.x, max_generation[task.row], depth_limited[task.row] != 0,
                      births, [&](int j, int k) { atomicAdd(&table[j * generations + k], 1ull); });
  }
  // Block totals of the statistics: warp sums, then one atomic per warp.
  unsigned long long div = st.divisions, deep = st.too_deep;
  for (int off = 16; off > 0; off >>= 1) {
    div += __shfl_down_sync(0xffffffffu, div, off);
    deep += __shfl_down_sync(0xffffffffu, deep, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (div) atomicAdd(&stats[0], div);
    if (deep) atomicAdd(&stats[1], deep);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < entries; e += blockDim.x) {
    const unsigned long long v = table[e];
    if (v == 0) continue;
    const unsigned long long j = static_cast<unsigned long long>(e) / layout.generations;
    const unsigned long long k = static_cast<unsigned long long>(e) % layout.generations;
    atomicAdd(&counts[((j * layout.rows + task.row) * layout.generations + k) * layout.populations + task.population],
              v);
  }
}

}  // namespace

std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results,
                           const RunOptions& options, const CellProgress& progress) {
  DeviceGuard guard(options.device);
  const ::simkit::cuda::Stream stream;

  // All runs' counts in one buffer (they start from the host's quiescent counts), stats beside.
  std::vector<std::size_t> offsets(runs.size() + 1, 0);
  for (std::size_t r = 0; r < runs.size(); ++r) offsets[r + 1] = offsets[r] + results[r].counts.size();
  std::vector<unsigned long long> host_counts(offsets.back());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::copy(results[r].counts.begin(), results[r].counts.end(),
              host_counts.begin() + static_cast<std::ptrdiff_t>(offsets[r]));
  }
  DeviceBuffer<unsigned long long> counts;
  counts.upload(host_counts, stream);
  DeviceBuffer<unsigned long long> stats(2 * runs.size());
  stats.fill_zero(stream);

  // Inputs per run; kept alive until the stream has finished with them.
  std::vector<DeviceBuffer<PopulationParams>> pops(runs.size());
  std::vector<DeviceBuffer<std::uint8_t>> max_gen(runs.size()), limited(runs.size());
  std::vector<DeviceBuffer<Segment>> tasks_dev(runs.size());
  std::vector<std::vector<Segment>> tasks(runs.size());
  bool stopped = false;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (stop_requested(options)) {  // the launched runs finish below; the result is not used
      stopped = true;
      break;
    }
    const PreparedRun& run = runs[r];
    for (const Segment& s : run.segments) {
      for (std::uint32_t c = 0; c < s.count; c += kBlock) {
        tasks[r].push_back({s.row, s.population, s.first_cell + c, std::min<std::uint32_t>(kBlock, s.count - c)});
      }
    }
    if (tasks[r].empty()) continue;
    pops[r].upload(run.populations, stream);
    max_gen[r].upload(run.max_generation, stream);
    limited[r].upload(run.depth_limited, stream);
    tasks_dev[r].upload(tasks[r], stream);
    const Layout layout{results[r].rows, results[r].generations, results[r].populations};
    const std::size_t shared =
        sizeof(unsigned long long) * static_cast<std::size_t>(run.walk.num_times) * results[r].generations;
    walk_kernel<<<static_cast<unsigned>(tasks[r].size()), kBlock, shared, stream>>>(
        run.walk, pops[r].data(), max_gen[r].data(), limited[r].data(), tasks_dev[r].data(), layout,
        counts.data() + offsets[r], stats.data() + 2 * r);
    SIMKIT_CUDA_CHECK_LAUNCH();
  }
  counts.download(host_counts.data(), host_counts.size(), stream);
  std::vector<unsigned long long> host_stats(2 * runs.size());
  stats.download(host_stats.data(), host_stats.size(), stream);
  SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (stopped) throw Stopped();

  std::vector<WalkStats> out(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::copy(host_counts.begin() + static_cast<std::ptrdiff_t>(offsets[r]),
              host_counts.begin() + static_cast<std::ptrdiff_t>(offsets[r + 1]), results[r].counts.begin());
    out[r].divisions = host_stats[2 * r];
    out[r].too_deep = host_stats[2 * r + 1];
    if (progress) progress(runs[r].proliferating_cells);
  }
  return out;
}

}  // namespace simkit::prolif::detail::cuda
