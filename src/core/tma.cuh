#pragma once
// The Tensor Memory Accelerator (Hopper and later), for the stencil kernels that stage planes of a
// field in shared memory: tensor maps made on the host (through the runtime's driver entry point,
// so nothing links libcuda), mbarriers and bulk tensor copies in PTX. A copy's box must start on a
// 16-byte boundary in its innermost dimension (an illegal instruction otherwise, measured on an
// H200); cells outside the tensor are zero-filled.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda_check.cuh"

namespace simkit::cuda {

// Whether `device` has the accelerator (compute capability 9.0 or later).
inline bool tma_supported(int device) {
  int major = 0;
  SIMKIT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

// Whether `kernel` (one that uses the functions below) can run on `device`: a Hopper or later
// device, and device code built for it from PTX of compute_90 or later (a binary whose code for
// this device was JIT-compiled from older PTX holds the kernel's trap instead).
template <class Kernel>
bool tma_kernel_usable(int device, Kernel kernel) {
  if (!tma_supported(device)) return false;
  cudaFuncAttributes built{};
  SIMKIT_CUDA_CHECK(cudaFuncGetAttributes(&built, kernel));
  return built.ptxVersion >= 90;
}

// A 3D tiled tensor map over `base` (dims and the boxes in elements, x fastest; rows and planes
// `row_bytes` and `plane_bytes` apart, multiples of 16), or false where the driver refuses it or
// has no entry point. float and double elements.
template <class T>
bool encode_tensor_map_3d(CUtensorMap* map, const T* base, const std::uint64_t dims[3], std::uint64_t row_bytes,
                          std::uint64_t plane_bytes, const std::uint32_t box[3]) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if (row_bytes % 16 != 0 || plane_bytes % 16 != 0 || reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return false;
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || entry == nullptr) {
    cudaGetLastError();
    return false;
  }
  auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  const cuuint64_t d[3] = {dims[0], dims[1], dims[2]}, strides[2] = {row_bytes, plane_bytes};
  const cuuint32_t b[3] = {box[0], box[1], box[2]}, unit[3] = {1, 1, 1};
  const CUtensorMapDataType type = sizeof(T) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  return encode(map, type, 3, const_cast<T*>(base), d, strides, b, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Device side (sm_90 and later; kernels that use these compile to a trap below it and are never
// launched there: tma_supported).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ inline unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ inline void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// After the block's mbar_init calls, before the barrier that publishes them.
__device__ inline void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ inline void mbar_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ inline void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed.
__device__ inline void mbar_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
// The box of `map` at (x, y, z) into shared memory at `dst` (128-byte aligned), completing on `bar`.
__device__ inline void tma_load_3d(void* dst, const CUtensorMap* map, int x, int y, int z, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_u32(bar))
      : "memory");
}

// Programmatic dependent launch and flags between launches (sm_90 and later). The next kernel in
// the stream, launched with cudaLaunchAttributeProgrammaticStreamSerialization, may start once every
// block of this one has signalled (or exited); it must then order its memory accesses itself
// (grid_dependency_wait, or flags below).
__device__ inline void grid_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// Waits until the grids this one depends on have completed and their memory is visible.
__device__ inline void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// A flag published with release semantics at GPU scope (after a block barrier: the block's earlier
// stores with it) and read with acquire semantics.
__device__ inline void flag_release(unsigned* flag, unsigned value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ inline unsigned flag_acquire(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}
// Orders this thread's later tensor copies (the async proxy) after the generic-proxy writes it has
// observed (another block's stores, acquired through a flag).
__device__ inline void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }
#endif

}  // namespace simkit::cuda
