#pragma once
// What the CUDA runtime says about this machine, for `simkit info` and backend resolution.
#include <cstddef>
#include <string>
#include <vector>

namespace simkit {

struct CudaDevice {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::size_t l2_bytes = 0;
};

struct CudaStatus {
  bool built = false;       // this simkit has CUDA backends
  bool usable = false;      // and at least one device answers
  std::string reason;       // why not usable
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;   // 0 when no driver
  std::vector<CudaDevice> devices;
};

CudaStatus cuda_status();

// Creates the CUDA context on `device` (the one-time cost of a process's first CUDA call) and
// returns the seconds it took, so that run timings can leave it out and report it apart.
double initialize_cuda_device(int device);

}  // namespace simkit
