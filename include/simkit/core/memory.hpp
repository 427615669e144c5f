#pragma once
// Memory a run can take: every engine checks its needs against these before any work, so that a
// problem too large for the machine is a UserError (DeviceMemoryError on the GPU), not a crash.
#include <cstddef>

namespace simkit {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown (then callers skip their check).
std::size_t host_available_bytes();

struct DeviceMemory {
  std::size_t free = 0;
  std::size_t total = 0;
};

// cudaMemGetInfo on `device` (the current device is restored). A build without CUDA throws
// throw_not_built(Backend::Cuda); a CUDA failure is the CUDA check's error.
DeviceMemory device_memory(int device);

}  // namespace simkit
