#pragma once
// The one CUDA error check, and DeviceBuffer<T>: RAII device memory. Engines never call
// cudaMalloc/cudaFree directly.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "simkit/core/error.hpp"

namespace simkit::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace simkit::cuda

#define SIMKIT_CUDA_CHECK(expr)                                                                               \
  do {                                                                                                        \
    const cudaError_t simkit_err_ = (expr);                                                                   \
    if (simkit_err_ != cudaSuccess) ::simkit::cuda::throw_cuda_error(simkit_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch errors now, execution errors at the next synchronising call.
#define SIMKIT_CUDA_CHECK_LAUNCH() SIMKIT_CUDA_CHECK(cudaGetLastError())

namespace simkit::cuda {

// Selects `device` for the calling thread for the lifetime of the guard, restoring the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    SIMKIT_CUDA_CHECK(cudaGetDevice(&previous_));
    SIMKIT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  // Discards the contents; allocates only when the size changes.
  void resize(std::size_t count) {
    if (count == size_) return;
    release();
    if (count > 0) {
      void* p = nullptr;
      SIMKIT_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
      data_ = static_cast<T*>(p);
    }
    size_ = count;
  }

  void upload(const T* host, std::size_t count, cudaStream_t stream = nullptr) {
    resize(count);
    if (count > 0) SIMKIT_CUDA_CHECK(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void upload(const std::vector<T>& host, cudaStream_t stream = nullptr) { upload(host.data(), host.size(), stream); }

  void download(T* host, std::size_t count, cudaStream_t stream = nullptr) const {
    if (count > 0) SIMKIT_CUDA_CHECK(cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  std::vector<T> to_host(cudaStream_t stream = nullptr) const {
    std::vector<T> host(size_);
    download(host.data(), size_, stream);
    SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }
  void fill_zero(cudaStream_t stream = nullptr) {
    if (size_ > 0) SIMKIT_CUDA_CHECK(cudaMemsetAsync(data_, 0, size_ * sizeof(T), stream));
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace simkit::cuda
