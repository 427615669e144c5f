#include "simkit/core/cuda_info.hpp"

namespace simkit {

CudaStatus cuda_status() {
  CudaStatus status;
  status.reason = "built without CUDA support";
  return status;
}

double initialize_cuda_device(int) { return 0.0; }

}  // namespace simkit
