// CUDA backend: one thread per proliferating initial cell walks its whole lineage (model.hpp,
// the same code as the host backends). A block takes up to kBlock cells of one (row, population)
// segment of one run, so its counts go to a small shared-memory table [time][generation] that is
// flushed to global memory with one atomic per non-zero entry. Memory is O(rows x generations x
// populations x times) per run for the counts plus O(segments): never a generation of cells.
// A batch of runs (replicates, a calibration's swarm) goes in one launch: every block reads its
// run's parameters from device arrays, so the GPU is filled even when each run is small.
#include <algorithm>
#include <vector>

#include "core/cuda_check.cuh"
#include "prolif/kernels.hpp"

namespace simkit::prolif::detail::cuda {

using ::simkit::cuda::DeviceBuffer;
using ::simkit::cuda::DeviceGuard;

namespace {

constexpr int kBlock = 64;
// Blocks per launch at most: a stop request (Ctrl-C) is honoured between launches, and a launch
// of this many blocks takes well under a second on a large GPU for typical lineages.
constexpr std::size_t kMaxBlocksPerLaunch = std::size_t{1} << 20;

// Where one run's inputs and outputs live in the batch's device arrays.
struct RunLayout {
  unsigned long long counts;       // offset of the run's counts
  unsigned long long generations;  // the run's generation count (phi_min differs between runs)
  unsigned populations_offset;     // into the batch's PopulationParams
  unsigned rows_offset;            // into max_generation / depth_limited (rows per run)
};

struct Task {
  Segment segment;
  std::uint32_t run;
};

__global__ void __launch_bounds__(kBlock)
    walk_kernel(const WalkParams* __restrict__ walks, const RunLayout* __restrict__ layouts,
                const PopulationParams* __restrict__ pops, const std::uint8_t* __restrict__ max_generation,
                const std::uint8_t* __restrict__ depth_limited, const Task* __restrict__ tasks,
                unsigned long long rows, unsigned long long populations, unsigned long long* __restrict__ counts,
                unsigned long long* __restrict__ stats) {
  extern __shared__ unsigned long long table[];  // [num_times][generations]
  __shared__ WalkParams walk;
  const Task task = tasks[blockIdx.x];
  const RunLayout layout = layouts[task.run];
  {
    // The run's walk parameters (about 560 bytes) into shared memory, word by word.
    static_assert(sizeof(WalkParams) % sizeof(unsigned) == 0);
    const auto* src = reinterpret_cast<const unsigned*>(walks + task.run);
    auto* dst = reinterpret_cast<unsigned*>(&walk);
    for (unsigned w = threadIdx.x; w < sizeof(WalkParams) / sizeof(unsigned); w += blockDim.x) dst[w] = src[w];
  }
  const int generations = static_cast<int>(layout.generations);
  __syncthreads();
  const int entries = walk.num_times * generations;
  for (int e = threadIdx.x; e < entries; e += blockDim.x) table[e] = 0;
  __syncthreads();

  const Segment& s = task.segment;
  WalkStats st;
  if (threadIdx.x < s.count) {
    const PopulationParams pop = pops[layout.populations_offset + s.population];
    const unsigned row = layout.rows_offset + s.row;
    double births[kMaxGenerationsDevice + 1];
    st = walk_lineage(walk, pop, s.first_cell + threadIdx.x, max_generation[row], depth_limited[row] != 0, births,
                      [&](int j, int k) { atomicAdd(&table[j * generations + k], 1ull); });
  }
  // Block totals of the statistics: warp sums, then one atomic per warp.
  unsigned long long div = st.divisions, deep = st.too_deep;
  for (int off = 16; off > 0; off >>= 1) {
    div += __shfl_down_sync(0xffffffffu, div, off);
    deep += __shfl_down_sync(0xffffffffu, deep, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (div) atomicAdd(&stats[2 * task.run], div);
    if (deep) atomicAdd(&stats[2 * task.run + 1], deep);
  }
  __syncthreads();
  unsigned long long* run_counts = counts + layout.counts;
  for (int e = threadIdx.x; e < entries; e += blockDim.x) {
    const unsigned long long v = table[e];
    if (v == 0) continue;
    const unsigned long long j = static_cast<unsigned long long>(e) / layout.generations;
    const unsigned long long k = static_cast<unsigned long long>(e) % layout.generations;
    atomicAdd(&run_counts[((j * rows + s.row) * layout.generations + k) * populations + s.population], v);
  }
}

}  // namespace

std::vector<WalkStats> run(const std::vector<PreparedRun>& runs, std::vector<Result>& results,
                           const RunOptions& options, const CellProgress& progress) {
  DeviceGuard guard(options.device);
  const ::simkit::cuda::Stream stream;
  std::vector<WalkStats> out(runs.size());
  if (runs.empty()) return out;
  const std::size_t rows = results[0].rows, populations = results[0].populations;

  // The batch's inputs, all runs side by side (they share H(0)'s rows and the population count).
  std::vector<RunLayout> layouts(runs.size());
  std::vector<WalkParams> walks(runs.size());
  std::vector<PopulationParams> pops;
  std::vector<std::uint8_t> max_gen, limited;
  std::vector<Task> tasks;
  std::vector<std::size_t> first_task(runs.size() + 1, 0);  // the tasks of run r: [first_task[r], first_task[r+1])
  std::size_t counts_size = 0, shared_entries = 1;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const PreparedRun& run = runs[r];
    if (results[r].rows != rows || results[r].populations != populations)
      throw InternalError("prolif cuda: the runs of a batch differ in rows or populations");
    layouts[r] = RunLayout{counts_size, results[r].generations, static_cast<unsigned>(pops.size()),
                           static_cast<unsigned>(max_gen.size())};
    walks[r] = run.walk;
    pops.insert(pops.end(), run.populations.begin(), run.populations.end());
    max_gen.insert(max_gen.end(), run.max_generation.begin(), run.max_generation.end());
    limited.insert(limited.end(), run.depth_limited.begin(), run.depth_limited.end());
    counts_size += results[r].counts.size();
    shared_entries = std::max(shared_entries, static_cast<std::size_t>(run.walk.num_times) * results[r].generations);
    for (const Segment& s : run.segments) {
      for (std::uint32_t c = 0; c < s.count; c += kBlock) {
        tasks.push_back({{s.row, s.population, s.first_cell + c, std::min<std::uint32_t>(kBlock, s.count - c)},
                         static_cast<std::uint32_t>(r)});
      }
    }
    first_task[r + 1] = tasks.size();
  }

