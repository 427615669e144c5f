#include "simkit/core/backend.hpp"

#include <fmt/format.h>
#include <omp.h>

#include "simkit/core/cuda_info.hpp"
#include "simkit/core/error.hpp"

namespace simkit {

Backend parse_backend(std::string_view text) {
  if (text == "auto") return Backend::Auto;
  if (text == "reference") return Backend::Reference;
  if (text == "cpu") return Backend::Cpu;
  if (text == "cuda") return Backend::Cuda;
  throw UserError("backend", fmt::format(": '{}' is not a backend; expected auto, reference, cpu or cuda", text));
}

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::Auto:
      return "auto";
    case Backend::Reference:
      return "reference";
    case Backend::Cpu:
      return "cpu";
    case Backend::Cuda:
      return "cuda";
  }
  return "unknown";
}

Backend resolve_backend(Backend requested, int device) {
  if (requested == Backend::Reference || requested == Backend::Cpu) return requested;
  const CudaStatus status = cuda_status();
  const bool usable = status.usable && device >= 0 && device < static_cast<int>(status.devices.size());
  if (requested == Backend::Auto) return usable ? Backend::Cuda : Backend::Cpu;
  if (!status.built)
    throw UserError("backend", " cuda: this simkit was built without CUDA support (SIMKIT_CUDA=OFF or no nvcc)");
  if (!status.usable) throw UserError("backend", fmt::format(" cuda: no usable CUDA device: {}", status.reason));
  if (!usable) {
    throw UserError("device", fmt::format(" {}: no such CUDA device; this machine has {} (0..{})", device,
                                status.devices.size(), status.devices.size() - 1));
  }
  return Backend::Cuda;
}

int effective_threads(int requested) { return requested > 0 ? requested : omp_get_max_threads(); }

std::string device_description(Backend resolved, int device, int threads) {
  if (resolved == Backend::Cuda) {
    const CudaStatus status = cuda_status();
    if (device >= 0 && device < static_cast<int>(status.devices.size())) {
      return fmt::format("{} (device {})", status.devices[device].name, device);
    }
    return fmt::format("CUDA device {}", device);
  }
  if (resolved == Backend::Reference) return "CPU, 1 thread";
  return fmt::format("CPU, {} threads", effective_threads(threads));
}

}  // namespace simkit
