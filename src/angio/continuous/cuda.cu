// angio cuda backend. The fp32 step kernel marches each (i, j) column of a tile up through a chunk
// of planes, keeping the column's own n, f, c at l-1, l, l+1 in registers, so each value comes from
// DRAM about once per step (in-plane neighbours hit L1/L2); the fp64 one (staged) copies each plane
// of the tile and its ring into shared memory asynchronously, two planes ahead. Every node runs update_node
// (model.hpp), the same code and operand order as reference; with --fmad=false the fields are bitwise equal to
// reference's (tests/angio/solver_cuda_test.cpp checks it). Series reductions are fused into the
// step that produces the state: per-block partials, then one block combines them in fixed order.
#include <cuda_runtime.h>

#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/system_error.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "angio/continuous/cuda_tuning.hpp"
#include "angio/continuous/kernels.hpp"
#include "angio/stage.cuh"
#include "core/cuda_check.cuh"
#include "core/rng.hpp"
#include "core/tma.cuh"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/error.hpp"

namespace simkit::angio::detail::cuda {
namespace {

using ::simkit::cuda::DeviceBuffer;
using ::simkit::cuda::DeviceGuard;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // core/tma.cuh's device side
using ::simkit::cuda::fence_proxy_async_global;
using ::simkit::cuda::flag_acquire;
using ::simkit::cuda::flag_release;
using ::simkit::cuda::grid_dependency_wait;
using ::simkit::cuda::grid_launch_dependents;
using ::simkit::cuda::mbar_arrive;
using ::simkit::cuda::mbar_expect_tx;
using ::simkit::cuda::mbar_fence_init;
using ::simkit::cuda::mbar_init;
using ::simkit::cuda::mbar_wait;
using ::simkit::cuda::tma_load_3d;
#endif

constexpr int kThreads = 256;

// Whether the TMA kernels may divide through quotient's fast path (model.hpp): in fp32, chi0 = +0 or
// chi0 in [2^-60, 2^60] (the numerators: chi0, and 1 in the expanded form; -0 would give +0 where
// a / b gives -0), and every c of the start (`c`: n values on the device) in [0, 2^40 / alpha]
// (2^100 for alpha = 0), so that each denominator 1 + alpha c (c a node's value or the mean of two)
// lies in [1, 2^40 + 1]. A distributed run decides on every rank's c together (the constructor),
// since c moves between slabs. c then grows by a factor of 2^20 before it leaves the range where
// the fast path is exact, which only a run that blows up does (the expanded form's uptake adds to
// c where n < 0; diffusion and uptake otherwise keep c within its start's bounds). In fp64 every
// kernel divides as a / b.
struct OutsideQuotientRange {
  float limit;
  __host__ __device__ bool operator()(float c) const { return !(c >= 0.0f && c <= limit); }
};
template <class T>
bool quotient_in_range(const ModelParams& model, const T* c, std::size_t n) {
  if constexpr (sizeof(T) != 4) {
    return true;
  } else {
    const float chi = static_cast<float>(model.chemotaxis), alpha = static_cast<float>(effective_saturation(model));
    const float lo = 0x1p-60f, hi = 0x1p60f;
    if (!((chi == 0.0f && !std::signbit(chi)) || (chi >= lo && chi <= hi)) || !(alpha >= 0.0f && alpha <= hi))
      return false;
    const float limit = alpha > 0.0f ? 0x1p40f / alpha : 0x1p100f;
    try {
      return thrust::count_if(thrust::device, c, c + n, OutsideQuotientRange{limit}) == 0;
    } catch (const thrust::system_error& e) {  // (as SIMKIT_CUDA_CHECK reports a failed call)
      ::simkit::cuda::throw_cuda_error(static_cast<cudaError_t>(e.code().value()), "thrust::count_if", __FILE__,
                                       __LINE__);
    }
  }
}

// quotient's fast path against a / b as the other kernels divide (div.rn.ftz.f32: angio's device code
// flushes fp32 subnormals, as its host code does) (tests): each functor says whether case k differs;
// count_mismatches counts the cases that do.
struct QuotientSweep {  // b: the k-th float from `lo` on, a fixed
  float a;
  std::uint32_t lo;
  __device__ bool operator()(std::uint64_t k) const {
    const float b = __uint_as_float(lo + static_cast<std::uint32_t>(k));
    return __float_as_uint(quotient<true>(a, b)) != __float_as_uint(a / b);
  }
};
struct ReciprocalSweep {  // the refined reciprocal of the k-th float from `lo` on, against 1 / b
  std::uint32_t lo;
  __device__ bool operator()(std::uint64_t k) const {
    const float b = __uint_as_float(lo + static_cast<std::uint32_t>(k));
    return __float_as_uint(refined_reciprocal(b)) != __float_as_uint(1.0f / b);
  }
};
struct RandomQuotients {  // a and b from Philox draws: exponents in [-60, 60], random signs
  std::uint64_t seed;
  __device__ bool operator()(std::uint64_t k) const {
    const auto w = RngStream(seed, StreamId::from64(k >> 32)).block(static_cast<std::uint32_t>(k));
    const std::uint32_t ea = 127 - 60 + w.v[0] % 121, eb = 127 - 60 + w.v[1] % 121;
    const float a = __uint_as_float((w.v[2] & 0x80000000u) | (ea << 23) | (w.v[2] & 0x7fffffu));
    const float b = __uint_as_float((w.v[3] & 0x80000000u) | (eb << 23) | (w.v[3] & 0x7fffffu));
    return __float_as_uint(quotient<true>(a, b)) != __float_as_uint(a / b);
  }
};
template <class Differs>
__global__ void count_mismatches_kernel(std::uint64_t count, Differs differs, unsigned long long* total) {
  unsigned long long mine = 0;
  for (std::uint64_t k = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; k < count;
       k += std::uint64_t{gridDim.x} * blockDim.x)
    mine += differs(k) ? 1 : 0;
  if (mine != 0) atomicAdd(total, mine);
}
template <class Differs>
std::uint64_t count_mismatches(std::uint64_t count, Differs differs) {
  DeviceBuffer<unsigned long long> total;
  total.resize(1);
  SIMKIT_CUDA_CHECK(cudaMemset(total.data(), 0, sizeof(unsigned long long)));
  count_mismatches_kernel<<<1056, 256>>>(count, differs, total.data());
  SIMKIT_CUDA_CHECK_LAUNCH();
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  return total.to_host()[0];
}

// Blocks per SM the register budget must allow: the fp32 step kernels without the reduction fit
// 48 registers without spilling (5 blocks of 256 threads), which hides memory latency better
// (H200: 2.71 against 2.58 TB/s with 4 blocks; docs/performance.md).
template <class T, bool kReduce>
constexpr int kMinBlocks = (!kReduce && sizeof(T) == 4) ? 5 : 1;

// 9 numbers per partial: integrals of n, f, c (weighted, before h^dims), then mins, then maxes.
struct Partial {
  double v[9];
};

__device__ inline double nan_min_d(double acc, double x) { return (x != x || x < acc) ? x : acc; }
__device__ inline double nan_max_d(double acc, double x) { return (x != x || x > acc) ? x : acc; }

__device__ inline void combine(Partial& a, const Partial& b) {
  for (int q = 0; q < 3; ++q) {
    a.v[q] += b.v[q];
    a.v[3 + q] = nan_min_d(a.v[3 + q], b.v[3 + q]);
    a.v[6 + q] = nan_max_d(a.v[6 + q], b.v[6 + q]);
  }
}

__device__ inline void empty(Partial& p) {
  for (int q = 0; q < 3; ++q) {
    p.v[q] = 0;
    p.v[3 + q] = __longlong_as_double(0x7ff0000000000000LL);  // +inf
    p.v[6 + q] = __longlong_as_double(0xfff0000000000000LL);  // -inf
  }
}

// Fixed-order block reduction (shuffle tree, then the warps' results in warp order): the same
// inputs give the same bits on every run.
__device__ void block_reduce(Partial& p, Partial* out) {
  __shared__ Partial warp_results[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    Partial other;
    for (int q = 0; q < 9; ++q) other.v[q] = __shfl_down_sync(0xffffffffu, p.v[q], offset);
    combine(p, other);
  }
  if (lane == 0) warp_results[warp] = p;
  __syncthreads();
  if (threadIdx.x == 0) {
    Partial total = warp_results[0];
    for (int w = 1; w < kThreads / 32; ++w) combine(total, warp_results[w]);
    *out = total;
  }
}

__device__ inline double weight(int i, int n) { return (n > 1 && (i == 0 || i == n - 1)) ? 0.5 : 1.0; }

// The 7-point stencil of n, f and c at node indices `at` (centre, i+1, i-1, j+1, j-1, l+1, l-1),
// every load through the caches.
template <class T, class I>
__device__ inline void gather(const T* __restrict n, const T* __restrict f, const T* __restrict c, const I at[7],
                              T nn[7], Stencil<T>& s) {
#pragma unroll
  for (int d = 0; d < 7; ++d) {
    s.c[d] = __ldg(c + at[d]);
    s.f[d] = __ldg(f + at[d]);
    nn[d] = __ldg(n + at[d]);
  }
}

// The same from three planes staged in shared memory (n, f, c of a plane `field` values apart; the
// TMA pair kernel's two steps):
// at = the node and its in-plane neighbours in `mid` (centre, i+1, i-1, j+1, j-1); l+1 and l-1
// are the node's cell in `hi` and `lo`.
template <class T>
__device__ inline void gather_planes(const T* lo, const T* mid, const T* hi, int field, const int at[5], T nn[7],
                                     Stencil<T>& s) {
#pragma unroll
  for (int d = 0; d < 5; ++d) {
    nn[d] = mid[at[d]];
    s.f[d] = mid[field + at[d]];
    s.c[d] = mid[2 * field + at[d]];
  }
  const int o = at[0];
  nn[5] = hi[o], s.f[5] = hi[field + o], s.c[5] = hi[2 * field + o];
  nn[6] = lo[o], s.f[6] = lo[field + o], s.c[6] = lo[2 * field + o];
}

template <class T>
__device__ inline void accumulate(Partial& p, double w, T n, T f, T c) {
  const double x[3] = {static_cast<double>(n), static_cast<double>(f), static_cast<double>(c)};
  for (int q = 0; q < 3; ++q) {
    p.v[q] += w * x[q];
    p.v[3 + q] = nan_min_d(p.v[3 + q], x[q]);
    p.v[6 + q] = nan_max_d(p.v[6 + q], x[q]);
  }
}

// A block's index in its launch's grid (x fastest), and that of the block at (x, y, z).
__device__ inline unsigned block_index(unsigned x, unsigned y, unsigned z) {
  return (z * gridDim.y + y) * gridDim.x + x;
}
__device__ inline unsigned block_index() { return block_index(blockIdx.x, blockIdx.y, blockIdx.z); }

struct Dims {
  int nx, ny, nz;
  long long plane;  // nx * ny
  int tile_x;       // block tile tile_x by kThreads / tile_x
  bool carry;       // marching flux form: carry each column's z face up (Tuning::carry)
  int z0, nzg;      // global index of plane 0 and the global planes (the trapezoid weights in z)
  int lbase, lend;  // the planes this launch updates (blockIdx.z counts chunks from lbase)
};

// Blocks are 1D (kThreads); the tile position comes from blockIdx.x/y, the chunk of planes from
// blockIdx.z. kReduce: also reduce the new state into partials[block].
template <class T, int kDims, bool kFlux, bool kReduce, int kMin = kMinBlocks<T, kReduce>>
__global__ void __launch_bounds__(kThreads, kMin)
    march_kernel(Dims g, TypedModelParams<T> m, StepConstants<T> sc, int chunk, const T* __restrict__ n,
                 const T* __restrict__ f, const T* __restrict__ c, T* __restrict__ n_out, T* __restrict__ f_out,
                 T* __restrict__ c_out, Partial* __restrict__ partials) {
  const int i = blockIdx.x * g.tile_x + threadIdx.x % g.tile_x;
  const int j = blockIdx.y * (kThreads / g.tile_x) + threadIdx.x / g.tile_x;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  Partial part;
  if (kReduce) empty(part);
  if (i < g.nx && j < g.ny) {
    // 32-bit node indices (the solver falls back to the naive kernel beyond 2^31 nodes): each
    // address is then one IMAD.WIDE from the array base, which halves the integer work.
    const int plane = static_cast<int>(g.plane);
    const int col = j * g.nx + i;
    const int ip = upper_neighbour(i, g.nx) - i, im = lower_neighbour(i, g.nx) - i;
    const int jp = (upper_neighbour(j, g.ny) - j) * g.nx, jm = (lower_neighbour(j, g.ny) - j) * g.nx;
    const double wij = kReduce ? weight(i, g.nx) * weight(j, g.ny) : 0.0;
    const int here0 = l0 * plane + col;
    // The column's values at l-1, l and l+1 in registers; the plane after l+1 is requested one
    // iteration ahead, so its DRAM latency overlaps this plane's arithmetic.
    int at = lower_neighbour(l0, g.nz) * plane + col;
    T n_lo = __ldg(n + at), f_lo = __ldg(f + at), c_lo = __ldg(c + at);
    T n_mid = __ldg(n + here0), f_mid = __ldg(f + here0), c_mid = __ldg(c + here0);
    at = upper_neighbour(l0, g.nz) * plane + col;
    T n_hi = __ldg(n + at), f_hi = __ldg(f + at), c_hi = __ldg(c + at);
    // Flux form in 3D: the l - 1 face's flux is the l + 1 face's of the plane below, carried up the
    // column (one face evaluation and one division fewer per node; the same bits).
    FaceCarry<T> z_face{T(0), false};
    FaceCarry<T>* const carry = kFlux && kDims == 3 ? &z_face : nullptr;
    for (int l = l0; l < l1; ++l) {
      const int here = l * plane + col;  // < nodes < 2^31: no overflow
      // At the top of the grid the prefetched value is not used; clamping keeps the read inside.
      const int ahead = upper_neighbour(min(l + 1, g.nz - 1), g.nz) * plane + col;
      const T n_next = __ldg(n + ahead), f_next = __ldg(f + ahead), c_next = __ldg(c + ahead);
      Stencil<T> s;
      T nn[7];
      s.c[0] = c_mid;
      s.f[0] = f_mid;
      nn[0] = n_mid;
      const int off[4] = {ip, im, jp, jm};
#pragma unroll
      for (int d = 0; d < 4; ++d) {
        const int at_d = here + off[d];
        s.c[1 + d] = __ldg(c + at_d);
        s.f[1 + d] = __ldg(f + at_d);
        nn[1 + d] = __ldg(n + at_d);
      }
      s.c[5] = c_hi;
      s.f[5] = f_hi;
      nn[5] = n_hi;
      s.c[6] = c_lo;
      s.f[6] = f_lo;
      nn[6] = n_lo;
      T n_new, f_new, c_new;
      if (!g.carry) z_face.known = false;  // Tuning::carry off: every face evaluated (benchmarks)
      update_node_fixed<kDims, kFlux>(m, sc, nn, s, n_new, f_new, c_new, carry);
      n_out[here] = n_new;
      f_out[here] = f_new;
      c_out[here] = c_new;
      if (kReduce) accumulate(part, wij * weight(l + g.z0, g.nzg), n_new, f_new, c_new);
      n_lo = n_mid, f_lo = f_mid, c_lo = c_mid;
      n_mid = n_hi, f_mid = f_hi, c_mid = c_hi;
      n_hi = n_next, f_hi = f_next, c_hi = c_next;
    }
  }
  if (kReduce) {
    const int block = static_cast<int>(block_index());
    block_reduce(part, partials + block);
  }
}

// The tile of a block of kWarps warps of the tma kernel: kW columns (32, 64, or 80), each
// thread kRows of its rows, kRowStep = 32 kWarps / kW rows apart, so kTileY = kRowStep kRows rows (a
// warp covers 32 consecutive nodes in row-major order, which straddle two rows where 32 does not
// divide kW).
// The box: the tile's rows widened by 16 bytes on both sides (a copy's first element must sit on a
// 16-byte boundary, so the ring's left column comes with three more in fp32, one more in fp64),
// and one row above and below the tile.
template <class T, int kW, int kRows, int kWarps>
struct TmaBox {
  // Thread t's node r is node t + 32 kWarps r of the tile in row-major order: column t % kW, row
  // t / kW + kRowStep r (a warp's lanes may straddle two rows where kW is not a multiple of 32).
  static_assert(32 * kWarps % kW == 0 && kW * static_cast<int>(sizeof(T)) % 32 == 0);
  static_assert(32 * kWarps >= kW + 32 * kWarps / kW * kRows, "a thread for each far face (kTileY + kW)");
  static constexpr int kRowStep = 32 * kWarps / kW;  // between a thread's rows
  static constexpr int kTileY = kRowStep * kRows;    // rows of the tile
  static constexpr int kPad = 16 / static_cast<int>(sizeof(T));
  static constexpr int kX = kW + 2 * kPad;
  static constexpr int kY = kTileY + 2;
  static constexpr int kBytes = kX * kY * static_cast<int>(sizeof(T));
  static constexpr int kStride = 128 * ((kBytes + 127) / 128);  // bytes between fields in a slot
  static constexpr int kSlotBytes = 3 * kStride;
  // The flux form's face fluxes, two planes' worth: x faces [row][0 .. kW] (face c between columns
  // c - 1 and c), then y faces [0 .. kTileY][column] (face r between rows r - 1 and r).
  static constexpr int kFacesX = kTileY * (kW + 1);
  static constexpr int kFaces = kFacesX + (kTileY + 1) * kW;
  static constexpr int smem(int slots, bool flux) {
    return slots * kSlotBytes + 2 * slots * 8 + (flux ? 2 * kFaces * static_cast<int>(sizeof(T)) : 0);
  }
};

// Blocks of 8 warps per SM the tma kernel's registers are capped for, by rows a thread (with the
// own column in registers the uncapped kernel took 72 in fp32 with two rows and 82 in fp64 with
// one; under these caps only the fp32 flux form with two rows a thread spills, 8-16 bytes, and
// registers for 3 blocks measured no faster: 71.8-72.1 % against 71.8 %).
template <class T, int kRows>
constexpr int kTmaMinBlocks = sizeof(T) == 4 ? (kRows == 1 ? 5 : 4) : (kRows == 1 ? 3 : 2);

// Consecutive launches of the single-step TMA kernel in one advance (Tuning::chain): each launch may
// start while the one before drains (programmatic dependent launch). mode 1: every block waits for
// the whole launch before (griddepcontrol.wait). mode 2: a block publishes flags[its block] = id
// when it is done (after its last load and store), and waits only for the blocks of the launch
// before whose boxes meet its own, which are those next to it in x, y and z, diagonals included (a
// box reaches 16 bytes into the next tile in x, one row in y and one plane into the next chunk):
// their outputs are its inputs (read after write), and its outputs overwrite what they read (write
// after read). Launches before that one are ordered through them (each block also waits for its
// own index). mode 3 (tests only): no ordering at all, so that a test can show the launches do
// overlap (the fields then differ). wait: the id those blocks publish (modes 1 and 3: any non-zero
// value), 0 for none (the first launch of a chain, which the stream orders as usual). flags:
// nullptr where the launch publishes nothing.
struct Chain {
  unsigned* flags;
  unsigned id, wait;
  int mode;
};

// The TMA-staged step: a block owns a tile of (i, j) columns and marches up its chunk of planes;
// each plane of n, f and c, on the tile plus its ring, comes into a ring of kSlots shared-memory
// slots as one bulk tensor copy per field, kSlots - 2 planes ahead, and every stencil operand is
// read from shared memory. kW, kRows, kWarps: the tile (TmaBox). kRelease (expanded form): a slot is
// handed back by each warp's arrival on its "empty" mbarrier, and thread 0 waits for the arrivals
// before refilling it (warps may drift up to kSlots - 2 planes apart); otherwise one block barrier
// per plane. The plane loop is unrolled by kSlots, so that every slot's address and barrier is a
// constant and only the parity bit is run-time state. The node's own column (n, f, c below and at
// the plane) stays in registers: a node reads 15 values from shared memory instead of 21, and the
// plane below is never read from the ring, so its slot is refilled as soon as every warp is done
// with the plane before. The flux form evaluates each face once (below).
template <class T, int kDims, bool kFlux, int kSlots, int kW, int kRows, int kWarps, bool kRelease, int kMin>
__global__ void __launch_bounds__(32 * kWarps, kMin)
    tma_kernel(Dims g, FastQuotientParams<T> m, StepConstants<T> sc, int chunk, const CUtensorMap* __restrict__ maps,
               T* __restrict__ n_out, T* __restrict__ f_out, T* __restrict__ c_out, Chain chain) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched below sm_90 (make_tma_maps)
#else
  using Box = TmaBox<T, kW, kRows, kWarps>;
  // The flux form's fp64 80 x 8 tiles (registers for two blocks of 10 warps a SM): the values a node
  // keeps across the plane's barrier are read from shared memory again after it (no spills).
  constexpr bool kLean = sizeof(T) == 8 && kWarps == 10;
  if (chain.mode != 0) grid_launch_dependents();  // (the next launch may take the slots this one frees)
  if (chain.wait != 0) {
    if (chain.mode == 1) {
      grid_dependency_wait();
    } else if (chain.mode == 2 && threadIdx.x < 27) {  // a thread for each block next to this one (itself included)
      const int bx = static_cast<int>(blockIdx.x) + static_cast<int>(threadIdx.x % 3) - 1;
      const int by = static_cast<int>(blockIdx.y) + static_cast<int>(threadIdx.x / 3 % 3) - 1;
      const int bz = static_cast<int>(blockIdx.z) + static_cast<int>(threadIdx.x / 9) - 1;
      if (bx >= 0 && bx < static_cast<int>(gridDim.x) && by >= 0 && by < static_cast<int>(gridDim.y) && bz >= 0 &&
          bz < static_cast<int>(gridDim.z)) {
        const unsigned* flag =
            chain.flags + block_index(static_cast<unsigned>(bx), static_cast<unsigned>(by), static_cast<unsigned>(bz));
        while (static_cast<int>(flag_acquire(flag) - chain.wait) < 0) __nanosleep(256);
      }
    }
  }
  // The block is done: every load and store of it before the barrier, then flag_release publishes
  // them (after a proxy fence: its tensor copies' reads before the next launch's stores).
  auto publish = [&] {
    if (chain.flags == nullptr) return;
    __syncthreads();
    if (threadIdx.x == 0) {
      fence_proxy_async_global();
      flag_release(chain.flags + block_index(), chain.id);
    }
  };
  static_assert(kSlots >= 3, "mid and hi in use and at least one plane in flight");
  extern __shared__ __align__(128) unsigned char tma_smem[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(tma_smem + kSlots * Box::kSlotBytes);
  std::uint64_t* empty = full + kSlots;
  const int tx = threadIdx.x % 32;
  const int cx = threadIdx.x % kW, ty = threadIdx.x / kW;  // column, first row in the tile
  const int i0 = blockIdx.x * kW, j0 = blockIdx.y * Box::kTileY;
  const int i = i0 + cx;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  if (l1 <= l0) return publish();  // (the whole block: no chunk, no copies)
  const int count = l1 - l0 + 2;   // planes l0 - 1 ... l1, mirrored at the grid's ends
  const int plane = static_cast<int>(g.plane);
  // This thread's nodes' cells in a field of a slot and their in-plane neighbours (mirrored at the
  // faces), where they go in the outputs, and whether they are in the grid.
  int at[kRows][5];
  unsigned here[kRows];  // (one plane past the last may pass 2^31 - 1)
  bool inside[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int j = j0 + ty + Box::kRowStep * r;
    // A column (row) past the grid's end stands in for the mirror node beyond the last one: its
    // node is the last one's upper neighbour and its lower neighbour the last one, so that the face
    // it evaluates as its - face is the last node's + face (the flux form's face sharing).
    const int ix = i < g.nx ? i : upper_neighbour(g.nx - 1, g.nx);
    const int ixl = i < g.nx ? lower_neighbour(i, g.nx) : g.nx - 1;
    const int jy = j < g.ny ? j : upper_neighbour(g.ny - 1, g.ny);
    const int jyl = j < g.ny ? lower_neighbour(j, g.ny) : g.ny - 1;
    const int own = (jy - j0 + 1) * Box::kX + (ix - i0) + Box::kPad;
    at[r][0] = own;
    at[r][1] = own + (upper_neighbour(ix, g.nx) - ix);
    at[r][2] = own + (ixl - ix);
    at[r][3] = own + (upper_neighbour(jy, g.ny) - jy) * Box::kX;
    at[r][4] = own + (jyl - jy) * Box::kX;
    inside[r] = i < g.nx && j < g.ny;
    here[r] = inside[r] ? static_cast<unsigned>(l0 * plane + j * g.nx + i) : 0u;
  }
  auto issue = [&](int k, int s) {  // thread 0: plane k of the sequence into slot s = k % kSlots
    if (k < count) {
      unsigned char* dst = tma_smem + s * Box::kSlotBytes;
      const int z = StageTile::mirrored(l0 - 1 + k, g.nz);
      mbar_expect_tx(full + s, 3 * Box::kBytes);
      for (int a = 0; a < 3; ++a) tma_load_3d(dst + a * Box::kStride, maps + a, i0 - Box::kPad, j0 - 1, z, full + s);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSlots; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, kWarps);
    }
    mbar_fence_init();
  }
  __syncthreads();  // (and the flags acquired above: the inputs this block reads are written)
  if (threadIdx.x == 0) {
    if (chain.wait != 0 && chain.mode == 2) fence_proxy_async_global();  // (generic stores, then tensor copies)
    for (int k = 0; k < kSlots; ++k) issue(k, k);
  }
  constexpr int kF = Box::kStride / static_cast<int>(sizeof(T));        // between fields in a slot
  constexpr int kSlot = Box::kSlotBytes / static_cast<int>(sizeof(T));  // between slots
  const T* ring = reinterpret_cast<const T*>(tma_smem);
  // The own column: n, f, c of plane l - 1 (low) and l (mid), from slots 0 and 1 at the start.
  T low[kRows][3], mid[kRows][3];
  mbar_wait(full + 0, 0);
  mbar_wait(full + 1, 0);
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      low[r][a] = ring[a * kF + at[r][0]];
      mid[r][a] = ring[kSlot + a * kF + at[r][0]];
    }
  if (kRelease) {  // this warp is done with sequence plane 0
    __syncwarp();
    if (tx == 0) mbar_arrive(empty + 0);
  }
  FaceCarry<T> z_face[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) z_face[r] = FaceCarry<T>{T(0), false};
  // The flux form evaluates each face of the tile once: a node its - faces in x and y (into shared
  // memory), the z faces in registers (the + face, carried up as the next plane's - face), and
  // threads e < kTileY + kW the far faces no node has as its - face (x after column kW - 1 of row
  // e, y above row kTileY - 1 of column e - kTileY). After a block barrier a node reads its + faces
  // back. A face's flux is the same bits from both its nodes (face_flux), so the fields stay
  // bitwise equal to reference.
  T* faces = reinterpret_cast<T*>(tma_smem + kSlots * Box::kSlotBytes + 2 * kSlots * 8);
  int far_lo = 0, far_hi = 0, far_at = -1;
  if (kFlux) {
    const int e = threadIdx.x;
    if (e < Box::kTileY) {
      const int ie = i0 + kW - 1;
      far_lo = (e + 1) * Box::kX + kW - 1 + Box::kPad;
      far_hi = far_lo + (upper_neighbour(ie, g.nx) - ie);
      far_at = e * (kW + 1) + kW;
    } else if (e < Box::kTileY + kW) {
      const int col = e - Box::kTileY, je = j0 + Box::kTileY - 1;
      far_lo = Box::kTileY * Box::kX + col + Box::kPad;
      far_hi = far_lo + (upper_neighbour(je, g.ny) - je) * Box::kX;
      far_at = Box::kFacesX + Box::kTileY * kW + col;
    }
  }
  // The flux form: a warp with no node the grid needs (every one past the stand-in column or row: in
  // the last tile of a grid whose width is not a multiple of the tile's) and no far face a grid node
  // reads (the + face of a stored node) skips each plane's work, keeping only the block barriers. On
  // 400 x 400 x 140 with 64-wide tiles that is one warp column in 14.
  bool busy = true;
  if (kFlux) {
    if (far_at >= 0) {
      const int e = threadIdx.x;
      const bool needed = e < Box::kTileY ? i0 + kW - 1 < g.nx && j0 + e < g.ny
                                          : i0 + (e - Box::kTileY) < g.nx && j0 + Box::kTileY - 1 < g.ny;
      if (!needed) far_at = -1;
    }
    bool mine = far_at >= 0;
#pragma unroll
    for (int r = 0; r < kRows; ++r) mine = mine || (i <= g.nx && j0 + ty + Box::kRowStep * r <= g.ny);
    busy = __any_sync(0xffffffffu, mine);
  }
  // A row's node done: its outputs stored, its column moved up a plane.
  auto finish = [&](int r, T n_new, T f_new, T c_new, const T above[3]) {
    if (inside[r]) {
      n_out[here[r]] = n_new;
      f_out[here[r]] = f_new;
      c_out[here[r]] = c_new;
    }
    here[r] += static_cast<unsigned>(plane);
    low[r][0] = mid[r][0], low[r][1] = mid[r][1], low[r][2] = mid[r][2];
    mid[r][0] = above[0], mid[r][1] = above[1], mid[r][2] = above[2];
  };
  const int planes = l1 - l0;
  // Plane l0 + t is sequence plane t + 1: slots t % kSlots (below, free), t + 1 (mid), t + 2 (above).
  for (int t0 = 0; t0 < planes; t0 += kSlots) {
    const unsigned phase = static_cast<unsigned>(t0 / kSlots) & 1u;
#pragma unroll
    for (int u = 0; u < kSlots; ++u) {
      const int t = t0 + u;
      if (t >= planes) break;
      // Sequence plane t's slot (below this plane: its values are in registers) takes plane
      // t + kSlots once every warp is done with the plane before (the flux form: after its barrier).
      if constexpr (!kFlux) {
        if (kRelease) {
          if (threadIdx.x == 0 && t + kSlots < count) {
            mbar_wait(empty + u, phase);
            issue(t + kSlots, u);
          }
        } else {
          __syncthreads();
          if (threadIdx.x == 0) issue(t + kSlots, u);
        }
      }
      const int kMid = (u + 1) % kSlots, kHi = (u + 2) % kSlots;
      mbar_wait(full + kHi, phase ^ (static_cast<unsigned>((u + 2) / kSlots) & 1u));
      const T* in_mid = ring + kMid * kSlot;
      const T* in_hi = ring + kHi * kSlot;
      if constexpr (kFlux) {
        T* face = faces + (t & 1) * Box::kFaces;
        T xn[kRows], yn[kRows], above[kRows][3], g_down[kRows][3], z_up[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (!busy) break;
          const T n0 = mid[r][0], f0 = mid[r][1], c0 = mid[r][2];
          const int xl = at[r][2], yl = at[r][4], o = at[r][0], ry = ty + Box::kRowStep * r;
          xn[r] = in_mid[xl];
          g_down[r][0] = face_flux(m, in_mid[2 * kF + xl], c0, in_mid[kF + xl], f0, xn[r], n0);
          yn[r] = in_mid[yl];
          g_down[r][1] = face_flux(m, in_mid[2 * kF + yl], c0, in_mid[kF + yl], f0, yn[r], n0);
          above[r][0] = in_hi[o], above[r][1] = in_hi[kF + o], above[r][2] = in_hi[2 * kF + o];
          g_down[r][2] = T(0), z_up[r] = T(0);
          if (kDims == 3) {
            z_up[r] = face_flux(m, c0, above[r][2], f0, above[r][1], n0, above[r][0]);
            if (!g.carry) z_face[r].known = false;
            g_down[r][2] = z_face[r].known ? z_face[r].flux : face_flux(m, low[r][2], c0, low[r][1], f0, low[r][0], n0);
            z_face[r] = FaceCarry<T>{z_up[r], true};
          }
          face[ry * (kW + 1) + cx] = g_down[r][0];
          face[Box::kFacesX + ry * kW + cx] = g_down[r][1];
        }
        if (far_at >= 0) {
          face[far_at] = face_flux(m, in_mid[2 * kF + far_lo], in_mid[2 * kF + far_hi], in_mid[kF + far_lo],
                                   in_mid[kF + far_hi], in_mid[far_lo], in_mid[far_hi]);
        }
        __syncthreads();
        if (threadIdx.x == 0) issue(t + kSlots, u);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (!busy) break;
          const int ry = ty + Box::kRowStep * r;
          if constexpr (kLean) {  // read again (the same values): fewer registers live across the barrier
            xn[r] = in_mid[at[r][2]], yn[r] = in_mid[at[r][4]];
            const int o = at[r][0];
            above[r][0] = in_hi[o], above[r][1] = in_hi[kF + o], above[r][2] = in_hi[2 * kF + o];
            g_down[r][0] = face[ry * (kW + 1) + cx], g_down[r][1] = face[Box::kFacesX + ry * kW + cx];
          }
          T nn[7];
          nn[0] = mid[r][0], nn[1] = in_mid[at[r][1]], nn[2] = xn[r], nn[3] = in_mid[at[r][3]], nn[4] = yn[r];
          nn[5] = above[r][0], nn[6] = low[r][0];
          const T g_up[3] = {face[ry * (kW + 1) + cx + 1], face[Box::kFacesX + (ry + 1) * kW + cx], z_up[r]};
          const T n_new = flux_density<kDims>(m, sc.a, nn, g_up, g_down[r]);
          T f_new, c_new;
          if (m.taf_diffusion != 0) {
            Stencil<T> s;
            s.c[0] = mid[r][2], s.c[5] = above[r][2], s.c[6] = low[r][2];
#pragma unroll
            for (int d = 1; d < 5; ++d) s.c[d] = in_mid[2 * kF + at[r][d]];
            update_fn_taf<true>(m, sc, mid[r][0], mid[r][1], mid[r][2], taf_laplacian<kDims>(s), f_new, c_new);
          } else {
            update_fn_taf<false>(m, sc, mid[r][0], mid[r][1], mid[r][2], T(0), f_new, c_new);
          }
          finish(r, n_new, f_new, c_new, above[r]);
        }
      } else {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          Stencil<T> s;
          T nn[7];
          nn[0] = mid[r][0], s.f[0] = mid[r][1], s.c[0] = mid[r][2];
#pragma unroll
          for (int d = 1; d < 5; ++d) {
            nn[d] = in_mid[at[r][d]];
            s.f[d] = in_mid[kF + at[r][d]];
            s.c[d] = in_mid[2 * kF + at[r][d]];
          }
          const int o = at[r][0];
          const T above[3] = {in_hi[o], in_hi[kF + o], in_hi[2 * kF + o]};
          nn[5] = above[0], s.f[5] = above[1], s.c[5] = above[2];
          nn[6] = low[r][0], s.f[6] = low[r][1], s.c[6] = low[r][2];
          T n_new, f_new, c_new;
          update_node_fixed<kDims, false>(m, sc, nn, s, n_new, f_new, c_new);
          finish(r, n_new, f_new, c_new, above);
        }
      }
      if (kRelease) {  // this warp is done with sequence plane t + 1 (the mid plane)
        __syncwarp();
        if (tx == 0) mbar_arrive(empty + kMid);
      }
    }
  }
  publish();
