#pragma once
// Memory a run can take: every engine checks its needs against these before any work, so that a
// problem too large for the machine is a UserError (DeviceMemoryError on the GPU), not a crash.
#include <cstddef>
#include <string>

namespace simkit {

// MemAvailable of /proc/meminfo in bytes; 0 when unknown (then callers skip their check).
std::size_t host_available_bytes();

// Refuses a run whose estimated host memory `bytes` exceeds what is available now: a UserError
// about `field` reading "FIELD DETAIL: needs X GiB of host memory, Y GiB available; HINT" (no check
// when the available memory is unknown). Engines call it before allocating.
void require_host_memory(double bytes, const std::string& field, const std::string& detail, const std::string& hint);

// "1.50 GiB"
std::string gib_text(double bytes);

struct DeviceMemory {
  std::size_t free = 0;
  std::size_t total = 0;
};

// cudaMemGetInfo on `device` (the current device is restored). A build without CUDA throws
// throw_not_built(Backend::Cuda); a CUDA failure is the CUDA check's error.
DeviceMemory device_memory(int device);

}  // namespace simkit
