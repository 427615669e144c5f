#pragma once
// Backend choice shared by every engine: reference (serial oracle), cpu (threads), cuda.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace simkit {

enum class Backend { Auto, Reference, Cpu, Cuda };

// Parses "auto|reference|cpu|cuda"; a UserError names the flag and the accepted values.
Backend parse_backend(std::string_view text);
std::string_view to_string(Backend backend);

// Auto becomes Cuda when the build has CUDA and `device` is usable, else Cpu. Asking for Cuda on a
// build or machine without it is a UserError that says why.
Backend resolve_backend(Backend requested, int device);

// Called now and then by long runs: work done so far out of total (same unit as the summary).
using ProgressCallback = std::function<void(double done, double total)>;

// What every engine entry point takes besides its problem. The device is explicit, never global.
struct RunOptions {
  Backend backend = Backend::Auto;
  int device = 0;
  std::uint64_t seed = 1;
  int threads = 0;  // 0: all hardware threads
  ProgressCallback progress;
};

// Human-readable description of what ran: "NVIDIA H100 80GB HBM3 (device 0)" or "CPU, 16 threads".
std::string device_description(Backend resolved, int device, int threads);

// Number of threads the cpu backend uses for `requested` (0 = all).
int effective_threads(int requested);

}  // namespace simkit