#endif
}

// Two steps per pass through the Tensor Memory Accelerator (expanded form, 3D, nz >= 3): a block
// owns a kW x kTY tile and marches up its chunk. Each plane of the input state on the tile plus a
// two-node ring comes into a ring of kSlots slots as one bulk tensor copy per field (as in
// tma_kernel). For each plane p the block makes the intermediate state u1 on the tile plus a
// one-node ring (the first step, every operand from shared memory) into a ring of four u1 planes,
// then, after one block barrier, the final state of plane p - 1 on the tile from u1 planes p - 2,
// p - 1 and p (the second step). Device memory sees each input once and each output once per two
// steps. At the grid's faces the first step skips ring nodes outside the grid (the second step's
// mirror offsets never read them); at its ends in z the first step makes u1 at planes -1 and nz
// from the input mirrored twice (planes 2, 1, 0 for -1), which is u1 at planes 1 and nz - 2 with
// the two z neighbours swapped: the same bits, as the expanded form's z terms are symmetric (sums,
// and products of two differences that both change sign). Both steps run update_node_fixed: the
// same bits as two single steps.
template <class T, int kW, int kTY>
struct TmaPairBox {
  static constexpr int kPad = 16 / static_cast<int>(sizeof(T));
  static constexpr int kX0 = kW + 2 * kPad, kY0 = kTY + 4;  // the input box
  static constexpr int kBytes0 = kX0 * kY0 * static_cast<int>(sizeof(T));
  static constexpr int kStride0 = 128 * ((kBytes0 + 127) / 128);      // bytes between fields of an input slot
  static constexpr int kX1 = kW + 2, kY1 = kTY + 2, kN1 = kX1 * kY1;  // the u1 region
  static constexpr int kSlots = 4, kU1 = 4;                           // input slots, u1 planes
  static constexpr int kU1Bytes = 8 * ((kU1 * 3 * kN1 * static_cast<int>(sizeof(T)) + 7) / 8);
  static constexpr int smem() { return kSlots * 3 * kStride0 + kU1Bytes + kSlots * 8; }
};

