#include <cuda_runtime.h>

#include <chrono>
#include <string>

#include "simkit/core/cuda_info.hpp"
#include "simkit/core/memory.hpp"
#include "core/cuda_check.cuh"

namespace simkit {

CudaStatus cuda_status() {
  CudaStatus status;
  status.built = true;
  cudaRuntimeGetVersion(&status.runtime_version);
  if (cudaDriverGetVersion(&status.driver_version) != cudaSuccess) status.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    status.reason = status.driver_version == 0 ? std::string("no NVIDIA driver (libcuda) on this machine")
                                               : std::string(cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return status;
  }
  if (count == 0) {
    status.reason = "no CUDA device found";
    return status;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDevice d;
    d.index = i;
    d.name = prop.name;
    d.memory_bytes = prop.totalGlobalMem;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    status.devices.push_back(d);
  }
  status.usable = !status.devices.empty();
  if (!status.usable) status.reason = "no device answered cudaGetDeviceProperties";
  return status;
}

double initialize_cuda_device(int device) {
  const auto start = std::chrono::steady_clock::now();
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(nullptr);
  cudaGetLastError();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DeviceMemory device_memory(int device) {
  cuda::DeviceGuard guard(device);
  const cuda::FreeMemory m = cuda::current_device_memory();
  return DeviceMemory{m.free, m.total};
}

}  // namespace simkit
