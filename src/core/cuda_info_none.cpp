#include "core/cuda_info.hpp"

namespace simkit {

CudaStatus cuda_status() {
  CudaStatus status;
  status.reason = "built without CUDA support";
  return status;
}

}  // namespace simkit