template <class T, int kW, int kTY, int kMin>
__global__ void __launch_bounds__(kThreads, kMin)
    pair_tma_kernel(Dims g, FastQuotientParams<T> m, StepConstants<T> sc, int chunk,
                    const CUtensorMap* __restrict__ maps, T* __restrict__ n_out, T* __restrict__ f_out,
                    T* __restrict__ c_out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched below sm_90 (make_tma_maps)
#else
  using Box = TmaPairBox<T, kW, kTY>;
  constexpr int kSlots = Box::kSlots, kN1 = Box::kN1, kX0 = Box::kX0, kX1 = Box::kX1;
  constexpr int kF0 = Box::kStride0 / static_cast<int>(sizeof(T));  // between fields of an input slot
  constexpr int kOut = kW * kTY / kThreads;                         // second-step nodes a thread
  static_assert(kW * kTY % kThreads == 0 && kThreads % kW == 0);
  extern __shared__ __align__(128) unsigned char tma_smem[];
  const T* ring = reinterpret_cast<const T*>(tma_smem);
  T* u1 = reinterpret_cast<T*>(tma_smem + kSlots * 3 * Box::kStride0);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(tma_smem + kSlots * 3 * Box::kStride0 + Box::kU1Bytes);
  const int i0 = blockIdx.x * kW, j0 = blockIdx.y * kTY;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  if (l1 <= l0) return;
  const int count = l1 - l0 + 4;  // input planes l0 - 2 ... l1 + 1, mirrored twice at the grid's ends
  const int plane = static_cast<int>(g.plane);
  auto mirrored2 = [&](int p) { return p < 0 ? -p : (p >= g.nz ? 2 * (g.nz - 1) - p : p); };
  auto issue = [&](int k) {  // thread 0: input plane k of the sequence into slot k % kSlots
    if (k < count) {
      const int s = k % kSlots;
      unsigned char* dst = tma_smem + s * 3 * Box::kStride0;
      mbar_expect_tx(full + s, 3 * Box::kBytes0);
      for (int a = 0; a < 3; ++a)
        tma_load_3d(dst + a * Box::kStride0, maps + a, i0 - Box::kPad, j0 - 2, mirrored2(l0 - 2 + k), full + s);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSlots; ++s) mbar_init(full + s, 1);
    mbar_fence_init();
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int k = 0; k < kSlots; ++k) issue(k);
  // The second step's nodes: their cells in the u1 region and its in-plane neighbours (mirrored).
  int at[kOut][5];
  unsigned here[kOut];  // (one plane past the last may pass 2^31 - 1)
  bool inside[kOut];
#pragma unroll
  for (int r = 0; r < kOut; ++r) {
    const int e = threadIdx.x + kThreads * r, i = i0 + e % kW, j = j0 + e / kW;
    const int own = (e / kW + 1) * kX1 + e % kW + 1;
    at[r][0] = own;
    at[r][1] = own + (upper_neighbour(i, g.nx) - i);
    at[r][2] = own + (lower_neighbour(i, g.nx) - i);
    at[r][3] = own + (upper_neighbour(j, g.ny) - j) * kX1;
    at[r][4] = own + (lower_neighbour(j, g.ny) - j) * kX1;
    inside[r] = i < g.nx && j < g.ny;
    here[r] = inside[r] ? static_cast<unsigned>(l0 * plane + j * g.nx + i) : 0u;
  }
  // The first step's nodes (the u1 region, kIn a thread, the last one partly): their cells in the
  // input box and their in-plane neighbours (mirrored). Ring nodes past the grid's faces are made
  // too, from cells of the box (their u1 values are never read: the second step mirrors), which
  // spares every node a branch; only the last round's threads past the region skip.
  constexpr int kIn = (kN1 + kThreads - 1) / kThreads;
  int nb[kIn][5];
#pragma unroll
  for (int k = 0; k < kIn; ++k) {
    const int e = threadIdx.x + kThreads * k, px = e % kX1, py = e / kX1, i = i0 - 1 + px, j = j0 - 1 + py;
    const int b = (py + 1) * kX0 + px - 1 + Box::kPad;
    nb[k][0] = b;
    nb[k][1] = b + (upper_neighbour(i, g.nx) - i);
    nb[k][2] = b + (lower_neighbour(i, g.nx) - i);
    nb[k][3] = b + (upper_neighbour(j, g.ny) - j) * kX0;
    nb[k][4] = b + (lower_neighbour(j, g.ny) - j) * kX0;
  }
  mbar_wait(full + 0, 0);
  mbar_wait(full + 1, 0);
  // u1 plane p = l0 - 1 + q from input planes q, q + 1, q + 2 of the sequence.
  for (int q = 0; q < l1 - l0 + 2; ++q) {
    mbar_wait(full + (q + 2) % kSlots, static_cast<unsigned>((q + 2) / kSlots) & 1u);
    const T* lo = ring + (q % kSlots) * 3 * kF0;
    const T* mid = ring + ((q + 1) % kSlots) * 3 * kF0;
    const T* hi = ring + ((q + 2) % kSlots) * 3 * kF0;
    T* out1 = u1 + (q % Box::kU1) * 3 * kN1;
#pragma unroll
    for (int k = 0; k < kIn; ++k) {
      const int e = threadIdx.x + kThreads * k;
      if (k == kIn - 1 && e >= kN1) continue;  // past the region
      Stencil<T> s;
      T nn[7];
      gather_planes(lo, mid, hi, kF0, nb[k], nn, s);
      update_node_fixed<3, false>(m, sc, nn, s, out1[e], out1[kN1 + e], out1[2 * kN1 + e]);
    }
    __syncthreads();
    if (threadIdx.x == 0) issue(q + kSlots);  // input plane q is done with
    if (q < 2) continue;
    // The second step: plane l0 + q - 2 from u1 planes q - 2, q - 1, q.
    const T* lo1 = u1 + ((q - 2) % Box::kU1) * 3 * kN1;
    const T* mid1 = u1 + ((q - 1) % Box::kU1) * 3 * kN1;
    const T* hi1 = u1 + (q % Box::kU1) * 3 * kN1;
#pragma unroll
    for (int r = 0; r < kOut; ++r) {
      Stencil<T> s;
      T nn[7];
      gather_planes(lo1, mid1, hi1, kN1, at[r], nn, s);
      T n_new, f_new, c_new;
      update_node_fixed<3, false>(m, sc, nn, s, n_new, f_new, c_new);
      if (inside[r]) {
        n_out[here[r]] = n_new;
        f_out[here[r]] = f_new;
        c_out[here[r]] = c_new;
      }
      here[r] += static_cast<unsigned>(plane);
    }
  }
#endif
}

