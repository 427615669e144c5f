#include <string>

#include "core/cuda_check.cuh"

namespace simkit::cuda {

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  cudaGetLastError();
  const std::string what = std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                           ") in " + expr + " at " + file + ":" + std::to_string(line);
  if (err == cudaErrorMemoryAllocation) {
    // Running out of device memory is the size of the problem, not a bug: say so as a user error.
    throw DeviceMemoryError(what + "; the problem does not fit in this device's memory");
  }
  throw InternalError(what);
}

}  // namespace simkit::cuda
