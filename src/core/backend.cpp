#include "simkit/core/backend.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

#include "simkit/core/cuda_info.hpp"
#include "simkit/core/error.hpp"

namespace simkit {

Backend parse_backend(std::string_view text) {
  if (const auto backend = value_of(kBackendNames, text)) return *backend;
  throw UserError("backend", fmt::format(": '{}' is not a backend; expected {}", text, names_text(kBackendNames)));
}

std::string_view to_string(Backend backend) { return name_of(kBackendNames, backend); }

void throw_not_built(Backend backend) {
  // Only cuda is optional today; the reference and cpu backends are always built.
  throw UserError("backend", fmt::format(" {}: this simkit was built without {} support (SIMKIT_CUDA=OFF or no nvcc)",
                                         name_of(kBackendNames, backend),
                                         backend == Backend::Cuda ? "CUDA" : name_of(kBackendNames, backend)));
}

Backend resolve_backend(Backend requested, int device) {
  if (requested == Backend::Reference || requested == Backend::Cpu) return requested;
  const CudaStatus status = cuda_status();
  const bool usable = status.usable && device >= 0 && device < static_cast<int>(status.devices.size());
  if (requested == Backend::Auto) return usable ? Backend::Cuda : Backend::Cpu;
  if (!status.built) throw_not_built(Backend::Cuda);
  if (!status.usable) throw UserError("backend", fmt::format(" cuda: no usable CUDA device: {}", status.reason));
  if (!usable) {
    throw UserError("device", fmt::format(" {}: no such CUDA device; this machine has {} (0..{})", device,
                                status.devices.size(), status.devices.size() - 1));
  }
  return Backend::Cuda;
}

void throw_if_stopped(const RunOptions& options) {
  if (stop_requested(options)) throw Stopped();
}

int max_threads() { return std::max(256, 4 * omp_get_num_procs()); }

int checked_threads(int requested) {
  if (requested < 0) throw UserError("threads", fmt::format(" {}: expected 0 (all) or more", requested));
  if (requested > max_threads()) {
    throw UserError("threads", fmt::format(" {}: at most {} (four times this machine's {} hardware threads, and never "
                                           "fewer than 256)",
                                           requested, max_threads(), omp_get_num_procs()));
  }
  return requested;
}

int effective_threads(int requested) {
  checked_threads(requested);
  return requested > 0 ? requested : omp_get_max_threads();
}

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