// Two steps per pass over memory (temporal blocking, docs/performance.md): a block owns a 32 x 8
// tile of (i, j) columns and marches up its chunk of planes. For each plane l + 1 it first makes
// the intermediate state u1 on the tile and a one-node ring around it (the first step, every
// load through the caches, into a shared-memory ring of three planes), then the final state u2 of
// plane l on the tile from those three u1 planes (the second step, stencil from shared memory).
// Device memory sees each input once and each output once per two steps, for about 30 % more
// arithmetic (the ring's first step is made twice, by the blocks on both sides). Both steps run
// update_node_fixed with the reference's operand order: the same bits as two single steps.
constexpr int kPairX = 32, kPairY = kThreads / kPairX;
constexpr int kPairEx = kPairX + 2, kPairEy = kPairY + 2, kPairExt = kPairEx * kPairEy;

template <class T, int kDims, bool kFlux, bool kReduce, int kMin = 1>
__global__ void __launch_bounds__(kThreads, kMin)
    pair_kernel(Dims g, TypedModelParams<T> m, StepConstants<T> sc, int chunk, const T* __restrict n,
                const T* __restrict f, const T* __restrict c, T* __restrict n_out, T* __restrict f_out,
                T* __restrict c_out, Partial* __restrict partials) {
  __shared__ T ring[3][3][kPairExt];  // [plane % 3][n, f, c][extended tile, row-major]
  const int i0 = blockIdx.x * kPairX, j0 = blockIdx.y * kPairY;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  const int plane = static_cast<int>(g.plane);
  // The first step at every extended-tile node of plane l that lies in the grid (corners are
  // never read), into ring slot l % 3.
  auto first = [&](int l) {
    T* out = &ring[l % 3][0][0];
    const int lp = upper_neighbour(l, g.nz) * plane, lm = lower_neighbour(l, g.nz) * plane, lc = l * plane;
    for (int e = threadIdx.x; e < kPairExt; e += kThreads) {
      const int ex = e % kPairEx, ey = e / kPairEx;
      const int i = i0 - 1 + ex, j = j0 - 1 + ey;
      const bool corner = (ex == 0 || ex == kPairEx - 1) && (ey == 0 || ey == kPairEy - 1);
      if (corner || i < 0 || i >= g.nx || j < 0 || j >= g.ny) continue;
      const int row = j * g.nx, col = row + i;
      const int at[7] = {lc + col,
                         lc + row + upper_neighbour(i, g.nx),
                         lc + row + lower_neighbour(i, g.nx),
                         lc + upper_neighbour(j, g.ny) * g.nx + i,
                         lc + lower_neighbour(j, g.ny) * g.nx + i,
                         lp + col,
                         lm + col};
      Stencil<T> s;
      T nn[7];
      gather(n, f, c, at, nn, s);
      update_node_fixed<kDims, kFlux>(m, sc, nn, s, out[e], out[kPairExt + e], out[2 * kPairExt + e]);
    }
  };
  const int tx = threadIdx.x % kPairX, ty = threadIdx.x / kPairX;
  const int i = i0 + tx, j = j0 + ty;
  const bool mine = i < g.nx && j < g.ny;
  // The tile node's neighbours in the extended tile, mirrored at the grid's faces.
  const int centre = (ty + 1) * kPairEx + tx + 1;
  const int ip = centre + (upper_neighbour(i, g.nx) - i), im = centre + (lower_neighbour(i, g.nx) - i);
  const int jp = centre + (upper_neighbour(j, g.ny) - j) * kPairEx,
            jm = centre + (lower_neighbour(j, g.ny) - j) * kPairEx;
  const double wij = kReduce ? weight(i, g.nx) * weight(j, g.ny) : 0.0;
  Partial part;
  if (kReduce) empty(part);
  if (l0 > 0) first(l0 - 1);
  first(l0);
  for (int l = l0; l < l1; ++l) {
    if (l + 1 < g.nz) first(l + 1);
    __syncthreads();
    if (mine) {
      const T* mid = &ring[l % 3][0][0];
      const T* hi = &ring[upper_neighbour(l, g.nz) % 3][0][0];
      const T* lo = &ring[lower_neighbour(l, g.nz) % 3][0][0];
      Stencil<T> s;
      T nn[7];
      const int at[5] = {centre, ip, im, jp, jm};
#pragma unroll
      for (int d = 0; d < 5; ++d) {
        nn[d] = mid[at[d]];
        s.f[d] = mid[kPairExt + at[d]];
        s.c[d] = mid[2 * kPairExt + at[d]];
      }
      nn[5] = hi[centre], s.f[5] = hi[kPairExt + centre], s.c[5] = hi[2 * kPairExt + centre];
      nn[6] = lo[centre], s.f[6] = lo[kPairExt + centre], s.c[6] = lo[2 * kPairExt + centre];
      T n_new, f_new, c_new;
      update_node_fixed<kDims, kFlux>(m, sc, nn, s, n_new, f_new, c_new);
      const int here = l * plane + j * g.nx + i;
      n_out[here] = n_new;
      f_out[here] = f_new;
      c_out[here] = c_new;
      if (kReduce) accumulate(part, wij * weight(l + g.z0, g.nzg), n_new, f_new, c_new);
    }
    __syncthreads();  // the next plane's first step overwrites the slot just read as l - 1
  }
  if (kReduce) {
    const int block = static_cast<int>(block_index());
    block_reduce(part, partials + block);
  }
}