  // Counts start from the host's quiescent counts.
  std::vector<unsigned long long> host_counts(counts_size);
  for (std::size_t r = 0; r < runs.size(); ++r)
    std::copy(results[r].counts.begin(), results[r].counts.end(),
              host_counts.begin() + static_cast<std::ptrdiff_t>(layouts[r].counts));
  DeviceBuffer<unsigned long long> counts;
  counts.upload(host_counts, stream);
  DeviceBuffer<unsigned long long> stats(2 * runs.size());
  stats.fill_zero(stream);
  DeviceBuffer<RunLayout> layouts_dev;
  layouts_dev.upload(layouts, stream);
  DeviceBuffer<WalkParams> walks_dev;
  walks_dev.upload(walks, stream);
  DeviceBuffer<PopulationParams> pops_dev;
  pops_dev.upload(pops, stream);
  DeviceBuffer<std::uint8_t> max_gen_dev, limited_dev;
  max_gen_dev.upload(max_gen, stream);
  limited_dev.upload(limited, stream);
  DeviceBuffer<Task> tasks_dev;
  if (!tasks.empty()) tasks_dev.upload(tasks, stream);

  const std::size_t shared = sizeof(unsigned long long) * shared_entries;
  for (std::size_t begin = 0; begin < tasks.size(); begin += kMaxBlocksPerLaunch) {
    if (begin > 0) {
      // Between launches: a stop request ends the batch (the result is not used).
      SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
      throw_if_stopped(options);
    }
    const std::size_t blocks = std::min(kMaxBlocksPerLaunch, tasks.size() - begin);
    walk_kernel<<<static_cast<unsigned>(blocks), kBlock, shared, stream>>>(
        walks_dev.data(), layouts_dev.data(), pops_dev.data(), max_gen_dev.data(), limited_dev.data(),
        tasks_dev.data() + begin, rows, populations, counts.data(), stats.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
  }
  counts.download(host_counts.data(), host_counts.size(), stream);
  std::vector<unsigned long long> host_stats(2 * runs.size());
  stats.download(host_stats.data(), host_stats.size(), stream);
  SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  throw_if_stopped(options);

  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::copy(host_counts.begin() + static_cast<std::ptrdiff_t>(layouts[r].counts),
              host_counts.begin() + static_cast<std::ptrdiff_t>(layouts[r].counts + results[r].counts.size()),
              results[r].counts.begin());
    out[r].divisions = host_stats[2 * r];
    out[r].too_deep = host_stats[2 * r + 1];
    if (progress) progress(runs[r].proliferating_cells);
  }
  return out;
}

}  // namespace simkit::prolif::detail::cuda
