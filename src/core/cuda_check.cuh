#pragma once
// The one CUDA error check, and the RAII owners engines use instead of the runtime's create and
// destroy calls: DeviceBuffer<T> (device memory), PinnedBuffer<T> (page-locked host memory),
// Stream and Event. Engines never call cudaMalloc/cudaFree, cudaMallocHost/cudaFreeHost or create
// streams and events directly.
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

// RAII owner of `count` values of T from one of CUDA's allocator pairs; allocates only when the
// size changes (contents discarded then).
inline cudaError_t device_alloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
inline cudaError_t device_free(void* p) { return cudaFree(p); }
inline cudaError_t pinned_alloc(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
inline cudaError_t pinned_free(void* p) { return cudaFreeHost(p); }
// The device's default stream-ordered pool, on the legacy default stream: no device-wide
// synchronisation per allocation (as cudaFree has). Only for buffers whose every use is ordered
// on the legacy default stream (or synchronised before they are freed).
inline cudaError_t pool_alloc(void** p, std::size_t bytes) { return cudaMallocAsync(p, bytes, nullptr); }
inline cudaError_t pool_free(void* p) { return cudaFreeAsync(p, nullptr); }

template <class T, cudaError_t (*Alloc)(void**, std::size_t), cudaError_t (*Free)(void*)>
class CudaMemory {
 public:
  CudaMemory() = default;
  explicit CudaMemory(std::size_t count) { resize(count); }
  ~CudaMemory() { release(); }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  CudaMemory(CudaMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  CudaMemory& operator=(CudaMemory&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  void resize(std::size_t count) {
    if (count == size_) return;
    release();
    if (count > 0) {
      void* p = nullptr;
      SIMKIT_CUDA_CHECK(Alloc(&p, count * sizeof(T)));
      data_ = static_cast<T*>(p);
    }
    size_ = count;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  void release() {
    if (data_ != nullptr) Free(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory (for copies that overlap other work).
template <class T>
using PinnedBuffer = CudaMemory<T, pinned_alloc, pinned_free>;

// Device memory, with copies to and from the host; from cudaMalloc, or from the stream-ordered pool
// (PoolBuffer).
template <class T, cudaError_t (*Alloc)(void**, std::size_t) = device_alloc, cudaError_t (*Free)(void*) = device_free>
class DeviceBuffer : public CudaMemory<T, Alloc, Free> {
 public:
  using Base = CudaMemory<T, Alloc, Free>;
  using Base::Base;
  using Base::data;
  using Base::resize;
  using Base::size;

  void upload(const T* host, std::size_t count, cudaStream_t stream = nullptr) {
    resize(count);
    if (count > 0) SIMKIT_CUDA_CHECK(cudaMemcpyAsync(data(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void upload(const std::vector<T>& host, cudaStream_t stream = nullptr) { upload(host.data(), host.size(), stream); }

  void download(T* host, std::size_t count, cudaStream_t stream = nullptr) const {
    if (count > 0) SIMKIT_CUDA_CHECK(cudaMemcpyAsync(host, data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  std::vector<T> to_host(cudaStream_t stream = nullptr) const {
    std::vector<T> host(size());
    download(host.data(), size(), stream);
    SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }
  void fill_zero(cudaStream_t stream = nullptr) {
    if (size() > 0) SIMKIT_CUDA_CHECK(cudaMemsetAsync(data(), 0, size() * sizeof(T), stream));
  }
};

template <class T>
using PoolBuffer = DeviceBuffer<T, pool_alloc, pool_free>;

// Free and total memory of the current device (simkit/core/memory.hpp's device_memory takes a
// device index; kernels' capacity checks run with their device already selected).
struct FreeMemory {
  std::size_t free = 0, total = 0;
};
inline FreeMemory current_device_memory() {
  FreeMemory m;
  SIMKIT_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

// A non-blocking stream of the current device, destroyed with the owner (after its work is done).
class Stream {
 public:
  Stream() { SIMKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  // A stream whose pending blocks the device schedules before other streams' (the greatest
  // priority the current device has): short kernels that must not queue behind long ones.
  struct HighPriority {};
  explicit Stream(HighPriority) {
    int least = 0, greatest = 0;
    SIMKIT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    SIMKIT_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  }
  ~Stream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: passed where the runtime takes a stream
  void synchronize() const { SIMKIT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing, for ordering work between streams and the host.
class Event {
 public:
  Event() { SIMKIT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream) { SIMKIT_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { SIMKIT_CUDA_CHECK(cudaEventSynchronize(event_)); }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace simkit::cuda