// Staged marching (a 2.5D stencil with asynchronous copies): a block owns a 32 x 8 tile and
// marches up its chunk of planes. Each plane of n, f and c on the tile plus a one-node ring (the
// mirror ghosts at the grid's faces included) is copied into a shared-memory ring of
// kAhead + 3 planes by cp.async, kAhead planes ahead of the one being updated, so that many planes'
// loads are in flight per warp without holding registers. Every stencil operand then comes from
// shared memory at a fixed offset; one barrier per plane. The same update_node_fixed as the other
// kernels (the flux form's z face carried up the column): the same bits.
template <class T, int kDims, bool kFlux, bool kReduce, int kAhead, int kMin>
__global__ void __launch_bounds__(kThreads, kMin)
    staged_kernel(Dims g, TypedModelParams<T> m, StepConstants<T> sc, int chunk, const T* __restrict__ n,
                  const T* __restrict__ f, const T* __restrict__ c, T* __restrict__ n_out, T* __restrict__ f_out,
                  T* __restrict__ c_out, Partial* __restrict__ partials) {
  using Tile = StageTile;
  static_assert(Tile::kThreads == kThreads);
  constexpr int kSlots = kAhead + 3, kExt = Tile::kExt;
  __shared__ T stage[kSlots][3][kExt];  // [plane % kSlots][n, f, c][extended tile, row-major]
  const int i0 = blockIdx.x * Tile::kX, j0 = blockIdx.y * Tile::kY;
  const int i = i0 + threadIdx.x % Tile::kX, j = j0 + threadIdx.x / Tile::kX;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  const int plane = static_cast<int>(g.plane);
  const Tile tile(threadIdx.x, i0, j0, g.nx, g.ny);
  const int own = tile.own;
  // Plane k of the sequence l0 - 1, ..., l1 (mirrored at the bottom and top) into its slot.
  const int count = l1 - l0 + 2;
  auto issue = [&](int k) {
    if (k < count) {
      const int base = Tile::mirrored(l0 - 1 + k, g.nz) * plane;
      T* slot = &stage[k % kSlots][0][0];
      tile.copy(slot, n + base);
      tile.copy(slot + kExt, f + base);
      tile.copy(slot + 2 * kExt, c + base);
    }
    __pipeline_commit();  // empty groups past the end keep the count uniform
  };
  const bool mine = i < g.nx && j < g.ny;
  const double wij = kReduce ? weight(min(i, g.nx - 1), g.nx) * weight(min(j, g.ny - 1), g.ny) : 0.0;
  Partial part;
  if (kReduce) empty(part);
  FaceCarry<T> z_face{T(0), false};
  FaceCarry<T>* const carry = kFlux && kDims == 3 ? &z_face : nullptr;
  for (int k = 0; k < kAhead + 2; ++k) issue(k);
  for (int l = l0; l < l1; ++l) {
    const int k = l - l0 + 1;           // plane l's place in the sequence
    __pipeline_wait_prior(kAhead - 1);  // planes up to l + 1 have landed (this thread's copies)
    __syncthreads();                    // everybody's, and plane l - 2's slot is free again
    issue(k + kAhead + 1);
    const T* mid = &stage[k % kSlots][0][0];
    const T* hi = &stage[(k + 1) % kSlots][0][0];
    const T* lo = &stage[(k - 1) % kSlots][0][0];
    if (mine) {
      Stencil<T> s;
      T nn[7];
      constexpr int at[5] = {0, 1, -1, Tile::kEx, -Tile::kEx};
#pragma unroll
      for (int d = 0; d < 5; ++d) {
        nn[d] = mid[own + at[d]];
        s.f[d] = mid[kExt + own + at[d]];
        s.c[d] = mid[2 * kExt + own + at[d]];
      }
      nn[5] = hi[own], s.f[5] = hi[kExt + own], s.c[5] = hi[2 * kExt + own];
      nn[6] = lo[own], s.f[6] = lo[kExt + own], s.c[6] = lo[2 * kExt + own];
      if (!g.carry) z_face.known = false;
      T n_new, f_new, c_new;
      update_node_fixed<kDims, kFlux>(m, sc, nn, s, n_new, f_new, c_new, carry);
      const int here = l * plane + j * g.nx + i;
      n_out[here] = n_new;
      f_out[here] = f_new;
      c_out[here] = c_new;
      if (kReduce) accumulate(part, wij * weight(l + g.z0, g.nzg), n_new, f_new, c_new);
    }
  }
  if (kReduce) {
    const int block = static_cast<int>(block_index());
    block_reduce(part, partials + block);
  }
}

// The straightforward kernel, one thread per node with all 21 loads through the caches; kept as
// the benchmark's baseline (docs/performance.md).
template <class T, int kDims, bool kFlux>
__global__ void __launch_bounds__(kThreads, (kMinBlocks<T, false>))
    naive_kernel(Dims g, TypedModelParams<T> m, StepConstants<T> sc, const T* __restrict__ n, const T* __restrict__ f,
                 const T* __restrict__ c, T* __restrict__ n_out, T* __restrict__ f_out, T* __restrict__ c_out) {
  const int i = blockIdx.x * g.tile_x + threadIdx.x % g.tile_x;
  const int j = blockIdx.y * (kThreads / g.tile_x) + threadIdx.x / g.tile_x;
  const int l = g.lbase + blockIdx.z;
  if (i >= g.nx || j >= g.ny) return;
  const long long nb[7] = {l * g.plane + static_cast<long long>(j) * g.nx + i,
                           l * g.plane + static_cast<long long>(j) * g.nx + upper_neighbour(i, g.nx),
                           l * g.plane + static_cast<long long>(j) * g.nx + lower_neighbour(i, g.nx),
                           l * g.plane + static_cast<long long>(upper_neighbour(j, g.ny)) * g.nx + i,
                           l * g.plane + static_cast<long long>(lower_neighbour(j, g.ny)) * g.nx + i,
                           upper_neighbour(l, g.nz) * g.plane + static_cast<long long>(j) * g.nx + i,
                           lower_neighbour(l, g.nz) * g.plane + static_cast<long long>(j) * g.nx + i};
  Stencil<T> s;
  T nn[7];
  gather(n, f, c, nb, nn, s);
  update_node_fixed<kDims, kFlux>(m, sc, nn, s, n_out[nb[0]], f_out[nb[0]], c_out[nb[0]]);
}

// Reductions of a state without stepping (the initial row): the same per-block partials.
template <class T>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(Dims g, int chunk, const T* __restrict__ n, const T* __restrict__ f, const T* __restrict__ c,
                  Partial* __restrict__ partials) {
  const int i = blockIdx.x * g.tile_x + threadIdx.x % g.tile_x;
  const int j = blockIdx.y * (kThreads / g.tile_x) + threadIdx.x / g.tile_x;
  const int l0 = g.lbase + blockIdx.z * chunk, l1 = min(l0 + chunk, g.lend);
  Partial part;
  empty(part);
  if (i < g.nx && j < g.ny) {
    const double wij = weight(i, g.nx) * weight(j, g.ny);
    for (int l = l0; l < l1; ++l) {
      const long long at = l * g.plane + static_cast<long long>(j) * g.nx + i;
      accumulate(part, wij * weight(l + g.z0, g.nzg), n[at], f[at], c[at]);
    }
  }
  const int block = static_cast<int>(block_index());
  block_reduce(part, partials + block);
}

// The partials are combined in two kernels: fold_kernel's thread t takes the partials whose global
// index is t, t + 256, ... in order into carry[t], and tree_kernel combines the 256 carries by the
// block tree. On one rank that is one fold from empty carries; on K ranks (slabs of whole chunks,
// docs/scale-out.md) the carries go from rank to rank, each folding its own partials, global index
// = its first chunk's offset + local index: the same operations in the same order, the same bits.
__global__ void __launch_bounds__(kThreads) empty_kernel(Partial* __restrict__ carry) { empty(carry[threadIdx.x]); }

__global__ void __launch_bounds__(kThreads)
    fold_kernel(const Partial* __restrict__ partials, int count, long long offset, Partial* __restrict__ carry) {
  Partial part = carry[threadIdx.x];
  const long long t = threadIdx.x;
  const int first = static_cast<int>(((t - offset) % kThreads + kThreads) % kThreads);
  for (int b = first; b < count; b += kThreads) combine(part, partials[b]);
  carry[threadIdx.x] = part;
}

__global__ void __launch_bounds__(kThreads) tree_kernel(const Partial* __restrict__ carry, Partial* __restrict__ out) {
  Partial part = carry[threadIdx.x];
  block_reduce(part, out);
}

template <class T>
class CudaSolver final : public Solver<T> {
 public:
  CudaSolver(const Problem& p, const Fields<T>& initial, int device, const Tuning& tuning, const SlabSetup& slab)
      : device_(device),
        guard_(device),
        g_(p.grid),
        m_(typed<T>(p.model)),
        sc_(step_constants<T>(p)),
        tuning_(tuning),
        slab_(slab.slab),
        link_(slab.link) {
    // The marching kernel indexes nodes with 32-bit integers; larger grids take the naive kernel.
    if (g_.nodes() >= (std::size_t{1} << 31)) tuning_.naive = true;
    if (tuning_.chain < 0 || tuning_.chain > 3)
      throw InternalError("angio cuda: Tuning::chain " + std::to_string(tuning_.chain) + " is not 0, 1, 2 or 3");
    if (link_) tuning_.pair = false;  // (the classic pair kernel: single-GPU benchmarks only)
    global_ = g_;
    global_.nz = slab_.nz_global;
    const int tile_x = std::clamp(tuning_.tile_x, 32, kThreads), tile_y = kThreads / tile_x;
    dims_ = Dims{g_.nx,           g_.ny,         g_.nz,    static_cast<long long>(g_.nx) * g_.ny,
                 tile_x,          tuning_.carry, slab_.z0, slab_.nz_global,
                 slab_.own_begin, slab_.own_end};
    // Chunks counted on the global grid, so that a slab's blocks are the single-rank run's.
    chunk_ = tuning_.chunk > 0 ? std::min(tuning_.chunk, slab_.nz_global) : slab_.nz_global;
    if (link_ && (slab_.z0 + slab_.own_begin) % chunk_ != 0) {
      throw InternalError("angio cuda: a slab must start at a multiple of " + std::to_string(chunk_) + " planes");
    }
    grid_ = dim3((g_.nx + tile_x - 1) / tile_x, (g_.ny + tile_y - 1) / tile_y, 1);
    set_range(slab_.own_begin, slab_.own_end);
    blocks_ = static_cast<int>(grid_.x * grid_.y * grid_.z);
    for (int s = 0; s < 2; ++s) {
      n_[s].resize(g_.nodes());
      f_[s].resize(g_.nodes());
      c_[s].resize(g_.nodes());
    }
    n_[0].upload(initial.n);
    f_[0].upload(initial.f);
    c_[0].upload(initial.c);
    // The other state's ghost planes too: a step writes only the slab's own planes.
    n_[1].upload(initial.n);
    f_[1].upload(initial.f);
    c_[1].upload(initial.c);
    const dim3 pair_grid((g_.nx + kPairX - 1) / kPairX, (g_.ny + kPairY - 1) / kPairY, grid_.z);
    partials_.resize(static_cast<std::size_t>(
        std::max<long long>(blocks_, static_cast<long long>(pair_grid.x) * pair_grid.y * pair_grid.z)));
    carry_.resize(kThreads);
    total_.resize(1);
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    // The TMA kernels divide by 1 + alpha c through the division's fast path (quotient in model.hpp):
    // only where that is the same bits as a / b; otherwise the classic kernels run. Slabs decide
    // together (every rank takes part), as c diffuses from one slab into the next.
    bool tma = tuning_.tma > 0 && !tuning_.naive &&
               (tuning_.unchecked_quotient || quotient_in_range(p.model, c_[0].data(), g_.nodes()));
    if (link_) tma = link_->all(tma);
    if (tma) tma_ = make_tma_maps();
    if (link_) {
      // Slabs take two steps per pass only if every rank does (each pass ends in one exchange), and
      // then exchange two planes a side (the pair reads two beyond the planes it writes).
      pair_tma_ = link_->all(pair_tma_);
      xp_ = pair_tma_ ? 2 : 1;
    }
    if (link_ && !link_->device_pointers()) {
      const std::size_t plane = static_cast<std::size_t>(g_.nx) * g_.ny;
      for (auto* b : {&send_lo_, &send_hi_, &recv_lo_, &recv_hi_}) b->resize(3 * xp_ * plane);
      open_peers();
    }
  }

  ~CudaSolver() override {
    if (!ipc_) return;
    cudaDeviceSynchronize();
    close_peers();
    // Every neighbour has closed its view of this rank's fields before they are freed (skipped while
    // an error unwinds: the job is ending).
    if (std::uncaught_exceptions() == 0) {
      try {
        for (int dir : {-1, 1})
          if (has(dir)) link_->notify(dir, kCloseTag);
        for (int dir : {-1, 1})
          if (has(dir)) link_->await(dir, kCloseTag);
      } catch (...) {
      }
    }
    release_own_events();
  }

  Reductions advance(std::int64_t steps, bool reduce) override {
    DeviceGuard guard(device_);
    last_tma_ = false;  // (the stream has synchronised since any launch before)
    // Two steps per pass: the pair kernel (Tuning::pair), or the TMA one except for a pair that
    // ends on a series row (the fused reductions are the single-step kernels').
    const bool classic_pair = tuning_.pair && tuning_.staged == 0 && !tuning_.naive;
    for (std::int64_t s = 0; s < steps;) {
      const bool pair = (classic_pair || (pair_tma_ && !(reduce && s + 2 == steps))) && s + 2 <= steps;
      s += pair ? 2 : 1;
      const bool last = reduce && s == steps;
      const int in = cur_, out = 1 - cur_;
      // Boundary planes first where the slab has an interior beyond them.
      const bool split = slab_.own_end - slab_.own_begin > 2 * xp_;
      if (ipc_) {
        ipc_step(in, out, last, split, pair);
      } else if (link_ && !last && split) {
        overlapped_step(in, out, pair);
      } else {
        set_range(slab_.own_begin, slab_.own_end);
        step(in, out, last, pair);
        if (link_) exchange_now(out);
      }
      cur_ = out;
    }
    if (ipc_) drain();
    if (!reduce) {
      SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
      return Reductions{};
    }
    if (tuning_.naive) return this->reduce();
    return finish(reduced_blocks_, reduced_plane_blocks_);
  }

