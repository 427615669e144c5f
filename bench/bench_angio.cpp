// angio benchmarks: the continuous model's explicit step at Darbyshire's size, 400 x 400 x 140
// nodes (22.4 M), A&C's initial state (linear TAF), expanded form, series output off unless said.
// Counters: steps/s, node updates/s, effective bandwidth (24 bytes per node and step in fp32, 48 in
// fp64: read n, f, c once, write them once) and its fraction of the device's copy bandwidth,
// measured here with cudaMemcpy device-to-device on a buffer of one step's size (read + write
// counted). Variants of the cuda kernel: plane chunks (chunk=K planes per block column, 0 = all)
// and the naive one-thread-per-node kernel, the baseline of docs/performance.md.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "angio/continuous/cuda_tuning.hpp"
#include "angio/hybrid/detail.hpp"
#include "simkit/angio/angio.hpp"
#include "simkit/angio/hybrid.hpp"
#ifdef SIMKIT_HAVE_CUDA
#include "angio/hybrid/cuda.hpp"
#endif
#include "simkit/core/cuda_info.hpp"
#ifdef SIMKIT_HAVE_CUDA
#include <cuda_runtime.h>

#include "stream_copies.hpp"
#endif

namespace {

using namespace simkit;
using namespace simkit::angio;

// Grids: 0 Darbyshire's 400 x 400 x 140; 1 200 x 200 x 70; 2 2048 x 2048 (2D); 3 the first with a
// wide initial n (eps3 = 0.1: no subnormal values in fp32, where A&C's eps3 = 0.001 underflows).
Grid bench_grid(int which) {
  if (which == 0 || which == 3) return Grid{400, 400, 140, 1.0 / 399};
  if (which == 1) return Grid{200, 200, 70, 1.0 / 199};
  if (which == 4) return Grid{448, 400, 140, 1.0 / 399};
  return Grid{2048, 2048, 1, 1.0 / 2047};
}

template <class T>
const Fields<T>& initial(int which) {
  static std::map<int, Fields<T>> cache;
  auto it = cache.find(which);
  if (it == cache.end()) {
    InitialParams ip;
    if (which == 3) ip.eps3 = 0.1;
    it = cache.emplace(which, initial_fields<T>(bench_grid(which), ip)).first;
  }
  return it->second;
}

[[maybe_unused]] double copy_bandwidth_gbs = 0;  // measured once (CUDA builds), read + write bytes/s / 1e9
double host_copy_gbs = 0;                        // the host's, measured once: read + write bytes/s / 1e9

// The host's memory bandwidth: every OpenMP thread copies its share of a 1 GiB buffer (memcpy, first
// touched by the same thread), best of 10; bytes read plus bytes written, as for the device.
void measure_host_copy_bandwidth() {
  const std::size_t bytes = std::size_t{1} << 30;
  std::vector<char> a(bytes), b(bytes);
  double best = 1e30;
  for (int r = 0; r < 11; ++r) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel
    {
      const std::size_t workers = static_cast<std::size_t>(omp_get_num_threads());
      const std::size_t me = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t first = bytes * me / workers, last = bytes * (me + 1) / workers;
      if (r == 0) {
        std::memset(a.data() + first, 1, last - first);  // first touch on this thread's memory
        std::memset(b.data() + first, 0, last - first);
      } else {
        std::memcpy(b.data() + first, a.data() + first, last - first);
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, seconds);
  }
  host_copy_gbs = 2.0 * static_cast<double>(bytes) / best / 1e9;
}

#ifdef SIMKIT_HAVE_CUDA
void measure_copy_bandwidth() {
  const std::size_t bytes = 22400000ull * 12;  // one fp32 step's reads (= its writes)
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return;
  cudaMemset(a, 0, bytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  float best = 1e30f;
  for (int r = 0; r < 20; ++r) {
    cudaEventRecord(start);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms);
  }
  copy_bandwidth_gbs = 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
  cudaFree(a);
  cudaFree(b);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void BM_CopyBandwidth(benchmark::State& state) {
  if (!cuda_status().usable) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  for (auto _ : state) measure_copy_bandwidth();
  state.counters["copy_GBps"] = copy_bandwidth_gbs;
}
BENCHMARK(BM_CopyBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);

// The step's traffic with nothing computed: three fields read, three written (400 x 400 x 140).
// Args: fp64, columns (0: flat float4 copies; 1: a thread per column walking up the planes, 32 x 8
// threads a block; 2: 64 x 4; 3: two columns per thread; 4: four, fp32; 5: as 1 in chunks of 35
// planes; 6: as 5 held to 5 blocks a SM).
void BM_ThreeFieldCopy(benchmark::State& state) {
  if (!cuda_status().usable) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  double gbs = 0;
  for (auto _ : state) gbs = three_field_copy_gbs(state.range(0) != 0, static_cast<int>(state.range(1)), 400, 400, 140);
  state.counters["GBps"] = gbs;
  if (copy_bandwidth_gbs > 0) state.counters["of_copy"] = gbs / copy_bandwidth_gbs;
}
BENCHMARK(BM_ThreeFieldCopy)
    ->ArgNames({"fp64", "columns"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({0, 3})
    ->Args({0, 4})
    ->Args({0, 5})
    ->Args({0, 6})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({1, 3})
    ->Args({1, 5})
    ->Args({1, 6})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
#endif

// Args: backend (1 reference, 2 cpu, 3 cuda), precision (0 fp32, 1 fp64), grid (0, 1, 2; 3 as 0 with a wide
// initial n; 4 448 x 400 x 140, whole 64-wide tiles), form (0 expanded, 1 flux), chunk (cuda; TMA-staged kernel:
// its Tuning::tma_chunk, 0 the solver's rule), naive (cuda), series (reduce every 10th step), tile
// (cuda: the block's tile is tile by 256 / tile nodes; with kernel 3 the planes in flight), kernel
// (cuda: 0 marching or naive, 1 two steps per pass, 2 marching without the flux form's z-face
// carry, 3 staged, 7 TMA-staged, 8 two steps per pass through TMA (tile 32 or 64 wide): `tile` = planes ahead + 10 x
// rows per thread + 100 when slots go back by mbarrier + 1000 for 64-wide tiles (rows 4: 64 x 16 in blocks of 16
// warps) or 2000 for 80 x 8 tiles in blocks of 10 warps, + 10000 x Tuning::chain for chained launches), blocks
// (cuda: blocks per SM the registers must allow, 0 the kernel's own).
template <class T>
void run_case(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  const int which = static_cast<int>(state.range(2));
  if (backend == Backend::Cuda && !cuda_status().usable) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  Problem p;
  p.grid = bench_grid(which);
  p.precision = std::is_same_v<T, float> ? Precision::Fp32 : Precision::Fp64;
  p.form = state.range(3) == 1 ? Form::Flux : Form::Expanded;
  const Fields<T>& u0 = initial<T>(which);
  p.dt = 0.5 * check_stability(p, u0).largest_stable_k;
  RunOptions options;
  std::unique_ptr<Solver<T>> solver;
  if (backend == Backend::Cuda) {
    detail::cuda::Tuning tuning;
    tuning.chunk = static_cast<int>(state.range(4));
    tuning.naive = state.range(5) != 0;
    tuning.tile_x = state.range(8) >= 7 ? 32 : static_cast<int>(state.range(7));
    tuning.pair = state.range(8) == 1;
    if (state.range(8) == 3) tuning.staged = static_cast<int>(state.range(7));
    tuning.carry = state.range(8) != 2;
    if (state.range(8) == 8) {  // two steps per pass through TMA: tile 64 (64 x 8), 32 (32 x 8) or 16 (32 x 16)
      tuning.tma = 1;
      tuning.tma_rows = 2;
      tuning.tma_pair = true;
      tuning.tma_wide = state.range(7) == 64;
      tuning.tma_pair_rows = state.range(7) == 16 ? 16 : 8;
    }
    if (state.range(8) == 7) {  // tile: see above
      tuning.tma = static_cast<int>(state.range(7) % 10);
      tuning.tma_rows = std::max(1, static_cast<int>(state.range(7) / 10 % 10));
      tuning.tma_release = state.range(7) / 100 % 10 == 1;
      tuning.tma_wide = state.range(7) / 1000 % 10 == 1;
      if (state.range(7) / 1000 % 10 == 2) tuning.tma_width = 80;  // (80 x 8)
      tuning.chain = static_cast<int>(state.range(7) / 10000);     // chained launches (Tuning::chain)
      tuning.tma_chunk = tuning.chunk;  // (chunk 0: the solver's rule)
      tuning.chunk = 35;
    }
    tuning.blocks = static_cast<int>(state.range(9));
    solver = detail::cuda::make<T>(p, u0, 0, tuning);
  } else {
    solver = make_solver<T>(p, u0, backend, options);
  }
  const bool series = state.range(6) != 0;
  const std::int64_t steps = backend == Backend::Cuda ? 10 : 1;
  solver->advance(1, false);  // warm-up
  for (auto _ : state) solver->advance(steps, series);
  const double total_steps = static_cast<double>(state.iterations() * steps);
  const double nodes = static_cast<double>(p.grid.nodes());
  state.counters["steps_per_s"] = benchmark::Counter(total_steps, benchmark::Counter::kIsRate);
  state.counters["Gnode_updates_per_s"] = benchmark::Counter(total_steps * nodes / 1e9, benchmark::Counter::kIsRate);
  state.counters["effective_GBps"] =
      benchmark::Counter(total_steps * nodes * bytes_per_node_step(p.precision) / 1e9, benchmark::Counter::kIsRate);
  // The fraction of the copy bandwidth measured in this process: the device's for cuda, the host's
  // for the host backends (effective bytes per second over copy bytes per second).
  const double copy = backend == Backend::Cuda ? copy_bandwidth_gbs : host_copy_gbs;
  if (copy > 0) {
    state.counters["of_copy"] = benchmark::Counter(total_steps * nodes * bytes_per_node_step(p.precision) / 1e9 / copy,
                                                   benchmark::Counter::kIsRate);
  }
  state.SetLabel(solver->device());
}

void BM_AngioFp32(benchmark::State& state) { run_case<float>(state); }
void BM_AngioFp64(benchmark::State& state) { run_case<double>(state); }

void cuda_cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"backend", "fp64", "grid", "flux", "chunk", "naive", "series", "tile", "kernel", "blocks"});
  for (int blocks : {0, 4})
    for (int chunk : {8, 35}) b->Args({3, 0, 0, 0, chunk, 0, 0, 32, 0, blocks});  // marching (0: 5 blocks a SM)
  b->Args({3, 0, 0, 0, 35, 0, 0, 64, 0, 0});                                      // marching, 64 x 4 tiles
  b->Args({3, 0, 0, 0, 35, 0, 0, 32, 1, 0});                                      // two steps per pass
  b->Args({3, 0, 0, 0, 0, 1, 0, 32, 0, 0});                                       // naive kernel
  for (int ahead : {2, 4}) {
    for (int blocks : {0, 6}) {
      b->Args({3, 0, 0, 0, 35, 0, 0, ahead, 3, blocks});  // staged: planes in flight, blocks a SM
      b->Args({3, 0, 0, 1, 35, 0, 0, ahead, 3, blocks});  // flux, staged
    }
  }
  for (int variant : {1, 2, 21, 22, 101, 121, 122, 1021, 1022, 1041, 1042, 1121, 1141, 1142}) {
    b->Args({3, 0, 0, 0, 35, 0, 0, variant, 7, 0});  // TMA-staged (see `tile` above; 121 default)
    b->Args({3, 0, 0, 1, 35, 0, 0, variant, 7, 0});  // flux (22 default)
  }
  for (int tile : {32, 64, 16}) b->Args({3, 0, 0, 0, 35, 0, 0, tile, 8, 0});  // two steps per pass through TMA
  for (int chunk : {14, 20, 24, 28, 47, 70}) {
    b->Args({3, 0, 0, 1, chunk, 0, 0, 1022, 7, 0});  // flux, 64 x 8 (the default before 80 x 8), chunks
    b->Args({3, 0, 0, 0, chunk, 0, 0, 16, 8, 0});    // expanded default (pair), chunks
  }
  for (int chunk : {35, 47}) b->Args({3, 0, 4, 1, chunk, 0, 0, 1022, 7, 0});  // 448 x 400 x 140: whole tiles
  for (int chunk : {0, 14, 16, 18, 20, 24, 35, 47}) b->Args({3, 0, 0, 1, chunk, 0, 0, 2022, 7, 0});  // flux, 80 x 8
  for (int chunk : {0, 35}) b->Args({3, 0, 0, 0, chunk, 0, 0, 2021, 7, 0});   // expanded single step, 80 x 8
  b->Args({3, 0, 0, 0, 0, 0, 0, 1021, 7, 0});                                 // expanded single step, 64 x 8
  for (int chain : {1, 2})
    for (int chunk : {0, 14, 24, 28, 35, 40, 47, 70}) {
      b->Args({3, 0, 0, 1, chunk, 0, 0, 2022 + 10000 * chain, 7, 0});  // flux, 80 x 8, chained launches
      b->Args({3, 0, 0, 0, chunk, 0, 0, 2021 + 10000 * chain, 7, 0});  // expanded single step, chained
    }
  b->Args({3, 0, 0, 1, 0, 0, 0, 1022, 7, 0});                                 // flux, 64 x 8, chunk rule
  b->Args({3, 0, 4, 1, 0, 0, 0, 1022, 7, 0});                                 // the same on 448 x 400 x 140
  b->Args({3, 0, 0, 0, 35, 0, 1, 32, 0, 0});                              // series every call (10 steps)
  b->Args({3, 0, 0, 0, 35, 0, 1, 121, 7, 0});  // the same with the TMA default (series steps: marching)
  b->Args({3, 0, 1, 0, 35, 0, 0, 121, 7, 0});  // 200 x 200 x 70, TMA default
  b->Args({3, 0, 2, 0, 35, 0, 0, 121, 7, 0});  // 2048 x 2048 (2D), TMA default
  for (int chunk : {8, 35}) b->Args({3, 0, 0, 1, chunk, 0, 0, 32, 0, 0});  // flux form
  b->Args({3, 0, 0, 1, 35, 0, 0, 32, 2, 0});                               // flux form, every z face evaluated twice
  b->Args({3, 0, 0, 1, 0, 1, 0, 32, 0, 0});                                // flux form, naive
  b->Args({3, 0, 1, 0, 35, 0, 0, 32, 0, 0});                               // 200 x 200 x 70
  b->Args({3, 0, 2, 0, 35, 0, 0, 32, 0, 0});                               // 2048 x 2048 (2D)
  b->Args({3, 0, 2, 0, 35, 0, 0, 32, 1, 0});                               // 2048 x 2048 (2D), pairs
  b->Args({2, 0, 0, 0, 0, 0, 0, 32, 0, 0});                                // cpu
  b->Args({2, 0, 3, 0, 0, 0, 0, 32, 0, 0});                                // cpu, no subnormals
  b->Args({2, 0, 0, 1, 0, 0, 0, 32, 0, 0});                                // cpu, flux
  b->Args({1, 0, 0, 0, 0, 0, 0, 32, 0, 0});                                // reference
}
void cuda_cases64(benchmark::internal::Benchmark* b) {
  b->ArgNames({"backend", "fp64", "grid", "flux", "chunk", "naive", "series", "tile", "kernel", "blocks"});
  b->Args({3, 1, 0, 0, 16, 0, 0, 32, 0, 0});  // marching
  b->Args({3, 1, 0, 0, 0, 1, 0, 32, 0, 0});   // naive
  for (int chunk : {16, 35, 70}) {
    b->Args({3, 1, 0, 0, chunk, 0, 0, 2, 3, 4});  // staged, 2 planes in flight, 4 blocks a SM (35: default)
    b->Args({3, 1, 0, 1, chunk, 0, 0, 2, 3, 4});  // flux, staged (35: default)
  }
  for (int variant : {1, 2, 21, 22, 121, 1021, 1022}) {
    b->Args({3, 1, 0, 0, 35, 0, 0, variant, 7, 0});  // TMA-staged (see cuda_cases; 21 default)
    b->Args({3, 1, 0, 1, 35, 0, 0, variant, 7, 0});  // flux (2 default)
  }
  for (int tile : {32, 64}) b->Args({3, 1, 0, 0, 35, 0, 0, tile, 8, 0});  // two steps per pass through TMA
  for (int chunk : {14, 20, 24, 28, 47, 70}) {
    b->Args({3, 1, 0, 1, chunk, 0, 0, 22, 7, 0});  // flux default, chunks
    b->Args({3, 1, 0, 0, chunk, 0, 0, 32, 8, 0});  // expanded default (pair), chunks
  }
  b->Args({3, 1, 0, 1, 0, 0, 0, 22, 7, 0});                               // flux default, chunk rule
  for (int chain : {1, 2})
    for (int chunk : {0, 14, 24, 47, 70, 140})
      b->Args({3, 1, 0, 1, chunk, 0, 0, 22 + 10000 * chain, 7, 0});  // flux default, chained launches
  for (int chain : {0, 2})
    for (int chunk : {0, 28, 35, 47}) {
      b->Args({3, 1, 0, 1, chunk, 0, 0, 2022 + 10000 * chain, 7, 0});  // flux, 80 x 8 in 10 warps
      b->Args({3, 1, 0, 0, chunk, 0, 0, 2021 + 10000 * chain, 7, 0});  // expanded single step, 80 x 8
    }
  b->Args({3, 1, 0, 0, 35, 0, 0, 1, 3, 4});                               // staged, 1 plane in flight
  b->Args({3, 1, 0, 0, 35, 0, 0, 2, 3, 0});                               // staged, no register cap
  b->Args({3, 1, 0, 0, 35, 0, 1, 2, 3, 4});                               // default, series
  b->Args({3, 1, 0, 1, 35, 0, 1, 2, 3, 4});                               // flux default, series
  for (int blocks : {0, 3})
    for (int chunk : {35, 47}) b->Args({3, 1, 0, 0, chunk, 0, 0, 32, 1, blocks});  // two steps per pass
  b->Args({3, 1, 0, 0, 47, 0, 1, 32, 1, 3});                                       // series, two steps per pass
  b->Args({3, 1, 0, 1, 0, 1, 0, 32, 0, 0});                                        // flux, naive
  b->Args({3, 1, 0, 1, 35, 0, 0, 32, 0, 0});                                       // flux, marching, no register cap
  for (int chunk : {16, 24, 35, 47, 70}) {
    b->Args({3, 1, 0, 0, chunk, 0, 0, 32, 0, 3});  // marching, registers for 3 blocks a SM
  }
  for (int chunk : {24, 35, 47}) b->Args({3, 1, 0, 0, chunk, 0, 0, 32, 0, 4});  // 4 blocks a SM (35: default)
  b->Args({3, 1, 0, 0, 35, 0, 1, 32, 0, 4});                                    // default, series
  for (int chunk : {16, 35, 70}) b->Args({3, 1, 0, 1, chunk, 0, 0, 32, 0, 3});  // flux, marching (35: default)
  b->Args({3, 1, 0, 1, 35, 0, 0, 32, 2, 3});  // flux, marching, every z face evaluated twice
  b->Args({3, 1, 0, 1, 47, 0, 0, 32, 1, 3});  // flux, two steps per pass
  b->Args({2, 1, 0, 0, 0, 0, 0, 32, 0, 0});   // cpu
  b->Args({2, 1, 3, 0, 0, 0, 0, 32, 0, 0});   // cpu, no subnormals
  b->Args({2, 1, 0, 1, 0, 0, 0, 32, 0, 0});   // cpu, flux
  b->Args({1, 1, 0, 0, 0, 0, 0, 32, 0, 0});   // reference
}
BENCHMARK(BM_AngioFp32)->Apply(cuda_cases)->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK(BM_AngioFp64)->Apply(cuda_cases64)->Unit(benchmark::kMillisecond)->MinTime(0.5);

// The hybrid model's ensembles: R realisations to the reach time or t_max, k = 0.01, linear TAF.
// Args: backend (2 cpu, 3 cuda), grid (0: 200^3 with h = 1/199, 1: 400 x 400 x 140, 2: the 2D 201^2
// case with h = 0.005, 3: 100^3, the scale-out study's ensemble), replicates, rho x 100 (34: A&C; 0: chemotaxis only), D_c x 10^4 (0, or 3:
// TAF diffusion with D_c = 0.0003, a c field per realisation), rule (0: the defaults, 1:
// anastomosis "any", the rule before docs/angio.md's "Anastomosis"), t_max x 10.
// Time is end to end (initial fields, upload, kernels, rebuilding every realisation on the host);
// counters give realisations/s, the mean steps, segments and reach fraction, and for cuda the
// kernel-only time; with D_c > 0 also the stencil's bytes per second and its fraction of the copy
// bandwidth (20 bytes per node and realisation-step: read c and the node's occupation, write c).
void BM_AngioHybrid(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  HybridProblem p;
  const int which = static_cast<int>(state.range(1));
  const Grid grids[] = {Grid{200, 200, 200, 1.0 / 199}, Grid{400, 400, 140, 1.0 / 399}, Grid{201, 201, 1, 0.005},
                        Grid{100, 100, 100, 1.0 / 99}};
  p.grid = grids[which];
  p.dt = 0.01;
  p.model.haptotaxis = static_cast<double>(state.range(3)) / 100;
  p.model.taf_diffusion = static_cast<double>(state.range(4)) / 1e4;
  if (state.range(5) == 1) p.hybrid.anastomosis = AnastomosisRule::Any;
  p.hybrid.t_max = static_cast<double>(state.range(6)) / 10;
  const int replicates = static_cast<int>(state.range(2));
  if (backend == Backend::Cuda && !cuda_status().usable) {
    state.SkipWithError("no usable CUDA device");
    return;
  }
  double steps = 0, segments = 0, reached = 0, moves = 0, branches = 0;
  [[maybe_unused]] double kernel = 0, upload = 0, download = 0, setup = 0, allocate = 0, rebuild = 0;
  for (auto _ : state) {
    std::vector<Realisation> ensemble;
#ifdef SIMKIT_HAVE_CUDA
    if (backend == Backend::Cuda) {
      detail::hybrid_cuda::Timing timing;
      ensemble = detail::hybrid_cuda::run(p, 1, replicates, 0, {}, {}, &timing);
      kernel = timing.kernel;
      upload = timing.upload;
      download = timing.download;
      setup = timing.setup;
      allocate = timing.allocate;
      rebuild = timing.rebuild;
    }
#endif
    if (backend != Backend::Cuda) ensemble = run_hybrid_ensemble(p, 1, replicates, backend, 0);
    steps = segments = reached = moves = branches = 0;
    for (const Realisation& r : ensemble) {
      steps += static_cast<double>(r.steps);
      segments += static_cast<double>(r.segments.size());
      moves += static_cast<double>(r.moves);
      branches += static_cast<double>(r.branches);
      reached += r.reached ? 1 : 0;
    }
  }
  state.counters["realisations_per_s"] =
      benchmark::Counter(static_cast<double>(replicates), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["mean_steps"] = steps / replicates;
  state.counters["mean_segments"] = segments / replicates;
  state.counters["mean_branches"] = branches / replicates;
  state.counters["mean_tip_steps"] = moves / replicates;
  state.counters["reached_fraction"] = reached / replicates;
  if (backend == Backend::Cuda) {
    state.counters["kernel_s"] = kernel;
    state.counters["tip_steps_per_s"] = kernel > 0 ? moves / kernel : 0;
    state.counters["upload_s"] = upload;
    state.counters["download_s"] = download;
    state.counters["setup_s"] = setup;
    state.counters["allocate_s"] = allocate;
    state.counters["rebuild_s"] = rebuild;
    state.counters["kernel_ms_per_step"] = 1e3 * kernel / std::max(1.0, steps / replicates);
    if (p.model.taf_diffusion > 0 && kernel > 0) {
      // Every realisation sweeps its field each step it makes (steps summed over realisations).
      const double bytes = 20.0 * static_cast<double>(p.grid.nodes()) * steps;
      state.counters["stencil_GBps"] = bytes / kernel / 1e9;
      if (copy_bandwidth_gbs > 0) state.counters["of_copy"] = bytes / kernel / 1e9 / copy_bandwidth_gbs;
    }
  }
}
BENCHMARK(BM_AngioHybrid)
    ->ArgNames({"backend", "grid", "R", "rho100", "Dc1e4", "any", "tmax10"})
    ->Args({3, 0, 1000, 0, 0, 0, 200})  // chemotaxis only, 200^3, R = 1000
    ->Args({2, 0, 1000, 0, 0, 0, 200})
    ->Args({3, 0, 1000, 34, 0, 1, 200})  // A&C, the rule "any" (all tips anastomose by t ~ 3.7)
    ->Args({2, 0, 1000, 34, 0, 1, 200})
    ->Args({3, 0, 100, 34, 0, 0, 20})  // A&C, the default rules, to t = 2 (the networks grow without bound later)
    ->Args({2, 0, 100, 34, 0, 0, 20})
    ->Args({3, 1, 1, 0, 0, 0, 200})     // one large realisation
    ->Args({3, 2, 1000, 0, 0, 0, 200})  // 2D
    ->Args({2, 2, 1000, 0, 0, 0, 200})
    ->Args({3, 0, 100, 34, 3, 0, 20})  // D_c > 0: a c field per realisation, to t = 2
    ->Args({2, 0, 16, 34, 3, 0, 20})
    // the scale-out study's D_c = 0 ensemble (docs/performance.md, "Scale-out"): 100^3, A&C, to t = 2,
    // as one GPU runs it and as each of two does (where a run of well under a second spends its time)
    ->Args({3, 3, 20000, 34, 0, 0, 20})
    ->Args({3, 3, 10000, 34, 0, 0, 20})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  measure_host_copy_bandwidth();
  benchmark::AddCustomContext("host_copy_GBps_read_plus_write", std::to_string(host_copy_gbs));
  benchmark::AddCustomContext("host_threads", std::to_string(omp_get_max_threads()));
#ifdef SIMKIT_HAVE_CUDA
  if (cuda_status().usable) {
    initialize_cuda_device(0);
    measure_copy_bandwidth();
    benchmark::AddCustomContext("copy_GBps_read_plus_write", std::to_string(copy_bandwidth_gbs));
  }
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
