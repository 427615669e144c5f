#include "simkit/core/backend.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/memory.hpp"

namespace simkit {

CudaStatus cuda_status() {
  CudaStatus status;
  status.reason = "built without CUDA support";
  return status;
}

double initialize_cuda_device(int) { return 0.0; }

DeviceMemory device_memory(int) { throw_not_built(Backend::Cuda); }

}  // namespace simkit