  Reductions reduce() override {
    DeviceGuard guard(device_);
    set_range(slab_.own_begin, slab_.own_end);
    reduce_kernel<T>
        <<<grid_, kThreads>>>(dims_, chunk_, n_[cur_].data(), f_[cur_].data(), c_[cur_].data(), partials_.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    return finish(static_cast<int>(grid_.x * grid_.y * grid_.z), static_cast<int>(grid_.x * grid_.y));
  }

  void read(Fields<T>& out) override {
    DeviceGuard guard(device_);
    out.n = n_[cur_].to_host();
    out.f = f_[cur_].to_host();
    out.c = c_[cur_].to_host();
  }

  std::string device() const override { return device_name_; }
  bool takes_tma_kernels() const { return tma_; }  // (tests)

  void set_device_name(std::string name) { device_name_ = std::move(name); }

 private:
  // The planes [lb, le) of the next launch.
  void set_range(int lb, int le) {
    dims_.lbase = lb;
    dims_.lend = le;
    grid_.z = static_cast<unsigned>((le - lb + chunk_ - 1) / chunk_);
  }

  void step(int in, int out, bool reduce, bool pair) {
    // Whether the launch before this one was a chained single-step TMA launch of this advance
    // (launch_tma_at sets last_tma_ again).
    chain_prev_ = last_tma_;
    last_tma_ = false;
    if (g_.nz > 1) {
      sc_.flux ? launch<3, true>(in, out, reduce, pair) : launch<3, false>(in, out, reduce, pair);
    } else {
      sc_.flux ? launch<2, true>(in, out, reduce, pair) : launch<2, false>(in, out, reduce, pair);
    }
    SIMKIT_CUDA_CHECK_LAUNCH();
  }

  T* plane_of(DeviceBuffer<T>& field, int l) { return field.data() + static_cast<std::size_t>(l) * g_.nx * g_.ny; }

  // The ghost planes of state `buf` from the neighbours, after its step has finished.
  void exchange_now(int buf) {
    if (link_->device_pointers()) {
      SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
      exchange_device(buf);
      return;
    }
    stage_out(buf, nullptr);
    SIMKIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    host_exchange();
    stage_in(buf, nullptr);
  }

  // The exchanged planes of a face, local indices: the xp_ own planes sent through the face below
  // (dir -1) or above (+1), and the xp_ ghost planes received there. Only the ghosts next to the
  // own planes are exchanged (xp_ of the slab's `ghosts`): single steps read one.
  int sent_from(int dir) const { return dir < 0 ? slab_.own_begin : slab_.own_end - xp_; }
  int ghost_from(int dir) const { return dir < 0 ? slab_.own_begin - xp_ : slab_.own_end; }

  // A CUDA-aware MPI takes device memory itself: state `buf`'s boundary planes straight into the
  // neighbours' ghosts, field by field (the planes' kernels must have finished).
  void exchange_device(int buf) {
    const bool below = has(-1), above = has(1);
    const std::size_t bytes = static_cast<std::size_t>(xp_) * g_.nx * g_.ny * sizeof(T);
    for (DeviceBuffer<T>* a : {&n_[buf], &f_[buf], &c_[buf]}) {
      link_->exchange(below ? plane_of(*a, sent_from(-1)) : nullptr, above ? plane_of(*a, sent_from(1)) : nullptr,
                      below ? plane_of(*a, ghost_from(-1)) : nullptr, above ? plane_of(*a, ghost_from(1)) : nullptr,
                      bytes);
    }
  }

  // One step (or pass of two) as boundary planes first (then boundary_done_ is recorded), then the
  // interior: the same update_node at every node as one launch, only the order differs (no
  // reductions).
  void split_step(int in, int out, bool pair) {
    const bool below = has(-1), above = has(1);
    if (below) {
      set_range(slab_.own_begin, slab_.own_begin + xp_);
      step(in, out, false, pair);
    }
    if (above) {
      set_range(slab_.own_end - xp_, slab_.own_end);
      step(in, out, false, pair);
    }
    boundary_done_.record(nullptr);
    set_range(slab_.own_begin + (below ? xp_ : 0), slab_.own_end - (above ? xp_ : 0));
    step(in, out, false, pair);
  }

  // Boundary planes of state `buf` into the pinned send buffers, on `stream`.
  void stage_out(int buf, cudaStream_t stream) {
    const std::size_t block = static_cast<std::size_t>(xp_) * g_.nx * g_.ny, bytes = block * sizeof(T);
    DeviceBuffer<T>* fields[3] = {&n_[buf], &f_[buf], &c_[buf]};
    for (int a = 0; a < 3; ++a) {
      if (has(-1))
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(send_lo_.data() + a * block, plane_of(*fields[a], sent_from(-1)), bytes,
                                          cudaMemcpyDeviceToHost, stream));
      if (has(1))
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(send_hi_.data() + a * block, plane_of(*fields[a], sent_from(1)), bytes,
                                          cudaMemcpyDeviceToHost, stream));
    }
  }
  void stage_in(int buf, cudaStream_t stream) {
    const std::size_t block = static_cast<std::size_t>(xp_) * g_.nx * g_.ny, bytes = block * sizeof(T);
    DeviceBuffer<T>* fields[3] = {&n_[buf], &f_[buf], &c_[buf]};
    for (int a = 0; a < 3; ++a) {
      if (has(-1))
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(plane_of(*fields[a], ghost_from(-1)), recv_lo_.data() + a * block, bytes,
                                          cudaMemcpyHostToDevice, stream));
      if (has(1))
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(plane_of(*fields[a], ghost_from(1)), recv_hi_.data() + a * block, bytes,
                                          cudaMemcpyHostToDevice, stream));
    }
  }
  void host_exchange() {
    const bool below = has(-1), above = has(1);
    link_->exchange(below ? send_lo_.data() : nullptr, above ? send_hi_.data() : nullptr,
                    below ? recv_lo_.data() : nullptr, above ? recv_hi_.data() : nullptr,
                    3 * static_cast<std::size_t>(xp_) * g_.nx * g_.ny * sizeof(T));
  }

  // A step (or pass) whose halo exchange overlaps the interior update: the boundary planes first,
  // then the interior on the compute stream while the copy stream takes the boundary planes out,
  // MPI swaps them, and the ghosts go in; the next pass waits for the ghosts. Fields as in step():
  // the same update_node at every node, only the launch order differs (no reductions on these
  // steps).
  void overlapped_step(int in, int out, bool pair) {
    split_step(in, out, pair);
    if (link_->device_pointers()) {
      boundary_done_.synchronize();
      exchange_device(out);
      return;
    }
    SIMKIT_CUDA_CHECK(cudaStreamWaitEvent(copy_, boundary_done_.get(), 0));
    stage_out(out, copy_);
    copy_.synchronize();
    host_exchange();  // while the interior runs
    stage_in(out, copy_);
    ghosts_in_.record(copy_);
    SIMKIT_CUDA_CHECK(cudaStreamWaitEvent(nullptr, ghosts_in_.get(), 0));
  }

  // ---- Same-node peers: faces copied GPU to GPU through CUDA IPC (docs/scale-out.md) ----
  // Each rank opens its neighbours' six field buffers and two pairs of interprocess events ("my
  // step is done", "my copy into you is done", by step parity) once. A step then: waits for the
  // neighbours' copies into its ghosts (their previous step), updates its boundary planes and then
  // the interior, and copies its boundary planes straight into the neighbours' ghost planes of the
  // same state once those neighbours have finished the step that last read them. One-byte MPI
  // notices order each event record before the other rank's wait on it. Opt-in (SIMKIT_HALO=ipc);
  // without it, on another node, or after a CUDA error on any rank, every rank stages through the host.
  static constexpr int kDoneTag = 31, kCopyTag = 32, kCloseTag = 33;
  struct PeerHandles {
    cudaIpcMemHandle_t fields[2][3];
    cudaIpcEventHandle_t done[2], copy[2];
    int held;  // the neighbour's planes (its ghost above is its last)
  };
  bool has(int dir) const { return dir < 0 ? slab_.ghost_below() : slab_.ghost_above(g_.nz); }
  static int side(int dir) { return dir < 0 ? 0 : 1; }

  void open_peers() {
    bool ok = link_->peers_on_node();
    PeerHandles mine{};
    if (ok) {
      for (int st = 0; st < 2; ++st) {
        DeviceBuffer<T>* f[3] = {&n_[st], &f_[st], &c_[st]};
        for (int a = 0; a < 3; ++a) ok = ok && cudaIpcGetMemHandle(&mine.fields[st][a], f[a]->data()) == cudaSuccess;
      }
      for (int k = 0; k < 4 && ok; ++k)
        ok = cudaEventCreateWithFlags(&my_events_[k], cudaEventDisableTiming | cudaEventInterprocess) == cudaSuccess;
      for (int par = 0; par < 2 && ok; ++par) {
        ok = cudaIpcGetEventHandle(&mine.done[par], my_events_[par]) == cudaSuccess &&
             cudaIpcGetEventHandle(&mine.copy[par], my_events_[2 + par]) == cudaSuccess;
      }
      mine.held = g_.nz;
    }
    cudaGetLastError();  // a failed IPC call is an answer here, not an error of the run
    if (!link_->all(ok)) return release_own_events();
    PeerHandles below{}, above{};
    const bool lo = has(-1), hi = has(1);
    link_->exchange(lo ? &mine : nullptr, hi ? &mine : nullptr, lo ? &below : nullptr, hi ? &above : nullptr,
                    sizeof(PeerHandles));
    for (int dir : {-1, 1}) {
      if (!has(dir)) continue;
      const PeerHandles& h = dir < 0 ? below : above;
      peer_held_[side(dir)] = h.held;
      for (int st = 0; st < 2 && ok; ++st)
        for (int a = 0; a < 3 && ok; ++a) {
          void* p = nullptr;
          ok = cudaIpcOpenMemHandle(&p, h.fields[st][a], cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
          peer_[side(dir)][st][a] = static_cast<T*>(p);
        }
      for (int par = 0; par < 2 && ok; ++par) {
        ok = cudaIpcOpenEventHandle(&peer_events_[side(dir)][par], h.done[par]) == cudaSuccess &&
             cudaIpcOpenEventHandle(&peer_events_[side(dir)][2 + par], h.copy[par]) == cudaSuccess;
      }
    }
    cudaGetLastError();
    ipc_ = link_->all(ok);
    if (!ipc_) {  // back to the host-staged exchange, on every rank
      close_peers();
      release_own_events();
    }
  }
  // The neighbours' buffers and events this rank opened.
  void close_peers() {
    for (auto& dir : peer_)
      for (auto& state : dir)
        for (T*& p : state)
          if (p) cudaIpcCloseMemHandle(p), p = nullptr;
    for (auto& dir : peer_events_)
      for (cudaEvent_t& e : dir)
        if (e) cudaEventDestroy(e), e = nullptr;
    cudaGetLastError();
  }
  void release_own_events() {
    for (cudaEvent_t& e : my_events_)
      if (e) cudaEventDestroy(e), e = nullptr;
    cudaGetLastError();
  }

  // One step (or pass of two) with the faces copied to the neighbours' GPUs (see above). `split`:
  // boundary planes first, then the interior, so that the copies overlap the interior (not on
  // series steps, whose reduction must be the single-rank launch's).
  void ipc_step(int in, int out, bool reduce, bool split, bool pair) {
    const std::int64_t s = steps_;
    const int par = static_cast<int>(s % 2), prev = 1 - par;
    // The neighbours' copies into this state's ghosts (their previous step) come first.
    if (s > 0 && drained_ != s - 1) {
      for (int dir : {-1, 1}) {
        if (!has(dir)) continue;
        link_->await(dir, kCopyTag);
        SIMKIT_CUDA_CHECK(cudaStreamWaitEvent(nullptr, peer_events_[side(dir)][2 + prev], 0));
      }
    }
    if (split && !reduce) {
      split_step(in, out, pair);
    } else {
      set_range(slab_.own_begin, slab_.own_end);
      step(in, out, reduce, pair);
      boundary_done_.record(nullptr);
    }
    SIMKIT_CUDA_CHECK(cudaEventRecord(my_events_[par], nullptr));  // this step's kernels are done
    for (int dir : {-1, 1})
      if (has(dir)) link_->notify(dir, kDoneTag);
    // My boundary planes into the neighbours' ghosts of the same state, once they have finished
    // the step that last read those ghosts.
    SIMKIT_CUDA_CHECK(cudaStreamWaitEvent(copy_, boundary_done_.get(), 0));
    const std::size_t plane = static_cast<std::size_t>(g_.nx) * g_.ny, bytes = xp_ * plane * sizeof(T);
    DeviceBuffer<T>* fields[3] = {&n_[out], &f_[out], &c_[out]};
    for (int dir : {-1, 1}) {
      if (!has(dir)) continue;
      if (s > 0 && drained_ != s - 1) {
        link_->await(dir, kDoneTag);
        SIMKIT_CUDA_CHECK(cudaStreamWaitEvent(copy_, peer_events_[side(dir)][prev], 0));
      }
      const int from = sent_from(dir);
      // The neighbour's ghost planes facing me (the ones next to its own planes).
      const int to = dir < 0 ? peer_held_[0] - slab_.ghosts : slab_.ghosts - xp_;
      for (int a = 0; a < 3; ++a) {
        SIMKIT_CUDA_CHECK(cudaMemcpyAsync(peer_[side(dir)][out][a] + static_cast<std::size_t>(to) * plane,
                                          plane_of(*fields[a], from), bytes, cudaMemcpyDefault, copy_));
      }
    }
    SIMKIT_CUDA_CHECK(cudaEventRecord(my_events_[2 + par], copy_));
    for (int dir : {-1, 1})
      if (has(dir)) link_->notify(dir, kCopyTag);
    ++steps_;
  }

  // The end of a run of steps: the last step's notices consumed and its copies (both ways)
  // finished, so that reads and reductions see complete ghosts and the next step owes nothing.
  void drain() {
    const std::int64_t last = steps_ - 1;
    if (last < 0 || drained_ == last) return;
    const int par = static_cast<int>(last % 2);
    copy_.synchronize();
    for (int dir : {-1, 1}) {
      if (!has(dir)) continue;
      link_->await(dir, kDoneTag);
      link_->await(dir, kCopyTag);
      SIMKIT_CUDA_CHECK(cudaEventSynchronize(peer_events_[side(dir)][par]));
      SIMKIT_CUDA_CHECK(cudaEventSynchronize(peer_events_[side(dir)][2 + par]));
    }
    drained_ = last;
  }

  // Launches a step kernel of the shared signature (marching, pair, staged) from buffer set `in`
  // to `out`; partials: the per-block reductions, or nullptr.
  template <class Kernel>
  void run_step(Kernel kernel, dim3 grid, int in, int out, Partial* partials) {
    kernel<<<grid, kThreads>>>(dims_, m_, sc_, chunk_, n_[in].data(), f_[in].data(), c_[in].data(), n_[out].data(),
                               f_[out].data(), c_[out].data(), partials);
  }

  template <int kDims, bool kFlux>
  void launch(int in, int out, bool reduce, bool pair) {
    if (pair) {
      if constexpr (kDims == 3 && !kFlux) {
        if (pair_tma_ && !reduce)
          return with_pair_tile([&]<int kW, int kTY>() { this->template launch_pair_tma<kW, kTY>(in, out); });
      }
      const dim3 grid((g_.nx + kPairX - 1) / kPairX, (g_.ny + kPairY - 1) / kPairY, grid_.z);
      if (reduce) {
        run_step(pair_kernel<T, kDims, kFlux, true>, grid, in, out, partials_.data());
        reduced_blocks_ = static_cast<int>(grid.x * grid.y * grid.z);
        reduced_plane_blocks_ = static_cast<int>(grid.x * grid.y);
      } else if (tuning_.blocks >= 3) {
        run_step(pair_kernel<T, kDims, kFlux, false, 3>, grid, in, out, nullptr);
      } else {
        run_step(pair_kernel<T, kDims, kFlux, false>, grid, in, out, nullptr);
      }
      return;
    }
    reduced_blocks_ = static_cast<int>(grid_.x * grid_.y * grid_.z);
    reduced_plane_blocks_ = static_cast<int>(grid_.x * grid_.y);
    if (tma_ && !reduce) {
      if (tuning_.tma == 1) return launch_tma_slots<kDims, kFlux, 3>(in, out);
      return launch_tma_slots<kDims, kFlux, 4>(in, out);
    }
    if (tuning_.staged > 0 && !tuning_.naive) {
      launch_staged<kDims, kFlux>(in, out, reduce);
      return;
    }
    if (tuning_.naive) {
      const dim3 grid(grid_.x, grid_.y, static_cast<unsigned>(dims_.lend - dims_.lbase));
      naive_kernel<T, kDims, kFlux><<<grid, kThreads>>>(dims_, m_, sc_, n_[in].data(), f_[in].data(), c_[in].data(),
                                                        n_[out].data(), f_[out].data(), c_[out].data());
    } else if (reduce) {
      run_step(march_kernel<T, kDims, kFlux, true>, grid_, in, out, partials_.data());
    } else if (tuning_.blocks == 3) {
      run_step(march_kernel<T, kDims, kFlux, false, 3>, grid_, in, out, nullptr);
    } else if (tuning_.blocks == 4) {
      run_step(march_kernel<T, kDims, kFlux, false, 4>, grid_, in, out, nullptr);
    } else if (tuning_.blocks == 6) {
      run_step(march_kernel<T, kDims, kFlux, false, 6>, grid_, in, out, nullptr);
    } else {
      run_step(march_kernel<T, kDims, kFlux, false>, grid_, in, out, nullptr);
    }
  }

  template <int kDims, bool kFlux, int kSlots, int kW, int kRows, int kWarps, bool kRelease>
  void launch_tma_at(int in, int out) {
    using Box = TmaBox<T, kW, kRows, kWarps>;
    // (the registers of kTmaMinBlocks blocks of 8 warps: 80 x 8 tiles in 10 warps get 3 blocks in fp32,
    // 64 registers a thread, and 2 in fp64, 96, which their shared memory allows)
    constexpr int kMin = std::max(1, kTmaMinBlocks<T, kRows> * 8 / kWarps) + (kWarps == 10 && sizeof(T) == 8);
    auto kernel = tma_kernel<T, kDims, kFlux, kSlots, kW, kRows, kWarps, kRelease, kMin>;
    const int smem = Box::smem(kSlots, kFlux);
    const int tiles_x = (g_.nx + kW - 1) / kW, tiles_y = (g_.ny + Box::kTileY - 1) / Box::kTileY;
    if (!tma_configured_) {  // a solver launches one instance, on its device: the shared memory it may take
      SIMKIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int per_sm = 0, sms = 0;
      SIMKIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kWarps, smem));
      SIMKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
      const int planes = slab_.own_end - slab_.own_begin;
      tma_chunk_ = tma_chunk(tuning_.tma_chunk, static_cast<long long>(tiles_x) * tiles_y,
                             static_cast<long long>(per_sm) * sms, planes, chained());
      if (chained() && tuning_.chain == 2) {  // a flag for each block of a whole-range launch, none published yet
        chain_flags_.resize(static_cast<std::size_t>(tiles_x) * tiles_y * ((planes + tma_chunk_ - 1) / tma_chunk_));
        chain_flags_.fill_zero();
      }
      tma_configured_ = true;
    }
    // The TMA kernels reduce nothing, so their chunks need not line up with the slabs' (kSlabAlignment).
    const dim3 grid(tiles_x, tiles_y, static_cast<unsigned>((dims_.lend - dims_.lbase + tma_chunk_ - 1) / tma_chunk_));
    // Chained (Tuning::chain, the Chain struct): whole-range launches one after another in an advance.
    Chain chain{nullptr, 0u, 0u, 0};
    cudaLaunchAttribute early{};
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = 1;
    if (chained()) {
      chain.mode = tuning_.chain;
      if (chain.mode == 2) {
        chain.flags = chain_flags_.data();
        chain.wait = chain_prev_ ? chain_id_ : 0u;
        if (++chain_id_ == 0) ++chain_id_;  // (ids wrap past 0, which means none; flags compare by difference)
        chain.id = chain_id_;
      } else {
        chain.wait = chain_prev_ ? 1u : 0u;  // (modes 1 and 3: a marker)
      }
    }
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(32 * kWarps);
    config.dynamicSmemBytes = static_cast<std::size_t>(smem);
    config.stream = nullptr;
    config.attrs = &early;
    config.numAttrs = chain.wait != 0 ? 1 : 0;
    SIMKIT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, dims_, FastQuotientParams<T>{m_}, sc_, tma_chunk_,
                                         static_cast<const CUtensorMap*>(maps_.data() + 3 * in), n_[out].data(),
                                         f_[out].data(), c_[out].data(), chain));  // never a series step: no partials
    last_tma_ = chained();
  }
  // Tuning::tma planes ahead (1, 2), the tile (with_tma_tile) and tma_release.
  template <int kDims, bool kFlux, int kSlots, int kW, int kRows, int kWarps>
  void launch_tma_release(int in, int out) {
    if constexpr (kFlux) {
      launch_tma_at<kDims, kFlux, kSlots, kW, kRows, kWarps, false>(in, out);  // (a barrier a plane: the faces)
    } else if (tuning_.tma_release) {
      launch_tma_at<kDims, kFlux, kSlots, kW, kRows, kWarps, true>(in, out);
    } else {
      launch_tma_at<kDims, kFlux, kSlots, kW, kRows, kWarps, false>(in, out);
    }
  }
  template <int kDims, bool kFlux, int kSlots>
  void launch_tma_slots(int in, int out) {
    with_tma_tile([&]<int kW, int kRows, int kWarps>() {
      this->template launch_tma_release<kDims, kFlux, kSlots, kW, kRows, kWarps>(in, out);
    });
  }
  // Two steps per pass through TMA (Tuning::tma_pair): tiles of kW x kTY.
  template <int kW, int kTY>
  void launch_pair_tma(int in, int out) {
    using Box = TmaPairBox<T, kW, kTY>;
    // Registers for 4 (fp32) or 3 (fp64) blocks a SM on 32 x 8 tiles, one fewer on 64 x 8 and 32 x
    // 16 (fp32's shared memory allows no more; fp64's, 142 KB, allows one).
    constexpr int kMin = (sizeof(T) == 4 ? 4 : 3) - (kW * kTY == 512 ? 1 : 0);
    auto kernel = pair_tma_kernel<T, kW, kTY, kMin>;
    const int smem = Box::smem();
    if (!pair_configured_) {
      SIMKIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      pair_configured_ = true;
    }
    const dim3 grid((g_.nx + kW - 1) / kW, (g_.ny + kTY - 1) / kTY, grid_.z);
    kernel<<<grid, kThreads, smem>>>(dims_, FastQuotientParams<T>{m_}, sc_, chunk_, pair_maps_.data() + 3 * in,
                                     n_[out].data(), f_[out].data(), c_[out].data());
  }

  // Tuning's tiles as template arguments, for the launches and the tensor maps' boxes alike: the
  // single-step kernel's f.template operator()<kW, kRows, kWarps>() (tma_width 80: 80 x 8 in 10
  // warps, ahead of the others; tma_wide, tma_rows: 32 x 8, 32 x 16, 64 x 8, or 64 x 16 in 16 warps), the pair's
  // f.template operator()<kW, kTY>() (tma_pair_rows 16: 32 x 16; else 64 x 8 with tma_wide, 32 x 8 without).
  template <class F>
  decltype(auto) with_tma_tile(F&& f) const {
    if (tuning_.tma_width == 80) return f.template operator()<80, 2, 10>();  // 80 x 8 in 10 warps
    if (tuning_.tma_wide) {
      if (tuning_.tma_rows == 4) return f.template operator()<64, 2, 16>();
      return f.template operator()<64, 2, 8>();
    }
    if (tuning_.tma_rows == 2) return f.template operator()<32, 2, 8>();
    return f.template operator()<32, 1, 8>();
  }
  template <class F>
  decltype(auto) with_pair_tile(F&& f) const {
    if (tuning_.tma_pair_rows == 16) return f.template operator()<32, 16>();
    if (tuning_.tma_wide) return f.template operator()<64, 8>();
    return f.template operator()<32, 8>();
  }

  // Both states' n, f and c as tensor maps whose copies are `box`, into `out` ([state][n, f, c],
  // in device memory: the copies need 64-byte alignment); false where the driver refuses one.
  bool encode_maps(const std::array<std::uint32_t, 3>& box, DeviceBuffer<CUtensorMap>& out) {
    const std::uint64_t dims[3] = {static_cast<std::uint64_t>(g_.nx), static_cast<std::uint64_t>(g_.ny),
                                   static_cast<std::uint64_t>(g_.nz)};
    const std::uint64_t row = static_cast<std::uint64_t>(g_.nx) * sizeof(T), plane = row * g_.ny;
    std::vector<CUtensorMap> maps(6);
    for (int st = 0; st < 2; ++st) {
      const T* data[3] = {n_[st].data(), f_[st].data(), c_[st].data()};
      for (int a = 0; a < 3; ++a)
        if (!::simkit::cuda::encode_tensor_map_3d(&maps[3 * st + a], data[a], dims, row, plane, box.data()))
          return false;
    }
    out.resize(maps.size());
    out.upload(maps);
    return true;
  }

  // The tensor maps of both states' fields for the tma kernel (one plane of a tile and its ring per
  // copy) and, where the pair runs, for the pair's boxes. False where the kernel cannot run: rows
  // not a multiple of 16 bytes, no driver entry point, code from PTX older than compute_90, or an
  // encoding the driver refuses; the other kernels then run.
  bool make_tma_maps() {
    if (!::simkit::cuda::tma_kernel_usable(device_, tma_kernel<T, 3, false, 3, 32, 1, 8, false, kTmaMinBlocks<T, 1>>))
      return false;
    const auto box = with_tma_tile([&]<int kW, int kRows, int kWarps>() {
      using Box = TmaBox<T, kW, kRows, kWarps>;
      return std::array<std::uint32_t, 3>{Box::kX, Box::kY, 1};
    });
    if (!encode_maps(box, maps_)) return false;
    // The two-steps-per-pass kernel's boxes (a two-node ring): expanded form, 3D, whole grids of
    // three planes or more (the flux form measured slower: docs/performance.md).
    if (tuning_.tma_pair && !sc_.flux && (!link_ || slab_.ghosts >= 2) && g_.nz >= 3) {
      const auto pair_box = with_pair_tile([&]<int kW, int kTY>() {
        using Box = TmaPairBox<T, kW, kTY>;
        return std::array<std::uint32_t, 3>{Box::kX0, Box::kY0, 1};
      });
      pair_tma_ = encode_maps(pair_box, pair_maps_);
    }
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    return true;
  }

  template <int kDims, bool kFlux, int kAhead, int kMin>
  void launch_staged_at(int in, int out, bool reduce) {
    const dim3 grid((g_.nx + StageTile::kX - 1) / StageTile::kX, (g_.ny + StageTile::kY - 1) / StageTile::kY, grid_.z);
    if (reduce) {
      run_step(staged_kernel<T, kDims, kFlux, true, kAhead, 1>, grid, in, out, partials_.data());
    } else {
      run_step(staged_kernel<T, kDims, kFlux, false, kAhead, kMin>, grid, in, out, nullptr);
    }
    reduced_blocks_ = static_cast<int>(grid.x * grid.y * grid.z);
    reduced_plane_blocks_ = static_cast<int>(grid.x * grid.y);
  }
  // Planes in flight (Tuning::staged: 1 or 2; 3 and 4 in fp32) and blocks per SM (Tuning::blocks 0, 4, 6).
  template <int kDims, bool kFlux>
  void launch_staged(int in, int out, bool reduce) {
    const int ahead = tuning_.staged, blocks = tuning_.blocks;
    if constexpr (kDims == 3) {
      if (ahead == 1) return launch_staged_at<kDims, kFlux, 1, 1>(in, out, reduce);
      if constexpr (sizeof(T) == 4) {  // fp64 rings of more than 5 planes exceed 48 KB
        if (ahead == 3) {
          if (blocks == 4) return launch_staged_at<kDims, kFlux, 3, 4>(in, out, reduce);
          return launch_staged_at<kDims, kFlux, 3, 1>(in, out, reduce);
        }
        if (ahead >= 4) {
          if (blocks == 6) return launch_staged_at<kDims, kFlux, 4, 6>(in, out, reduce);
          return launch_staged_at<kDims, kFlux, 4, 1>(in, out, reduce);
        }
      }
      if (blocks == 4) return launch_staged_at<kDims, kFlux, 2, 4>(in, out, reduce);
      if (blocks == 6) return launch_staged_at<kDims, kFlux, 2, 6>(in, out, reduce);
    }
    launch_staged_at<kDims, kFlux, 2, 1>(in, out, reduce);
  }

  // The reductions of `count` partials (plane_blocks per chunk of planes), over every rank.
  Reductions finish(int count, int plane_blocks) {
    Partial result;
    if (!link_) {
      empty_kernel<<<1, kThreads>>>(carry_.data());
      fold_kernel<<<1, kThreads>>>(partials_.data(), count, 0, carry_.data());
      tree_kernel<<<1, kThreads>>>(carry_.data(), total_.data());
      SIMKIT_CUDA_CHECK_LAUNCH();
      result = total_.to_host()[0];
    } else {
      std::vector<Partial> carry(kThreads);
      empty_kernel<<<1, kThreads>>>(carry_.data());
      carry_.download(carry.data(), carry.size());
      SIMKIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
      link_->carry_in(carry.data(), carry.size() * sizeof(Partial));  // rank 0 keeps the empty carries
      carry_.upload(carry);
      const long long offset = static_cast<long long>((slab_.z0 + slab_.own_begin) / chunk_) * plane_blocks;
      fold_kernel<<<1, kThreads>>>(partials_.data(), count, offset, carry_.data());
      SIMKIT_CUDA_CHECK_LAUNCH();
      if (link_->last()) {
        tree_kernel<<<1, kThreads>>>(carry_.data(), total_.data());
        SIMKIT_CUDA_CHECK_LAUNCH();
        result = total_.to_host()[0];
      } else {
        carry_.download(carry.data(), carry.size());
        SIMKIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
        link_->carry_on(carry.data(), carry.size() * sizeof(Partial));
      }
      link_->finish(&result, sizeof result);
    }
    Reductions r;
    for (int q = 0; q < 3; ++q) {
      r.integral[q] = result.v[q];
      r.min[q] = result.v[3 + q];
      r.max[q] = result.v[6 + q];
    }
    scale_integrals(r, global_);
    return r;
  }

  int device_;
  DeviceGuard guard_;
  Grid g_, global_;
  TypedModelParams<T> m_;
  StepConstants<T> sc_;
  Tuning tuning_;
  Slab slab_;
  SlabLink* link_ = nullptr;
  Dims dims_{};
  int chunk_ = 1, blocks_ = 0, cur_ = 0, reduced_blocks_ = 0, reduced_plane_blocks_ = 0;
  dim3 grid_;
  DeviceBuffer<T> n_[2], f_[2], c_[2];
  DeviceBuffer<Partial> partials_, carry_, total_;
  ::simkit::cuda::PinnedBuffer<T> send_lo_, send_hi_, recv_lo_, recv_hi_;
  ::simkit::cuda::Stream copy_;
  ::simkit::cuda::Event boundary_done_, ghosts_in_;
  // Same-node peers (CUDA IPC): the neighbours' fields [below, above][state][n, f, c], their events
  // [side][done 0/1, copy 0/1] and planes held, this rank's events (done 0/1, copy 0/1), the steps
  // taken (the same on every rank) and the last step whose notices were consumed.
  bool tma_ = false;             // the tma kernel's maps are made (Tuning::tma and the grid allow it)
  bool tma_configured_ = false;  // its shared memory allowance is set, tma_chunk_ chosen
  int tma_chunk_ = 1;            // planes a block of the single-step TMA kernel marches (tma_chunk, cuda_tuning.hpp)
  // Chained launches (Tuning::chain): the flags, the last id published, whether the launch before
  // the one being made was a chained TMA launch, and whether the last launch was.
  DeviceBuffer<unsigned> chain_flags_;
  unsigned chain_id_ = 0;
  bool chain_prev_ = false, last_tma_ = false;
  // Whether single-step TMA launches chain: on one GPU (slabs launch sub-ranges and exchange planes
  // between steps, so every step of theirs is launched in stream order).
  bool chained() const { return tuning_.chain > 0 && !link_; }
  DeviceBuffer<CUtensorMap> maps_;
  bool pair_tma_ = false, pair_configured_ = false;  // the same for two steps per pass (Tuning::tma_pair)
  DeviceBuffer<CUtensorMap> pair_maps_;
  bool ipc_ = false;
  T* peer_[2][2][3] = {};
  cudaEvent_t peer_events_[2][4] = {};
  int peer_held_[2] = {0, 0};
  // Planes exchanged through a face after each pass: 2 where slabs take two steps a pass, else 1
  // (then a slab's outer ghost plane keeps its initial values: single steps never read it).
  int xp_ = 1;
  cudaEvent_t my_events_[4] = {};
  std::int64_t steps_ = 0, drained_ = -1;
  std::string device_name_;
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, int device, const Tuning& tuning,
                                const SlabSetup& slab) {
  auto solver = std::make_unique<CudaSolver<T>>(problem, initial, device, tuning, slab);
  solver->set_device_name(device_description(Backend::Cuda, device, 0));
  return solver;
}

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, int device, const Tuning& tuning) {
  return make<T>(problem, initial, device, tuning, SlabSetup::whole(problem.grid));
}

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, const RunOptions& options,
                                const SlabSetup& slab) {
  // Measured on an H200 (docs/performance.md): on Hopper, where rows are whole 16-byte multiples,
  // the TMA-staged kernel (one plane ahead in the expanded form, two in the flux form; 80 x 8 tiles
  // with chained launches, below, or else 64 x 8 in fp32 and 32 x 16 in fp64; chunks by tma_chunk's
  // rule; a block barrier a plane), and in the expanded form two steps per pass through TMA (32 x 16 tiles in fp32, 32
  // x 8 in fp64; 35-plane chunks, kSlabAlignment; an odd step and the steps that end on a series row single).
  // Otherwise, and on the series steps (fused reductions): fp32 the marching kernel (registers for 5 blocks a SM), fp64
  // the staged kernel (two planes' copies in flight, registers for 4 blocks a SM).
  Tuning tuning;
  tuning.chunk = kSlabAlignment;
  const bool fp32 = std::is_same_v<T, float>, flux = problem.form == Form::Flux;
  tuning.tma = flux ? 2 : 1;
  tuning.tma_rows = 2;
  tuning.tma_wide = fp32;
  // 80 x 8 tiles in blocks of 10 warps where they pad the grid's width less than the others (fp32
  // 64 x 8, fp64 32 x 16; at 400: 400 columns against 448 and 416; a block's time hardly depends on
  // how much of its tile is in the grid), and there the single-step launches of an advance chained
  // (Tuning::chain 2: measured on 80 x 8 tiles only; fp64 on 32 x 16 tiles lost 0.1-1.3 points).
  const auto padded = [&](int w) { return (problem.grid.nx + w - 1) / w * w; };
  if (padded(80) < padded(fp32 ? 64 : 32)) {
    tuning.tma_width = 80;
    tuning.chain = 2;
  }
  tuning.tma_pair = !flux;
  tuning.tma_pair_rows = fp32 ? 16 : 8;
  // Not in 2D (every plane's copy would fetch the one plane three times), nor when the grid gives
  // fewer than four tile chunks (of 512 nodes a plane) an SM: on 200 x 200 x 70 and 2048 x 2048 x 1
  // the marching kernel measured faster (docs/performance.md).
  int sms = 0;
  SIMKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, options.device));
  const long long planes = slab.slab.own_end - slab.slab.own_begin;
  const int tile_x = fp32 ? 64 : 32, tile_y = 512 / tile_x;
  const long long chunks = (static_cast<long long>(problem.grid.nx) + tile_x - 1) / tile_x *
                           ((problem.grid.ny + tile_y - 1) / tile_y) * ((planes + kSlabAlignment - 1) / kSlabAlignment);
  if (problem.grid.nz == 1 || chunks < 4LL * sms) tuning.tma = 0;
  // Slabs take the TMA kernels if any rank's slab passes the rule (a collective): the expanded
  // form's slabs pair only if every rank can, and a thin slab (the last one, which may hold a few
  // planes) would otherwise take every slab of the run back to single steps. The TMA kernels run
  // on any slab, at most a little slower on a thin one than the classic kernels.
  if (slab.link != nullptr && problem.grid.nz > 1) tuning.tma = slab.link->all(tuning.tma == 0) ? 0 : (flux ? 2 : 1);
  // A diagnostic override (tests, benchmarks): SIMKIT_ANGIO_KERNEL=tma takes the TMA-staged kernel
  // wherever it can run, =classic never; other values are ignored. Every kernel gives the same bits.
  if (const char* kernel = std::getenv("SIMKIT_ANGIO_KERNEL")) {
    const std::string k(kernel);
    if (k == "tma") tuning.tma = flux ? 2 : 1;
    if (k == "classic") tuning.tma = 0;
  }
  if (!fp32) {
    tuning.staged = 2;
    tuning.blocks = 4;
  }
  return make<T>(problem, initial, options.device, tuning, slab);
}

