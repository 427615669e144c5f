// Ceilings for bench_angio's stencil kernels (docs/performance.md): how fast the device moves the
// step's own traffic pattern when nothing is computed. Three fp32 or fp64 fields of the 400 x 400
// x 140 grid are read and three written, (a) as three flat copies (float4 / double2, grid-stride),
// (b) as the marching kernel reads them (a thread per (i, j) column walking up the planes), and with
// other block shapes, one to four columns per thread, and in chunks of planes (more blocks) at two
// occupancies.
#include <cuda_runtime.h>

#include <algorithm>

#include "stream_copies.hpp"

namespace {

template <class V>
__global__ void three_flat(const V* __restrict a, const V* __restrict b, const V* __restrict c, V* __restrict x,
                           V* __restrict y, V* __restrict z, long long count) {
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    x[k] = __ldg(a + k);
    y[k] = __ldg(b + k);
    z[k] = __ldg(c + k);
  }
}

// A block of 256 threads, kWide threads across i, each thread kVec adjacent columns (vector
// accesses of kVec elements), walking up every plane.
template <class T, class V, int kVec, int kWide>
__global__ void three_columns(const T* __restrict a, const T* __restrict b, const T* __restrict c, T* __restrict x,
                              T* __restrict y, T* __restrict z, int nx, int ny, int nz, int chunk) {
  const int i = (blockIdx.x * kWide + threadIdx.x % kWide) * kVec, j = blockIdx.y * (256 / kWide) + threadIdx.x / kWide;
  if (i >= nx || j >= ny) return;
  const int plane = nx * ny;
  const int l0 = blockIdx.z * chunk, l1 = min(l0 + chunk, nz);
  for (int l = l0, at = l0 * plane + j * nx + i; l < l1; ++l, at += plane) {
    *reinterpret_cast<V*>(x + at) = __ldg(reinterpret_cast<const V*>(a + at));
    *reinterpret_cast<V*>(y + at) = __ldg(reinterpret_cast<const V*>(b + at));
    *reinterpret_cast<V*>(z + at) = __ldg(reinterpret_cast<const V*>(c + at));
  }
}

template <class T>
double measure(int columns, int nx, int ny, int nz) {
  const long long nodes = static_cast<long long>(nx) * ny * nz;
  T* buffers[6] = {};
  for (T*& p : buffers)
    if (cudaMalloc(&p, nodes * sizeof(T)) != cudaSuccess) return 0;
  for (T* p : buffers) cudaMemset(p, 0, nodes * sizeof(T));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float best = 1e30f;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(start);
    if (columns == 1) {  // 32 x 8 threads, one column each (the marching kernel's pattern)
      three_columns<T, T, 1, 32><<<dim3((nx + 31) / 32, (ny + 7) / 8), 256>>>(
          buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5], nx, ny, nz, nz);
    } else if (columns == 2) {  // 64 x 4 threads, one column each
      three_columns<T, T, 1, 64><<<dim3((nx + 63) / 64, (ny + 3) / 4), 256>>>(
          buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5], nx, ny, nz, nz);
    } else if (columns == 3) {  // 32 x 8 threads, two columns each (vector pairs)
      using V2 = std::conditional_t<sizeof(T) == 4, float2, double2>;
      three_columns<T, V2, 2, 32><<<dim3((nx + 63) / 64, (ny + 7) / 8), 256>>>(
          buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5], nx, ny, nz, nz);
    } else if (columns == 5 || columns == 6) {
      // 32 x 8 threads, one column each, in chunks of 35 planes as the marching kernel (more blocks,
      // up to 8 a SM); 6: held to 5 blocks a SM, the marching kernel's occupancy, by shared memory.
      const int chunk = 35;
      const std::size_t smem = columns == 6 ? 40 * 1024 : 0;
      if (smem > 0) {
        cudaFuncSetAttribute(three_columns<T, T, 1, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
      }
      three_columns<T, T, 1, 32><<<dim3((nx + 31) / 32, (ny + 7) / 8, (nz + chunk - 1) / chunk), 256, smem>>>(
          buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5], nx, ny, nz, chunk);
    } else if (columns == 4 && sizeof(T) == 4) {  // 32 x 8 threads, four columns each
      three_columns<T, float4, 4, 32><<<dim3((nx + 127) / 128, (ny + 7) / 8), 256>>>(
          buffers[0], buffers[1], buffers[2], buffers[3], buffers[4], buffers[5], nx, ny, nz, nz);
    } else {
      using V = std::conditional_t<sizeof(T) == 4, float4, double2>;
      const long long count = nodes * static_cast<long long>(sizeof(T)) / static_cast<long long>(sizeof(V));
      three_flat<V><<<132 * 16, 256>>>(reinterpret_cast<V*>(buffers[0]), reinterpret_cast<V*>(buffers[1]),
                                       reinterpret_cast<V*>(buffers[2]), reinterpret_cast<V*>(buffers[3]),
                                       reinterpret_cast<V*>(buffers[4]), reinterpret_cast<V*>(buffers[5]), count);
    }
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r > 1) best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  for (T* p : buffers) cudaFree(p);
  return cudaGetLastError() == cudaSuccess ? 6.0 * static_cast<double>(nodes) * sizeof(T) / (best * 1e-3) / 1e9 : 0;
}

}  // namespace

double three_field_copy_gbs(bool fp64, int columns, int nx, int ny, int nz) {
  return fp64 ? measure<double>(columns, nx, ny, nz) : measure<float>(columns, nx, ny, nz);
}