template <class T>
bool takes_tma_kernels(const Solver<T>& solver) {
  const auto* cuda = dynamic_cast<const CudaSolver<T>*>(&solver);
  return cuda != nullptr && cuda->takes_tma_kernels();
}
template bool takes_tma_kernels<float>(const Solver<float>&);
template bool takes_tma_kernels<double>(const Solver<double>&);

std::uint64_t quotient_mismatches(float a, float b_lo, float b_hi) {
  if (!(b_lo > 0 && b_hi > b_lo)) throw InternalError("quotient_mismatches: expected 0 < b_lo < b_hi");
  const std::uint32_t lo = std::bit_cast<std::uint32_t>(b_lo);
  return count_mismatches(std::bit_cast<std::uint32_t>(b_hi) - lo, QuotientSweep{a, lo});
}
std::uint64_t reciprocal_mismatches() {
  const std::uint32_t lo = std::bit_cast<std::uint32_t>(1.0f);
  return count_mismatches(std::bit_cast<std::uint32_t>(2.0f) - lo, ReciprocalSweep{lo});
}
std::uint64_t random_quotient_mismatches(std::uint64_t count, std::uint64_t seed) {
  return count_mismatches(count, RandomQuotients{seed});
}

template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, int, const Tuning&,
                                                    const SlabSetup&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, int, const Tuning&,
                                                      const SlabSetup&);
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, int, const Tuning&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, int, const Tuning&);
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, const RunOptions&,
                                                    const SlabSetup&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, const RunOptions&,
                                                      const SlabSetup&);

}  // namespace simkit::angio::detail::cuda
